//! Kernel formation: the passes every frontend shares to turn pgpu SPMD
//! regions into kernels (seeds/bsgp.txt, Sections 4.1 to 4.3).
//!
//! * `pgpu-inline-spmd` inlines functions with barriers and collectives;
//! * `pgpu-eliminate-barriers` removes barriers no thread depends on;
//! * `pgpu-grid-fuse{max-threads=N}` runs barrier-only spawns that fit the
//!   device as one kernel with grid-wide barriers;
//! * `pgpu-form-supersteps` splits spawn bodies into supersteps, aligning
//!   `par` branches;
//! * `pgpu-save-values` keeps as superstep results exactly the values to
//!   save (`pgpu-print-saved-values` prints the analysis);
//! * `pgpu-print-buffer-allocation` and `pgpu-dump-buffer-graph` show the
//!   temporary buffers the minimum-flow allocation (`buffer_flow`) gives
//!   the saved values;
//! * `pgpu-split-kernels` turns each superstep into a kernel (`scf.parallel`)
//!   and the spawn into host code: buffers, hoisted requires, `pgpu.list`
//!   collectives;
//! * `pgpu-forward-list-copies` lets collectives and kernels use lists
//!   directly instead of the copies kernel formation made around
//!   collectives;
//! * `pgpu-narrow-guarded-kernels` runs kernels whose every effect is
//!   guarded by `rank == c` as one iteration;
//! * `pgpu-lower-to-runtime` lowers host I/O and `pgpu.list` collectives
//!   to calls of the `pgpu-runtime` C ABI (the backends' first step);
//! * `pgpu-offload-kernels` gives host kernels a GPU version chosen at
//!   run time and keeps host code's list accesses coherent;
//! * `pgpu-outline-cpu-kernels` runs host kernels on the CPU runtime's
//!   thread pool (`pgpu_rt_parallel_for`);
//! * `pgpu-outline-tasks` runs the host code of `pgpu.task`s that may run
//!   concurrently on threads of their own (`pgpu_rt_task_spawn`);
//! * `pgpu-check-division` asserts non-zero divisors and no signed
//!   division overflow;
//! * `pgpu-report-run-time-errors` makes failed run-time checks report the
//!   kernel and source line;
//! * `pgpu-split-private-control` turns control flow on private values in
//!   Fork's synchronous code into group splits and shrinking loops;
//! * `pgpu-propagate-group-ranks` turns parameters of Fork synchronous
//!   functions that every call passes the caller's group rank (Fork's `$`
//!   at a `start` body's statement level) into the callee's group rank;
//! * `pgpu-block-groups` gives Fork synchronous functions a version that
//!   runs a whole group, recursion included, in one thread block;
//! * `pgpu-lower-groups` runs Fork groups that split, fork or synchronize
//!   under control flow as host code launching synchronous segments;
//! * `pgpu-lower-synchronous` runs Fork groups that do not split as BSGP
//!   spawns (barriers at shared writes, Priority CRCW by claims);
//! * `pgpu-classify-speculation` makes the accesses of speculative loops
//!   that may depend across iterations speculative;
//! * `pgpu-lower-speculation` runs speculative loops with GPU-TLS: windows
//!   of speculative threads as spawns, checks and a parallel commit;
//! * `pgpu-estimate-time` predicts each kernel's steps with the Petri-net
//!   model (`pgpu-perf-model`) from its instruction mix
//!   (`instruction_mix`);
//! * `pgpu-spawn-to-parallel` lowers single-superstep spawns to
//!   `scf.parallel`, from where upstream passes map them to GPU launches
//!   (`gpu-map-parallel-loops`, `convert-parallel-loops-to-gpu`) or to CPU
//!   threads (`convert-scf-to-openmp`).

mod block_groups;
pub mod buffer_flow;
mod buffer_plan;
mod build;
mod check_division;
mod classify_speculation;
mod context_struct;
mod eliminate_barriers;
mod estimate_time;
mod form_supersteps;
mod forward_list_copies;
mod grid_fuse;
mod host_effects;
mod inline_spmd;
pub mod instruction_mix;
mod ir;
mod lower_groups;
mod lower_speculation;
mod lower_synchronous;
mod lower_to_runtime;
mod memory_effects;
mod model_block_size;
mod narrow_guarded_kernels;
mod offload_block;
mod offload_grid;
mod offload_kernels;
mod outline_cpu_kernels;
mod outline_tasks;
mod propagate_group_ranks;
mod report_run_time_errors;
mod runtime_calls;
mod spawn_to_parallel;
mod split_kernels;
mod split_private_control;
mod uniformity;
mod unsynchronized;
mod value_saving;

pub use block_groups::BlockGroups;
pub use buffer_plan::{DumpBufferGraph, PrintBufferAllocation};
pub use check_division::CheckDivision;
pub use classify_speculation::ClassifySpeculation;
pub use eliminate_barriers::EliminateBarriers;
pub use estimate_time::{
    EstimateTime, KernelPrediction, ModelSettings, RecordedLaunch, parse_recorded_launches,
};
pub use form_supersteps::FormSupersteps;
pub use forward_list_copies::ForwardListCopies;
pub use grid_fuse::GridFuse;
pub use inline_spmd::InlineSpmd;
pub use lower_groups::LowerGroups;
pub use lower_speculation::LowerSpeculation;
pub use lower_synchronous::{LowerSynchronous, UNLOWERED};
pub use lower_to_runtime::LowerToRuntime;
pub use model_block_size::ModelBlockSize;
pub use narrow_guarded_kernels::NarrowGuardedKernels;
pub use offload_kernels::OffloadKernels;
pub use outline_cpu_kernels::OutlineCpuKernels;
pub use outline_tasks::OutlineTasks;
pub use propagate_group_ranks::PropagateGroupRanks;
pub use report_run_time_errors::ReportRunTimeErrors;
pub use spawn_to_parallel::SpawnToParallel;
pub use split_kernels::SplitKernels;
pub use split_private_control::SplitPrivateControl;
pub use value_saving::{PrintSavedValues, SaveValues};

/// From the frontends' `pgpu` IR to supersteps whose results are exactly
/// the saved values (`pgpu emit --stage supersteps`).
pub const SUPERSTEP_PIPELINE: &str = "builtin.module(pgpu-lower-speculation,pgpu-inline-spmd,pgpu-lower-groups,pgpu-lower-synchronous,pgpu-eliminate-barriers,pgpu-form-supersteps,pgpu-save-values)";

/// From the frontends' `pgpu` IR to host code plus one kernel per
/// superstep (`pgpu emit --stage kernels`); `pgpu-opt --pass-pipeline=`
/// replays it.
pub const KERNEL_PIPELINE: &str = "builtin.module(pgpu-lower-speculation,pgpu-inline-spmd,pgpu-lower-groups,pgpu-lower-synchronous,pgpu-eliminate-barriers,pgpu-form-supersteps,pgpu-save-values,pgpu-split-kernels,pgpu-forward-list-copies,pgpu-narrow-guarded-kernels)";

/// [`KERNEL_PIPELINE`], with `pgpu-grid-fuse` after barrier elimination
/// when `grid_barriers` (`pgpu compile --target cuda --grid-barriers`):
/// spawns that fit the device run as one kernel with grid-wide barriers;
/// and with `pgpu-block-groups{max-threads=N}` before `pgpu-lower-groups`
/// for `block_groups: Some(N)` (the cuda target's default, N = 256): Fork
/// group calls of at most N members run, recursion included, as one
/// kernel of one thread block; and with `pgpu-model-block-size{O}` last
/// for `model_block_size: Some(O)`, O its options (`pgpu compile
/// --model-block-size --model-args A --model-calibration F`: `args=A
/// calibration=F`): the model chooses host kernels' block sizes on the
/// kernel stage, which the offload reads.
pub fn kernel_pipeline(
    grid_barriers: bool,
    block_groups: Option<u64>,
    model_block_size: Option<&str>,
) -> String {
    let mut pipeline = KERNEL_PIPELINE.to_string();
    if let Some(options) = model_block_size {
        pipeline = pipeline.replace(
            "pgpu-narrow-guarded-kernels)",
            &format!("pgpu-narrow-guarded-kernels,pgpu-model-block-size{{{options}}})"),
        );
    }
    if grid_barriers {
        pipeline = pipeline.replace(
            "pgpu-eliminate-barriers,",
            "pgpu-eliminate-barriers,pgpu-grid-fuse,",
        );
    }
    if let Some(threads) = block_groups {
        pipeline = pipeline.replace(
            "pgpu-lower-groups,",
            &format!("pgpu-block-groups{{max-threads={threads}}},pgpu-lower-groups,"),
        );
    }
    pipeline
}

pgpu_pass_infra::declare_passes![
    InlineSpmd,
    EliminateBarriers,
    GridFuse,
    FormSupersteps,
    SaveValues,
    PrintSavedValues,
    PrintBufferAllocation,
    DumpBufferGraph,
    SplitKernels,
    ForwardListCopies,
    NarrowGuardedKernels,
    LowerToRuntime,
    OffloadKernels,
    OutlineCpuKernels,
    OutlineTasks,
    ReportRunTimeErrors,
    CheckDivision,
    SpawnToParallel,
    SplitPrivateControl,
    PropagateGroupRanks,
    BlockGroups,
    LowerGroups,
    LowerSynchronous,
    ClassifySpeculation,
    LowerSpeculation,
    EstimateTime,
    ModelBlockSize
];
