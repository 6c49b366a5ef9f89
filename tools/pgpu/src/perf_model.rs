//! `pgpu perf-model` and `pgpu perf-calibrate`: the Petri-net performance
//! model (seeds/petri-net-gpu-model.txt, crate `pgpu-perf-model`) from the
//! command line.
//!
//! * `pgpu perf-model PROG [-- ARGS]` takes a program to the kernel stage
//!   (`KERNEL_PIPELINE`; an `.mlir` file as it is unless it still has
//!   spawns) and prints one row per kernel: threads, warps, warps on the
//!   busiest multiprocessor, the per-thread mix x_a, x_s, x_g, predicted
//!   steps, the idle share and, with `--calibration`, microseconds. ARGS
//!   are the program's arguments, as `argi` reads them. `--launches
//!   PROFILE` predicts the kernels whose thread count only a run knows
//!   for the launch shapes a run's `PGPU_PROFILE=kernels` report recorded,
//!   and takes every kernel's launch count from it. `--warm-l1 L` predicts
//!   a kernel launched more than once with its later launches waiting L
//!   (the model's warm launches; `none` turns off a calibration's).
//!   `--dot FILE` and `--emit-net FILE` write the SM net of one kernel
//!   (`--kernel NAME`, by default the first one predicted) as Graphviz or
//!   in the net text format.
//! * `pgpu perf-model NET.pn` simulates a net written in the text format
//!   (`pgpu_perf_model::text`) to its dead marking and prints the steps,
//!   the idle steps and the firings (`--trace` prints every step).
//! * `pgpu perf-calibrate MEASUREMENTS -o FILE --device NAME` fits the
//!   steps-to-seconds scale to measured kernels (`steps,seconds[,label]`
//!   per line) and writes the calibration file.

use crate::{has_op, load_module, read, run_pipeline, write_stdout};
use clap::Args;
use pgpu_kernel_passes::{KernelPrediction, ModelSettings};
use pgpu_pass_infra::tool;
use pgpu_perf_model::{
    Device, LaunchCount, Simulation, SmModel, StepLimit, WarmLaunches, calibration::Calibration,
    dot::to_dot, gpu::H200_L2_BYTES, text,
};
use std::fmt::Write;

/// Options of `pgpu perf-model`.
#[derive(Args, Debug)]
pub struct PerfModelOptions {
    /// A program (`.bsgp`, `.fork`, `.c`, `.mlir`) or a net (`.pn`).
    file: String,
    /// Multiprocessors of the device.
    #[arg(long, default_value_t = 132)]
    multiprocessors: u64,
    /// Warp schedulers per multiprocessor (tokens of p0).
    #[arg(long, default_value_t = 4)]
    schedulers: u64,
    /// Global-memory latency l1, in steps [default: the calibration's,
    /// else 20].
    #[arg(long)]
    l1: Option<u64>,
    /// Shared-memory latency l2, in steps [default: the calibration's,
    /// else 2].
    #[arg(long)]
    l2: Option<u64>,
    /// Threads per block where the launch does not say.
    #[arg(long = "block-size", default_value_t = 256)]
    block_size: u64,
    /// Global accesses in flight at once per SM (a place `memory` of that
    /// many tokens: a bandwidth limit the paper's net does not have)
    /// [default: none].
    #[arg(long = "memory-slots", value_name = "K")]
    memory_slots: Option<u64>,
    /// Global-memory latency of a kernel's launches after its first, which
    /// find its data in the cache (a deviation from the paper; `none`:
    /// every launch waits l1) [default: the calibration's, else none].
    #[arg(long = "warm-l1", value_name = "L|none")]
    warm_l1: Option<String>,
    /// The cache warm launches find their data in, in bytes: a kernel
    /// whose loop touches more between its launches stays cold.
    #[arg(long = "cache-bytes", default_value_t = H200_L2_BYTES)]
    cache_bytes: u64,
    /// Seed of the random permutations that resolve conflicts.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A calibration file (`pgpu perf-calibrate`): predict microseconds.
    #[arg(long)]
    calibration: Option<String>,
    /// The kernel whose net `--dot` and `--emit-net` write.
    #[arg(long)]
    kernel: Option<String>,
    /// Write the net as Graphviz dot to this file.
    #[arg(long)]
    dot: Option<String>,
    /// Write the net in the `.pn` text format to this file.
    #[arg(long = "emit-net")]
    emit_net: Option<String>,
    /// Print the transitions of every step (nets only).
    #[arg(long)]
    trace: bool,
    /// Give up on a net that has not died after this many steps (nets only).
    #[arg(long = "max-steps", default_value_t = 100_000_000)]
    max_steps: u64,
    /// Print the table as comma-separated values.
    #[arg(long)]
    csv: bool,
    /// A run's profile (`PGPU_PROFILE=kernels` output, its
    /// `pgpu-profile-kernel-launch` lines): kernels whose thread count the
    /// program does not give are predicted per launch for the recorded
    /// launch shapes.
    #[arg(long, value_name = "PROFILE")]
    launches: Option<String>,
    /// Passes to run on the frontend's IR before the kernel pipeline, as
    /// in `pgpu compile --passes`: the model then predicts the
    /// transformed program's kernels.
    #[arg(long, value_name = "PIPELINE")]
    passes: Option<String>,
    /// The program's arguments (read by `argi`), after `--`.
    #[arg(last = true)]
    args: Vec<String>,
}

/// Options of `pgpu perf-calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateOptions {
    /// Measured kernels: `steps,seconds[,label]` per line (`#` comments;
    /// a first line that is not numbers is a header).
    measurements: String,
    /// The calibration file to write.
    #[arg(short = 'o', long = "output")]
    output: String,
    /// The device the times were measured on.
    #[arg(long)]
    device: String,
    /// The global-memory latency the steps were predicted with, recorded
    /// in the file for the tools to predict with.
    #[arg(long)]
    l1: Option<u64>,
    /// The shared-memory latency the steps were predicted with.
    #[arg(long)]
    l2: Option<u64>,
    /// The warm launches' global-memory latency the steps were predicted
    /// with (`pgpu perf-model --warm-l1`).
    #[arg(long = "warm-l1")]
    warm_l1: Option<u64>,
}

pub fn perf_model(options: &PerfModelOptions) -> Result<(), ()> {
    let calibration = match &options.calibration {
        Some(path) => Some(read_calibration(path)?),
        None => None,
    };
    let warm = WarmLaunches::from_setting(
        options.warm_l1.as_deref(),
        options.cache_bytes,
        calibration.as_ref(),
    )
    .map_err(|text| {
        eprintln!("error: --warm-l1 takes a number of steps or 'none', not '{text}'")
    })?;
    let device = Device {
        multiprocessors: positive("--multiprocessors", options.multiprocessors)?,
        warm,
        sm: SmModel {
            memory_slots: match options.memory_slots {
                Some(slots) => Some(positive("--memory-slots", slots)?),
                None => None,
            },
            ..SmModel::with_latencies(
                positive("--schedulers", options.schedulers)?,
                options.l1,
                options.l2,
                calibration.as_ref(),
            )
        },
        ..Device::default()
    };
    if options.file.ends_with(".pn") {
        return simulate_net(options);
    }
    if !(1..=1024).contains(&options.block_size) {
        eprintln!(
            "error: --block-size {} is not between 1 and 1024",
            options.block_size
        );
        return Err(());
    }
    let args = options
        .args
        .iter()
        .map(|arg| {
            arg.parse::<i64>()
                .map_err(|_| eprintln!("error: the program argument '{arg}' is not an integer"))
        })
        .collect::<Result<Vec<i64>, ()>>()?;
    let recorded = match &options.launches {
        None => Default::default(),
        Some(path) => {
            let (_, text) = read(path)?;
            pgpu_kernel_passes::parse_recorded_launches(&text)
                .map_err(|(line, error)| eprintln!("{path}:{line}: error: {error}"))?
        }
    };
    let settings = ModelSettings {
        device,
        block_size: options.block_size,
        seed: options.seed,
        args,
        calibration,
        recorded,
    };
    let (name, source) = read(&options.file)?;
    let context = crate::plugins::create_context();
    let mut module = load_module(&context, &name, &source)?;
    let is_source = !name.ends_with(".mlir");
    if is_source || has_op(&module, "pgpu.spawn") {
        // The cuda target's kernel stage (Fork groups that fit a block as
        // block kernels), as `pgpu compile --target cuda` builds it.
        let pipeline = crate::compile::after_passes(
            options.passes.as_deref(),
            &pgpu_kernel_passes::kernel_pipeline(false, Some(256), None),
        )?;
        run_pipeline(&context, &mut module, &pipeline, &name, &source)?;
    }
    let predictions = settings.predict(module.as_operation());
    if predictions.is_empty() {
        eprintln!(
            "error: {name} has no kernels (outermost scf.parallel, gpu.launch or gpu.func kernels)"
        );
        return Err(());
    }
    write_stdout(&table(&predictions, &settings, options.csv))?;
    if options.dot.is_some() || options.emit_net.is_some() {
        write_kernel_net(&predictions, &settings, options)?;
    }
    Ok(())
}

fn positive(flag: &str, value: u64) -> Result<u64, ()> {
    if value == 0 {
        eprintln!("error: {flag} must be at least 1");
        return Err(());
    }
    Ok(value)
}

fn read_calibration(path: &str) -> Result<Calibration, ()> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| eprintln!("error: cannot read the calibration '{path}': {error}"))?;
    Calibration::parse(&text).map_err(|error| eprintln!("error: {path}: {error}"))
}

/// The table of `pgpu perf-model`.
fn table(predictions: &[KernelPrediction], settings: &ModelSettings, csv: bool) -> String {
    let mut header = vec![
        "kernel", "threads", "launches", "warps", "warps/SM", "x_a", "x_s", "x_g", "steps",
        "idle %",
    ];
    if settings.calibration.is_some() {
        header.push("us");
    }
    header.push("notes");
    let mut rows = Vec::new();
    let mut footnotes = Vec::new();
    for prediction in predictions {
        let kernel = &prediction.kernel;
        let mix = kernel.mix;
        let recorded = &prediction.recorded;
        let launches: u64 = recorded.iter().map(|shape| shape.launches).sum();
        let threads = match &kernel.threads {
            Ok(threads) => threads.to_string(),
            // The mean per launch of the recorded ones.
            Err(_) if launches > 0 => {
                let total: u64 = recorded
                    .iter()
                    .map(|shape| shape.threads * shape.launches)
                    .sum();
                (total / launches).to_string()
            }
            Err(_) => "?".to_string(),
        };
        let count = match prediction.launches {
            LaunchCount::Known(count) => count.to_string(),
            LaunchCount::Unknown => "?".to_string(),
        };
        let mut row = vec![kernel.name.clone(), threads, count];
        let mut notes = Vec::new();
        if launches > 0 {
            let (low, high) = recorded.iter().fold((u64::MAX, 0), |(low, high), shape| {
                (low.min(shape.threads), high.max(shape.threads))
            });
            notes.push(match recorded.len() {
                1 => format!("threads recorded ({launches} launches)"),
                shapes => format!(
                    "threads recorded: {launches} launches of {shapes} shapes, {low}..{high} threads; steps per launch"
                ),
            });
        }
        match &prediction.estimate {
            Ok(estimate) => {
                row.push(estimate.warps.to_string());
                row.push(estimate.warps_per_sm.to_string());
                row.extend([mix.arithmetic, mix.shared, mix.global].map(|n| n.to_string()));
                row.push(estimate.steps.to_string());
                row.push(format!("{:.1}", 100.0 * estimate.idle_share()));
                if let Some(warm) = estimate.warm_steps {
                    notes.push(match prediction.launches {
                        LaunchCount::Unknown => {
                            format!("taken as many launches, all warm: {warm} steps")
                        }
                        LaunchCount::Known(_) => {
                            format!("steps per launch: the first cold, the others {warm}")
                        }
                    });
                }
                if let Some(calibration) = &settings.calibration {
                    row.push(format!("{:.2}", 1e6 * calibration.seconds(estimate.steps)));
                }
            }
            Err(why) => {
                row.extend(["-".to_string(), "-".to_string()]);
                row.extend([mix.arithmetic, mix.shared, mix.global].map(|n| n.to_string()));
                row.extend(["-".to_string(), "-".to_string()]);
                if settings.calibration.is_some() {
                    row.push("-".to_string());
                }
                notes.push(format!("no prediction: {why}"));
            }
        }
        if !kernel.unknown.is_empty() {
            notes.push("lower bound".to_string());
            for unknown in &kernel.unknown {
                footnotes.push(format!("{}: {unknown}", kernel.name));
            }
        }
        row.push(notes.join("; "));
        rows.push(row);
    }
    let mut text = String::new();
    if csv {
        let _ = writeln!(text, "{}", header.join(","));
        for row in rows {
            let cells: Vec<String> = row
                .iter()
                .map(|cell| match cell.contains([',', '"']) {
                    true => format!("\"{}\"", cell.replace('"', "\"\"")),
                    false => cell.clone(),
                })
                .collect();
            let _ = writeln!(text, "{}", cells.join(","));
        }
        return text;
    }
    let slots = settings
        .device
        .sm
        .memory_slots
        .map_or(String::new(), |slots| format!(", {slots} memory slots"));
    let warm = settings.device.warm.map_or(String::new(), |warm| {
        format!(
            ", warm l1 = {} within {} bytes",
            warm.global_latency, warm.cache_bytes
        )
    });
    let _ = writeln!(
        text,
        "# {}: {} multiprocessors, {} schedulers each, l1 = {}, l2 = {}{warm}{slots}, seed {}",
        settings.device.name,
        settings.device.multiprocessors,
        settings.device.sm.schedulers,
        settings.device.sm.global_latency,
        settings.device.sm.shared_latency,
        settings.seed
    );
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let last = header.len() - 1;
    let line = |cells: Vec<&str>| -> String {
        let mut line = String::new();
        for (index, cell) in cells.iter().enumerate() {
            if index == 0 || index == last {
                let _ = write!(line, "{cell:<width$}  ", width = widths[index]);
            } else {
                let _ = write!(line, "{cell:>width$}  ", width = widths[index]);
            }
        }
        line.trim_end().to_string()
    };
    let _ = writeln!(text, "{}", line(header.clone()));
    for row in &rows {
        let _ = writeln!(text, "{}", line(row.iter().map(String::as_str).collect()));
    }
    for footnote in footnotes {
        let _ = writeln!(text, "# {footnote}");
    }
    text
}

/// `--dot` and `--emit-net` for a program: the SM net of one kernel.
fn write_kernel_net(
    predictions: &[KernelPrediction],
    settings: &ModelSettings,
    options: &PerfModelOptions,
) -> Result<(), ()> {
    let chosen = match &options.kernel {
        Some(name) => predictions
            .iter()
            .find(|p| &p.kernel.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = predictions.iter().map(|p| p.kernel.name.as_str()).collect();
                eprintln!(
                    "error: no kernel named '{name}'; the kernels are: {}",
                    names.join(", ")
                );
            })?,
        None => predictions
            .iter()
            .find(|p| p.estimate.is_ok())
            .ok_or_else(|| eprintln!("error: no kernel has a prediction to draw"))?,
    };
    let Ok(estimate) = &chosen.estimate else {
        eprintln!(
            "error: kernel '{}' has no prediction, so no net",
            chosen.kernel.name
        );
        return Err(());
    };
    let warps = vec![chosen.kernel.mix; estimate.warps_per_sm as usize];
    let net = settings
        .device
        .sm
        .net(&warps)
        .map_err(|error| eprintln!("error: {error}"))?;
    write_outputs(&net, &chosen.kernel.name, options)
}

/// Writes `text` to `path` through a temporary file renamed into place.
fn write_output(path: &str, text: &str) -> Result<(), ()> {
    tool::write_output(path, text).map_err(|error| eprintln!("{:?}", miette::Report::new(error)))
}

fn write_outputs(
    net: &pgpu_perf_model::Net,
    name: &str,
    options: &PerfModelOptions,
) -> Result<(), ()> {
    if let Some(path) = &options.dot {
        write_output(path, &to_dot(net, name))?;
    }
    if let Some(path) = &options.emit_net {
        write_output(path, &text::print(net))?;
    }
    Ok(())
}

/// `pgpu perf-model NET.pn`.
fn simulate_net(options: &PerfModelOptions) -> Result<(), ()> {
    let (name, source) = read(&options.file)?;
    let net = text::parse(&source).map_err(|error| {
        let report = miette::Report::new(NetSyntax {
            message: error.message.clone(),
            span: (error.span.0, error.span.1 - error.span.0).into(),
        })
        .with_source_code(miette::NamedSource::new(&name, source.clone()));
        eprintln!("{report:?}");
    })?;
    let mut trace = String::new();
    let outcome = Simulation::new(&net, options.seed)
        .run_observed(StepLimit(options.max_steps), |step, fired| {
            if options.trace {
                let names: Vec<&str> = fired
                    .iter()
                    .map(|&t| net.transition(t).name.as_str())
                    .collect();
                let _ = writeln!(trace, "step {step}: {}", names.join(" "));
            }
        })
        .map_err(|error| eprintln!("error: {name}: {error}"))?;
    let mut text = trace;
    let _ = writeln!(
        text,
        "{name}: {} places, {} transitions; dead after {} steps, {} idle ({:.1}%), {} firings",
        net.places().len(),
        net.transitions().len(),
        outcome.steps,
        outcome.idle_steps,
        100.0 * outcome.idle_share(),
        outcome.firings
    );
    let marked: Vec<String> = net
        .places()
        .iter()
        .zip(&outcome.marking)
        .filter(|(_, tokens)| **tokens > 0)
        .map(|(place, tokens)| format!("{}={tokens}", place.name))
        .collect();
    let _ = writeln!(
        text,
        "dead marking: {}",
        if marked.is_empty() {
            "empty".to_string()
        } else {
            marked.join(" ")
        }
    );
    write_stdout(&text)?;
    write_outputs(&net, &name, options)
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{message}")]
struct NetSyntax {
    message: String,
    #[label("here")]
    span: miette::SourceSpan,
}

/// `pgpu perf-calibrate`.
pub fn calibrate(options: &CalibrateOptions) -> Result<(), ()> {
    let (name, text) = read(&options.measurements)?;
    let mut measurements = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let mut fields = line.split(',').map(str::trim);
        let steps = fields.next().and_then(|f| f.parse::<f64>().ok());
        let seconds = fields.next().and_then(|f| f.parse::<f64>().ok());
        match (steps, seconds) {
            (Some(steps), Some(seconds)) => measurements.push((steps, seconds)),
            _ if measurements.is_empty() && index == 0 => {} // a header
            _ => {
                eprintln!(
                    "error: {name}:{}: expected 'steps,seconds[,label]', found '{line}'",
                    index + 1
                );
                return Err(());
            }
        }
    }
    let fit = Calibration {
        global_latency: options.l1,
        shared_latency: options.l2,
        warm_global_latency: options.warm_l1,
        ..Calibration::fit(&options.device, &measurements)
            .map_err(|error| eprintln!("error: {name}: {error}"))?
    };
    write_output(&options.output, &fit.print())?;
    eprintln!(
        "{}: seconds = {:e} * steps + {:e} over {} kernels (Spearman {:.3} between steps and seconds)",
        options.device, fit.seconds_per_step, fit.launch_seconds, fit.samples, fit.spearman
    );
    Ok(())
}
