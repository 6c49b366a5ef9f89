//! Compiles `lib/PassInfra.cpp`, the small C++ layer that registers Rust
//! passes in MLIR's pass registry and exposes the pass-manager hooks the
//! MLIR C API lacks.

use std::{env, path::PathBuf};

fn main() {
    let prefix = PathBuf::from(
        env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".to_string()),
    );
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    println!("cargo:rerun-if-changed=lib");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .flag("-fno-rtti")
        .include(prefix.join("include"))
        .file("lib/PassInfra.cpp")
        .warnings(false)
        .compile("pgpu_pass_infra");
}
