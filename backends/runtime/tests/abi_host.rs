//! Memory, dtemp lists, host I/O, kernel launch and error exits through the
//! C ABI. Calls that print or exit run in a child process (this binary's
//! `child_entry` test with `PGPU_RT_CHILD` set).

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use std::ffi::CString;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

// ------------------------------------------------------------------ memory

#[test]
fn alloc_is_aligned_zeroed_and_freeable() {
    // SAFETY: blocks of the runtime, used within their sizes.
    unsafe {
        let zero = pgpu_rt_alloc(0);
        let zero2 = pgpu_rt_alloc(0);
        assert!(!zero.is_null() && zero != zero2);
        for bytes in [1i64, 63, 64, 65, 4096, 1 << 20] {
            let p = pgpu_rt_alloc(bytes);
            assert_eq!(p as usize % 64, 0);
            let block = std::slice::from_raw_parts_mut(p, bytes as usize);
            assert!(block.iter().all(|&b| b == 0));
            block.fill(0x5A);
            pgpu_rt_free(p);
        }
        pgpu_rt_free(zero);
        pgpu_rt_free(zero2);
        pgpu_rt_free(std::ptr::null_mut());
    }
}

/// The dtemp stack is per thread: this test's alone.
#[test]
fn dtemp_marks_nest() {
    // SAFETY: blocks of the runtime, used within their sizes.
    unsafe {
        let outer = pgpu_rt_dtemp_mark();
        let a = pgpu_rt_dtempnew(100);
        let b = pgpu_rt_dtempnew(0);
        assert_eq!(pgpu_rt_dtemp_mark(), outer + 2);
        assert_eq!(a as usize % 64, 0);
        a.write_bytes(1, 100);
        let inner = pgpu_rt_dtemp_mark();
        let c = pgpu_rt_dtempnew(10);
        c.write_bytes(2, 10);
        let innermost = pgpu_rt_dtemp_mark();
        let _d = pgpu_rt_dtempnew(1 << 16);
        pgpu_rt_dtempfree(innermost);
        assert_eq!(pgpu_rt_dtemp_mark(), innermost);
        pgpu_rt_dtempfree(inner);
        assert_eq!(pgpu_rt_dtemp_mark(), outer + 2);
        // The outer blocks are still alive.
        assert!(std::slice::from_raw_parts(a, 100).iter().all(|&x| x == 1));
        let _ = b;
        // A mark above the height (freed by an outer dtempfree) frees nothing.
        pgpu_rt_dtempfree(innermost + 5);
        assert_eq!(pgpu_rt_dtemp_mark(), outer + 2);
        // Freeing to the outer mark frees inner levels too.
        let _e = pgpu_rt_dtempnew(8);
        let _f = pgpu_rt_dtempnew(8);
        pgpu_rt_dtempfree(outer);
        assert_eq!(pgpu_rt_dtemp_mark(), outer);
    }
}

// ------------------------------------------------------------------ random, clock

#[test]
fn rand_is_splitmix64_from_the_seed() {
    fn reference(seed: u64, count: usize) -> Vec<i32> {
        let mut state = seed;
        (0..count)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                (z >> 32) as u32 as i32
            })
            .collect()
    }
    // The only test of this binary that uses the generator.
    // SAFETY: plain calls.
    unsafe {
        for seed in [0i64, 42, -1] {
            pgpu_rt_rand_seed(seed);
            let ours: Vec<i32> = (0..6).map(|_| pgpu_rt_rand_u32()).collect();
            assert_eq!(ours, reference(seed as u64, 6));
        }
        pgpu_rt_rand_seed(0);
        assert_eq!(pgpu_rt_rand_u32() as u32, 0xE220_A839);
    }
}

#[test]
fn wtime_advances() {
    // SAFETY: plain calls.
    unsafe {
        let t0 = pgpu_rt_wtime();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let t1 = pgpu_rt_wtime();
        assert!(t0 >= 0.0 && t1 - t0 >= 0.004 && t1 - t0 < 5.0, "{t0} {t1}");
    }
}

// ------------------------------------------------------------------ parallel_for

struct Ctx {
    out: Vec<AtomicI64>,
    calls: AtomicUsize,
    nested: bool,
}

extern "C" fn body(context: *mut u8, begin: i64, end: i64) {
    // SAFETY: the tests pass a live Ctx.
    let ctx = unsafe { &*(context as *const Ctx) };
    ctx.calls.fetch_add(1, Ordering::Relaxed);
    for i in begin..end {
        ctx.out[i as usize].fetch_add(2 * i + 1, Ordering::Relaxed);
        if ctx.nested {
            let inner = Ctx {
                out: (0..4).map(|_| AtomicI64::new(0)).collect(),
                calls: AtomicUsize::new(0),
                nested: false,
            };
            // SAFETY: a live context for the inner launch.
            unsafe { pgpu_rt_parallel_for(4, Some(body), &inner as *const Ctx as *mut u8) };
            assert_eq!(inner.out[3].load(Ordering::Relaxed), 7);
        }
    }
}

fn launch(n: i64, nested: bool) -> Ctx {
    let ctx = Ctx {
        out: (0..n.max(0)).map(|_| AtomicI64::new(0)).collect(),
        calls: AtomicUsize::new(0),
        nested,
    };
    // SAFETY: a live context.
    unsafe { pgpu_rt_parallel_for(n, Some(body), &ctx as *const Ctx as *mut u8) };
    ctx
}

#[test]
fn parallel_for_runs_every_iteration_once() {
    for n in [1i64, 2, 3, 17, 1000, 100_003] {
        let ctx = launch(n, false);
        for (i, v) in ctx.out.iter().enumerate() {
            assert_eq!(v.load(Ordering::Relaxed), 2 * i as i64 + 1, "n {n} i {i}");
        }
        let calls = ctx.calls.load(Ordering::Relaxed);
        // SAFETY: plain call.
        let threads = unsafe { pgpu_rt_cpu_threads() } as usize;
        assert!(
            calls >= 1 && calls <= (n as usize).min(8 * threads),
            "n {n} calls {calls}"
        );
    }
    for n in [0i64, -5] {
        assert_eq!(launch(n, false).calls.load(Ordering::Relaxed), 0);
    }
    // SAFETY: no iterations: the null body is never called.
    unsafe { pgpu_rt_parallel_for(0, None, std::ptr::null_mut()) };
}

#[test]
fn parallel_for_nested_launches_complete() {
    let ctx = launch(64, true);
    assert!(
        ctx.out
            .iter()
            .enumerate()
            .all(|(i, v)| v.load(Ordering::Relaxed) == 2 * i as i64 + 1)
    );
}

// ------------------------------------------------------------------ tasks

/// The values the tasks of `spawned_tasks_run_once_each_and_inline_on_the_cpu_device`
/// saw, in the order they ran.
static TASK_LOG: std::sync::Mutex<Vec<i64>> = std::sync::Mutex::new(Vec::new());

extern "C" fn log_task(context: *mut u8) {
    // SAFETY: the test passes an i64 context.
    let value = unsafe { *(context as *const i64) };
    TASK_LOG.lock().unwrap().push(value);
}

#[test]
fn spawned_tasks_run_once_each_and_inline_on_the_cpu_device() {
    // SAFETY: plain call.
    let cuda = unsafe { pgpu_rt_device_is_cuda() } == 1;
    // SAFETY: live contexts of the size passed (copied at the spawn);
    // balanced task groups.
    unsafe {
        pgpu_rt_tasks_begin();
        for value in [3i64, 1, 2] {
            let mut context = value;
            pgpu_rt_task_spawn(Some(log_task), (&mut context as *mut i64).cast(), 8);
            if !cuda {
                // The cpu device runs a spawned task at once.
                assert_eq!(TASK_LOG.lock().unwrap().last(), Some(&value));
            }
        }
        pgpu_rt_tasks_end();
    }
    // Every task ran exactly once, with its own context, by the group's
    // end: in program order on the cpu device, in any order on task
    // threads.
    let mut log = TASK_LOG.lock().unwrap().clone();
    if cuda {
        log.sort();
        assert_eq!(log, vec![1, 2, 3]);
    } else {
        assert_eq!(log, vec![3, 1, 2]);
    }
}

// ------------------------------------------------------------------ child processes

fn printf(format: &str, args: &[Result<(i64, i32), f64>]) {
    // SAFETY: a valid buffer.
    unsafe {
        pgpu_rt_printf_begin(format.as_ptr(), format.len() as i64);
        for arg in args {
            match *arg {
                Ok((value, bits)) => pgpu_rt_printf_i64(value, bits),
                Err(value) => pgpu_rt_printf_f64(value),
            }
        }
        pgpu_rt_printf_end();
    }
}

extern "C" fn print_body(_context: *mut u8, begin: i64, end: i64) {
    for i in begin..end {
        printf(
            "line %d of %d: %x\n",
            &[Ok((i, 64)), Ok((4000, 32)), Ok((i * 7, 64))],
        );
    }
}

fn c(text: &str) -> CString {
    CString::new(text).unwrap()
}

#[test]
fn child_entry() {
    let Ok(case) = std::env::var("PGPU_RT_CHILD") else {
        return;
    };
    print("<<");
    // SAFETY: the calls' contracts hold in every case.
    unsafe {
        match case.as_str() {
            "printf" => {
                printf(
                    "%d|%5d|%-5u|%x|%#o|%c\n",
                    &[
                        Ok((-42, 32)),
                        Ok((7, 8)),
                        Ok((-1, 8)),
                        Ok((-1, 16)),
                        Ok((8, 64)),
                        Ok((65, 8)),
                    ],
                );
                printf("%d %u %d\n", &[Ok((-1, 1)), Ok((-1, 1)), Ok((0, 1))]);
                printf(
                    "%u %d %lld\n",
                    &[Ok((-1, 0)), Ok((i64::MIN, 64)), Ok((5, 64))],
                );
                printf(
                    "%.3f %e %g %G %08.2f|%-8.1e|\n",
                    &[
                        Err(1.23456),
                        Err(12345.678),
                        Err(0.0001),
                        Err(1e-10),
                        Err(-1.5),
                        Err(2.5),
                    ],
                );
                printf(
                    "%f %F %5.1f 100%%\n",
                    &[Err(f64::NAN), Err(f64::NEG_INFINITY), Err(0.1f32 as f64)],
                );
                printf("", &[]);
                printf("no newline", &[]);
            }
            "printf_threads" => {
                pgpu_rt_parallel_for(4000, Some(print_body), std::ptr::null_mut());
            }
            "argi" => {
                let args = [
                    c("prog"),
                    c("12"),
                    c(" -3 "),
                    c("4294967295"),
                    c("x"),
                    c("99999999999"),
                ];
                let argv: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
                pgpu_rt_init(argv.len() as i32, argv.as_ptr());
                let values = [
                    pgpu_rt_argi(0, 5) as i64,
                    pgpu_rt_argi(1, 5) as i64,
                    pgpu_rt_argi(2, 5) as i64,
                    pgpu_rt_argi(7, 5) as i64,
                    pgpu_rt_argi(-1, 6) as i64,
                    pgpu_rt_argi_width(4, 0, 64),
                    pgpu_rt_argi_width(0, 0, 8),
                ];
                print(&format!("{values:?}"));
                // Exits: not an integer.
                pgpu_rt_argi(3, 0);
            }
            "argi_too_big" => {
                let args = [c("prog"), c("99999999999")];
                let argv: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
                pgpu_rt_init(2, argv.as_ptr());
                pgpu_rt_argi(0, 0);
            }
            "kernel_error" => {
                let (k, f, m) = (
                    c("main_kernel_1"),
                    c("prog.bsgp"),
                    c("index 10 out of bounds [0, 8)"),
                );
                pgpu_rt_kernel_error(k.as_ptr(), f.as_ptr(), 12, 7, m.as_ptr());
            }
            "oom" => {
                pgpu_rt_alloc(i64::MAX - 8);
            }
            "negative_alloc" => {
                pgpu_rt_dtempnew(-1);
            }
            "negative_count" => {
                pgpu_rt_list_reduce(0, I32, std::ptr::null(), -1);
            }
            "bad_kind" => {
                let v = f32s_to_buf(&[1.0]);
                pgpu_rt_list_reduce(5, F32, v.ptr(), 1);
            }
            "bad_elem" => {
                pgpu_rt_list_sort_idx(9, std::ptr::null(), std::ptr::null_mut(), 0);
            }
            "scan_overlap" => {
                let mut v = Buf::zeroed(64);
                let p = v.mut_ptr();
                pgpu_rt_list_scan(0, I32, 0, p, p.add(4), 8);
            }
            "compact_overlap" => {
                let mut v = Buf::filled(64, 1);
                let p = v.mut_ptr();
                pgpu_rt_list_compact(4, p, p, p.add(16), 8, 0);
            }
            "misaligned" => {
                let v = Buf::zeroed(64);
                pgpu_rt_list_reduce(0, I64, v.ptr().add(4), 2);
            }
            "printf_mismatch" => {
                printf("%d %f\n", &[Ok((1, 32)), Ok((2, 32))]);
            }
            "printf_bad_format" => {
                printf("%s\n", &[]);
            }
            "float_sum" => {
                let mut g = Gen(2024);
                let data: Vec<f64> = (0..5 * pgpu_runtime::list::BLOCK)
                    .map(|_| (g.next() >> 11) as f64 / 1e12 - 4000.0)
                    .collect();
                let buf = f64s_to_buf(&data);
                let sum = pgpu_rt_list_reduce(0, F64, buf.ptr(), data.len() as i64);
                let mut scanned = Buf::zeroed(buf.len);
                let total =
                    pgpu_rt_list_scan(0, F64, 1, buf.ptr(), scanned.mut_ptr(), data.len() as i64);
                let last = buf_to_f64s(&scanned, data.len())[data.len() - 1].to_bits();
                print(&format!(
                    "{sum:016x} {total:016x} {last:016x} threads {}",
                    pgpu_rt_cpu_threads()
                ));
            }
            other => print(&format!("unknown case {other}")),
        }
    }
    print(">>");
    std::process::exit(0);
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn printf_prints_as_glibc() {
    let output = run_child("printf", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        marked(&output),
        "-42|    7|255  |ffff|010|A\n\
         1 1 0\n\
         18446744073709551615 -9223372036854775808 5\n\
         1.235 1.234568e+04 0.0001 1E-10 -0001.50|2.5e+00 |\n\
         nan -INF   0.1 100%\n\
         no newline"
    );
}

#[test]
fn printf_from_kernel_threads_writes_whole_lines() {
    let output = run_child("printf_threads", &[("PGPU_CPU_THREADS", "4")]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = marked(&output);
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4000);
    lines.sort_unstable();
    let mut expected: Vec<String> = (0..4000)
        .map(|i| format!("line {i} of 4000: {:x}", i * 7))
        .collect();
    expected.sort_unstable();
    assert!(lines == expected, "interleaved or missing lines");
}

/// Runs `case`, expects exit status 1 and `message` on stderr.
fn expect_exit(case: &str, message: &str) {
    let output = run_child(case, &[]);
    assert_eq!(output.status.code(), Some(1), "{case}: {}", stderr(&output));
    assert!(
        stderr(&output).contains(message),
        "{case}: stderr is {:?}",
        stderr(&output)
    );
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains(">>"),
        "{case} went on"
    );
}

#[test]
fn argi_reads_the_program_arguments() {
    let output = run_child("argi", &[]);
    assert_eq!(marked(&output), "[12, -3, -1, 5, 6, 99999999999, 12]");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "pgpu runtime: error: program argument 3 ('x') is not an i32 integer\n"
    );
    expect_exit(
        "argi_too_big",
        "program argument 0 ('99999999999') is not an i32 integer",
    );
}

#[test]
fn kernel_errors_name_the_kernel_and_location() {
    let output = run_child("kernel_error", &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "prog.bsgp:12:7: error: in kernel main_kernel_1: index 10 out of bounds [0, 8)\n"
    );
}

#[test]
fn misuse_exits_with_a_message() {
    expect_exit(
        "oom",
        "pgpu runtime: error: out of memory allocating 9223372036854775799 bytes",
    );
    expect_exit(
        "negative_alloc",
        "pgpu runtime: error: invalid allocation size -1",
    );
    expect_exit("negative_count", "pgpu_rt_list_reduce: negative count (-1)");
    expect_exit(
        "bad_kind",
        "pgpu_rt_list_reduce: combining kind 'umax' needs integer elements",
    );
    expect_exit(
        "bad_elem",
        "pgpu_rt_list_sort_idx: unknown element type code 9",
    );
    expect_exit(
        "scan_overlap",
        "pgpu_rt_list_scan: the scanned list overlaps the values list",
    );
    expect_exit(
        "compact_overlap",
        "pgpu_rt_list_compact: the output list overlaps the values list",
    );
    expect_exit(
        "misaligned",
        "pgpu_rt_list_reduce: null or misaligned values list",
    );
    expect_exit(
        "printf_mismatch",
        "printf: an integer argument for the float conversion '%f'",
    );
    expect_exit("printf_bad_format", "printf: unsupported conversion '%s'");
}

#[test]
fn float_results_do_not_depend_on_the_thread_count() {
    let runs: Vec<String> = ["1", "2", "5"]
        .iter()
        .map(|threads| {
            let output = run_child("float_sum", &[("PGPU_CPU_THREADS", threads)]);
            assert!(output.status.success(), "{}", stderr(&output));
            marked(&output)
        })
        .collect();
    let bits = |run: &str| run.split(" threads").next().unwrap_or_default().to_string();
    assert!(
        runs[0].ends_with("threads 1") && runs[2].ends_with("threads 5"),
        "{runs:?}"
    );
    assert_eq!(bits(&runs[0]), bits(&runs[1]));
    assert_eq!(bits(&runs[0]), bits(&runs[2]));
    // The total of the scan is the reduction.
    let words: Vec<&str> = runs[0].split(' ').collect();
    assert_eq!(words[0], words[1]);
}
