//! Builds the pgpu dialect from its ODS definitions:
//!
//! 1. `mlir-tblgen` turns `include/pgpu/*.td` into C++ declarations and
//!    definitions in `OUT_DIR`;
//! 2. the `cc` crate compiles `lib/PgpuDialect.cpp` (the dialect, its
//!    verifiers and its C API handle) into a static library linked into every
//!    Rust binary that uses this crate;
//! 3. the same sources plus `lib/PgpuPlugin.cpp` are linked against
//!    `libMLIR.so` into `libPgpuDialectPlugin.so`, copied next to the Cargo
//!    artifacts (`target/<profile>/`), so that upstream
//!    `mlir-opt --load-dialect-plugin=` reads and prints our IR.
//!
//! The Rust builders come from the same `.td` files through melior's
//! `dialect!` macro (see `src/ops.rs`).

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

const LLVM_PREFIX_VARIABLE: &str = "MLIR_SYS_220_PREFIX";

fn main() {
    if let Err(message) = run() {
        eprintln!("pgpu-dialect build failed: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out_dir = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let prefix = PathBuf::from(
        env::var(LLVM_PREFIX_VARIABLE).unwrap_or_else(|_| "/usr/lib/llvm-22".to_string()),
    );
    let llvm_include = prefix.join("include");
    let td_include = manifest_dir.join("include");
    let lib_dir = manifest_dir.join("lib");

    println!("cargo:rerun-if-env-changed={LLVM_PREFIX_VARIABLE}");
    println!("cargo:rerun-if-changed={}", td_include.display());
    println!("cargo:rerun-if-changed={}", lib_dir.display());
    println!(
        "cargo:rustc-env=PGPU_DIALECT_TD_DIR={}",
        td_include.display()
    );

    let tblgen = prefix.join("bin/mlir-tblgen");
    let main_td = td_include.join("pgpu/PgpuOps.td");
    for (generator, output) in [
        ("-gen-dialect-decls", "PgpuDialect.h.inc"),
        ("-gen-dialect-defs", "PgpuDialect.cpp.inc"),
        ("-gen-op-decls", "PgpuOps.h.inc"),
        ("-gen-op-defs", "PgpuOps.cpp.inc"),
        ("-gen-enum-decls", "PgpuEnums.h.inc"),
        ("-gen-enum-defs", "PgpuEnums.cpp.inc"),
        ("-gen-attrdef-decls", "PgpuAttrs.h.inc"),
        ("-gen-attrdef-defs", "PgpuAttrs.cpp.inc"),
        ("-gen-op-doc", "PgpuOps.md"),
    ] {
        let status = Command::new(&tblgen)
            .arg(generator)
            .arg("-dialect=pgpu")
            .arg(format!("-I{}", llvm_include.display()))
            .arg(format!("-I{}", td_include.display()))
            .arg(&main_td)
            .arg("-o")
            .arg(out_dir.join(output))
            .status()
            .map_err(|e| format!("cannot run {}: {e}", tblgen.display()))?;
        if !status.success() {
            return Err(format!(
                "mlir-tblgen {generator} failed on {}",
                main_td.display()
            ));
        }
    }

    let sources = [lib_dir.join("PgpuDialect.cpp")];
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .flag("-fno-rtti")
        .flag_if_supported("-Wno-unused-parameter")
        .include(&llvm_include)
        .include(&out_dir)
        .include(&lib_dir)
        .files(&sources)
        .warnings(false);
    build.compile("pgpu_dialect");

    build_plugin(&prefix, &out_dir, &lib_dir, &sources)
}

/// Links the dialect and the plugin entry point into a shared library that
/// uses the same `libMLIR.so` as the packaged `mlir-opt`.
fn build_plugin(
    prefix: &Path,
    out_dir: &Path,
    lib_dir: &Path,
    sources: &[PathBuf],
) -> Result<(), String> {
    let plugin = out_dir.join("libPgpuDialectPlugin.so");
    let compiler = cc::Build::new().cpp(true).get_compiler();
    let mut command = compiler.to_command();
    command
        .args(["-shared", "-fPIC", "-std=c++17", "-fno-rtti", "-O1", "-w"])
        .arg(format!("-I{}", prefix.join("include").display()))
        .arg(format!("-I{}", out_dir.display()))
        .arg(format!("-I{}", lib_dir.display()))
        .args(sources)
        .arg(lib_dir.join("PgpuPlugin.cpp"))
        .arg(format!("-L{}", prefix.join("lib").display()))
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
        .args(["-lMLIR", "-lLLVM", "-o"])
        .arg(&plugin);
    let status = command
        .status()
        .map_err(|e| format!("cannot run the C++ compiler: {e}"))?;
    if !status.success() {
        return Err("linking libPgpuDialectPlugin.so failed".to_string());
    }
    // OUT_DIR is target/<profile>/build/<crate>-<hash>/out.
    if let Some(profile_dir) = out_dir.ancestors().nth(3) {
        std::fs::copy(&plugin, profile_dir.join("libPgpuDialectPlugin.so"))
            .map_err(|e| format!("cannot copy the plugin: {e}"))?;
    }
    println!("cargo:rustc-env=PGPU_DIALECT_PLUGIN={}", plugin.display());
    Ok(())
}
