//! Kernel launch on the CPU device and kernel error reports.
//!
//! `pgpu_rt_parallel_for(n, body, context)` runs the iterations `[0, n)` of
//! a kernel (an `scf.parallel` loop outlined by the compiler into
//! `body(context, begin, end)`, which runs `begin .. end`) on the pool of
//! [`crate::pool`]: the range is cut into `min(n, 8 * threads)` contiguous
//! chunks of nearly equal size, taken dynamically by the threads (so
//! uneven iterations balance), and the call returns when all have run.
//! `n <= 0` runs nothing; one iteration runs on the calling thread. A
//! launch from inside a kernel body runs its chunks sequentially on that
//! thread. The pool is persistent: see [`crate::pool`] for the measured
//! launch costs against threads spawned per launch.
//!
//! `pgpu_rt_kernel_error(kernel, file, line, col, message)` is the report
//! of a run-time error inside a kernel (an out-of-bounds access check, a
//! failed assertion): it prints
//! `FILE:LINE:COL: error: in kernel NAME: MESSAGE` on stderr, after
//! flushing stdout, and exits with status 1; the first thread to call it
//! prints, others wait for the exit. `pgpu_rt_host_error(function, file,
//! line, col, message)` is the same for host code:
//! `FILE:LINE:COL: error: in FUNCTION: MESSAGE`.

use crate::error::{RtError, fatal, guard};
use crate::pool::pool;
use std::ffi::{CStr, c_char};

/// The outlined body of a kernel: runs iterations `begin .. end`.
pub type KernelBody = extern "C" fn(context: *mut u8, begin: i64, end: i64);

/// Chunks per thread of a launch.
pub const CHUNKS_PER_THREAD: usize = 8;

/// Runs `body` over `[0, n)` in parallel chunks.
pub fn parallel_for(n: i64, body: KernelBody, context: *mut u8) -> Result<(), RtError> {
    if n <= 0 {
        return Ok(());
    }
    let total = n as u64;
    let chunks =
        (pool().threads() * CHUNKS_PER_THREAD).min(usize::try_from(n).unwrap_or(usize::MAX));
    if chunks <= 1 {
        body(context, 0, n);
        return Ok(());
    }
    let context = context as usize;
    let bound = |chunk: usize| (total as u128 * chunk as u128 / chunks as u128) as i64;
    pool().run(chunks, &|chunk| {
        body(context as *mut u8, bound(chunk), bound(chunk + 1));
    })
}

/// Runs the kernel `body` over `[0, n)` on the CPU device.
///
/// `context` is passed through to every call of `body` (from several
/// threads at once).
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_parallel_for(n: i64, body: Option<KernelBody>, context: *mut u8) {
    guard(|| match body {
        Some(body) => parallel_for(n, body, context),
        None if n <= 0 => Ok(()),
        None => Err(RtError::Internal(
            "pgpu_rt_parallel_for: null kernel body".into(),
        )),
    })
}

/// The number of threads that run a launch on the CPU device.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_cpu_threads() -> i32 {
    guard(|| Ok(pool().threads() as i32))
}

/// # Safety
/// `text` is null or a NUL-terminated string.
unsafe fn text_of(text: *const c_char, missing: &str) -> String {
    if text.is_null() {
        return missing.into();
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// The report of a kernel's run-time error.
pub fn kernel_error_message(
    kernel: &str,
    file: &str,
    line: i32,
    col: i32,
    message: &str,
) -> String {
    format!("{file}:{line}:{col}: error: in kernel {kernel}: {message}")
}

/// The report of a host code's run-time error.
pub fn host_error_message(
    function: &str,
    file: &str,
    line: i32,
    col: i32,
    message: &str,
) -> String {
    format!("{file}:{line}:{col}: error: in {function}: {message}")
}

/// Reports an error in the host code of `function` at `file:line:col` and
/// exits with status 1.
///
/// # Safety
/// `function`, `file` and `message` are null or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_host_error(
    function: *const c_char,
    file: *const c_char,
    line: i32,
    col: i32,
    message: *const c_char,
) -> ! {
    let report = std::panic::catch_unwind(|| {
        // SAFETY: the caller's contract.
        let (function, file, message) = unsafe {
            (
                text_of(function, "<unknown>"),
                text_of(file, "<unknown>"),
                text_of(message, "error"),
            )
        };
        host_error_message(&function, &file, line, col, &message)
    });
    fatal(&report.unwrap_or_else(|_| "error: in host code".into()))
}

/// Reports an error inside kernel `kernel` at `file:line:col` and exits
/// with status 1.
///
/// # Safety
/// `kernel`, `file` and `message` are null or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_kernel_error(
    kernel: *const c_char,
    file: *const c_char,
    line: i32,
    col: i32,
    message: *const c_char,
) -> ! {
    let report = std::panic::catch_unwind(|| {
        // SAFETY: the caller's contract.
        let (kernel, file, message) = unsafe {
            (
                text_of(kernel, "<unknown>"),
                text_of(file, "<unknown>"),
                text_of(message, "error"),
            )
        };
        kernel_error_message(&kernel, &file, line, col, &message)
    });
    fatal(&report.unwrap_or_else(|_| "error: in a kernel".into()))
}
