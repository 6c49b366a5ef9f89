//! Pass-manager and parser hooks for `mlir-opt`-like tools, beyond the MLIR
//! C API: the registered-pass list, pass flags with implicit nesting, IR
//! printing filtered by pass, and parsing with a buffer name so that
//! diagnostics read `file:line:col`.

use melior::{
    Context, StringRef,
    dialect::DialectRegistry,
    ir::{Module, operation::OperationPrintingFlags},
    pass::PassManager,
    utility::{register_all_dialects, register_all_llvm_translations, register_all_passes},
};
use mlir_sys::{MlirContext, MlirOpPrintingFlags, MlirOperation, MlirPassManager, MlirStringRef};
use std::ffi::c_void;

unsafe extern "C" {
    fn pgpuPrintRegisteredPasses();
    fn pgpuIsRegisteredPassOrPipeline(name: MlirStringRef) -> bool;
    fn pgpuAddPassFromFlag(
        pass_manager: MlirPassManager,
        name: MlirStringRef,
        options: MlirStringRef,
        error_callback: unsafe extern "C" fn(MlirStringRef, *mut c_void),
        user_data: *mut c_void,
    ) -> mlir_sys::MlirLogicalResult;
    #[allow(clippy::too_many_arguments)]
    fn pgpuEnableIRPrinting(
        pass_manager: MlirPassManager,
        before_all: bool,
        after_all: bool,
        before_names: *const MlirStringRef,
        num_before: isize,
        after_names: *const MlirStringRef,
        num_after: isize,
        module_scope: bool,
        after_only_on_change: bool,
        flags: MlirOpPrintingFlags,
    );
    fn pgpuContextSetPrintOpOnDiagnostic(context: MlirContext, enable: bool);
    fn pgpuParseModule(
        context: MlirContext,
        source: MlirStringRef,
        buffer_name: MlirStringRef,
    ) -> MlirOperation;
    fn pgpuLoadPassPlugin(
        path: MlirStringRef,
        on_error: unsafe extern "C" fn(MlirStringRef, *mut c_void),
        user_data: *mut c_void,
    ) -> bool;
    fn pgpuLoadDialectPlugin(
        path: MlirStringRef,
        on_error: unsafe extern "C" fn(MlirStringRef, *mut c_void),
        user_data: *mut c_void,
    ) -> bool;
    fn pgpuAppendPluginDialects(context: MlirContext);
}

/// Which kind of MLIR plugin to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginKind {
    /// `mlirGetPassPluginInfo`: passes, registered at once.
    Pass,
    /// `mlirGetDialectPluginInfo`: dialects, for every context made after.
    Dialect,
}

/// Loads the MLIR plugin at `path` (a shared library with MLIR's plugin
/// ABI, built against MLIR 22's headers; its MLIR symbols resolve to the
/// tool's own, which exports them). The error is the loader's message.
pub fn load_plugin(kind: PluginKind, path: &str) -> Result<(), String> {
    unsafe extern "C" fn collect(message: MlirStringRef, user_data: *mut c_void) {
        // SAFETY: `user_data` is the `String` below, alive for the call;
        // the message is valid for the callback.
        unsafe { (*user_data.cast::<String>()).push_str(&crate::string_ref_to_string(message)) }
    }
    let mut error = String::new();
    let path_ref = StringRef::new(path).to_raw();
    let user_data = (&raw mut error).cast::<c_void>();
    // SAFETY: the path and the error string outlive the call.
    let loaded = unsafe {
        match kind {
            PluginKind::Pass => pgpuLoadPassPlugin(path_ref, collect, user_data),
            PluginKind::Dialect => pgpuLoadDialectPlugin(path_ref, collect, user_data),
        }
    };
    if loaded { Ok(()) } else { Err(error) }
}

/// A context with every upstream dialect, the `pgpu` dialect and the LLVM IR
/// translations, and with every upstream and pgpu pass registered.
pub fn create_context(register_pgpu_passes: &[fn()]) -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    pgpu_dialect::register(&registry);
    let context = Context::new();
    context.append_dialect_registry(&registry);
    // SAFETY: a live context.
    unsafe { pgpuAppendPluginDialects(context.to_raw()) };
    register_all_llvm_translations(&context);
    static UPSTREAM: std::sync::Once = std::sync::Once::new();
    UPSTREAM.call_once(register_all_passes);
    for register in register_pgpu_passes {
        register();
    }
    context
}

/// Prints every registered pass and pipeline with its summary and options,
/// as `mlir-opt --list-passes` does.
pub fn print_registered_passes() {
    // SAFETY: prints the global registry.
    unsafe { pgpuPrintRegisteredPasses() }
}

/// Whether `name` is a registered pass or pass pipeline.
pub fn is_registered_pass(name: &str) -> bool {
    // SAFETY: the string outlives the call.
    unsafe { pgpuIsRegisteredPassOrPipeline(StringRef::new(name).to_raw()) }
}

unsafe extern "C" fn collect_error(message: MlirStringRef, user_data: *mut c_void) {
    // SAFETY: user_data is the &mut String passed below; message is valid here.
    let errors = unsafe { &mut *user_data.cast::<String>() };
    if !errors.is_empty() {
        errors.push('\n');
    }
    // SAFETY: the message is valid for the duration of the callback.
    errors.push_str(&unsafe { crate::string_ref_to_string(message) });
}

/// Appends pass or pipeline `name` with `options` (as written after `=` on
/// the command line), nesting op-specific passes implicitly.
pub fn add_pass_from_flag(
    pass_manager: &PassManager,
    name: &str,
    options: &str,
) -> Result<(), String> {
    let mut errors = String::new();
    // SAFETY: the pass manager is alive; the callback writes into `errors`.
    let result = unsafe {
        pgpuAddPassFromFlag(
            pass_manager.to_raw(),
            StringRef::new(name).to_raw(),
            StringRef::new(options).to_raw(),
            collect_error,
            (&mut errors as *mut String).cast(),
        )
    };
    if result.value == 0 {
        Err(if errors.is_empty() {
            format!("cannot add pass '{name}'")
        } else {
            errors
        })
    } else {
        Ok(())
    }
}

/// Which passes print the IR before or after they run.
#[derive(Debug, Default, Clone)]
pub struct IrPrinting {
    pub before_all: bool,
    pub after_all: bool,
    pub before: Vec<String>,
    pub after: Vec<String>,
    pub module_scope: bool,
    pub after_only_on_change: bool,
}

impl IrPrinting {
    pub fn is_enabled(&self) -> bool {
        self.before_all || self.after_all || !self.before.is_empty() || !self.after.is_empty()
    }
}

/// Prints the IR to stderr around the passes `printing` selects.
pub fn enable_ir_printing(
    pass_manager: &PassManager,
    printing: &IrPrinting,
    flags: &OperationPrintingFlags,
) {
    let before: Vec<MlirStringRef> = printing
        .before
        .iter()
        .map(|name| StringRef::new(name).to_raw())
        .collect();
    let after: Vec<MlirStringRef> = printing
        .after
        .iter()
        .map(|name| StringRef::new(name).to_raw())
        .collect();
    // SAFETY: the names are copied into sets before the call returns.
    unsafe {
        pgpuEnableIRPrinting(
            pass_manager.to_raw(),
            printing.before_all,
            printing.after_all,
            before.as_ptr(),
            before.len() as isize,
            after.as_ptr(),
            after.len() as isize,
            printing.module_scope,
            printing.after_only_on_change,
            flags.to_raw(),
        )
    }
}

/// Parses `source` into a module whose locations name `buffer_name`. On
/// failure the diagnostics went to the context's handlers.
pub fn parse_module<'c>(
    context: &'c Context,
    source: &str,
    buffer_name: &str,
) -> Option<Module<'c>> {
    // SAFETY: both strings outlive the call; the parser copies what it keeps.
    let operation = unsafe {
        pgpuParseModule(
            context.to_raw(),
            StringRef::new(source).to_raw(),
            StringRef::new(buffer_name).to_raw(),
        )
    };
    if operation.ptr.is_null() {
        return None;
    }
    // SAFETY: the operation is a fresh, owned builtin.module.
    unsafe {
        Some(Module::from_raw(mlir_sys::mlirModuleFromOperation(
            operation,
        )))
    }
}

/// Whether diagnostics on an operation carry a note printing the operation.
pub fn set_print_op_on_diagnostic(context: &Context, enable: bool) {
    // SAFETY: the context is alive.
    unsafe { pgpuContextSetPrintOpOnDiagnostic(context.to_raw(), enable) }
}

/// Reading input and writing output files.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum FileError {
    #[error("cannot open input file '{path}': {reason}")]
    #[diagnostic(code(pgpu::input))]
    Input { path: String, reason: String },
    #[error("input is not UTF-8 text")]
    #[diagnostic(code(pgpu::binary_input), help("this tool reads text"))]
    NotText {
        #[source_code]
        source_code: miette::NamedSource<String>,
        #[label("invalid byte at {line}:{column}")]
        span: miette::SourceSpan,
        line: usize,
        column: usize,
    },
    #[error("cannot write output file '{path}': {reason}")]
    #[diagnostic(code(pgpu::output))]
    Output { path: String, reason: String },
}

/// Reads `path` (`-` for standard input) as text; returns the name to use
/// in diagnostics and the text.
pub fn read_input(path: &str) -> Result<(String, String), FileError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let name = if path == "-" { "<stdin>" } else { path };
    let result = if path == "-" {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::File::open(path).and_then(|mut file| file.read_to_end(&mut bytes).map(|_| ()))
    };
    result.map_err(|error| FileError::Input {
        path: path.to_string(),
        reason: error.to_string(),
    })?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok((name.to_string(), text)),
        Err(error) => {
            let valid_up_to = error.utf8_error().valid_up_to();
            let bytes = error.into_bytes();
            let prefix = String::from_utf8_lossy(&bytes[..valid_up_to]);
            let line = prefix.matches('\n').count() + 1;
            let column = prefix
                .rsplit('\n')
                .next()
                .map_or(0, |last| last.chars().count())
                + 1;
            let lossy = String::from_utf8_lossy(&bytes).into_owned();
            Err(FileError::NotText {
                span: miette::SourceSpan::new(prefix.len().into(), 1),
                source_code: miette::NamedSource::new(name, lossy),
                line,
                column,
            })
        }
    }
}

/// Writes `text` to `path` (`-` for standard output) through a temporary
/// file in the same directory, renamed into place, so that a failure never
/// leaves a partial file.
pub fn write_output(path: &str, text: &str) -> Result<(), FileError> {
    write_output_bytes(path, text.as_bytes())
}

/// [`write_output`] for bytes.
pub fn write_output_bytes(path: &str, bytes: &[u8]) -> Result<(), FileError> {
    use std::io::Write;
    let error = |reason: String| FileError::Output {
        path: path.to_string(),
        reason,
    };
    if path == "-" {
        let mut stdout = std::io::stdout().lock();
        return stdout
            .write_all(bytes)
            .and_then(|_| stdout.flush())
            .map_err(|e| error(e.to_string()));
    }
    let directory = std::path::Path::new(path)
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(directory).map_err(|e| error(e.to_string()))?;
    file.write_all(bytes).map_err(|e| error(e.to_string()))?;
    file.persist(path).map_err(|e| error(e.error.to_string()))?;
    Ok(())
}

/// The pipelines `pipelines` (each `builtin.module(...)`) run one after
/// the other, as one textual pipeline: what a tool that runs them in turn
/// prints for `pgpu-opt --pass-pipeline=` to replay. Empty ones are
/// skipped; a pipeline not anchored on `builtin.module` is an internal
/// error.
pub fn join_module_pipelines(pipelines: &[&str]) -> Result<String, String> {
    let mut passes = Vec::new();
    for pipeline in pipelines {
        let inner = pipeline
            .trim()
            .strip_prefix("builtin.module(")
            .and_then(|rest| rest.strip_suffix(')'))
            .ok_or_else(|| {
                format!("internal error: '{pipeline}' is not a builtin.module pipeline")
            })?;
        if !inner.is_empty() {
            passes.push(inner);
        }
    }
    Ok(format!("builtin.module({})", passes.join(",")))
}

#[cfg(test)]
mod tests {
    use super::join_module_pipelines;

    #[test]
    fn module_pipelines_join_in_order() {
        assert_eq!(
            join_module_pipelines(&[
                "builtin.module(a,b{x=1})",
                "builtin.module()",
                "builtin.module(func.func(c),d)"
            ]),
            Ok("builtin.module(a,b{x=1},func.func(c),d)".to_string())
        );
        assert!(join_module_pipelines(&["func.func(a)"]).is_err());
    }
}
