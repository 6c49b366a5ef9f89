//! `pgpu`, with no plugins built in (`--load-plugin` still loads some).
//!
//! Started through a link named `pgpu-opt`, the binary is `pgpu-opt` (as
//! `clang++` is `clang`): both link the same passes and LLVM, so one
//! binary serves both where every megabyte counts
//! (scripts/difftest/pack-tools.sh packs the tools for the GPU machine in
//! 51 MiB; a second binary would add 30).

use std::{path::Path, process::ExitCode};

fn main() -> ExitCode {
    let invoked_as = std::env::args_os().next();
    let name = invoked_as
        .as_deref()
        .and_then(|path| Path::new(path).file_name());
    if name.is_some_and(|name| name == "pgpu-opt") {
        return pgpu_opt::main_with(pgpu_opt::Registry::default());
    }
    pgpu::main_with(pgpu::Registry::default())
}
