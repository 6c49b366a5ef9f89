//! The C ABI between the driver and a plugin library.
//!
//! A plugin library exports two functions ([`export_plugin!`](crate::export_plugin)
//! writes them): `pgpu_plugin_abi_version`, which returns the [`VERSION`]
//! it was built with, and `pgpu_plugin_register`, which the host calls with
//! a [`Host`] once the versions agree. The plugin fills a [`Registry`] of
//! its own and hands each frontend and backend to the host as an entry
//! ([`FrontendEntry`], [`BackendEntry`]): its strings and `extern "C"`
//! functions over the plugin's object. The entries live as long as the
//! process (the host never unloads a plugin). Strings are [`Str`]s; a call
//! returns its results through a [`Write`] callback, which copies them,
//! so no memory is freed by the side that did not allocate it. A panic in
//! the plugin is caught at the boundary and reported as a diagnostic.

use crate::{Backend, Diagnostic, Frontend, Registry};
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The version of this ABI: a plugin built with another is refused.
pub const VERSION: u32 = 1;

/// A UTF-8 string borrowed across the boundary.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Str {
    pub ptr: *const u8,
    pub len: usize,
}

impl Str {
    pub fn of(text: &str) -> Self {
        Self::of_bytes(text.as_bytes())
    }

    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }

    /// # Safety
    /// `self` points to `len` bytes that stay valid for `'a`.
    pub unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.ptr.is_null() || self.len == 0 {
            return &[];
        }
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// # Safety
    /// As for [`Str::bytes`].
    pub unsafe fn text<'a>(self) -> Result<&'a str, std::str::Utf8Error> {
        // SAFETY: guaranteed by the caller.
        std::str::from_utf8(unsafe { self.bytes() })
    }
}

/// What a [`Write`] call carries: a piece of the output, or a diagnostic.
pub const OUTPUT: u32 = 0;
pub const DIAGNOSTIC: u32 = 1;
/// A diagnostic's `start` and `end` when it has no span.
pub const NO_SPAN: usize = usize::MAX;

/// Receives a result: `kind` [`OUTPUT`] appends `text` to the output,
/// [`DIAGNOSTIC`] reports `text` about bytes `start..end`.
pub type Write =
    unsafe extern "C" fn(sink: *mut c_void, kind: u32, text: Str, start: usize, end: usize);

/// A frontend as the host sees it.
#[repr(C)]
#[derive(Debug)]
pub struct FrontendEntry {
    pub object: *const c_void,
    pub name: Str,
    /// Comma-separated extensions.
    pub extensions: Str,
    /// Writes the module text or diagnostics; true on success.
    pub translate: unsafe extern "C" fn(
        object: *const c_void,
        file: Str,
        source: Str,
        sink: *mut c_void,
        write: Write,
    ) -> bool,
}

/// A backend as the host sees it.
#[repr(C)]
#[derive(Debug)]
pub struct BackendEntry {
    pub object: *const c_void,
    pub name: Str,
    pub pipeline: Str,
    /// Writes the artifact or diagnostics; true on success.
    pub emit: unsafe extern "C" fn(
        object: *const c_void,
        module: Str,
        sink: *mut c_void,
        write: Write,
    ) -> bool,
}

/// What the host offers a registering plugin.
#[repr(C)]
#[derive(Debug)]
pub struct Host {
    pub registry: *mut c_void,
    pub add_frontend: unsafe extern "C" fn(registry: *mut c_void, entry: *const FrontendEntry),
    pub add_backend: unsafe extern "C" fn(registry: *mut c_void, entry: *const BackendEntry),
}

/// Exports a plugin library's registration: `register` is a
/// `fn(&mut pgpu_plugin::Registry)` that adds its frontends and backends.
///
/// ```ignore
/// fn register(registry: &mut pgpu_plugin::Registry) {
///     registry.add_frontend(Box::new(MyLanguage));
/// }
/// pgpu_plugin::export_plugin!(register);
/// ```
#[macro_export]
macro_rules! export_plugin {
    ($register:path) => {
        /// The plugin ABI version this library was built with.
        #[unsafe(no_mangle)]
        pub extern "C" fn pgpu_plugin_abi_version() -> u32 {
            $crate::abi::VERSION
        }

        /// Registers this library's frontends and backends with the host.
        ///
        /// # Safety
        /// `host` is a valid [`Host`]($crate::abi::Host) of the same version.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn pgpu_plugin_register(host: *const $crate::abi::Host) -> bool {
            // SAFETY: guaranteed by the caller.
            unsafe { $crate::abi::register_plugin(host, $register) }
        }
    };
}

/// The plugin side of `pgpu_plugin_register`.
///
/// # Safety
/// `host` is a valid [`Host`].
#[doc(hidden)]
pub unsafe fn register_plugin(host: *const Host, register: fn(&mut Registry)) -> bool {
    let Ok(registry) = catch_unwind(|| {
        let mut registry = Registry::default();
        register(&mut registry);
        registry
    }) else {
        return false;
    };
    // SAFETY: guaranteed by the caller.
    let host = unsafe { &*host };
    // The objects are boxed twice: a thin pointer to the fat `Box<dyn _>`
    // is what crosses as `*const c_void`.
    for frontend in registry.frontends {
        #[allow(clippy::borrowed_box)]
        let object: &'static Box<dyn Frontend> = Box::leak(Box::new(frontend));
        let entry = Box::leak(Box::new(FrontendEntry {
            object: (object as *const Box<dyn Frontend>).cast(),
            name: Str::of(String::leak(object.name())),
            extensions: Str::of(String::leak(object.extensions().join(","))),
            translate: translate_thunk,
        }));
        // SAFETY: the entry lives for the process.
        unsafe { (host.add_frontend)(host.registry, entry) };
    }
    for backend in registry.backends {
        #[allow(clippy::borrowed_box)]
        let object: &'static Box<dyn Backend> = Box::leak(Box::new(backend));
        let entry = Box::leak(Box::new(BackendEntry {
            object: (object as *const Box<dyn Backend>).cast(),
            name: Str::of(String::leak(object.name())),
            pipeline: Str::of(String::leak(object.pipeline())),
            emit: emit_thunk,
        }));
        // SAFETY: as above.
        unsafe { (host.add_backend)(host.registry, entry) };
    }
    true
}

/// Writes `result` through `write`: the output, or each diagnostic.
unsafe fn deliver(
    result: Result<impl AsRef<[u8]>, Vec<Diagnostic>>,
    sink: *mut c_void,
    write: Write,
) -> bool {
    match result {
        Ok(output) => {
            let piece = Str::of_bytes(output.as_ref());
            // SAFETY: the host's callback copies the bytes.
            unsafe { write(sink, OUTPUT, piece, NO_SPAN, NO_SPAN) };
            true
        }
        Err(diagnostics) => {
            for diagnostic in diagnostics {
                let (start, end) = diagnostic
                    .span
                    .map_or((NO_SPAN, NO_SPAN), |span| (span.start, span.end));
                // SAFETY: as above.
                unsafe { write(sink, DIAGNOSTIC, Str::of(&diagnostic.message), start, end) };
            }
            false
        }
    }
}

/// Runs `body` with a panic turned into a diagnostic.
fn guarded<T>(body: impl FnOnce() -> Result<T, Vec<Diagnostic>>) -> Result<T, Vec<Diagnostic>> {
    catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| Err(vec![Diagnostic::unplaced("the plugin panicked")]))
}

unsafe extern "C" fn translate_thunk(
    object: *const c_void,
    file: Str,
    source: Str,
    sink: *mut c_void,
    write: Write,
) -> bool {
    // SAFETY: `object` is the leaked frontend of this entry.
    let frontend = unsafe { &*object.cast::<Box<dyn Frontend>>() };
    let result = guarded(|| {
        // SAFETY: the host's strings live for the call.
        let (file, source) = unsafe { (file.text(), source.text()) };
        let (Ok(file), Ok(source)) = (file, source) else {
            return Err(vec![Diagnostic::unplaced("the source is not UTF-8")]);
        };
        frontend.translate(file, source)
    });
    // SAFETY: the host's sink and callback.
    unsafe { deliver(result, sink, write) }
}

unsafe extern "C" fn emit_thunk(
    object: *const c_void,
    module: Str,
    sink: *mut c_void,
    write: Write,
) -> bool {
    // SAFETY: `object` is the leaked backend of this entry.
    let backend = unsafe { &*object.cast::<Box<dyn Backend>>() };
    let result = guarded(|| {
        // SAFETY: the host's string lives for the call.
        let Ok(module) = (unsafe { module.text() }) else {
            return Err(vec![Diagnostic::unplaced("the module is not UTF-8")]);
        };
        backend.emit(module)
    });
    // SAFETY: the host's sink and callback.
    unsafe { deliver(result, sink, write) }
}

/// What a call through an entry wrote.
#[derive(Default)]
struct Collected {
    output: Vec<u8>,
    diagnostics: Vec<Diagnostic>,
}

unsafe extern "C" fn collect(sink: *mut c_void, kind: u32, text: Str, start: usize, end: usize) {
    // SAFETY: `sink` is the `Collected` of the call; `text` lives for it.
    let (collected, bytes) = unsafe { (&mut *sink.cast::<Collected>(), text.bytes()) };
    if kind == OUTPUT {
        collected.output.extend_from_slice(bytes);
    } else {
        collected.diagnostics.push(Diagnostic {
            message: String::from_utf8_lossy(bytes).into_owned(),
            span: (start != NO_SPAN && end != NO_SPAN && start <= end).then_some(start..end),
        });
    }
}

/// A frontend of a loaded library.
struct ForeignFrontend(&'static FrontendEntry);
/// A backend of a loaded library.
struct ForeignBackend(&'static BackendEntry);

// SAFETY: plugin objects must be thread-safe, as the traits require of
// built-in ones (documented on `export_plugin!`'s traits).
unsafe impl Send for ForeignFrontend {}
// SAFETY: as above.
unsafe impl Sync for ForeignFrontend {}
// SAFETY: as above.
unsafe impl Send for ForeignBackend {}
// SAFETY: as above.
unsafe impl Sync for ForeignBackend {}

/// The text of a plugin's string (invalid UTF-8 replaced).
fn owned(text: Str) -> String {
    // SAFETY: entries' strings live for the process.
    String::from_utf8_lossy(unsafe { text.bytes() }).into_owned()
}

/// The output of a call, or its diagnostics (at least one on failure).
fn finish(succeeded: bool, mut collected: Collected) -> Result<Vec<u8>, Vec<Diagnostic>> {
    if succeeded {
        return Ok(collected.output);
    }
    if collected.diagnostics.is_empty() {
        collected.diagnostics.push(Diagnostic::unplaced(
            "the plugin failed without a diagnostic",
        ));
    }
    Err(collected.diagnostics)
}

impl Frontend for ForeignFrontend {
    fn name(&self) -> String {
        owned(self.0.name)
    }

    fn extensions(&self) -> Vec<String> {
        owned(self.0.extensions)
            .split(',')
            .filter(|extension| !extension.is_empty())
            .map(str::to_string)
            .collect()
    }

    fn translate(&self, file: &str, source: &str) -> Result<String, Vec<Diagnostic>> {
        let mut collected = Collected::default();
        // SAFETY: the entry's function over its object; our strings and
        // sink live for the call.
        let succeeded = unsafe {
            (self.0.translate)(
                self.0.object,
                Str::of(file),
                Str::of(source),
                (&raw mut collected).cast(),
                collect,
            )
        };
        finish(succeeded, collected).and_then(|bytes| {
            String::from_utf8(bytes)
                .map_err(|_| vec![Diagnostic::unplaced("the frontend's module is not UTF-8")])
        })
    }
}

impl Backend for ForeignBackend {
    fn name(&self) -> String {
        owned(self.0.name)
    }

    fn pipeline(&self) -> String {
        owned(self.0.pipeline)
    }

    fn emit(&self, module: &str) -> Result<Vec<u8>, Vec<Diagnostic>> {
        let mut collected = Collected::default();
        // SAFETY: as for `translate`.
        let succeeded = unsafe {
            (self.0.emit)(
                self.0.object,
                Str::of(module),
                (&raw mut collected).cast(),
                collect,
            )
        };
        finish(succeeded, collected)
    }
}

unsafe extern "C" fn add_frontend(registry: *mut c_void, entry: *const FrontendEntry) {
    // SAFETY: `registry` is the host's registry during registration; the
    // entry lives for the process.
    unsafe {
        (*registry.cast::<Registry>()).add_frontend(Box::new(ForeignFrontend(&*entry)));
    }
}

unsafe extern "C" fn add_backend(registry: *mut c_void, entry: *const BackendEntry) {
    // SAFETY: as above.
    unsafe {
        (*registry.cast::<Registry>()).add_backend(Box::new(ForeignBackend(&*entry)));
    }
}

#[link(name = "dl")]
unsafe extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

const RTLD_NOW: c_int = 2;

/// A loaded plugin library (never unloaded: its entries stay in use).
#[derive(Debug)]
pub struct Library {
    path: String,
    handle: *mut c_void,
}

// SAFETY: the handle is only read (dlsym), which the loader allows from
// any thread.
unsafe impl Send for Library {}
// SAFETY: as above.
unsafe impl Sync for Library {}

/// The loader's last error.
fn loader_error() -> String {
    // SAFETY: dlerror returns null or a C string valid until the next call.
    let message = unsafe { dlerror() };
    if message.is_null() {
        return "unknown error".to_string();
    }
    // SAFETY: as above.
    unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned()
}

impl Library {
    /// Loads the library at `path`.
    pub fn open(path: &str) -> Result<Self, String> {
        let name = CString::new(path).map_err(|_| "the path has a NUL byte".to_string())?;
        // SAFETY: a C string; the library's initializers run here.
        let handle = unsafe { dlopen(name.as_ptr(), RTLD_NOW) };
        if handle.is_null() {
            let error = loader_error();
            // A C++ MLIR plugin expects the tool to export MLIR (`_ZN4mlir`
            // is the mangled namespace); pgpu does not.
            if error.contains("undefined symbol: _ZN4mlir") {
                return Err(format!(
                    "{error}\n(it needs MLIR's C++ symbols, so it looks like an MLIR pass or \
                     dialect plugin: `pgpu-opt --load-pass-plugin=` or \
                     `--load-dialect-plugin=` loads those; see docs/plugins.md)"
                ));
            }
            return Err(error);
        }
        Ok(Self {
            path: path.to_string(),
            handle,
        })
    }

    fn symbol(&self, name: &CStr) -> Result<*mut c_void, String> {
        // SAFETY: a live handle and a C string.
        let symbol = unsafe { dlsym(self.handle, name.as_ptr()) };
        if symbol.is_null() {
            return Err(format!(
                "'{}' is not a pgpu plugin: it has no '{}'",
                self.path,
                name.to_string_lossy()
            ));
        }
        Ok(symbol)
    }

    /// Checks the library's ABI version and lets it register into
    /// `registry`.
    pub fn register(&self, registry: &mut Registry) -> Result<(), String> {
        let version = self.symbol(c"pgpu_plugin_abi_version")?;
        let register = self.symbol(c"pgpu_plugin_register")?;
        // SAFETY: the symbol is the exported function of this signature.
        let version: extern "C" fn() -> u32 = unsafe { std::mem::transmute(version) };
        let found = version();
        if found != VERSION {
            return Err(format!(
                "'{}' was built for plugin ABI {found}; this pgpu has {VERSION}",
                self.path
            ));
        }
        // SAFETY: as above, and the versions agree.
        let register: unsafe extern "C" fn(*const Host) -> bool =
            unsafe { std::mem::transmute(register) };
        let host = Host {
            registry: (registry as *mut Registry).cast(),
            add_frontend,
            add_backend,
        };
        // SAFETY: the host and its registry live for the call.
        if unsafe { register(&host) } {
            Ok(())
        } else {
            Err(format!("'{}' failed to register (it panicked)", self.path))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upper-cases its source; a '!' is an error, a '?' a panic.
    struct Upper;

    impl Frontend for Upper {
        fn name(&self) -> String {
            "upper".to_string()
        }
        fn extensions(&self) -> Vec<String> {
            vec!["up".to_string(), "upper".to_string()]
        }
        fn translate(&self, _file: &str, source: &str) -> Result<String, Vec<Diagnostic>> {
            assert!(!source.contains('?'), "a question");
            match source.find('!') {
                Some(at) => Err(vec![Diagnostic::new("no '!' here", at..at + 1)]),
                None => Ok(source.to_uppercase()),
            }
        }
    }

    /// Reverses the module's bytes after its pipeline `builtin.module()`.
    struct Reverse;

    impl Backend for Reverse {
        fn name(&self) -> String {
            "reverse".to_string()
        }
        fn pipeline(&self) -> String {
            "builtin.module()".to_string()
        }
        fn emit(&self, module: &str) -> Result<Vec<u8>, Vec<Diagnostic>> {
            Ok(module.bytes().rev().collect())
        }
    }

    fn register(registry: &mut Registry) {
        registry.add_frontend(Box::new(Upper));
        registry.add_backend(Box::new(Reverse));
    }

    /// The host's side of a registration, in process: what `Library`
    /// does after `dlsym`.
    fn registered() -> Registry {
        let mut registry = Registry::default();
        let host = Host {
            registry: (&raw mut registry).cast(),
            add_frontend,
            add_backend,
        };
        // SAFETY: the host and registry live for the call.
        assert!(unsafe { register_plugin(&host, register) });
        registry
    }

    #[test]
    fn entries_carry_frontends_and_backends_across() {
        let registry = registered();
        let frontend = registry
            .frontend_for("dir/prog.upper")
            .expect("by extension");
        assert_eq!(frontend.name(), "upper");
        assert_eq!(frontend.extensions(), ["up", "upper"]);
        assert_eq!(frontend.translate("p.up", "spawn"), Ok("SPAWN".to_string()));
        assert!(registry.frontend_for("prog.bsgp").is_none());
        let backend = registry.backend("reverse").expect("by name");
        assert_eq!(backend.pipeline(), "builtin.module()");
        assert_eq!(backend.emit("abc"), Ok(b"cba".to_vec()));
        assert_eq!(registry.backend_names(), ["reverse"]);
    }

    #[test]
    fn diagnostics_and_panics_come_back_as_diagnostics() {
        let registry = registered();
        let frontend = registry.frontend_for("p.up").expect("by extension");
        assert_eq!(
            frontend.translate("p.up", "ab!"),
            Err(vec![Diagnostic::new("no '!' here", 2..3)])
        );
        assert_eq!(
            frontend.translate("p.up", "?"),
            Err(vec![Diagnostic::unplaced("the plugin panicked")])
        );
    }

    #[test]
    fn the_last_added_wins() {
        let mut registry = registered();
        registry.add_frontend(Box::new(Upper));
        assert_eq!(registry.frontend_names(), ["upper", "upper"]);
        assert!(registry.frontend_for("x.up").is_some());
    }

    #[test]
    fn a_library_that_is_not_there_is_an_error() {
        let error = Library::open("/nonexistent/libnothing.so").expect_err("no such file");
        assert!(error.contains("libnothing.so"), "{error}");
    }
}
