//! `--pgpu-check-semantics`: the reference interpreter runs `@main` of the
//! module before and after the pipeline; both runs must succeed and print
//! the same output with the same exit code.

use melior::ir::Module;
use pgpu_interp::{Options, RunOutcome};
use pgpu_pass_infra::diagnostics::SourceText;

/// Runs `@main` of `module`; on a run-time error prints it (`which` says
/// whether the input or the output failed) and returns `None`.
pub fn interpret(
    module: &Module,
    arguments: &[String],
    which: &str,
    name: &str,
    text: &str,
) -> Option<RunOutcome> {
    match pgpu_interp::run_module(module, "main", arguments, &Options::default()) {
        Ok(outcome) => Some(outcome),
        Err(error) => {
            let mut record = error.to_record();
            record.message = format!(
                "semantic check: the {which} module fails to run: {}",
                record.message
            );
            let source = SourceText { name, text };
            eprint!("{}", record.render(&source));
            None
        }
    }
}
