//! `pgpu-opt`, with our passes only (`--load-pass-plugin` still loads
//! more).

fn main() -> std::process::ExitCode {
    pgpu_opt::main_with(pgpu_opt::Registry::default())
}
