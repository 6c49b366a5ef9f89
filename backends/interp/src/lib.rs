//! The reference interpreter for pgpu IR: the project's semantic oracle.
//!
//! [`run_module`] executes a module at any level the pipeline produces:
//! `pgpu` ops with upstream `func`, `scf`, `cf`, `arith`, `math`, `memref`,
//! `ub` and (partly) `gpu`. The module is converted once into a compact
//! form (module `ir`: ops as an enum with operand/result slot numbers and
//! decoded attributes), then executed by resumable fibers (module `exec`)
//! with an explicit frame stack, so an SPMD thread can stop at a barrier
//! anywhere and resume later. `pgpu.spawn` runs its threads
//! bulk-synchronously (module `spmd`): every thread runs to its next
//! barrier or collective, then all continue. `pgpu.spawn synchronous`
//! (Fork) runs its group in lock-step with PRAM semantics (module `fork`).
//! `pgpu.spawn block` (one thread block, at most 1024 threads) runs its
//! threads until they end or wait at a `pgpu.range_barrier`, and releases
//! each range whose threads all wait (module `block`).
//!
//! Every memory access is checked (module `memory`): bounds, use after
//! free, null (poison) pointers, reads of uninitialised memory, and data
//! races between the threads of one superstep (in a block spawn: between
//! accesses that no chain of range barriers orders). Errors carry the op's
//! `file:line:col`; the run stops at the first one.
//!
//! Host output (`pgpu.printf`) is collected (and optionally echoed to the
//! process's stdout as it is produced); SPMD threads' output is printed per
//! superstep (in a block spawn: per scheduling step) in rank order.

mod block;
mod exec;
mod fork;
mod ir;
mod list;
mod memory;
mod scalar;
mod spmd;
mod value;

pub use pgpu_pass_infra::diagnostics::FilePosition;
use pgpu_pass_infra::diagnostics::{Record, Severity};
use std::fmt;

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Check data races between the threads of a superstep (in a block
    /// spawn: accesses of threads that no range barriers order).
    pub race_detection: bool,
    /// Also write program output to the process's stdout as it is produced.
    pub echo_stdout: bool,
    /// Stop after this many executed operations (0: no limit).
    pub max_steps: u64,
    /// The deepest call stack (per thread).
    pub max_call_depth: usize,
    /// The most logical threads of one SPMD region.
    pub max_threads: usize,
    /// Print every executed op (location, thread, name) to stderr.
    pub trace: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            race_detection: true,
            echo_stdout: false,
            max_steps: 0,
            max_call_depth: 100_000,
            max_threads: 1 << 22,
            trace: false,
        }
    }
}

/// The result of a run that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// Everything the program printed.
    pub stdout: Vec<u8>,
    /// The entry function's `i32`/`i64` result (0 for no result).
    pub exit_code: i32,
}

/// A secondary location of an error (e.g. the other access of a race).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub message: String,
    pub location: Option<FilePosition>,
}

/// A run-time error: message, the op's location, notes, and the output
/// printed before it.
#[derive(Debug, Clone, thiserror::Error)]
pub struct InterpError {
    pub message: String,
    pub location: Option<FilePosition>,
    pub notes: Vec<Note>,
    pub stdout: Vec<u8>,
}

impl InterpError {
    pub fn new(message: String, location: Option<FilePosition>) -> Self {
        Self {
            message,
            location,
            notes: Vec::new(),
            stdout: Vec::new(),
        }
    }

    /// The error as a diagnostic record, to render with the source line.
    pub fn to_record(&self) -> Record {
        Record {
            severity: Severity::Error,
            position: self.location.clone(),
            message: self.message.clone(),
            notes: self
                .notes
                .iter()
                .map(|note| Record {
                    severity: Severity::Note,
                    position: note.location.clone(),
                    message: note.message.clone(),
                    notes: Vec::new(),
                })
                .collect(),
        }
    }
}

fn write_position(f: &mut fmt::Formatter<'_>, position: &Option<FilePosition>) -> fmt::Result {
    match position {
        Some(p) => write!(f, "{}:{}:{}", p.file, p.line, p.column),
        None => write!(f, "<unknown>"),
    }
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_position(f, &self.location)?;
        write!(f, ": error: {}", self.message)?;
        for note in &self.notes {
            writeln!(f)?;
            write_position(f, &note.location)?;
            write!(f, ": note: {}", note.message)?;
        }
        Ok(())
    }
}

/// Interprets `entry` (a function without arguments) of `module` with
/// program arguments `args` (what `pgpu.argi` reads).
pub fn run_module(
    module: &melior::ir::Module,
    entry: &str,
    args: &[String],
    options: &Options,
) -> Result<RunOutcome, InterpError> {
    let program =
        ir::convert(module).map_err(|error| InterpError::new(error.message, error.loc))?;
    let Some(&func) = program.func_ids.get(entry) else {
        return Err(InterpError::new(
            format!("the module has no function '@{entry}'"),
            None,
        ));
    };
    let mut interp = exec::Interp::new(&program, args, options)?;
    let result = interp
        .function_fiber(func, Vec::new())
        .and_then(|mut fiber| interp.run_fiber(&mut fiber));
    match result {
        Ok(exec::Stop::Done(values)) => {
            let exit_code = match values.first() {
                None => 0,
                Some(value::Val::Int(code)) => *code as i32,
                Some(other) => {
                    let mut error = InterpError::new(
                        format!("'@{entry}' returned {other:?}, not an integer exit status"),
                        None,
                    );
                    error.stdout = interp.out;
                    return Err(error);
                }
            };
            Ok(RunOutcome {
                stdout: interp.out,
                exit_code,
            })
        }
        Ok(exec::Stop::Sync) => {
            let mut error = InterpError::new(
                "a synchronization op was reached outside an SPMD region".into(),
                None,
            );
            error.stdout = interp.out;
            Err(error)
        }
        Err(mut error) => {
            error.stdout = interp.out;
            Err(error)
        }
    }
}

/// Compares two runs of one program (before and after a transformation):
/// `Err` describes the first difference (the first differing output line,
/// or the exit codes).
pub fn compare_outcomes(before: &RunOutcome, after: &RunOutcome) -> Result<(), String> {
    if before.stdout != after.stdout {
        let old = String::from_utf8_lossy(&before.stdout);
        let new = String::from_utf8_lossy(&after.stdout);
        let mut old_lines = old.split_inclusive('\n');
        let mut new_lines = new.split_inclusive('\n');
        let mut number = 1;
        loop {
            match (old_lines.next(), new_lines.next()) {
                (Some(a), Some(b)) if a == b => number += 1,
                (a, b) => {
                    let show = |line: Option<&str>| match line {
                        Some(line) => format!("{:?}", line.trim_end_matches('\n')),
                        None => "<end of output>".to_string(),
                    };
                    return Err(format!(
                        "the output differs at line {number}:\n  before: {}\n  after:  {}",
                        show(a),
                        show(b)
                    ));
                }
            }
        }
    }
    if before.exit_code != after.exit_code {
        return Err(format!(
            "the exit code differs: before {}, after {}",
            before.exit_code, after.exit_code
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
