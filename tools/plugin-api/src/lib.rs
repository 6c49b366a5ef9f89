//! The plugin API of pgpu: what a new frontend or backend implements, and
//! how the tools find it.
//!
//! * [`Frontend`]: source text of some extension to pgpu IR, given as
//!   MLIR's textual form (a module whose `func.func @main` is the program;
//!   `pgpu.spawn`, `pgpu.rank` and the other `pgpu` ops for parallelism).
//!   Errors are [`Diagnostic`]s with byte spans into the source, which the
//!   driver renders like its own frontends'.
//! * [`Backend`]: the kernel stage (`pgpu emit --stage kernels`) to an
//!   artifact: its textual pass pipeline, run by the driver, then its
//!   [`Backend::emit`] on the resulting module's text.
//! * Passes are MLIR passes: in Rust, `pgpu_pass_infra::Pass` registered by
//!   a function the [`Registry`] keeps ([`Registry::add_passes`]); as a
//!   shared library, MLIR's own pass plugin ABI (`pgpu-opt
//!   --load-pass-plugin=`).
//!
//! Two ways in. A crate that depends on `pgpu` fills a [`Registry`] and
//! calls `pgpu::main_with(registry)`: its own driver, with the plugins
//! built in. Or a shared library (`crate-type = ["cdylib"]`) that exports
//! its registration with [`export_plugin!`], loaded at run time with `pgpu
//! --load-plugin=PATH` ([`Registry::load`]). The library's side of that C
//! ABI is in [`abi`]; strings cross as (pointer, length) pairs and results
//! through callbacks, so neither side frees the other's memory, and the
//! two sides need not share a compiler version.
//!
//! Text is the interchange on purpose: a plugin needs no MLIR library of
//! its own (MLIR's C++ objects cannot safely cross into a library that
//! links another copy of MLIR), builds in seconds, and its output can be
//! read, saved and replayed with `pgpu-opt`.

pub mod abi;

/// A message about a source or module, with the byte range it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub message: String,
    /// Byte offsets into the text the plugin was given, when it can say.
    pub span: Option<std::ops::Range<usize>>,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>, span: std::ops::Range<usize>) -> Self {
        Self {
            message: message.into(),
            span: Some(span),
        }
    }

    /// A diagnostic about the whole input.
    pub fn unplaced(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            span: None,
        }
    }
}

/// A language the driver can read.
pub trait Frontend: Send + Sync {
    /// A short name, for messages.
    fn name(&self) -> String;
    /// File extensions without the dot (`arr` for `prog.arr`).
    fn extensions(&self) -> Vec<String>;
    /// The program in `source` (read from `file`) as pgpu IR in MLIR's
    /// textual form.
    fn translate(&self, file: &str, source: &str) -> Result<String, Vec<Diagnostic>>;
}

/// A target the driver can compile to.
pub trait Backend: Send + Sync {
    /// The name `pgpu compile --backend NAME` selects it by.
    fn name(&self) -> String;
    /// The textual pass pipeline (`builtin.module(...)`) from the kernel
    /// stage to the module [`Backend::emit`] takes.
    fn pipeline(&self) -> String;
    /// The artifact of `module`, the text of the module after
    /// [`Backend::pipeline`].
    fn emit(&self, module: &str) -> Result<Vec<u8>, Vec<Diagnostic>>;
}

/// The frontends, backends and pass registrations a tool consults.
#[derive(Default)]
pub struct Registry {
    frontends: Vec<Box<dyn Frontend>>,
    backends: Vec<Box<dyn Backend>>,
    passes: Vec<fn()>,
    /// Run-time plugins stay loaded for the process.
    libraries: Vec<abi::Library>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field(
                "frontends",
                &self.frontends.iter().map(|f| f.name()).collect::<Vec<_>>(),
            )
            .field(
                "backends",
                &self.backends.iter().map(|b| b.name()).collect::<Vec<_>>(),
            )
            .field("passes", &self.passes.len())
            .field("libraries", &self.libraries.len())
            .finish()
    }
}

impl Registry {
    pub fn add_frontend(&mut self, frontend: Box<dyn Frontend>) {
        self.frontends.push(frontend);
    }

    pub fn add_backend(&mut self, backend: Box<dyn Backend>) {
        self.backends.push(backend);
    }

    /// A function that registers passes in MLIR's registry (a crate's
    /// `register_passes`); the tool calls it when it makes its context.
    pub fn add_passes(&mut self, register: fn()) {
        self.passes.push(register);
    }

    /// The frontend of `file`, by its extension; the one added last wins.
    pub fn frontend_for(&self, file: &str) -> Option<&dyn Frontend> {
        let extension = std::path::Path::new(file).extension()?.to_str()?;
        self.frontends
            .iter()
            .rev()
            .find(|frontend| frontend.extensions().iter().any(|e| e == extension))
            .map(Box::as_ref)
    }

    /// The backend named `name`; the one added last wins.
    pub fn backend(&self, name: &str) -> Option<&dyn Backend> {
        self.backends
            .iter()
            .rev()
            .find(|backend| backend.name() == name)
            .map(Box::as_ref)
    }

    pub fn backend_names(&self) -> Vec<String> {
        self.backends.iter().map(|backend| backend.name()).collect()
    }

    pub fn frontend_names(&self) -> Vec<String> {
        self.frontends
            .iter()
            .map(|frontend| frontend.name())
            .collect()
    }

    /// The pass registrations added.
    pub fn passes(&self) -> &[fn()] {
        &self.passes
    }

    /// Loads the run-time plugin at `path` (see [`export_plugin!`]) and adds
    /// what it registers.
    pub fn load(&mut self, path: &str) -> Result<(), String> {
        let library = abi::Library::open(path)?;
        library.register(self)?;
        self.libraries.push(library);
        Ok(())
    }
}
