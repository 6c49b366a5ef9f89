//! `pgpu-spawn-to-parallel`: lowers each `pgpu.spawn %n { body }` whose body
//! is a single superstep to `scf.parallel (%rank) = (0) to (%n) step (1)`.
//!
//! A barrier-free SPMD region has no ordering between its threads, which is
//! exactly the meaning of an `scf.parallel` loop over the ranks. The body is
//! moved into the loop unchanged (a body that is one superstep without
//! results, as superstep formation leaves a barrier-free body, is unwrapped
//! first); `pgpu.rank` becomes the induction variable
//! and `pgpu.size` the thread count. Bodies that still contain barriers,
//! thread fork/kill, rank reassignment, collectives or group operations need
//! superstep formation and kernel splitting first: the pass reports the
//! first such operation as an error and changes nothing.
//!
//! We write this pass rather than reuse one because upstream MLIR has no
//! SPMD-region construct; everything after `scf.parallel` is upstream.

use crate::ir::{Blk, Op};
use melior::{
    Context, IrRewriter,
    dialect::{DialectHandle, arith},
    ir::{
        Block, BlockLike, Identifier, Location, Operation, OperationRef, Region, RegionLike, Value,
        attribute::{DenseI32ArrayAttribute, IntegerAttribute},
        operation::{OperationBuilder, OperationLike, WalkOrder, WalkResult},
        r#type::Type,
    },
};
use mlir_sys::MlirOperation;
use pgpu_pass_infra::{Pass, PassFailure, emit_error};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct SpawnToParallel;

/// pgpu operations a single-superstep body may keep: they are rewritten here.
const LOWERED_HERE: [&str; 3] = ["pgpu.rank", "pgpu.size", "pgpu.yield"];

impl Pass for SpawnToParallel {
    const ARGUMENT: &'static str = "pgpu-spawn-to-parallel";
    const SUMMARY: &'static str =
        "Lower single-superstep pgpu.spawn regions to scf.parallel loops over the ranks";

    fn dependent_dialects() -> Vec<DialectHandle> {
        vec![DialectHandle::scf(), DialectHandle::arith()]
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        let spawns = collect(operation, |name| name == "pgpu.spawn");
        for &spawn in &spawns {
            unwrap_single_superstep(Op(spawn));
        }
        // Check every region first, so that a failure leaves the IR untouched.
        for &spawn in &spawns {
            // SAFETY: collected from the live IR just above.
            let spawn = unsafe { OperationRef::from_raw(spawn) };
            check_single_superstep(spawn)?;
        }
        let context_ref = operation.context();
        // SAFETY: `context_ref` lives until the end of the run.
        let context = unsafe { context_ref.to_ref() };
        for spawn in spawns {
            // SAFETY: each spawn is still in the IR: only its own body moves.
            lower_spawn(context, unsafe { OperationRef::from_raw(spawn) });
        }
        Ok(())
    }
}

/// Raw handles of the operations under `root` whose name satisfies `select`,
/// innermost first.
fn collect(root: OperationRef, select: impl Fn(&str) -> bool) -> Vec<MlirOperation> {
    let mut found = Vec::new();
    root.walk(WalkOrder::PostOrder, |operation| {
        if operation.name().as_string_ref().as_str().is_ok_and(&select) {
            found.push(operation.to_raw());
        }
        WalkResult::Advance
    });
    found
}

/// Replaces a body made of one plain superstep (as `pgpu-form-supersteps`
/// leaves a barrier-free body) by that superstep's code.
fn unwrap_single_superstep(spawn: Op) {
    let Some(body) = spawn.entry_block(0) else {
        return;
    };
    let ops = body.ops();
    let [superstep, _yield] = ops.as_slice() else {
        return;
    };
    if !superstep.is("pgpu.superstep")
        || superstep.num_results() != 0
        || superstep.has_attribute("rank_reassigned")
    {
        return;
    }
    for op in superstep.entry_block(0).map(Blk::ops).unwrap_or_default() {
        if !op.is("pgpu.yield") {
            op.move_before(*superstep);
        }
    }
    superstep.erase();
}

fn check_single_superstep(spawn: OperationRef) -> Result<(), PassFailure> {
    let offending = collect(spawn, |name| {
        name.starts_with("pgpu.") && name != "pgpu.spawn" && !LOWERED_HERE.contains(&name)
    });
    match offending.first() {
        None => Ok(()),
        Some(&raw) => {
            // SAFETY: collected from the live IR just above.
            let operation = unsafe { OperationRef::from_raw(raw) };
            let name = operation
                .name()
                .as_string_ref()
                .as_str()
                .unwrap_or("?")
                .to_string();
            Err(emit_error(
                operation.location(),
                &format!(
                    "'{name}' cannot be lowered by pgpu-spawn-to-parallel: the enclosing pgpu.spawn must \
                     first be split into supersteps and kernels"
                ),
            ))
        }
    }
}

fn index_constant<'c>(context: &'c Context, value: i64, location: Location<'c>) -> Operation<'c> {
    arith::constant(
        context,
        IntegerAttribute::new(Type::index(context), value).into(),
        location,
    )
}

fn lower_spawn<'c>(context: &'c Context, spawn: OperationRef<'c, '_>) {
    let location = spawn.location();
    let index = Type::index(context);
    let ir_rewriter = IrRewriter::new(context);
    let rewriter = ir_rewriter.as_rewriter_base();
    rewriter.set_insertion_point_before(spawn);
    let zero = rewriter.insert(index_constant(context, 0, location));
    let one = rewriter.insert(index_constant(context, 1, location));
    let Ok(count) = spawn.operand(0) else { return };

    let loop_block = Block::new(&[(index, location)]);
    let Ok(reduce) = OperationBuilder::new("scf.reduce", location).build() else {
        return;
    };
    loop_block.append_operation(reduce);
    let loop_region = Region::new();
    loop_region.append_block(loop_block);
    let Ok(parallel) = OperationBuilder::new("scf.parallel", location)
        .add_operands(&[zero.result(0).map(Value::from).unwrap_or(count), count])
        .add_operands(&[one.result(0).map(Value::from).unwrap_or(count)])
        .add_attributes(&[(
            Identifier::new(context, "operandSegmentSizes"),
            DenseI32ArrayAttribute::new(context, &[1, 1, 1, 0]).into(),
        )])
        .add_regions([loop_region])
        .build()
    else {
        return;
    };
    let parallel = rewriter.insert(parallel);

    let (Ok(loop_region), Ok(body_region)) = (parallel.region(0), spawn.region(0)) else {
        return;
    };
    let (Some(loop_block), Some(body_block)) =
        (loop_region.first_block(), body_region.first_block())
    else {
        return;
    };
    let (Ok(rank), Some(reduce)) = (loop_block.argument(0), loop_block.terminator()) else {
        return;
    };
    rewriter.inline_block_before(body_block, reduce, &[]);

    for raw in collect(parallel, |name| LOWERED_HERE.contains(&name)) {
        // SAFETY: collected from the live loop body just above.
        let operation = unsafe { OperationRef::from_raw(raw) };
        match operation.name().as_string_ref().as_str() {
            Ok("pgpu.rank") => rewriter.replace_op_with_values(operation, &[rank.into()]),
            Ok("pgpu.size") => rewriter.replace_op_with_values(operation, &[count]),
            _ => rewriter.erase_op(operation),
        }
    }
    rewriter.erase_op(spawn);
}
