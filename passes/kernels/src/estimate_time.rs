//! `pgpu-estimate-time`: predicts each kernel's time with the Petri-net
//! model of seeds/petri-net-gpu-model.txt (`pgpu-perf-model`) and records
//! it on the kernel.
//!
//! For every kernel (`instruction_mix.rs`: host `scf.parallel` kernels,
//! `gpu.launch`, and `gpu.func` kernels per launch) the pass takes the
//! per-thread mix (x_a, x_s, x_g), builds the SM net with one warp part per
//! resident warp, runs it to the dead marking and sums the rounds of
//! resident blocks on the busiest multiprocessor (`gpu.rs` of the model).
//! It sets `pgpu.estimate` on the kernel (on each `gpu.launch_func` when a
//! kernel has several launches):
//!
//! ```mlir
//! {pgpu.estimate = {steps = 1234 : i64, idle_steps = 56 : i64,
//!   launches = 1 : i64, warps = 32 : i64, x_a = 12 : i64, x_s = 0 : i64,
//!   x_g = 3 : i64}}
//! ```
//!
//! and emits a remark there with the same figures (and the predicted time
//! when a calibration file is given). A kernel whose thread count is not
//! known at compile time gets its mix only and a remark saying why; a loop
//! whose trip count is unknown (counted once) is named in the remark, as
//! the figures are then lower bounds.
//!
//! A kernel launched more than once per run (`launches`, from the host
//! loops around its launch, or from a recorded profile) is predicted per
//! launch; with a warm latency (`warm-l1`, or the calibration's) its
//! launches after the first wait that instead of l1 (the model's "warm
//! launches", a deviation from the paper) and the estimate also records
//! `warm_steps`.
//!
//! Options: the device (`multiprocessors`, `schedulers`), the latencies
//! `l1` (global) and `l2` (shared; by default the calibration file's, else
//! the paper's 20 and 2), `warm-l1` and `cache-bytes` (warm launches; by
//! default the calibration's latency, else none, and the H200's L2),
//! `block-size` for kernels whose launch does not fix one, `seed` of the
//! conflict resolution, `args` (the
//! program's arguments as `pgpu.argi` reads them, comma-separated) and
//! `calibration` (a file of `pgpu perf-calibrate`).
//!
//! We write this pass ourselves: upstream MLIR has no performance model.

use crate::instruction_mix::{KernelMix, kernel_mixes};
use crate::ir::Op;
use crate::model_block_size::{MODEL_BLOCK_SIZE, runtime_block_size};
use melior::ir::{
    Attribute, Identifier, OperationRef,
    attribute::{DictionaryAttribute, IntegerAttribute},
    operation::OperationLike,
    r#type::IntegerType,
};
use pgpu_pass_infra::{Pass, PassFailure, PassOption, PassOptions, Severity, emit_diagnostic};
use pgpu_perf_model::{
    Device, KernelEstimate, Launch, LaunchCount, SmModel, WarmLaunches,
    calibration::Calibration,
    gpu::{Estimator, footprint},
};
use std::collections::BTreeMap;

/// The pass.
#[derive(Debug, Default)]
pub struct EstimateTime {
    pub(crate) settings: ModelSettings,
}

/// The model's parameters as the pass options give them.
#[derive(Debug, Clone)]
pub struct ModelSettings {
    pub device: Device,
    pub block_size: u64,
    pub seed: u64,
    pub args: Vec<i64>,
    pub calibration: Option<Calibration>,
    /// Launches recorded by the runtime's profile, by kernel name: what
    /// kernels whose thread count the IR does not give are predicted for.
    pub recorded: BTreeMap<String, Vec<RecordedLaunch>>,
}

/// Launches of one shape, as `PGPU_PROFILE=kernels` reports them
/// (`pgpu-profile-kernel-launch THREADS threads BLOCK block N launches
/// NAME`): the grid's threads (a multiple of the block, so a bounds
/// guard's idle threads count as threads), threads per block, launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedLaunch {
    pub threads: u64,
    pub block: u64,
    pub launches: u64,
}

/// The recorded launches in a profile's text (other lines are skipped),
/// by kernel name; an error is the line number (from 1) of a malformed
/// launch line and what is wrong with it.
pub fn parse_recorded_launches(
    text: &str,
) -> Result<BTreeMap<String, Vec<RecordedLaunch>>, (usize, String)> {
    let mut recorded: BTreeMap<String, Vec<RecordedLaunch>> = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("pgpu-profile-kernel-launch ") else {
            continue;
        };
        let fields: Vec<&str> = rest.splitn(7, ' ').collect();
        let number = |at: usize| fields.get(at).and_then(|field| field.parse::<u64>().ok());
        let words = [(1, "threads"), (3, "block"), (5, "launches")];
        let (Some(threads), Some(block), Some(launches), Some(name), true) = (
            number(0),
            number(2),
            number(4),
            fields.get(6).filter(|name| !name.is_empty()),
            words.iter().all(|(at, word)| fields.get(*at) == Some(word)),
        ) else {
            return Err((
                index + 1,
                "expected 'pgpu-profile-kernel-launch THREADS threads BLOCK block N launches NAME'"
                    .to_string(),
            ));
        };
        if threads == 0 || block == 0 || launches == 0 {
            return Err((index + 1, "a launch without threads".to_string()));
        }
        recorded
            .entry(name.to_string())
            .or_default()
            .push(RecordedLaunch {
                threads,
                block,
                launches,
            });
    }
    Ok(recorded)
}

impl Default for ModelSettings {
    fn default() -> Self {
        Self {
            device: Device::default(),
            block_size: 256,
            seed: 1,
            args: Vec::new(),
            calibration: None,
            recorded: BTreeMap::new(),
        }
    }
}

/// One kernel's mix and, when its launch is known, the model's estimate.
#[derive(Debug, Clone)]
pub struct KernelPrediction {
    pub kernel: KernelMix,
    pub launch: Option<Launch>,
    pub estimate: Result<KernelEstimate, String>,
    /// The recorded launches the estimate is for, where the IR does not
    /// give the thread count (empty otherwise).
    pub recorded: Vec<RecordedLaunch>,
    /// Launches per run the estimate is for: the recorded ones', else the
    /// host loops' count.
    pub launches: LaunchCount,
}

/// The estimate per launch of a kernel launched as `recorded`: each
/// shape's simulation, weighted by its launches (steps, idle steps and
/// firings are the means per launch; warps and rounds the most launched
/// shape's).
fn recorded_estimate(
    estimator: &mut Estimator,
    recorded: &[RecordedLaunch],
    mix: pgpu_perf_model::Mix,
    working_set: Option<u128>,
) -> Result<KernelEstimate, String> {
    let launches: u64 = recorded.iter().map(|shape| shape.launches).sum();
    let (mut steps, mut idle_steps, mut firings) = (0u128, 0u128, 0u128);
    let mut most: Option<(u64, KernelEstimate)> = None;
    for shape in recorded {
        let launch = Launch {
            threads: shape.threads,
            block: shape.block,
        };
        let estimate = estimator
            .repeated(launch, mix, LaunchCount::Known(shape.launches), working_set)
            .map_err(|error| error.to_string())?;
        let weight = u128::from(shape.launches);
        steps += weight * u128::from(estimate.steps);
        idle_steps += weight * u128::from(estimate.idle_steps);
        firings += weight * u128::from(estimate.firings);
        if most
            .as_ref()
            .is_none_or(|(count, _)| shape.launches > *count)
        {
            most = Some((shape.launches, estimate));
        }
    }
    let (_, mut estimate) = most.ok_or("no recorded launch")?;
    let mean = |total: u128| u64::try_from(total / u128::from(launches.max(1))).unwrap_or(u64::MAX);
    estimate.steps = mean(steps);
    estimate.idle_steps = mean(idle_steps);
    estimate.firings = mean(firings);
    Ok(estimate)
}

impl ModelSettings {
    /// The settings of the model passes' options ([`MODEL_OPTIONS`]).
    pub(crate) fn from_options(options: &PassOptions) -> Result<Self, String> {
        let positive = |name: &str| -> Result<u64, String> {
            let value: u64 = options.parse(name)?;
            if value == 0 {
                return Err(format!("option '{name}' must be at least 1"));
            }
            Ok(value)
        };
        let args = options
            .string("args")?
            .split(',')
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(|text| {
                text.parse()
                    .map_err(|_| format!("option 'args': '{text}' is not an integer"))
            })
            .collect::<Result<Vec<i64>, String>>()?;
        let calibration = match options.string("calibration")?.trim() {
            "" => None,
            path => {
                let text = std::fs::read_to_string(path).map_err(|error| {
                    format!("option 'calibration': cannot read '{path}': {error}")
                })?;
                Some(
                    Calibration::parse(&text)
                        .map_err(|error| format!("option 'calibration': {path}: {error}"))?,
                )
            }
        };
        // Empty: the calibration's latency, else the paper's.
        let latency = |name: &str| -> Result<Option<u64>, String> {
            match options.string(name)?.trim() {
                "" => Ok(None),
                _ => options.parse(name).map(Some),
            }
        };
        let warm = WarmLaunches::from_setting(
            Some(options.string("warm-l1")?),
            options.parse("cache-bytes")?,
            calibration.as_ref(),
        )
        .map_err(|text| format!("option 'warm-l1' has the invalid value '{text}'"))?;
        let block_size = positive("block-size")?;
        if block_size > 1024 {
            return Err(format!("block-size {block_size} is above 1024"));
        }
        Ok(ModelSettings {
            device: Device {
                multiprocessors: positive("multiprocessors")?,
                sm: SmModel {
                    memory_slots: match options.string("memory-slots")?.trim() {
                        "" => None,
                        _ => Some(positive("memory-slots")?),
                    },
                    ..SmModel::with_latencies(
                        positive("schedulers")?,
                        latency("l1")?,
                        latency("l2")?,
                        calibration.as_ref(),
                    )
                },
                warm,
                ..Device::default()
            },
            block_size,
            seed: options.parse("seed")?,
            args,
            calibration,
            recorded: BTreeMap::new(),
        })
    }

    /// The block size `kernel` runs with: its launch's, the one
    /// `pgpu-model-block-size` chose, or for a host kernel the runtime's
    /// (`pgpu_rt_kernel_block_size`, at most `block_size`).
    fn block_of(&self, kernel: &KernelMix, threads: u64) -> u64 {
        let chosen = kernel
            .anchor
            .integer_attribute(MODEL_BLOCK_SIZE)
            .and_then(|block| u64::try_from(block).ok());
        kernel
            .block
            .or(chosen)
            .unwrap_or_else(|| {
                runtime_block_size(threads, self.block_size, self.device.multiprocessors)
            })
            .max(1)
    }

    /// Predicts every kernel of `module`.
    pub fn predict(&self, module: OperationRef) -> Vec<KernelPrediction> {
        let mut estimator = Estimator::new(self.device.clone(), self.seed);
        let kernels = kernel_mixes(Op::of(module), &self.args);
        let launches: Vec<Option<Launch>> = kernels
            .iter()
            .map(|kernel| {
                kernel.threads.as_ref().ok().map(|&threads| Launch {
                    threads,
                    block: self.block_of(kernel, threads),
                })
            })
            .collect();
        let recorded: Vec<Vec<RecordedLaunch>> = kernels
            .iter()
            .map(|kernel| self.recorded.get(&kernel.name).cloned().unwrap_or_default())
            .collect();
        // Bytes of one launch: its threads', else the largest recorded.
        let footprints: Vec<Option<u128>> = kernels
            .iter()
            .zip(&recorded)
            .map(|(kernel, shapes)| {
                let threads = kernel
                    .threads
                    .as_ref()
                    .ok()
                    .copied()
                    .or_else(|| shapes.iter().map(|shape| shape.threads).max())?;
                Some(footprint(threads, kernel.mix))
            })
            .collect();
        // Kernels of unknown size count nothing: a lower bound, as the
        // mix of a loop of unknown trip count is.
        let working_set = |kernel: &KernelMix| -> u128 {
            kernel
                .repeated_with
                .iter()
                .filter_map(|&other| footprints[other])
                .sum()
        };
        let mut predictions = Vec::new();
        for ((kernel, launch), shapes) in kernels.iter().zip(launches).zip(recorded) {
            // A run's record of the launches beats the host loops' count.
            let count = match (shapes.is_empty(), &kernel.launches) {
                (false, _) => LaunchCount::Known(shapes.iter().map(|shape| shape.launches).sum()),
                (true, Ok(count)) => LaunchCount::Known(*count),
                (true, Err(_)) => LaunchCount::Unknown,
            };
            let bytes = Some(working_set(kernel));
            let estimate = match (&kernel.threads, launch) {
                (Err(_), _) if !shapes.is_empty() => {
                    recorded_estimate(&mut estimator, &shapes, kernel.mix, bytes)
                }
                (Err(why), _) => Err(format!("thread count unknown ({why})")),
                (_, Some(launch)) if launch.threads > 0 => estimator
                    .repeated(launch, kernel.mix, count, bytes)
                    .map_err(|error| error.to_string()),
                _ => Err("the launch has no threads".to_string()),
            };
            let recorded = match kernel.threads {
                Err(_) => shapes,
                Ok(_) => Vec::new(),
            };
            predictions.push(KernelPrediction {
                kernel: kernel.clone(),
                launch,
                estimate,
                recorded,
                launches: count,
            });
        }
        predictions
    }
}

/// [`H200_L2_BYTES`] as the `cache-bytes` option's default.
const H200_L2_BYTES_TEXT: &str = "52428800";

/// The options of the passes that run the model (`pgpu-estimate-time`,
/// `pgpu-model-block-size`).
pub(crate) const MODEL_OPTIONS: &[PassOption] = &[
    PassOption {
        name: "multiprocessors",
        description: "multiprocessors of the device",
        default: "132",
    },
    PassOption {
        name: "schedulers",
        description: "warp schedulers per multiprocessor (tokens of p0)",
        default: "4",
    },
    PassOption {
        name: "l1",
        description: "global-memory latency in steps (default: the calibration's, else 20)",
        default: "",
    },
    PassOption {
        name: "l2",
        description: "shared-memory latency in steps (default: the calibration's, else 2)",
        default: "",
    },
    PassOption {
        name: "warm-l1",
        description: "global-memory latency of a kernel's launches after its first, which find its data in the cache ('none': every launch waits l1, the paper's; default: the calibration's, else none)",
        default: "",
    },
    PassOption {
        name: "cache-bytes",
        description: "the cache warm launches find their data in: kernels whose footprint is larger stay cold (default: the H200's 50 MiB L2)",
        default: H200_L2_BYTES_TEXT,
    },
    PassOption {
        name: "memory-slots",
        description: "global accesses in flight at once per SM (a bandwidth limit; default none, the paper's net)",
        default: "",
    },
    PassOption {
        name: "block-size",
        description: "threads per block where the launch does not say",
        default: "256",
    },
    PassOption {
        name: "seed",
        description: "seed of the conflict resolution's permutations",
        default: "1",
    },
    PassOption {
        name: "args",
        description: "the program's arguments for pgpu.argi, comma-separated",
        default: "",
    },
    PassOption {
        name: "calibration",
        description: "a calibration file (pgpu perf-calibrate) to predict seconds",
        default: "",
    },
];

impl Pass for EstimateTime {
    const ARGUMENT: &'static str = "pgpu-estimate-time";
    const SUMMARY: &'static str = "Predict each kernel's steps with the Petri-net GPU model (seeds/petri-net-gpu-model.txt) from its instruction mix; set pgpu.estimate and emit a remark";
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
        for prediction in self.settings.predict(module) {
            let kernel = &prediction.kernel;
            let anchor = kernel.anchor;
            let integer = |value: u64| -> Attribute {
                IntegerAttribute::new(IntegerType::new(context, 64).into(), value as i64).into()
            };
            let mut fields = Vec::new();
            let mut message = format!("{}: ", kernel.name);
            if let Ok(estimate) = &prediction.estimate {
                fields.push(("steps", integer(estimate.steps)));
                fields.push(("idle_steps", integer(estimate.idle_steps)));
                fields.push(("warps", integer(estimate.warps)));
                if let Some(warm) = estimate.warm_steps {
                    fields.push(("warm_steps", integer(warm)));
                }
                message.push_str(&format!(
                    "predicted {} steps ({} warps, {} per multiprocessor, {} round{}, {:.1}% idle)",
                    estimate.steps,
                    estimate.warps,
                    estimate.warps_per_sm,
                    estimate.rounds,
                    if estimate.rounds == 1 { "" } else { "s" },
                    100.0 * estimate.idle_share()
                ));
                if let Some(calibration) = &self.settings.calibration {
                    message.push_str(&format!(
                        ", {:.2} us on {}",
                        1e6 * calibration.seconds(estimate.steps),
                        calibration.device
                    ));
                }
            }
            if let Err(why) = &prediction.estimate {
                message.push_str(&format!("no prediction: {why}"));
            }
            match &kernel.launches {
                Ok(count) => {
                    fields.push(("launches", integer(*count)));
                    if *count != 1 {
                        message.push_str(&format!("; {count} launches per run"));
                    }
                }
                Err(why) => message.push_str(&format!("; launches per run unknown ({why})")),
            }
            if let Ok(KernelEstimate {
                warm_steps: Some(warm),
                ..
            }) = &prediction.estimate
            {
                message.push_str(&match prediction.launches {
                    LaunchCount::Known(_) => format!(
                        " (steps per launch: the first cold, the others warm at {warm} steps)"
                    ),
                    LaunchCount::Unknown => {
                        format!(" (taken as many launches, all warm at {warm} steps)")
                    }
                });
            }
            let mix = kernel.mix;
            message.push_str(&format!(
                "; per thread x_a = {}, x_s = {}, x_g = {}",
                mix.arithmetic, mix.shared, mix.global
            ));
            fields.push(("x_a", integer(mix.arithmetic)));
            fields.push(("x_s", integer(mix.shared)));
            fields.push(("x_g", integer(mix.global)));
            if !kernel.unknown.is_empty() {
                message.push_str(" (lower bounds:");
                for unknown in &kernel.unknown {
                    message.push_str(&format!(" {unknown};"));
                }
                message.pop();
                message.push(')');
            }
            let named: Vec<(Identifier, Attribute)> = fields
                .into_iter()
                .map(|(name, value)| (Identifier::new(context, name), value))
                .collect();
            anchor.set_attribute(
                "pgpu.estimate",
                DictionaryAttribute::new(context, &named).into(),
            );
            emit_diagnostic(anchor.melior_location(), Severity::Remark, &message);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cache_bytes_default_is_the_h200_l2() {
        assert_eq!(
            super::H200_L2_BYTES_TEXT,
            pgpu_perf_model::gpu::H200_L2_BYTES.to_string()
        );
    }
}
