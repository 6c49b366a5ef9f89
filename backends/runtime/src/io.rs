//! Host I/O of compiled programs: the `pgpu.printf`, `pgpu.argi`,
//! `pgpu.wtime`, `pgpu.rand_seed` and `pgpu.rand_u32` ops.
//!
//! **Arguments.** `pgpu_rt_init(argc, argv)` records `argv[1 ..]` (the
//! arguments after the program name) for `argi`, less the runtime's own
//! `--device cpu|cuda` flag, which chooses the device ([`crate::device`]),
//! and starts the clock.
//! `pgpu_rt_argi(k, default)` is the `k`-th recorded argument (from 0)
//! parsed as a decimal integer (surrounding white space allowed), or
//! `default` when there are fewer arguments or `k` is negative. An argument
//! that is not an integer of the width (for i32: from -2^31 to 2^32-1, the
//! values that print as an i32 or a u32; larger unsigned values wrap) is
//! the error `program argument K ('TEXT') is not an i32 integer`, as in the
//! interpreter. `pgpu_rt_argi_width(k, default, width)` does the same for
//! any width from 1 to 64 and returns the value sign-extended.
//!
//! **Clock.** `pgpu_rt_wtime()` is the seconds since `pgpu_rt_init` (or
//! the first runtime clock read), from the monotonic clock (nanosecond
//! resolution). The CPU device runs kernels synchronously, so a read
//! follows all launched work; on the cuda device the call first waits for
//! all device work, so host timings of kernels are right. With the
//! environment variable `PGPU_CLOCK=device` (read by `pgpu_rt_init`; `host`
//! or unset is the default, anything else an error), reads on the cuda
//! device use the device's clock: the time between two reads is what CUDA
//! events recorded around the region measure ([`crate::cuda::device_clock`]).
//!
//! **Random numbers.** `pgpu_rt_rand_seed(s)` sets the SplitMix64 state to
//! `s`; `pgpu_rt_rand_u32()` advances it and returns the next number's bits
//! as an i32 (the state starts at 0), the sequence of the interpreter's
//! `pgpu.rand_u32`. The state is one atomic: calls from several threads
//! each get a distinct number of the sequence.
//!
//! **printf without varargs.** A call is
//! `pgpu_rt_printf_begin(format, len)`, one `pgpu_rt_printf_i64` or
//! `pgpu_rt_printf_f64` per conversion in order, then `pgpu_rt_printf_end()`.
//! The calls of one printf happen on one thread (the state is per thread),
//! so kernels may printf from any number of threads. An integer is passed
//! sign-extended to 64 bits with its type's width (`bits`: 1 to 64; 0 means
//! 64): signed conversions (`d i`) print it sign-extended from `bits` (an
//! `i1` as 0 or 1), unsigned ones (`u x X o c`) zero-extended from `bits`,
//! exactly as the interpreter does; `f32` operands are passed promoted to
//! f64. `end` formats with [`crate::printf`] into a buffer and writes it to
//! stdout in one locked write followed by a flush: **each printf call's
//! text is written atomically** (never interleaved with another runtime
//! printf, from any thread) and is on stdout when `end` returns; the order
//! between threads is the order their `end` calls take the lock. A format
//! that does not parse, a conversion without an argument or of the wrong
//! kind, or arguments left over, is an error.

use crate::error::{RtError, guard};
use crate::printf::{self, Piece};
use std::cell::RefCell;
use std::ffi::{CStr, c_char};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static ARGS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static START: OnceLock<Instant> = OnceLock::new();
/// Whether `PGPU_CLOCK=device` asked for the device's clock.
static DEVICE_CLOCK: AtomicBool = AtomicBool::new(false);
static RANDOM: AtomicU64 = AtomicU64::new(0);

/// Records the program arguments (after the program name).
pub fn set_args(args: Vec<String>) {
    *ARGS.lock().unwrap_or_else(|poison| poison.into_inner()) = args;
}

/// Sign-extends the low `width` bits of `value`.
fn sext(value: i64, width: u32) -> i64 {
    if width >= 64 {
        value
    } else {
        let shift = 64 - width;
        (value << shift) >> shift
    }
}

/// Zero-extends the low `width` bits of `value`.
fn zext(value: i64, width: u32) -> u64 {
    if width >= 64 {
        value as u64
    } else {
        (value as u64) & ((1u64 << width) - 1)
    }
}

/// `argi(position, fallback)` at integer `width` (1 to 64), sign-extended.
pub fn argi(position: i64, fallback: i64, width: u32) -> Result<i64, RtError> {
    let width = width.clamp(1, 64);
    let args = ARGS.lock().unwrap_or_else(|poison| poison.into_inner());
    let Some(text) = usize::try_from(position).ok().and_then(|p| args.get(p)) else {
        return Ok(fallback);
    };
    let fits = |v: i64| width >= 64 || (v >= -(1i64 << (width - 1)) && v < (1i64 << width));
    match text.trim().parse::<i64>().ok().filter(|&v| fits(v)) {
        Some(value) => Ok(sext(value, width)),
        None => Err(RtError::BadArgument {
            position,
            text: text.clone(),
            width,
        }),
    }
}

/// Chooses `wtime`'s clock from `PGPU_CLOCK`'s value.
fn configure_clock(value: Option<&str>) -> Result<(), RtError> {
    let device = match value {
        None | Some("") | Some("host") => false,
        Some("device") => true,
        Some(other) => {
            return Err(RtError::Device(format!(
                "PGPU_CLOCK must be 'host' or 'device', not '{other}'"
            )));
        }
    };
    DEVICE_CLOCK.store(device, Ordering::Relaxed);
    Ok(())
}

/// Seconds since the clock started.
pub fn wtime() -> f64 {
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// Sets the generator's state.
pub fn rand_seed(seed: i64) {
    RANDOM.store(seed as u64, Ordering::Relaxed);
}

/// The next number of the generator.
pub fn rand_u32() -> u32 {
    let gamma = printf::SPLITMIX64_GAMMA;
    let state = RANDOM
        .fetch_add(gamma, Ordering::Relaxed)
        .wrapping_add(gamma);
    printf::splitmix64_mix(state)
}

/// One printf argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg {
    /// An integer sign-extended to 64 bits and its width (0 is 64).
    Int {
        value: i64,
        bits: u32,
    },
    Float(f64),
}

/// Formats `format` with `args` as `pgpu.printf` prints it, appending to
/// `out`.
pub fn render(format: &[u8], args: &[Arg], out: &mut Vec<u8>) -> Result<(), RtError> {
    let pieces = printf::parse_format(format).map_err(|e| RtError::Printf(e.to_string()))?;
    let mut args = args.iter();
    for piece in &pieces {
        match piece {
            Piece::Text(text) => out.extend_from_slice(text),
            Piece::Conv(spec) => match (args.next(), spec.is_float()) {
                (Some(&Arg::Int { value, bits }), false) => {
                    let width = if bits == 0 { 64 } else { bits.min(64) };
                    let signed = if width == 1 {
                        zext(value, 1) as i64
                    } else {
                        sext(value, width)
                    };
                    printf::format_int(out, spec, signed, zext(value, width));
                }
                (Some(&Arg::Float(value)), true) => printf::format_float(out, spec, value),
                (Some(Arg::Int { .. }), true) => {
                    return Err(RtError::Printf(format!(
                        "an integer argument for the float conversion '%{}'",
                        spec.conv as char
                    )));
                }
                (Some(Arg::Float(_)), false) => {
                    return Err(RtError::Printf(format!(
                        "a float argument for the integer conversion '%{}'",
                        spec.conv as char
                    )));
                }
                (None, _) => {
                    return Err(RtError::Printf(format!(
                        "no argument for the conversion '%{}'",
                        spec.conv as char
                    )));
                }
            },
        }
    }
    if args.next().is_some() {
        return Err(RtError::Printf("more arguments than conversions".into()));
    }
    Ok(())
}

/// The printf being assembled on this thread.
#[derive(Default)]
struct PrintfState {
    format: Vec<u8>,
    args: Vec<Arg>,
    out: Vec<u8>,
}

thread_local! {
    static PRINTF: RefCell<PrintfState> = RefCell::new(PrintfState::default());
}

/// Writes `text` to stdout as one locked write, then flushes.
pub fn write_stdout(text: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    // Like C's printf, output errors (a closed pipe) are not fatal.
    let _ = stdout.write_all(text);
    let _ = stdout.flush();
}

fn with_printf<T>(f: impl FnOnce(&mut PrintfState) -> T) -> T {
    PRINTF.with(|state| f(&mut state.borrow_mut()))
}

/// Records the program arguments `argv[1 .. argc]` and starts the clock.
///
/// # Safety
/// `argv` is null or holds `argc` pointers, each null or to a
/// NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_init(argc: i32, argv: *const *const c_char) {
    guard(|| {
        START.get_or_init(Instant::now);
        crate::profile::configure();
        configure_clock(std::env::var("PGPU_CLOCK").ok().as_deref())?;
        let mut args = Vec::new();
        if !argv.is_null() {
            for index in 1..argc.max(0) as usize {
                // SAFETY: the caller's contract.
                let arg = unsafe { *argv.add(index) };
                if arg.is_null() {
                    break;
                }
                // SAFETY: a NUL-terminated string.
                let text = unsafe { CStr::from_ptr(arg) };
                args.push(text.to_string_lossy().into_owned());
            }
        }
        let device = crate::device::take_device_flag(&mut args)?;
        set_args(args);
        crate::device::init(device)
    })
}

/// The `k`-th program argument as an i32, or `default`; exits if it is not
/// an i32 integer.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_argi(k: i32, default: i32) -> i32 {
    guard(|| argi(k as i64, default as i64, 32).map(|v| v as i32))
}

/// The `k`-th program argument as an integer of `width` bits (1 to 64),
/// sign-extended, or `default`; exits if it is not such an integer.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_argi_width(k: i64, default: i64, width: i32) -> i64 {
    guard(|| argi(k, default, width.clamp(1, 64) as u32))
}

/// Seconds since `pgpu_rt_init`, after all device work.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_wtime() -> f64 {
    guard(|| match crate::cuda::started() {
        Some(runtime) if DEVICE_CLOCK.load(Ordering::Relaxed) => {
            crate::cuda::device_clock::read(runtime, wtime)
        }
        _ => {
            crate::device::synchronize()?;
            Ok(wtime())
        }
    })
}

/// Seeds the generator of `pgpu_rt_rand_u32`.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_rand_seed(seed: i64) {
    guard(|| {
        rand_seed(seed);
        Ok(())
    })
}

/// The next SplitMix64 number, its 32 bits as an i32.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_rand_u32() -> i32 {
    guard(|| Ok(rand_u32() as i32))
}

/// Starts a printf on this thread with the format's `len` bytes (copied).
///
/// # Safety
/// `format` points at `len` readable bytes (or `len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_printf_begin(format: *const u8, len: i64) {
    guard(|| {
        let len = usize::try_from(len).map_err(|_| RtError::Negative {
            op: "pgpu_rt_printf_begin",
            what: "format length",
            value: len,
        })?;
        let bytes: &[u8] = if len == 0 || format.is_null() {
            &[]
        } else {
            // SAFETY: the caller's contract.
            unsafe { std::slice::from_raw_parts(format, len) }
        };
        with_printf(|state| {
            state.format.clear();
            state.format.extend_from_slice(bytes);
            state.args.clear();
        });
        Ok(())
    })
}

/// The next integer argument: `value` sign-extended to 64 bits, `bits` its
/// type's width (0 means 64).
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_printf_i64(value: i64, bits: i32) {
    guard(|| {
        let bits = bits.clamp(0, 64) as u32;
        with_printf(|state| state.args.push(Arg::Int { value, bits }));
        Ok(())
    })
}

/// The next float argument (`f32` promoted).
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_printf_f64(value: f64) {
    guard(|| {
        with_printf(|state| state.args.push(Arg::Float(value)));
        Ok(())
    })
}

/// Formats this thread's printf and writes it to stdout atomically.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_printf_end() {
    guard(|| {
        with_printf(|state| {
            let PrintfState { format, args, out } = state;
            out.clear();
            render(format, args, out)?;
            write_stdout(out);
            args.clear();
            Ok(())
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn clock_choices() {
        for (value, device) in [(None, false), (Some(""), false), (Some("host"), false)] {
            configure_clock(value).unwrap();
            assert_eq!(DEVICE_CLOCK.load(Ordering::Relaxed), device);
        }
        configure_clock(Some("device")).unwrap();
        assert!(DEVICE_CLOCK.load(Ordering::Relaxed));
        let error = configure_clock(Some("gpu")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "PGPU_CLOCK must be 'host' or 'device', not 'gpu'"
        );
        configure_clock(None).unwrap();
    }

    fn show(format: &str, args: &[Arg]) -> String {
        let mut out = Vec::new();
        render(format.as_bytes(), args, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn integer_widths() {
        let i32m1 = Arg::Int {
            value: -1,
            bits: 32,
        };
        assert_eq!(
            show("%d %u %x", &[i32m1, i32m1, i32m1]),
            "-1 4294967295 ffffffff"
        );
        let t = Arg::Int { value: -1, bits: 1 };
        assert_eq!(show("%d %u", &[t, t]), "1 1");
        let i8v = Arg::Int {
            value: 200,
            bits: 8,
        };
        assert_eq!(show("%d %u", &[i8v, i8v]), "-56 200");
        let wide = Arg::Int { value: -1, bits: 0 };
        assert_eq!(show("%u %d", &[wide, wide]), "18446744073709551615 -1");
        assert_eq!(
            show(
                "%c%c",
                &[
                    Arg::Int { value: 72, bits: 8 },
                    Arg::Int {
                        value: 105,
                        bits: 32
                    }
                ]
            ),
            "Hi"
        );
    }

    #[test]
    fn floats_and_text() {
        assert_eq!(show("x=%.3f%%\n", &[Arg::Float(2.5)]), "x=2.500%\n");
        assert_eq!(
            show("%g %e", &[Arg::Float(1e-5), Arg::Float(0.0)]),
            "1e-05 0.000000e+00"
        );
        assert_eq!(show("plain", &[]), "plain");
    }

    #[test]
    fn mismatches_are_errors() {
        let mut out = Vec::new();
        assert!(render(b"%d", &[], &mut out).is_err());
        assert!(render(b"%d", &[Arg::Float(1.0)], &mut out).is_err());
        assert!(render(b"%f", &[Arg::Int { value: 1, bits: 32 }], &mut out).is_err());
        assert!(render(b"", &[Arg::Float(1.0)], &mut out).is_err());
        assert!(render(b"%s", &[], &mut out).is_err());
        assert!(render(b"%", &[], &mut out).is_err());
    }

    #[test]
    fn argument_parsing() {
        // The only test in this binary that sets the arguments.
        set_args(vec![
            "12".into(),
            " -7 ".into(),
            "x".into(),
            "4294967295".into(),
            "99999999999".into(),
        ]);
        assert_eq!(argi(0, 5, 32), Ok(12));
        assert_eq!(argi(1, 5, 32), Ok(-7));
        assert_eq!(argi(5, 5, 32), Ok(5));
        assert_eq!(argi(-1, 5, 32), Ok(5));
        assert!(matches!(
            argi(2, 5, 32),
            Err(RtError::BadArgument { position: 2, .. })
        ));
        assert_eq!(argi(3, 0, 32), Ok(-1));
        assert!(argi(4, 0, 32).is_err());
        assert_eq!(argi(4, 0, 64), Ok(99_999_999_999));
        assert_eq!(
            argi(2, 0, 32).unwrap_err().to_string(),
            "program argument 2 ('x') is not an i32 integer"
        );
        set_args(Vec::new());
    }
}
