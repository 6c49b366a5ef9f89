//! `pgpu-count-sm-cycles`: instruments every NVVM kernel so that the
//! runtime can tell how many cycles each multiprocessor was busy with it.
//!
//! A kernel's time between CUDA events includes the launch itself, about
//! 3 us on the H200 even for a kernel of one warp, which hides the work of
//! small kernels. This pass measures on the multiprocessors instead, per
//! block. The block's first thread reads the multiprocessor's cycle
//! counter (`%clock64`) when the kernel starts, zeroes a shared count of
//! finished warps, and after a barrier records its read. At each return
//! lane 0 of every warp reads the counter and counts its warp; the warp
//! that completes the count records its read as the block's end. The
//! records go into the module's table `@pgpu_sm_cycles` (4096 x i64):
//! earliest starts (`atomicrmw umin`) in the first half, latest ends
//! (`atomicrmw umax`) in the second, each half 8 ways for each of 256
//! multiprocessors (index `(%smid & 255) * 8 + (%ctaid.x & 7)`).
//! A multiprocessor's counter is its own, so only differences on one
//! multiprocessor mean anything: the runtime resets the table before each
//! launch (starts to all ones, ends to zero), reads it afterwards, takes
//! each multiprocessor's earliest start and latest end over its ways and
//! reports the largest end - start, the busiest multiprocessor's span in
//! cycles (`PGPU_PROFILE=kernels`, `pgpu-profile-kernel-cycles` lines).
//! That is the quantity the Petri-net model predicts: the steps of one
//! multiprocessor running its warps.
//!
//! The reads sit in calls to two small functions the pass defines
//! (`@pgpu_sm_cycles_start`, `@pgpu_sm_cycles_end`, always inlined), after
//! `nvvm.griddepcontrol wait` where the kernel has one (so the wait for the
//! previous kernel is not counted) and right before each `llvm.return`.
//! What the instrumentation costs a kernel: one barrier and two global
//! atomics per block, and one shared atomic per warp. Recording every
//! warp instead (two global atomics each, on one address per
//! multiprocessor) made memory-bound kernels of 30M threads up to 4x
//! slower on the H200; per block they are up to 26% slower (blocks that
//! live under 1 us, where the start's barrier is the likely cost;
//! spreading the atomics over 8 ways, or moving the start's atomic after
//! the barrier, changed nothing measurable), and kernels above 20 us 2.7%
//! slower in the median (PERF.md). A warp that loses lane 0 before its return (none of
//! ours: every lane reaches the kernel's end) would leave its block's end
//! unrecorded. Upstream MLIR has no instrumentation of this kind, hence
//! this pass; the runtime finds the table by name (`cuModuleGetGlobal`),
//! so modules without it are timed by events only. Running the pass twice
//! adds nothing more.

use crate::nvvm_modules::{
    block_ops, entry_block, gpu_modules, insert_definition, is_global_named, is_kernel, is_named,
    module_body, returns_of, symbol,
};
use melior::Context;
use melior::dialect::DialectHandle;
use melior::ir::r#type::IntegerType;
use melior::ir::{
    BlockLike, Location, Operation, OperationRef, Value,
    operation::{OperationBuilder, OperationLike},
};
use pgpu_pass_infra::{Pass, PassFailure, emit_error};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct CountSmCycles;

/// The table the runtime looks up in a loaded module.
pub use pgpu_runtime::mgpu::SM_CYCLES_TABLE as TABLE;

/// The function that records a warp's start, and the one that records its
/// end.
const START: &str = "pgpu_sm_cycles_start";
const END: &str = "pgpu_sm_cycles_end";

/// The table and the two recording functions. The layout (2048 slots per
/// half, 8 ways per multiprocessor) is `pgpu_runtime::mgpu`'s
/// `SM_CYCLES_SLOTS` and `SM_CYCLES_WAYS`, checked by a test.
const DEFINITION: &str = r#"
llvm.mlir.global external @pgpu_sm_cycles() {addr_space = 1 : i32} : !llvm.array<4096 x i64> {
  %zero = llvm.mlir.zero : !llvm.array<4096 x i64>
  llvm.return %zero : !llvm.array<4096 x i64>
}
llvm.mlir.global internal @pgpu_sm_cycles_warps_done() {addr_space = 3 : i32} : i32
llvm.func internal @pgpu_sm_cycles_slot(%half: i32) -> !llvm.ptr<1> attributes {always_inline} {
  %sm = nvvm.read.ptx.sreg.smid : i32
  %mask = llvm.mlir.constant(255 : i32) : i32
  %slot = llvm.and %sm, %mask : i32
  %three = llvm.mlir.constant(3 : i32) : i32
  %first_way = llvm.shl %slot, %three : i32
  %block = nvvm.read.ptx.sreg.ctaid.x : i32
  %seven = llvm.mlir.constant(7 : i32) : i32
  %way = llvm.and %block, %seven : i32
  %in_half = llvm.or %first_way, %way : i32
  %index = llvm.add %in_half, %half : i32
  %table = llvm.mlir.addressof @pgpu_sm_cycles : !llvm.ptr<1>
  %address = llvm.getelementptr %table[0, %index] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, !llvm.array<4096 x i64>
  llvm.return %address : !llvm.ptr<1>
}
llvm.func internal @pgpu_sm_cycles_start(%clock: i64) attributes {always_inline, convergent} {
  %x = nvvm.read.ptx.sreg.tid.x : i32
  %y = nvvm.read.ptx.sreg.tid.y : i32
  %z = nvvm.read.ptx.sreg.tid.z : i32
  %xy = llvm.or %x, %y : i32
  %xyz = llvm.or %xy, %z : i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %first = llvm.icmp "eq" %xyz, %zero : i32
  llvm.cond_br %first, ^zero_count, ^wait
^zero_count:
  %done = llvm.mlir.addressof @pgpu_sm_cycles_warps_done : !llvm.ptr<3>
  llvm.store %zero, %done {alignment = 4 : i64} : i32, !llvm.ptr<3>
  llvm.br ^wait
^wait:
  nvvm.barrier0
  llvm.cond_br %first, ^record, ^leave
^record:
  %address = llvm.call @pgpu_sm_cycles_slot(%zero) : (i32) -> !llvm.ptr<1>
  %old = llvm.atomicrmw umin %address, %clock monotonic : !llvm.ptr<1>, i64
  llvm.br ^leave
^leave:
  llvm.return
}
llvm.func internal @pgpu_sm_cycles_end(%clock: i64) attributes {always_inline} {
  %lane = nvvm.read.ptx.sreg.laneid : i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %first = llvm.icmp "eq" %lane, %zero : i32
  llvm.cond_br %first, ^count, ^leave
^count:
  %one = llvm.mlir.constant(1 : i32) : i32
  %done = llvm.mlir.addressof @pgpu_sm_cycles_warps_done : !llvm.ptr<3>
  %before = llvm.atomicrmw add %done, %one monotonic : !llvm.ptr<3>, i32
  %x = nvvm.read.ptx.sreg.ntid.x : i32
  %y = nvvm.read.ptx.sreg.ntid.y : i32
  %z = nvvm.read.ptx.sreg.ntid.z : i32
  %xy = llvm.mul %x, %y : i32
  %threads = llvm.mul %xy, %z : i32
  %lanes_less_one = llvm.mlir.constant(31 : i32) : i32
  %rounded = llvm.add %threads, %lanes_less_one : i32
  %five = llvm.mlir.constant(5 : i32) : i32
  %warps = llvm.lshr %rounded, %five : i32
  %others = llvm.sub %warps, %one : i32
  %last = llvm.icmp "eq" %before, %others : i32
  llvm.cond_br %last, ^record, ^leave
^record:
  %half = llvm.mlir.constant(2048 : i32) : i32
  %address = llvm.call @pgpu_sm_cycles_slot(%half) : (i32) -> !llvm.ptr<1>
  %old = llvm.atomicrmw umax %address, %clock monotonic : !llvm.ptr<1>, i64
  llvm.br ^leave
^leave:
  llvm.return
}
"#;

impl Pass for CountSmCycles {
    const ARGUMENT: &'static str = "pgpu-count-sm-cycles";
    const SUMMARY: &'static str = "Record each multiprocessor's first and last cycle in every NVVM \
         kernel (lane 0 of each warp, into @pgpu_sm_cycles), for the runtime's per-kernel \
         cycle counts";

    fn dependent_dialects() -> Vec<DialectHandle> {
        crate::nvvm_modules::llvm_and_nvvm()
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for module in gpu_modules(operation) {
            instrument_module(module)?;
        }
        Ok(())
    }
}

fn instrument_module(module: OperationRef) -> Result<(), PassFailure> {
    let location = module.location();
    let context_ref = module.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    let Some(body) = module_body(module) else {
        return Ok(());
    };
    let ops = block_ops(body);
    if ops.iter().any(|op| is_global_named(*op, TABLE)) {
        return Ok(()); // already instrumented
    }
    let ours = [
        TABLE,
        START,
        END,
        "pgpu_sm_cycles_slot",
        "pgpu_sm_cycles_warps_done",
    ];
    if let Some(clash) = ops
        .iter()
        .filter_map(|op| symbol(*op))
        .find(|name| ours.contains(&name.as_str()))
    {
        return Err(emit_error(
            location,
            &format!("cannot count cycles: the module already has a symbol @{clash}"),
        ));
    }
    let kernels: Vec<OperationRef> = ops
        .iter()
        .copied()
        .filter(|op| is_kernel(*op) && entry_block(*op).is_some())
        .collect();
    let Some(first) = kernels.first() else {
        return Ok(());
    };
    insert_definition(
        context,
        DEFINITION,
        "@pgpu_sm_cycles",
        |_| true,
        *first,
        location,
    )?;
    for kernel in kernels {
        instrument_kernel(context, kernel)?;
    }
    Ok(())
}

/// `%clock = nvvm.read.ptx.sreg.clock64` and a call of `recorder` with it,
/// before `anchor`.
fn record_before<'c>(
    context: &'c Context,
    recorder: &str,
    anchor: OperationRef<'c, '_>,
) -> Result<(), PassFailure> {
    let location = anchor.location();
    let Some(block) = anchor.block() else {
        return Ok(());
    };
    let clock = block.insert_operation_before(anchor, clock_read(context, location)?);
    let value: Value = clock
        .result(0)
        .map_err(|_| emit_error(location, "internal error: clock64 has no result"))?
        .into();
    block.insert_operation_before(anchor, call(context, recorder, value, location)?);
    Ok(())
}

fn clock_read<'c>(
    context: &'c Context,
    location: Location<'c>,
) -> Result<Operation<'c>, PassFailure> {
    OperationBuilder::new("nvvm.read.ptx.sreg.clock64", location)
        .add_results(&[IntegerType::new(context, 64).into()])
        .build()
        .map_err(|_| emit_error(location, "cannot build nvvm.read.ptx.sreg.clock64"))
}

fn call<'c>(
    context: &'c Context,
    callee: &str,
    clock: Value<'c, '_>,
    location: Location<'c>,
) -> Result<Operation<'c>, PassFailure> {
    let parse = |text: &str| crate::nvvm_modules::parse_attribute(context, location, text);
    OperationBuilder::new("llvm.call", location)
        .add_operands(&[clock])
        .add_attributes(&[
            (
                melior::ir::Identifier::new(context, "callee"),
                parse(&format!("@{callee}"))?,
            ),
            (
                melior::ir::Identifier::new(context, "operandSegmentSizes"),
                parse("array<i32: 1, 0>")?,
            ),
            (
                melior::ir::Identifier::new(context, "op_bundle_sizes"),
                parse("array<i32>")?,
            ),
        ])
        .build()
        .map_err(|_| emit_error(location, &format!("cannot build the call of @{callee}")))
}

fn instrument_kernel<'c>(
    context: &'c Context,
    kernel: OperationRef<'c, '_>,
) -> Result<(), PassFailure> {
    let Some(entry) = entry_block(kernel) else {
        return Ok(());
    };
    // After the wait for the previous kernel, if the kernel has one.
    let mut anchor = entry.first_operation();
    while let Some(op) = anchor.filter(|op| is_named(*op, "nvvm.griddepcontrol")) {
        anchor = op.next_in_block();
    }
    let Some(anchor) = anchor else {
        return Err(emit_error(
            kernel.location(),
            "a kernel's entry block has no terminator",
        ));
    };
    record_before(context, START, anchor)?;
    for ret in returns_of(kernel) {
        record_before(context, END, ret)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgpu_runtime::mgpu::{SM_CYCLES_SLOTS, SM_CYCLES_WAYS};

    #[test]
    fn the_table_has_the_runtimes_layout() {
        let table = format!("!llvm.array<{} x i64>", 2 * SM_CYCLES_SLOTS);
        assert!(DEFINITION.contains(&format!("@{TABLE}() {{addr_space = 1 : i32}} : {table}")));
        let constant = |value: usize| format!("llvm.mlir.constant({value} : i32)");
        let multiprocessors = SM_CYCLES_SLOTS / SM_CYCLES_WAYS;
        assert!(DEFINITION.contains(&constant(multiprocessors - 1)));
        assert!(DEFINITION.contains(&constant(SM_CYCLES_WAYS.trailing_zeros() as usize)));
        assert!(DEFINITION.contains(&constant(SM_CYCLES_WAYS - 1)));
        assert!(DEFINITION.contains(&constant(SM_CYCLES_SLOTS)));
        assert!(multiprocessors.is_power_of_two() && SM_CYCLES_WAYS.is_power_of_two());
    }
}
