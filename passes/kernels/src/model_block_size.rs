//! `pgpu-model-block-size`: chooses the block size of each host kernel with
//! the Petri-net performance model (seeds/petri-net-gpu-model.txt, the
//! `pgpu-perf-model` crate) and records the choice as a remark.
//!
//! Without it, `pgpu-offload-kernels` asks the runtime for a block size at
//! every launch (`pgpu_rt_kernel_block_size`: the offload's block size N,
//! or the smallest multiple of 32 that spreads a small kernel over every
//! multiprocessor). This pass instead predicts, for every host kernel
//! (outermost `scf.parallel`) whose thread count is known at compile time,
//! the kernel's steps for each candidate block size (32, 64, ..., 1024,
//! and the runtime heuristic's choice) with the kernel's per-thread
//! instruction mix (`instruction_mix.rs`): the candidate decides how many
//! blocks and warps each multiprocessor holds and in how many rounds of
//! resident blocks the kernel runs. The candidate with the fewest
//! predicted steps (on a tie the larger block: fewer blocks to schedule,
//! which the model does not charge for) replaces the heuristic's choice
//! when it saves at least 5% of the heuristic's steps (less is within
//! what the seed of the conflict resolution moves). The choice is set as
//! `pgpu.block_size` on the kernel, which `pgpu-offload-kernels` then
//! launches with, and a remark gives every candidate's steps.
//!
//! A thread count read from the program's arguments (`pgpu.argi`) is known
//! only for the arguments the pass is given: without the `args` option
//! such a kernel keeps the runtime's choice, and the remark says why; with
//! it the choice is tuned to those arguments (like a profile). Kernels
//! whose thread count is unknown keep the runtime's choice too.
//!
//! Options: those of `pgpu-estimate-time` (the device, latencies, seed,
//! args, calibration); `block-size` is the runtime heuristic's largest
//! block (the offload's N), shown for comparison.
//!
//! We write this pass ourselves: upstream MLIR has no performance model.

use crate::estimate_time::{MODEL_OPTIONS, ModelSettings};
use crate::instruction_mix::kernel_mixes;
use crate::ir::Op;
use melior::ir::{
    OperationRef, attribute::IntegerAttribute, operation::OperationLike, r#type::IntegerType,
};
use pgpu_pass_infra::{
    Pass, PassFailure, PassOption, PassOptions, Severity, emit_diagnostic, emit_error,
};
use pgpu_perf_model::{Launch, gpu::Estimator};

/// The attribute of a host kernel whose block size the model chose.
pub const MODEL_BLOCK_SIZE: &str = "pgpu.block_size";

/// The share of the heuristic's steps another block size must save to be
/// chosen instead: below it, the difference is within what the conflict
/// resolution's seed moves (a few percent).
const MARGIN: f64 = 0.05;

/// The block sizes the model weighs, besides the runtime heuristic's.
const CANDIDATES: [u64; 6] = [32, 64, 128, 256, 512, 1024];

/// The pass.
#[derive(Debug, Default)]
pub struct ModelBlockSize {
    settings: ModelSettings,
}

/// The runtime's block size for `threads` (`pgpu_rt_kernel_block_size`):
/// `most`, or the smallest multiple of 32 that gives every multiprocessor
/// a block.
pub(crate) fn runtime_block_size(threads: u64, most: u64, multiprocessors: u64) -> u64 {
    let signed = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
    let block = pgpu_runtime::device::spread_block_size(
        signed(threads),
        signed(most),
        signed(multiprocessors),
    );
    u64::try_from(block).unwrap_or(1)
}

impl Pass for ModelBlockSize {
    const ARGUMENT: &'static str = "pgpu-model-block-size";
    const SUMMARY: &'static str = "Choose each host kernel's block size with the Petri-net GPU model (fewest predicted steps); set pgpu.block_size and emit a remark";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const OPTIONS: &'static [PassOption] = MODEL_OPTIONS;

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        Ok(Self {
            settings: ModelSettings::from_options(options)?,
        })
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let context_ref = module.context();
        // SAFETY: the context outlives the pass run.
        let context = unsafe { context_ref.to_ref() };
        let settings = &self.settings;
        let mut estimator = Estimator::new(settings.device.clone(), settings.seed);
        for kernel in kernel_mixes(Op::of(module), &settings.args) {
            if !kernel.anchor.is("scf.parallel") {
                continue;
            }
            let location = kernel.anchor.melior_location();
            let keep = |why: String| {
                let message = format!("{}: the runtime chooses the block size: {why}", kernel.name);
                emit_diagnostic(location, Severity::Remark, &message);
            };
            let threads = match &kernel.threads {
                Ok(0) => continue,
                Ok(threads) => *threads,
                Err(why) => {
                    keep(format!("thread count unknown ({why})"));
                    continue;
                }
            };
            if kernel.threads_read_arguments && settings.args.is_empty() {
                keep(format!(
                    "its {threads} threads depend on the program's arguments (give them with 'args')"
                ));
                continue;
            }
            let heuristic = runtime_block_size(
                threads,
                settings.block_size,
                settings.device.multiprocessors,
            );
            let mut candidates: Vec<u64> = CANDIDATES.to_vec();
            if !candidates.contains(&heuristic) {
                candidates.push(heuristic);
                candidates.sort_unstable();
            }
            let mut predicted = Vec::new();
            for &block in &candidates {
                let launch = Launch { threads, block };
                match estimator.kernel(launch, kernel.mix) {
                    Ok(estimate) => predicted.push((block, estimate.steps)),
                    Err(error) => {
                        return Err(emit_error(
                            location,
                            &format!(
                                "{}: the model failed for blocks of {block}: {error}",
                                kernel.name
                            ),
                        ));
                    }
                }
            }
            let heuristic_steps = predicted
                .iter()
                .find(|&&(block, _)| block == heuristic)
                .map_or(u64::MAX, |&(_, steps)| steps);
            // Fewest steps; on a tie the larger block (later in the list).
            let Some(&(best, best_steps)) = predicted.iter().rev().min_by_key(|&&(_, steps)| steps)
            else {
                continue;
            };
            // The heuristic's block unless the model predicts a clear gain.
            let (chosen, steps) = if (best_steps as f64) <= (1.0 - MARGIN) * heuristic_steps as f64
            {
                (best, best_steps)
            } else {
                (heuristic, heuristic_steps)
            };
            kernel.anchor.set_attribute(
                MODEL_BLOCK_SIZE,
                IntegerAttribute::new(IntegerType::new(context, 64).into(), chosen as i64).into(),
            );
            let table: Vec<String> = predicted
                .iter()
                .map(|(block, steps)| format!("{block}: {steps}"))
                .collect();
            let mut message = format!(
                "{}: block size {chosen} ({threads} threads; predicted steps by block size {}; {})",
                kernel.name,
                table.join(", "),
                if chosen == heuristic {
                    "the runtime's heuristic's choice, no other saves 5%".to_string()
                } else {
                    format!(
                        "the runtime's heuristic would take {heuristic}: {:.1}% more steps",
                        100.0 * (heuristic_steps as f64 / steps.max(1) as f64 - 1.0)
                    )
                }
            );
            if kernel.threads_read_arguments {
                message.push_str(" for the given arguments");
            }
            if !kernel.unknown.is_empty() {
                message.push_str("; the mix is a lower bound");
            }
            emit_diagnostic(location, Severity::Remark, &message);
        }
        Ok(())
    }
}
