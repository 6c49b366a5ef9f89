//! Every generated collective module, in every configuration (float order
//! `_tree`, look-back `_packed`, both), goes through the upstream pipeline
//! to PTX for sm_90 (host code included, down to the LLVM dialect).
//!
//! With `PGPU_COLLECTIVES_DUMP=<dir>` the test also writes, per module,
//! `<symbol>.mlir` (the generated text) and `<symbol>.llvm.mlir` (the
//! lowered module with its `gpu.binary`), which bench/collectives/build.sh
//! turns into a shared library for the GPU tests. `PGPU_COLLECTIVES_ONLY`
//! restricts the run to symbols containing the given text.

use melior::{ir::operation::OperationLike, pass::PassManager};
use pgpu_backend_nvptx::{
    collectives::{self, Collective, Config, FloatOrder, Lookback},
    extract_ptx,
};
use pgpu_pass_infra::tool;

/// Lowers one module; returns (lowered text, PTX) or the diagnostics.
fn lower(name: &str, text: &str) -> Result<(String, String), String> {
    let context = tool::create_context(&[]);
    let collector = pgpu_pass_infra::diagnostics::Collector::attach(&context);
    let lowered = tool::parse_module(&context, text, name).and_then(|mut module| {
        if !module.as_operation().verify() {
            return None;
        }
        let pass_manager = PassManager::new(&context);
        melior::utility::parse_pass_pipeline(
            pass_manager.as_operation_pass_manager(),
            &collectives::pipeline("sm_90", 3),
        )
        .ok()?;
        pass_manager.run(&mut module).ok()?;
        let ptx: String = extract_ptx(&module)
            .into_iter()
            .map(|kernel| kernel.ptx)
            .collect();
        Some((module.as_operation().to_string(), ptx))
    });
    let diagnostics: Vec<String> = collector
        .take()
        .iter()
        .map(|record| format!("{record:?}"))
        .collect();
    lowered.ok_or_else(|| diagnostics.join("\n"))
}

#[test]
fn every_collective_lowers_to_ptx() {
    let dump = std::env::var("PGPU_COLLECTIVES_DUMP").ok();
    let only = std::env::var("PGPU_COLLECTIVES_ONLY").ok();
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).expect("dump directory");
    }
    let mut jobs = Vec::new();
    for (collective, elem) in collectives::all() {
        let float_order =
            matches!(collective, Collective::Reduce(_) | Collective::Scan(_)) && elem.is_float();
        let lookback = matches!(
            collective,
            Collective::Scan(_) | Collective::Compact | Collective::Split | Collective::Expand
        );
        for (order, tuning, suffix) in [
            (FloatOrder::Blocked, Lookback::Separate, ""),
            (FloatOrder::Tree, Lookback::Separate, "_tree"),
            (FloatOrder::Blocked, Lookback::Packed, "_packed"),
            (FloatOrder::Tree, Lookback::Packed, "_tree_packed"),
        ] {
            if (order == FloatOrder::Tree && !float_order)
                || (tuning == Lookback::Packed && !lookback)
            {
                continue;
            }
            let config = Config {
                float_order: order,
                lookback: tuning,
            };
            let generated = collectives::generate(collective, elem, &config).expect("generates");
            // Variants are separate modules: every symbol gets the suffix.
            let name = format!("{}{suffix}", generated.symbol);
            if only
                .as_ref()
                .is_some_and(|only| !name.contains(only.as_str()))
            {
                continue;
            }
            let text = generated.text.replace(&generated.symbol, &name);
            jobs.push((name, text));
        }
    }
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4);
    let queue = std::sync::Mutex::new(jobs);
    let failures = std::sync::Mutex::new(Vec::new());
    let count = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let Some((name, text)) = queue.lock().expect("queue").pop() else {
                        break;
                    };
                    match lower(&name, &text) {
                        Ok((lowered, ptx)) => {
                            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            if !ptx.contains(".entry") || !ptx.contains(".target sm_90") {
                                failures
                                    .lock()
                                    .expect("failures")
                                    .push(format!("{name}: no kernels in the PTX"));
                            }
                            if let Some(dir) = &dump {
                                let write = |suffix: &str, body: &str| {
                                    std::fs::write(format!("{dir}/{name}{suffix}"), body)
                                        .expect("dump");
                                };
                                write(".mlir", &text);
                                write(".llvm.mlir", &lowered);
                                write(".ptx", &ptx);
                            }
                        }
                        Err(diagnostics) => {
                            if let Some(dir) = &dump {
                                let _ = std::fs::write(format!("{dir}/{name}.failed.mlir"), &text);
                            }
                            failures
                                .lock()
                                .expect("failures")
                                .push(format!("{name}:\n{diagnostics}"));
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().expect("failures");
    assert!(
        failures.is_empty(),
        "{} modules failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(count.into_inner() > 0);
}
