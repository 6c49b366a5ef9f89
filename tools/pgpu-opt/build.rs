//! Exports the tool's symbols (`-rdynamic`): MLIR is linked statically, so a
//! plugin loaded with `--load-pass-plugin`/`--load-dialect-plugin` (built
//! against MLIR's headers, not linked with MLIR) resolves its MLIR symbols
//! to this executable's, and registers into its registries.

fn main() {
    println!("cargo:rustc-link-arg-bins=-rdynamic");
}
