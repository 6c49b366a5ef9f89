//! `pgpu-grid-fuse{max-threads=N}`: runs a spawn whose supersteps are
//! separated by plain barriers only as one kernel with grid-wide barriers,
//! when its thread count fits the device's co-resident capacity `N`.
//!
//! The Fork paper measured kernel launches and the host synchronization
//! between them at 31% of run time (seeds/fork-to-cuda.txt, Section 4);
//! the BSGP compiler splits a kernel at every barrier. When all threads are
//! resident at once (a cooperative launch), a barrier can instead be a grid
//! barrier inside one kernel: no launch, and no values saved to memory, as
//! private values stay in registers.
//!
//! A spawn qualifies when its body has barriers (else there is nothing to
//! fuse), no rank reassignment, collectives, thread primitives,
//! `thread.get`/`thread.put` or `par`, and `pgpu.require` only before the
//! first barrier. The thread count is known only at run time, so the pass
//! versions the spawn:
//!
//! ```mlir
//! %fits = arith.cmpi ule, %n, %max
//! scf.if %fits {
//!   pgpu.spawn grid %n { ...barriers are grid barriers... }
//! } else {
//!   pgpu.spawn %n { ...split into kernels as usual... }
//! }
//! ```
//!
//! Superstep formation and kernel splitting leave `grid` spawns alone: the
//! backends launch each as one cooperative kernel. `N` is the device's
//! capacity (SMs x resident threads per SM, e.g. 132 x 2048 on an H200);
//! 0, the default, turns the pass off. We write this pass ourselves: no
//! upstream MLIR construct has grid-wide barriers.

use crate::{build::Builder, form_supersteps::is_boundary_op, ir::Op};
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
        description: "threads the device runs at once (0: off)",
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
        if self.max_threads == 0 {
            return Ok(());
        }
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
    if spawn.has_attribute("synchronous") || spawn.has_attribute("grid") {
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
    barriers > 0
        && !spawn.nested().into_iter().any(|op| {
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

/// Wraps `spawn` in `scf.if (count <= max) { grid copy } else { spawn }`.
fn version(spawn: Op, max_threads: u64) -> Result<(), PassFailure> {
    let host = Builder::before(spawn);
    let count = spawn.operand(0);
    let limit = host.index(i64::try_from(max_threads).unwrap_or(i64::MAX))?;
    let fits = host.cmpi(7, count, limit)?;
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
