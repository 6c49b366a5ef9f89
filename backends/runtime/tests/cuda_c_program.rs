//! The CUDA device's C program (`tests/cuda/mirror_test.c`) linked with the
//! staticlib by the system `cc`, with the committed `tests/cuda/kernels.ptx`
//! (llc-22 output of `kernels.ll`) embedded as a global constructor loads
//! it: the program starts and runs on a machine without a GPU (the module
//! is recorded, never loaded), device flags and `PGPU_DEVICE` are consumed
//! and checked, and kernel use on the cpu device is a clear error. Where a
//! CUDA device is usable, the GPU cases run as well (`tests/cuda/run.sh`
//! runs them all on the GPU machine). Skipped (with a note) where no `cc`
//! or no staticlib is found.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The staticlib built with this test (the newest in the deps directory).
fn staticlib() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    std::fs::read_dir(deps)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with("libpgpu_runtime-") && name.ends_with(".a")
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
}

/// `kernels_ptx.h`: the PTX as one C string literal.
fn header(ptx: &str) -> String {
    let mut out = String::from("static const char kernels_ptx[] =\n");
    for line in ptx.lines() {
        let escaped = line.replace('\\', "\\\\").replace('"', "\\\"");
        out.push_str(&format!("\"{escaped}\\n\"\n"));
    }
    out.push_str(";\n");
    out
}

fn build(dir: &Path, lib: &Path) -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda");
    let ptx = std::fs::read_to_string(here.join("kernels.ptx")).unwrap();
    std::fs::write(dir.join("kernels_ptx.h"), header(&ptx)).unwrap();
    let exe = dir.join("mirror_test");
    let status = Command::new("cc")
        .arg("-O1")
        .arg("-I")
        .arg(dir)
        .arg(here.join("mirror_test.c"))
        .arg(lib)
        .arg("-o")
        .arg(&exe)
        .args(["-lm", "-lpthread", "-ldl"])
        .status()
        .unwrap();
    assert!(status.success(), "cc failed on mirror_test.c");
    exe
}

fn run(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(exe);
    command.args(args).env_remove("PGPU_DEVICE");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_cuda_test_program_runs_on_any_machine() {
    let Some(lib) = staticlib() else {
        eprintln!("note: no libpgpu_runtime-*.a next to the test; skipped");
        return;
    };
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("note: no cc; skipped");
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-cuda-program");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build(&dir, &lib);

    // The cpu device, by flag (removed from the arguments) or variable.
    let out = run(&exe, &["--device", "cpu", "0", "17"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("device=cpu n=17\n"), "{stdout}");
    assert!(stdout.ends_with("PASSED\n"), "{stdout}");
    let out = run(&exe, &["0", "--device=cpu", "5"], &[]);
    assert!(text(&out.stdout).starts_with("device=cpu n=5\n"));
    let out = run(&exe, &["0"], &[("PGPU_DEVICE", "cpu")]);
    assert!(text(&out.stdout).starts_with("device=cpu"));

    // Bad names.
    let out = run(&exe, &["--device", "tpu"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "pgpu runtime: error: --device: unknown device 'tpu' (expected cpu or cuda)\n"
    );
    let out = run(&exe, &["0"], &[("PGPU_DEVICE", "gpu")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("PGPU_DEVICE: unknown device 'gpu'"));

    // Kernels need the cuda device.
    let out = run(&exe, &["--device", "cpu", "7"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "device=cpu n=1000\n");
    assert_eq!(
        text(&out.stderr),
        "pgpu runtime: error: kernel scale needs the cuda device, but the program runs on \
         the cpu device\n"
    );

    let cuda = run(&exe, &["--device", "cuda", "0", "50"], &[]);
    if cuda.status.success() {
        // A GPU: the default is cuda and everything passes.
        let out = run(&exe, &["0", "100000"], &[]);
        let stdout = text(&out.stdout);
        assert!(stdout.starts_with("device=cuda"), "{stdout}");
        assert!(
            stdout.ends_with("PASSED\n"),
            "{stdout}{}",
            text(&out.stderr)
        );
        let out = run(&exe, &["1"], &[]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            text(&out.stderr).starts_with("trap.bsgp:3:9: error: in kernel boom: "),
            "{}",
            text(&out.stderr)
        );
    } else {
        // No GPU: cuda asked for is an error, the default is cpu.
        assert_eq!(cuda.status.code(), Some(1));
        let stderr = text(&cuda.stderr);
        assert!(
            stderr.starts_with("pgpu runtime: error: --device cuda: no usable CUDA device ("),
            "{stderr}"
        );
        let out = run(&exe, &["0"], &[("PGPU_DEVICE", "cuda")]);
        assert!(text(&out.stderr).contains("PGPU_DEVICE cuda: no usable CUDA device"));
        let out = run(&exe, &["0", "9"], &[]);
        assert!(out.status.success());
        assert!(text(&out.stdout).starts_with("device=cpu n=9\n"));
    }
}
