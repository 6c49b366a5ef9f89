//! `pgpu`, with no plugins built in (`--load-plugin` still loads some).

fn main() -> std::process::ExitCode {
    pgpu::main_with(pgpu::Registry::default())
}
