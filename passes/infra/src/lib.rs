//! Pass infrastructure shared by every pgpu pass crate and tool.
//!
//! * [`Pass`] is what a pass written in Rust implements: its command-line
//!   argument, summary, anchor operation, string options and body.
//!   [`register`] puts it in MLIR's global pass registry (through the C++
//!   layer in `lib/PassInfra.cpp`), so that it is listed by
//!   `pgpu-opt --list-passes`, has its own flag, and can be named with its
//!   options in any textual pipeline, nested among upstream passes.
//! * [`declare_passes!`] is the one declarative place per crate that lists
//!   the crate's passes.
//! * [`tool`] holds the pass-manager hooks `pgpu-opt` needs beyond the MLIR
//!   C API.

use melior::{
    dialect::DialectHandle,
    ir::{Location, OperationRef, operation::OperationLike},
};
use mlir_sys::{MlirDialectHandle, MlirLogicalResult, MlirOperation, MlirStringRef};
use std::{
    ffi::{CString, c_char},
    panic::{AssertUnwindSafe, catch_unwind},
};

pub mod diagnostics;
pub mod integer;
pub mod tool;

/// The unit attribute of an `scf.execute_region` whose lockstep lanes (a
/// GPU warp's threads) leave it together: set by passes that generate
/// regions whose lanes loop a data-dependent number of times
/// (`pgpu-lower-speculation`), honoured by the backends where lanes can
/// stay diverged after a region (`pgpu-reconverge-warps` on NVPTX); the
/// region means nothing more anywhere else.
pub const RECONVERGE_ATTRIBUTE: &str = "pgpu.reconverge";

/// One string option of a pass, as `name=value` in a pipeline.
#[derive(Debug, Clone, Copy)]
pub struct PassOption {
    pub name: &'static str,
    pub description: &'static str,
    pub default: &'static str,
}

/// The option values a pass instance runs with, in declaration order.
#[derive(Debug)]
pub struct PassOptions<'a> {
    declared: &'static [PassOption],
    values: Vec<&'a str>,
}

impl<'a> PassOptions<'a> {
    /// The raw value of option `name`.
    pub fn string(&self, name: &str) -> Result<&'a str, String> {
        self.declared
            .iter()
            .position(|option| option.name == name)
            .and_then(|index| self.values.get(index).copied())
            .ok_or_else(|| format!("the pass declares no option '{name}'"))
    }

    /// Option `name` parsed as a number or another `FromStr` type.
    pub fn parse<T: std::str::FromStr>(&self, name: &str) -> Result<T, String> {
        let text = self.string(name)?;
        text.trim()
            .parse()
            .map_err(|_| format!("option '{name}' has the invalid value '{text}'"))
    }

    /// Option `name` as a boolean (`true`/`false`/`1`/`0`).
    pub fn flag(&self, name: &str) -> Result<bool, String> {
        match self.string(name)?.trim() {
            "true" | "1" => Ok(true),
            "false" | "0" | "" => Ok(false),
            other => Err(format!(
                "option '{name}' expects true or false, not '{other}'"
            )),
        }
    }
}

/// The pass failed; its diagnostics have been emitted.
#[derive(Debug, thiserror::Error)]
#[error("pass failed")]
pub struct PassFailure;

/// A pass written in Rust. A pass without options is built as its
/// `Default`; one with options implements [`Pass::from_options`].
pub trait Pass: Sized + Default + 'static {
    /// The pipeline and flag name, e.g. `pgpu-lower-spawn`.
    const ARGUMENT: &'static str;
    /// One line for `--list-passes`.
    const SUMMARY: &'static str;
    /// The operation the pass runs on; `None` for any operation.
    const ANCHOR: Option<&'static str> = None;
    /// Options accepted as `ARGUMENT{name=value ...}`.
    const OPTIONS: &'static [PassOption] = &[];

    /// Dialects the pass may create operations of.
    fn dependent_dialects() -> Vec<DialectHandle> {
        Vec::new()
    }

    /// Builds the pass from its option values. The default serves passes
    /// without options; a pass that declares options must read them here.
    fn from_options(_options: &PassOptions) -> Result<Self, String> {
        if Self::OPTIONS.is_empty() {
            Ok(Self::default())
        } else {
            Err(format!(
                "internal error: {} declares options but does not read them",
                Self::ARGUMENT
            ))
        }
    }

    /// Runs the pass on `operation`. On failure the pass has emitted an error
    /// diagnostic at the offending location (see [`emit_error`]).
    fn run(&self, operation: OperationRef) -> Result<(), PassFailure>;
}

#[repr(C)]
struct PassDefinition {
    argument: *const c_char,
    description: *const c_char,
    anchor: *const c_char,
    num_options: isize,
    option_names: *const *const c_char,
    option_descriptions: *const *const c_char,
    option_defaults: *const *const c_char,
    num_dependent_dialects: isize,
    dependent_dialects: *const MlirDialectHandle,
    run: unsafe extern "C" fn(MlirOperation, isize, *const MlirStringRef) -> MlirLogicalResult,
}

unsafe extern "C" {
    fn pgpuRegisterPass(definition: *const PassDefinition);
    fn pgpuEmitDiagnostic(location: mlir_sys::MlirLocation, severity: i32, message: MlirStringRef);
}

/// Severity of a diagnostic emitted from a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error = 0,
    Warning = 1,
    Note = 2,
    Remark = 3,
}

/// Emits a diagnostic at `location` through the context's handlers.
pub fn emit_diagnostic(location: Location, severity: Severity, message: &str) {
    let message = melior::StringRef::new(message);
    // SAFETY: the location is valid for its context and the string outlives
    // the call.
    unsafe { pgpuEmitDiagnostic(location.to_raw(), severity as i32, message.to_raw()) }
}

/// Emits an error at `location`; returns the failure to propagate.
pub fn emit_error(location: Location, message: &str) -> PassFailure {
    emit_diagnostic(location, Severity::Error, message);
    PassFailure
}

/// The bytes an `MlirStringRef` points to (empty for a null reference).
///
/// # Safety
/// `value` must point to `length` readable bytes that outlive `'a`.
pub unsafe fn string_ref_bytes<'a>(value: MlirStringRef) -> &'a [u8] {
    if value.data.is_null() || value.length == 0 {
        return &[];
    }
    // SAFETY: guaranteed by the caller.
    unsafe { std::slice::from_raw_parts(value.data.cast::<u8>(), value.length) }
}

/// The text of an `MlirStringRef`, invalid UTF-8 replaced.
///
/// # Safety
/// As for [`string_ref_bytes`], for the duration of the call.
pub unsafe fn string_ref_to_string(value: MlirStringRef) -> String {
    // SAFETY: guaranteed by the caller.
    String::from_utf8_lossy(unsafe { string_ref_bytes(value) }).into_owned()
}

fn leak_c_string(text: &str) -> *const c_char {
    // Definitions live as long as the process's pass registry.
    CString::new(text)
        .unwrap_or_else(|_| c"<invalid>".to_owned())
        .into_raw()
}

fn leak_c_strings(texts: impl Iterator<Item = &'static str>) -> *const *const c_char {
    let pointers: Vec<*const c_char> = texts.map(leak_c_string).collect();
    Box::leak(pointers.into_boxed_slice()).as_ptr()
}

unsafe extern "C" fn run_pass<P: Pass>(
    operation: MlirOperation,
    num_values: isize,
    values: *const MlirStringRef,
) -> MlirLogicalResult {
    let raw_values = if values.is_null() || num_values <= 0 {
        &[]
    } else {
        // SAFETY: the C++ pass passes one value per declared option.
        unsafe { std::slice::from_raw_parts(values, num_values as usize) }
    };
    let values = raw_values
        .iter()
        .map(|value| {
            // SAFETY: each value points into a live std::string.
            std::str::from_utf8(unsafe { string_ref_bytes(*value) }).unwrap_or("")
        })
        .collect();
    // SAFETY: MLIR hands the pass a valid operation for the duration of the run.
    let operation = unsafe { OperationRef::from_raw(operation) };
    let options = PassOptions {
        declared: P::OPTIONS,
        values,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let pass = P::from_options(&options).map_err(|message| {
            emit_error(
                operation.location(),
                &format!("invalid options for pass '{}': {message}", P::ARGUMENT),
            )
        })?;
        pass.run(operation)
    }));
    let succeeded = match outcome {
        Ok(result) => result.is_ok(),
        Err(_) => {
            emit_error(
                operation.location(),
                &format!("internal compiler error in pass '{}'", P::ARGUMENT),
            );
            false
        }
    };
    MlirLogicalResult {
        value: i8::from(succeeded),
    }
}

/// Registers pass `P` in MLIR's global registry. Call once per process (the
/// `register_passes` function [`declare_passes!`] generates guards this).
pub fn register<P: Pass>() {
    if let [option] = P::OPTIONS
        && let Ok(mut sole) = SOLE_OPTIONS.lock()
    {
        sole.push((P::ARGUMENT, option.name));
    }
    let dialects: Vec<MlirDialectHandle> = P::dependent_dialects()
        .into_iter()
        .map(DialectHandle::to_raw)
        .collect();
    let definition = Box::leak(Box::new(PassDefinition {
        argument: leak_c_string(P::ARGUMENT),
        description: leak_c_string(P::SUMMARY),
        anchor: leak_c_string(P::ANCHOR.unwrap_or("")),
        num_options: P::OPTIONS.len() as isize,
        option_names: leak_c_strings(P::OPTIONS.iter().map(|option| option.name)),
        option_descriptions: leak_c_strings(P::OPTIONS.iter().map(|option| option.description)),
        option_defaults: leak_c_strings(P::OPTIONS.iter().map(|option| option.default)),
        num_dependent_dialects: dialects.len() as isize,
        dependent_dialects: Box::leak(dialects.into_boxed_slice()).as_ptr(),
        run: run_pass::<P>,
    }));
    // SAFETY: the definition is leaked, so it outlives the registry.
    unsafe { pgpuRegisterPass(definition) }
}

/// Registered Rust passes with exactly one option, and that option's name.
static SOLE_OPTIONS: std::sync::Mutex<Vec<(&str, &str)>> = std::sync::Mutex::new(Vec::new());

/// The only option of the registered Rust pass `argument`, if it has exactly
/// one: tools accept `--pass=value` for `--pass="option=value"`.
pub fn sole_option(argument: &str) -> Option<&'static str> {
    SOLE_OPTIONS
        .lock()
        .ok()?
        .iter()
        .find(|(pass, _)| *pass == argument)
        .map(|(_, option)| *option)
}

/// Declares a crate's passes in one place and generates its
/// `register_passes()` (idempotent) and `PASS_ARGUMENTS`.
///
/// ```ignore
/// pgpu_pass_infra::declare_passes![LowerSpawnToGpu, FormSupersteps];
/// ```
#[macro_export]
macro_rules! declare_passes {
    ($($pass:ty),+ $(,)?) => {
        /// Registers every pass of this crate in MLIR's pass registry.
        pub fn register_passes() {
            static ONCE: ::std::sync::Once = ::std::sync::Once::new();
            ONCE.call_once(|| {
                $($crate::register::<$pass>();)+
            });
        }

        /// The pipeline names of this crate's passes.
        pub const PASS_ARGUMENTS: &[&str] = &[$(<$pass as $crate::Pass>::ARGUMENT),+];
    };
}
