//! `pgpu-reconverge-warps`: makes the threads of a warp that enter a
//! `pgpu.reconverge` region together leave it together.
//!
//! GPUs with independent thread scheduling (sm_70 and later) run a warp
//! whose threads took different paths as separate groups, and `ptxas`
//! merges the groups again only where it places a convergence barrier.
//! Around loops that may spin on memory (searches with atomics, such as
//! the hash-table probes of `pgpu-lower-speculation`'s speculative
//! accesses) it places none, so the groups stay apart for the rest of the
//! thread's work: on the H200, one probe per partner in the MD loop made
//! the force loop after it run 2.5-3.3x slower, once per group (an
//! nvcc-compiled probe in the same loop did the same; measured in
//! PERF.md).
//!
//! For every `scf.execute_region` marked `pgpu.reconverge` inside a
//! `gpu.module` (before `convert-gpu-to-nvvm`), the pass reads the lanes
//! that arrive together (`activemask.b32`, as inline PTX: the NVVM dialect
//! has no op for it) right before the region and waits for exactly those
//! lanes after it (`nvvm.bar.warp.sync`). That is well defined because
//! every lane that enters the region leaves it (the regions have one exit
//! and do not wait for each other's lanes), and lanes that arrived apart
//! stay apart: it never waits for a lane that will not come. The marker
//! is removed, so running the pass twice adds nothing. Upstream has no
//! pass that restores convergence, hence this one.

use crate::nvvm_modules::{gpu_modules, parse_attribute};
use melior::dialect::DialectHandle;
use melior::ir::{
    BlockLike, Identifier, Location, Operation, OperationRef, Type,
    operation::{
        OperationBuilder, OperationLike, OperationMutLike, OperationRefMut, WalkOrder, WalkResult,
    },
};
use pgpu_pass_infra::{Pass, PassFailure, RECONVERGE_ATTRIBUTE, emit_error};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct ReconvergeWarps;

impl Pass for ReconvergeWarps {
    const ARGUMENT: &'static str = "pgpu-reconverge-warps";
    const SUMMARY: &'static str = "Make the lanes of a warp that enter a pgpu.reconverge region \
         together leave it together (activemask before, bar.warp.sync after)";

    fn dependent_dialects() -> Vec<DialectHandle> {
        crate::nvvm_modules::llvm_and_nvvm()
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for module in gpu_modules(operation) {
            let mut regions = Vec::new();
            module.walk(WalkOrder::PreOrder, |op| {
                if op.name().as_string_ref().as_str() == Ok("scf.execute_region")
                    && op.has_attribute(RECONVERGE_ATTRIBUTE)
                {
                    regions.push(op.to_raw());
                }
                WalkResult::Advance
            });
            for raw in regions {
                // SAFETY: collected from the live module; the pass inserts
                // ops beside the regions and erases none.
                reconverge(unsafe { OperationRef::from_raw(raw) })?;
            }
        }
        Ok(())
    }
}

/// Brackets `region` with the read of the arriving lanes and the wait for
/// them, and drops its marker.
fn reconverge(region: OperationRef) -> Result<(), PassFailure> {
    let location = region.location();
    let context_ref = region.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    let Some(block) = region.block() else {
        return Err(emit_error(
            location,
            "a pgpu.reconverge region outside a block",
        ));
    };
    let lanes = block.insert_operation_before(region, active_lanes(context, location)?);
    let mask = lanes
        .result(0)
        .map_err(|_| emit_error(location, "activemask has no result"))?;
    let wait = OperationBuilder::new("nvvm.bar.warp.sync", location)
        .add_operands(&[mask.into()])
        .build()
        .map_err(|_| emit_error(location, "cannot build nvvm.bar.warp.sync"))?;
    block.insert_operation_after(region, wait);
    // SAFETY: the live region; removing its marker changes nothing else.
    unsafe { OperationRefMut::from_raw(region.to_raw()) }
        .remove_attribute(RECONVERGE_ATTRIBUTE)
        .map_err(|_| emit_error(location, "cannot drop the pgpu.reconverge marker"))
}

/// `llvm.inline_asm has_side_effects "activemask.b32 $0;", "=r" : () -> i32`.
fn active_lanes<'c>(
    context: &'c melior::Context,
    location: Location<'c>,
) -> Result<Operation<'c>, PassFailure> {
    let parse = |text: &str| parse_attribute(context, location, text);
    OperationBuilder::new("llvm.inline_asm", location)
        .add_attributes(&[
            (
                Identifier::new(context, "asm_string"),
                parse("\"activemask.b32 $0;\"")?,
            ),
            (Identifier::new(context, "constraints"), parse("\"=r\"")?),
            (Identifier::new(context, "has_side_effects"), parse("unit")?),
        ])
        .add_results(&[
            Type::parse(context, "i32").ok_or_else(|| emit_error(location, "cannot parse i32"))?
        ])
        .build()
        .map_err(|_| emit_error(location, "cannot build the activemask read"))
}
