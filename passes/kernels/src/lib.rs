//! Kernel formation: passes that turn pgpu SPMD regions into kernels.
//!
//! Today this holds the lowering of single-superstep `pgpu.spawn` regions
//! to `scf.parallel`, from where upstream passes map them to GPU launches
//! (`gpu-map-parallel-loops`, `convert-parallel-loops-to-gpu`) or to CPU
//! threads (`convert-scf-to-openmp`).

mod spawn_to_parallel;

pub use spawn_to_parallel::SpawnToParallel;

pgpu_pass_infra::declare_passes![SpawnToParallel];
