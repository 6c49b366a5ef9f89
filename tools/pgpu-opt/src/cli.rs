//! Command-line handling the tools share (pgpu-opt, pgpu, pgpu-translate):
//! the process's arguments, clap's parsing with our exit codes, and the
//! report style of miette.

use std::process::ExitCode;

/// miette's reports keep long lines (paths) unwrapped, so that tools and
/// tests can match them.
pub fn set_report_style() {
    let _ = miette::set_hook(Box::new(|_| {
        Box::new(miette::MietteHandlerOpts::new().wrap_lines(false).build())
    }));
}

/// The process's arguments. One that is not UTF-8 is a usage error
/// (exit 1), reported by its position.
pub fn arguments() -> Result<Vec<String>, ExitCode> {
    std::env::args_os()
        .enumerate()
        .map(|(position, argument)| {
            argument.into_string().map_err(|argument| {
                eprintln!(
                    "error: argument {position} ('{}') is not valid UTF-8",
                    argument.to_string_lossy()
                );
                ExitCode::FAILURE
            })
        })
        .collect()
}

/// `arguments` (the program's name first) parsed into `T`. On `Err` clap
/// has printed help, the version or the usage error: help and version
/// requests exit 0, usage errors 1.
pub fn parse<T: clap::Parser>(arguments: Vec<String>) -> Result<T, ExitCode> {
    parse_with_hint(arguments, "")
}

/// [`parse`], with `hint` printed after the error for an unknown argument.
pub fn parse_with_hint<T: clap::Parser>(arguments: Vec<String>, hint: &str) -> Result<T, ExitCode> {
    T::try_parse_from(arguments).map_err(|error| {
        let _ = error.print();
        if error.kind() == clap::error::ErrorKind::UnknownArgument && !hint.is_empty() {
            eprintln!("{hint}");
        }
        if error.use_stderr() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    })
}
