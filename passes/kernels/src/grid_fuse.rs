//! `pgpu-grid-fuse{max-threads=N}`: runs a spawn whose supersteps are
//! separated by plain barriers only as one kernel with grid-wide barriers,
//! when its thread count fits what the device runs at once.
//!
//! The Fork paper measured kernel launches and the host synchronization
//! between them at 31% of run time (seeds/fork-to-cuda.txt, Section 4);
//! the BSGP compiler splits a kernel at every barrier. When all threads are
//! resident at once (a cooperative launch), a barrier can instead be a grid
//! barrier inside one kernel: no launch, and no values saved to memory, as
//! private values stay in registers.
//!
//! A spawn qualifies when its body has barriers, all of them directly in
//! the body (not under control flow: a grid kernel's threads beyond the
//! count skip the code between barriers but still reach every barrier), no
//! rank reassignment, collectives, thread primitives, calls,
//! `thread.get`/`thread.put` or `par`, and `pgpu.require` only before the
//! first barrier. The device, and so the capacity, is known only at run
//! time, so the pass versions the spawn:
//!
//! ```mlir
//! %max = pgpu.grid_capacity : index
//! %fits = arith.cmpi ule, %n, %max
//! %zero = arith.constant 0 : index
//! %grid = arith.cmpi ugt, %max, %zero   // a device with grid barriers
//! %run_grid = arith.andi %fits, %grid
//! scf.if %run_grid {
//!   pgpu.spawn grid %n { ...barriers are grid barriers... }
//! } else {
//!   pgpu.spawn %n { ...split into kernels as usual... }
//! }
//! ```
//!
//! Synchronous, grid and block spawns are left alone.
//! Superstep formation and kernel splitting leave `grid` spawns alone:
//! `pgpu-offload-kernels` launches each as one cooperative kernel. The
//! capacity is 0 on the CPU device (which then runs the split version, also
//! for a count of 0: `0 <= 0` alone sent it to the grid kernel, which
//! the CPU device refuses) and
//! multiprocessors x `GRID_THREADS_PER_SM` on a CUDA device (the grid
//! kernels are compiled to fit that many threads per multiprocessor). A
//! nonzero `max-threads` also bounds the count (e.g. to try the split
//! version); 0, the default, leaves the device's capacity as the only
//! bound. We write this pass ourselves: no upstream MLIR construct has
//! grid-wide barriers.

use crate::{
    build::Builder, form_supersteps::is_boundary_op, ir::Op, offload_kernels::is_descriptor_global,
};
use melior::ir::{AttributeLike, OperationRef};
use pgpu_pass_infra::{Pass, PassFailure, PassOption, PassOptions};

/// The pass.
#[derive(Debug, Default)]
pub struct GridFuse {
    max_threads: u64,
}

impl Pass for GridFuse {
    const ARGUMENT: &'static str = "pgpu-grid-fuse";
    const SUMMARY: &'static str = "Run barrier-only spawns that fit the device as one kernel with grid-wide barriers (versioned on the thread count)";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const OPTIONS: &'static [PassOption] = &[PassOption {
        name: "max-threads",
        description: "largest thread count of a grid spawn besides the device's capacity (0: no bound)",
        default: "0",
    }];

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        vec![
            melior::dialect::DialectHandle::scf(),
            melior::dialect::DialectHandle::arith(),
        ]
    }

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        Ok(Self {
            max_threads: options.parse("max-threads")?,
        })
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let spawns: Vec<Op> = Op::of(module)
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.spawn") && fusable(*op))
            .collect();
        for spawn in spawns {
            version(spawn, self.max_threads)?;
        }
        Ok(())
    }
}

/// Whether `spawn` can run as one kernel with grid barriers.
fn fusable(spawn: Op) -> bool {
    if ["synchronous", "grid", "block"]
        .iter()
        .any(|kind| spawn.has_attribute(kind))
    {
        return false;
    }
    let Some(body) = spawn.entry_block(0) else {
        return false;
    };
    let mut barriers = 0;
    for op in body.ops() {
        if op.is("pgpu.barrier") {
            barriers += 1;
        }
        if op.is("pgpu.require") && barriers > 0 {
            return false;
        }
    }
    let nested = spawn.nested();
    let nested_barriers = nested.iter().filter(|op| op.is("pgpu.barrier")).count();
    barriers > 0
        && nested_barriers == barriers
        && nested.iter().all(|op| runs_in_grid_kernel(*op))
        && !nested.iter().any(|&op| {
            let reassigns = op.is("pgpu.barrier") && op.has_attribute("rank_reassigned");
            let unsupported = matches!(
                op.name().as_str(),
                "pgpu.superstep"
                    | "pgpu.par"
                    | "pgpu.thread.get"
                    | "pgpu.thread.put"
                    | "pgpu.set_oldrank"
                    | "func.call"
            );
            is_boundary_op(op) || reassigns || unsupported
        })
}

/// Wraps `spawn` in `scf.if (count <= capacity && capacity > 0) { grid
/// copy } else { spawn }`, with `count <= max_threads` too when that is
/// nonzero.
fn version(spawn: Op, max_threads: u64) -> Result<(), PassFailure> {
    let host = Builder::before(spawn);
    let count = spawn.operand(0);
    let i1 = host.parse_type("i1")?;
    let capacity = host.value("pgpu.grid_capacity", &[], host.index_type(), &[])?;
    let fits = host.cmpi(7, count, capacity)?;
    let zero = host.index(0)?;
    let has_grid_barriers = host.cmpi(8, capacity, zero)?;
    let mut fits = host.value("arith.andi", &[fits, has_grid_barriers], i1, &[])?;
    if max_threads > 0 {
        let limit = host.index(i64::try_from(max_threads).unwrap_or(i64::MAX))?;
        let bounded = host.cmpi(7, count, limit)?;
        fits = host.value("arith.andi", &[fits, bounded], i1, &[])?;
    }
    let (_, then_yield, else_yield) = host.if_op(fits, &[], true)?;
    let Some(else_yield) = else_yield else {
        return Err(host.fail("scf.if without an else region"));
    };
    let copy = spawn.clone_detached();
    then_yield.block_of().insert_raw_before(then_yield, copy);
    // SAFETY: live op; the name is read during the call only.
    unsafe {
        mlir_sys::mlirOperationSetInherentAttributeByName(
            copy.0,
            crate::ir::string_ref("grid"),
            host.unit_attribute().to_raw(),
        );
    }
    spawn.move_before(else_yield);
    Ok(())
}

/// Whether `op` (in a grid spawn's body) can run in a GPU kernel: no calls
/// (printf, random numbers, user functions) and [`runs_on_device`] with
/// rank and size queries, barriers and host code in `pgpu.require`.
pub(crate) fn runs_in_grid_kernel(op: Op) -> bool {
    let in_require = std::iter::successors(op.parent(), |parent| parent.parent())
        .any(|parent| parent.is("pgpu.require"));
    let name = op.name();
    in_require
        || (name != "func.call"
            && runs_on_device(
                op,
                &[
                    "pgpu.rank",
                    "pgpu.size",
                    "pgpu.barrier",
                    "pgpu.yield",
                    "pgpu.require",
                ],
            ))
}

/// Whether `op` can run in GPU code, calls of functions aside: no indirect
/// calls, no host globals besides arrays (whose addresses become kernel
/// operands), no pgpu ops besides `allowed`. Shared by grid and block
/// kernels (`offload_block.rs`).
pub(crate) fn runs_on_device(op: Op, allowed: &[&str]) -> bool {
    let name = op.name();
    let host_global = op.is("memref.get_global") && is_descriptor_global(op.result(0));
    !(name == "func.call_indirect"
        || host_global
        || (name.starts_with("pgpu.") && !allowed.contains(&name.as_str())))
}
