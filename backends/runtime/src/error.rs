//! Run-time errors and how the C ABI reports them.
//!
//! Everything below the ABI returns [`RtError`] values. The exported
//! functions run their body through [`guard`]: an error (or, should one
//! ever happen, a Rust panic, caught with `catch_unwind` so that no unwind
//! crosses the FFI boundary) flushes stdout, prints
//! `pgpu runtime: error: MESSAGE` on stderr and exits the process with
//! status 1. A kernel fault ([`RtError::Kernel`]) is printed as its
//! source-located report instead. Only the first failing thread prints; others that fail at the
//! same time wait for the exit. The exit is `_exit`: no `atexit` handler
//! runs, because the CUDA driver's tear down of its contexts there races
//! with the program's other threads (a Fork task that still launches
//! kernels), which then die with SIGSEGV instead of the status 1 reported.

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

/// An error of a runtime call: a misuse by compiled code or a program input
/// the program cannot handle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RtError {
    #[error("out of memory allocating {bytes} bytes")]
    OutOfMemory { bytes: i64 },
    #[error("invalid allocation size {bytes}")]
    BadSize { bytes: i64 },
    #[error("{op}: negative {what} ({value})")]
    Negative {
        op: &'static str,
        what: &'static str,
        value: i64,
    },
    #[error("{op}: unknown element type code {code}")]
    BadElement { op: &'static str, code: i32 },
    #[error("{op}: unknown combining kind code {code}")]
    BadKind { op: &'static str, code: i32 },
    #[error("{op}: combining kind '{kind}' needs integer elements")]
    KindNeedsInteger {
        op: &'static str,
        kind: &'static str,
    },
    #[error("{op}: {what} needs integer elements")]
    NeedsInteger {
        op: &'static str,
        what: &'static str,
    },
    #[error("{op}: null or misaligned {what} list")]
    BadPointer {
        op: &'static str,
        what: &'static str,
    },
    #[error("{op}: the {output} list overlaps the {input} list")]
    Overlap {
        op: &'static str,
        output: &'static str,
        input: &'static str,
    },
    #[error("{op}: invalid element size {bytes}")]
    BadElementSize { op: &'static str, bytes: i64 },
    #[error("{op}: {what} overflows a 64-bit index")]
    Overflow {
        op: &'static str,
        what: &'static str,
    },
    #[error("program argument {position} ('{text}') is not an i{width} integer")]
    BadArgument {
        position: i64,
        text: String,
        width: u32,
    },
    #[error("printf: {0}")]
    Printf(String),
    #[error("dtempfree: invalid mark {mark}")]
    BadMark { mark: i64 },
    #[error("internal error: {0}")]
    Internal(String),
    /// A failed CUDA driver call: the call, the error's name
    /// (`CUDA_ERROR_...`) and the driver's description of it.
    #[error("{call} failed: {name}: {message}")]
    Cuda {
        call: &'static str,
        name: String,
        message: String,
    },
    /// The device cannot be chosen or used (`--device`, `PGPU_DEVICE`, a
    /// kernel launch on the cpu device).
    #[error("{0}")]
    Device(String),
    /// A fault of a kernel, already formatted as
    /// `FILE:LINE:COL: error: in kernel NAME: MESSAGE` (see
    /// [`crate::launch::kernel_error_message`]), maybe followed by note
    /// lines; printed as it is, without the `pgpu runtime: error:` prefix.
    #[error("{report}")]
    Kernel { report: String },
}

impl RtError {
    /// A failed CUDA call's error with `detail` appended to the driver's
    /// message (which kernel, the JIT log, what was asked for); other
    /// errors as they are.
    pub fn with_cuda_detail(self, detail: &str) -> Self {
        match self {
            RtError::Cuda {
                call,
                name,
                message,
            } => RtError::Cuda {
                call,
                name,
                message: format!("{message}{detail}"),
            },
            other => other,
        }
    }
}

/// Serializes fatal reports so that one message is printed whole.
static FATAL: Mutex<()> = Mutex::new(());

/// Prints `message` (already formatted, without the trailing newline) on
/// stderr after flushing stdout, and exits with status 1.
pub fn fatal(message: &str) -> ! {
    // A poisoned lock still serializes; keep going.
    let _lock = FATAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let _ = std::io::stdout().lock().flush();
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{message}");
    let _ = stderr.flush();
    // SAFETY: ends the process; stdout and stderr were flushed above, and
    // the program's output goes through Rust's stdout only.
    unsafe { _exit(1) }
}

unsafe extern "C" {
    /// POSIX's `_exit`: ends the process without running `atexit` handlers.
    fn _exit(status: std::ffi::c_int) -> !;
}

/// Reports `error` as `pgpu runtime: error: ...` (a kernel fault as its
/// own report) and exits with status 1.
pub fn fail(error: &RtError) -> ! {
    match error {
        RtError::Kernel { report } => fatal(report),
        _ => fatal(&format!("pgpu runtime: error: {error}")),
    }
}

/// Runs the body of an exported function: its value, or the report of its
/// error or panic and exit(1). Never unwinds.
pub fn guard<T>(body: impl FnOnce() -> Result<T, RtError>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => fail(&error),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            fail(&RtError::Internal(message))
        }
    }
}
