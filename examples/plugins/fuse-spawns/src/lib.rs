//! `pgpu-fuse-spawns`: fuses adjacent `pgpu.spawn`s of one thread count
//! into one spawn whose parts a barrier separates. It is an example of a
//! pass written outside the pgpu crates, against `pgpu-pass-infra` and
//! melior alone, and built into a `pgpu-opt` of its own
//! (`fuse-spawns-opt`, docs/plugins.md).
//!
//! Two spawns `A` and `B` in one block fuse when
//!
//! * they are plain spawns (not `synchronous`, `grid` or `block`, which
//!   have thread structures of their own) with the same count value;
//! * their bodies change neither the thread set nor the ranks: of the pgpu
//!   ops they use only `rank`, `size`, plain barriers, `printf`, `reduce`
//!   and `scan`, and they call no functions (a callee could);
//! * only ops that may run earlier lie between them: allocations
//!   (`pgpu.dnew`, `memref.alloc`, `memref.alloca`), `memref.dim`, and
//!   `arith`/`index` ops other than divisions and remainders (which may
//!   trap). Their operands are defined before `A` (a spawn has no results)
//!   or by each other, so they move above `A` in their order.
//!
//! `B`'s body then follows `A`'s after a `pgpu.barrier`, and `B` is erased.
//! The end of a spawn and a barrier both make every thread's writes visible
//! to every thread after them, and a thread has the same rank in both
//! parts, so the fused spawn computes what the two did. Runs of more
//! spawns fuse pairwise into one.
//!
//! The gain comes with `pgpu-eliminate-barriers`, the first pass of the
//! kernel pipeline: where no thread of `B` reads what another thread of `A`
//! wrote (element-wise maps, as the `arr` frontend emits), the barrier goes
//! and two kernel launches become one. Upstream MLIR has no SPMD spawn, so
//! it has no such pass.

use melior::ir::{
    BlockLike, BlockRef, OperationRef, RegionLike,
    operation::{OperationBuilder, OperationLike, WalkOrder, WalkResult},
};
use mlir_sys::MlirBlock;
use pgpu_pass_infra::{
    Pass, PassFailure, PassOption, PassOptions, Severity, emit_diagnostic, emit_error,
};

pgpu_pass_infra::declare_passes![FuseSpawns];

/// The pass; `remarks` reports each fusion.
#[derive(Debug, Default)]
pub struct FuseSpawns {
    remarks: bool,
}

impl Pass for FuseSpawns {
    const ARGUMENT: &'static str = "pgpu-fuse-spawns";
    const SUMMARY: &'static str =
        "Fuse adjacent spawns of one thread count into one, separated by a barrier";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const OPTIONS: &'static [PassOption] = &[PassOption {
        name: "remarks",
        description: "Report each fusion as a remark",
        default: "false",
    }];

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        Ok(Self {
            remarks: options.flag("remarks")?,
        })
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        // The blocks that hold spawns. The pass erases spawns, never blocks,
        // so their handles stay valid for the whole run.
        let mut blocks: Vec<MlirBlock> = Vec::new();
        module.walk(WalkOrder::PreOrder, |op| {
            if name(&op) != "pgpu.spawn" {
                return WalkResult::Advance;
            }
            if let Some(block) = op.block() {
                let raw = block.to_raw();
                if !blocks.iter().any(|known| known.ptr == raw.ptr) {
                    blocks.push(raw);
                }
            }
            WalkResult::Skip
        });
        for raw in blocks {
            // SAFETY: the block is in the module (see above).
            let block = unsafe { BlockRef::from_raw(raw) };
            self.fuse_in(block)?;
        }
        Ok(())
    }
}

impl FuseSpawns {
    /// Fuses every fusable run of spawns in `block`.
    fn fuse_in(&self, block: BlockRef) -> Result<(), PassFailure> {
        let mut current = block.first_operation();
        while let Some(first) = current {
            match partner(first) {
                // `first` may fuse with the next spawn as well.
                Some((between, second)) => self.fuse(first, &between, second)?,
                None => current = first.next_in_block(),
            }
        }
        Ok(())
    }

    /// Moves `between` above `first`, appends a barrier and `second`'s body
    /// to `first`'s body, and erases `second`.
    fn fuse(
        &self,
        first: OperationRef,
        between: &[OperationRef],
        second: OperationRef,
    ) -> Result<(), PassFailure> {
        let location = second.location();
        let malformed = || emit_error(location, "pgpu.spawn without a body block");
        let body = body_of(first).ok_or_else(malformed)?;
        let second_body = body_of(second).ok_or_else(malformed)?;
        let (Some(end), Some(second_end)) = (body.terminator(), second_body.terminator()) else {
            return Err(malformed());
        };
        for op in between {
            move_before(*op, first);
        }
        let barrier = OperationBuilder::new("pgpu.barrier", location)
            .build()
            .map_err(|error| emit_error(location, &format!("cannot build a barrier: {error}")))?;
        body.insert_operation_before(end, barrier);
        let mut next = second_body.first_operation();
        while let Some(op) = next {
            if op == second_end {
                break;
            }
            next = op.next_in_block();
            move_before(op, end);
        }
        if self.remarks {
            emit_diagnostic(
                location,
                Severity::Remark,
                "spawn fused into the previous spawn of the same thread count",
            );
        }
        // SAFETY: `second` is in the IR, and nothing refers to it or to the
        // ops it still holds (its empty body's terminator).
        unsafe { mlir_sys::mlirOperationDestroy(second.to_raw()) };
        Ok(())
    }
}

/// The op's name.
fn name(op: &OperationRef) -> String {
    op.name().as_string_ref().as_str().unwrap_or("").to_string()
}

/// The single block of a spawn's body.
fn body_of<'c, 'a>(spawn: OperationRef<'c, 'a>) -> Option<BlockRef<'c, 'a>> {
    spawn.region(0).ok()?.first_block()
}

/// The spawn after `first` that it can fuse with, and the ops between them.
fn partner<'c, 'a>(
    first: OperationRef<'c, 'a>,
) -> Option<(Vec<OperationRef<'c, 'a>>, OperationRef<'c, 'a>)> {
    if !is_fusable(first) {
        return None;
    }
    let count = first.operand(0).ok()?;
    let mut between = Vec::new();
    let mut next = first.next_in_block();
    while let Some(op) = next {
        if name(&op) == "pgpu.spawn" {
            let same_count = op.operand(0).ok()? == count;
            return (same_count && is_fusable(op)).then_some((between, op));
        }
        if !may_run_earlier(&op) {
            return None;
        }
        between.push(op);
        next = op.next_in_block();
    }
    None
}

/// Whether `op` is a plain spawn whose body keeps the thread set and ranks.
fn is_fusable(op: OperationRef) -> bool {
    if name(&op) != "pgpu.spawn"
        || ["synchronous", "grid", "block"]
            .iter()
            .any(|attribute| op.has_attribute(attribute))
        || body_of(op).is_none_or(|body| body.argument_count() != 0)
    {
        return false;
    }
    let mut fusable = true;
    op.walk(WalkOrder::PreOrder, |nested| {
        if nested == op || keeps_threads(&nested) {
            WalkResult::Advance
        } else {
            fusable = false;
            WalkResult::Interrupt
        }
    });
    fusable
}

/// Whether `op`, in a spawn body, leaves the thread set and ranks alone.
fn keeps_threads(op: &OperationRef) -> bool {
    match name(op).as_str() {
        "pgpu.barrier" => !op.has_attribute("rank_reassigned"),
        "pgpu.rank" | "pgpu.size" | "pgpu.printf" | "pgpu.reduce" | "pgpu.scan" | "pgpu.yield" => {
            true
        }
        "func.call" | "func.call_indirect" | "llvm.call" => false,
        other => !other.starts_with("pgpu."),
    }
}

/// Whether `op`, between two spawns, may move above the first.
fn may_run_earlier(op: &OperationRef) -> bool {
    let name = name(op);
    if op.region_count() != 0 {
        return false;
    }
    match name.as_str() {
        "pgpu.dnew" | "memref.alloc" | "memref.alloca" | "memref.dim" => true,
        _ => {
            (name.starts_with("arith.") || name.starts_with("index."))
                && !name.contains("div")
                && !name.contains("rem")
        }
    }
}

/// Moves `op` just before `before` (in any block).
fn move_before(op: OperationRef, before: OperationRef) {
    // SAFETY: both ops are in the IR; moving keeps them there.
    unsafe { mlir_sys::mlirOperationMoveBefore(op.to_raw(), before.to_raw()) }
}
