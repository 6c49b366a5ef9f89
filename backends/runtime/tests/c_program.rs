//! A C program linked with the staticlib by the system `cc`, as compiled
//! executables will be: the exported symbols, C-side kernel bodies and the
//! exit status of errors. Skipped (with a note) where no `cc` or no
//! staticlib is found.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAM: &str = r#"
#include <stdint.h>
#include <string.h>

extern void pgpu_rt_init(int32_t argc, char **argv);
extern int32_t pgpu_rt_argi(int32_t k, int32_t fallback);
extern void pgpu_rt_printf_begin(const uint8_t *format, int64_t len);
extern void pgpu_rt_printf_i64(int64_t value, int32_t bits);
extern void pgpu_rt_printf_f64(double value);
extern void pgpu_rt_printf_end(void);
extern uint8_t *pgpu_rt_alloc(int64_t bytes);
extern void pgpu_rt_free(uint8_t *ptr);
extern int64_t pgpu_rt_dtemp_mark(void);
extern uint8_t *pgpu_rt_dtempnew(int64_t bytes);
extern void pgpu_rt_dtempfree(int64_t mark);
extern uint64_t pgpu_rt_list_reduce(int32_t kind, int32_t elem, const uint8_t *values, int64_t n);
extern uint64_t pgpu_rt_list_scan(int32_t kind, int32_t elem, int32_t inclusive,
                                  const uint8_t *values, uint8_t *scanned, int64_t n);
extern void pgpu_rt_list_sort_idx(int32_t elem, const uint8_t *keys, int64_t *indices, int64_t n);
extern void pgpu_rt_parallel_for(int64_t n, void (*body)(uint8_t *, int64_t, int64_t), uint8_t *context);
extern void pgpu_rt_kernel_error(const char *kernel, const char *file, int32_t line, int32_t col,
                                 const char *message);

static void print_i(const char *format, int64_t value) {
  pgpu_rt_printf_begin((const uint8_t *)format, (int64_t)strlen(format));
  pgpu_rt_printf_i64(value, 32);
  pgpu_rt_printf_end();
}

struct ctx { int32_t *data; };

static void square(uint8_t *context, int64_t begin, int64_t end) {
  struct ctx *c = (struct ctx *)context;
  for (int64_t i = begin; i < end; ++i) {
    c->data[i] = (int32_t)(i * i);
    if (c->data[i] < 0)
      pgpu_rt_kernel_error("square", "prog.bsgp", 3, 9, "negative square");
  }
}

int main(int argc, char **argv) {
  pgpu_rt_init(argc, argv);
  int32_t n = pgpu_rt_argi(0, 1000);
  int64_t mark = pgpu_rt_dtemp_mark();
  struct ctx c = { (int32_t *)pgpu_rt_dtempnew(4 * (int64_t)n) };
  pgpu_rt_parallel_for(n, square, (uint8_t *)&c);
  int32_t sum = (int32_t)pgpu_rt_list_reduce(0, 3, (const uint8_t *)c.data, n);
  print_i("sum=%d\n", sum);
  pgpu_rt_list_scan(0, 3, 0, (const uint8_t *)c.data, (uint8_t *)c.data, n);
  print_i("prefix[last]=%d\n", c.data[n - 1]);
  int64_t *order = (int64_t *)pgpu_rt_alloc(8 * (int64_t)n);
  pgpu_rt_list_sort_idx(3, (const uint8_t *)c.data, order, n);
  print_i("order[0]=%d\n", order[0]);
  pgpu_rt_free((uint8_t *)order);
  pgpu_rt_dtempfree(mark);
  const char *f = "mean=%.2f\n";
  pgpu_rt_printf_begin((const uint8_t *)f, (int64_t)strlen(f));
  pgpu_rt_printf_f64((double)sum / n);
  pgpu_rt_printf_end();
  return 0;
}
"#;

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

fn compile(dir: &Path, lib: &Path) -> Option<PathBuf> {
    let source = dir.join("prog.c");
    let exe = dir.join("prog");
    std::fs::write(&source, PROGRAM).ok()?;
    let status = Command::new("cc")
        .arg(&source)
        .arg(lib)
        .args(["-o"])
        .arg(&exe)
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lutil"])
        .status()
        .ok()?;
    assert!(
        status.success(),
        "cc failed to link the program with {}",
        lib.display()
    );
    Some(exe)
}

#[test]
fn a_c_program_links_and_runs() {
    let Some(lib) = staticlib() else {
        eprintln!("note: no libpgpu_runtime-*.a next to the test; skipped");
        return;
    };
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("note: no cc; skipped");
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-c-program");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = compile(&dir, &lib).unwrap();
    let output = Command::new(&exe).arg("1000").output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // sum of i*i for i < 1000 = 332833500; prefix of the last = sum - 999^2.
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "sum=332833500\nprefix[last]=331835499\norder[0]=0\nmean=332833.50\n"
    );
    // 50000^2 overflows i32: the kernel reports the error with its location.
    let output = Command::new(&exe).arg("50000").output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "prog.bsgp:3:9: error: in kernel square: negative square\n"
    );
    // A bad argument.
    let output = Command::new(&exe).arg("ten").output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "pgpu runtime: error: program argument 0 ('ten') is not an i32 integer\n"
    );
}
