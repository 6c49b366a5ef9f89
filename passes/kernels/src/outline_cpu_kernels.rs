//! `pgpu-outline-cpu-kernels`: runs the kernels of host code (the
//! outermost `scf.parallel` loops that `pgpu-split-kernels` leaves) on the
//! CPU device's thread pool.
//!
//! Each kernel `scf.parallel (%i) = (%lb) to (%ub) step (%s) { body }` is
//! moved into a new function
//! `@<function>_kernel<k>(%context: !llvm.ptr, %begin: i64, %end: i64)`
//! that runs the iterations `begin .. end` of it (the loop stays an
//! `scf.parallel` over `[begin, end)` with `%i = %lb + j * %s`, which
//! `convert-scf-to-cf` makes a sequential loop). The values the body uses
//! from outside travel in a context struct that the host fills on its
//! stack (one `llvm.alloca` at the function's entry per kernel): integers
//! and floats as they are, `index` as `i64`, memrefs as their LLVM
//! descriptors (`builtin.unrealized_conversion_cast` on both sides, which
//! `reconcile-unrealized-casts` removes after the memref lowering).
//! Constants are cloned into the kernel instead, so that LLVM still sees
//! them. In place of the loop the host calls
//! `pgpu_rt_parallel_for(trip count, @kernel, context)` (`backends/runtime`,
//! `launch.rs`), which cuts the range into chunks for its threads.
//!
//! Loops that must stay sequential keep their place: loops with results
//! (reductions), loops of several dimensions, loops whose bodies print or
//! draw random numbers (their order is the program's), and loops that
//! capture a value of a type with no fixed-size representation (an
//! unranked memref, say). Run it after `pgpu-lower-to-runtime` and before
//! the upstream lowering to LLVM.
//!
//! Host code includes the bodies of `pgpu.taskgroup` and `pgpu.task`
//! ([`is_task_region`]: regions whose body runs exactly once, like
//! `scf.execute_region`), so a kernel in a task is a kernel for this pass
//! and for the passes that share [`is_host_code`]
//! (`pgpu-forward-list-copies`, `pgpu-narrow-guarded-kernels`,
//! `pgpu-offload-kernels`).
//!
//! Upstream's `convert-scf-to-openmp` does the same job with libomp;
//! executables built with it would need libomp at run time and its thread
//! team per parallel region, where ours need only libc and reuse one
//! persistent pool for every launch.

use crate::{
    build::{Builder, Built},
    inline_spmd::symbol_attribute,
    ir::{Op, Val},
    runtime_calls::{RuntimeCalls, source_name},
};
use melior::ir::{
    OperationRef, TypeLike,
    r#type::{MemRefType, ShapedTypeLike},
};
use pgpu_pass_infra::{Pass, PassFailure};
use std::collections::{HashMap, HashSet};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct OutlineCpuKernels;

impl Pass for OutlineCpuKernels {
    const ARGUMENT: &'static str = "pgpu-outline-cpu-kernels";
    const SUMMARY: &'static str =
        "Run host-level scf.parallel kernels on the CPU runtime's thread pool";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::func(),
            DialectHandle::llvm(),
            DialectHandle::arith(),
            DialectHandle::scf(),
        ]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let mut outliner = Outliner {
            runtime: RuntimeCalls::new(module),
            kernels_of: HashMap::new(),
            functions: functions_by_name(module),
            sequential_functions: HashMap::new(),
        };
        let kernels: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("scf.parallel") && is_host_code(*op))
            .collect();
        for kernel in kernels {
            outliner.outline(kernel)?;
        }
        Ok(())
    }
}

/// The module's functions by symbol name.
fn functions_by_name(module: Op) -> HashMap<String, Op> {
    module
        .entry_block(0)
        .map(|body| body.ops())
        .unwrap_or_default()
        .into_iter()
        .filter(|op| op.is("func.func"))
        .filter_map(|op| Some((symbol_attribute(op, "sym_name")?, op)))
        .collect()
}

/// Whether `name` is `pgpu.taskgroup` or `pgpu.task`: host code whose
/// body runs exactly once, in place, like `scf.execute_region`.
pub(crate) fn is_task_region(name: &str) -> bool {
    matches!(name, "pgpu.taskgroup" | "pgpu.task")
}

/// An op of host code: in a function, not nested in an `scf.parallel`, a
/// GPU launch or module, or SPMD code (the outermost `scf.parallel`s of
/// such code are the host's kernels). The bodies of task groups and tasks
/// are host code.
pub(crate) fn is_host_code(op: Op) -> bool {
    let mut current = op.parent();
    while let Some(parent) = current {
        let name = parent.name();
        if name == "func.func" {
            return true;
        }
        let pgpu_region = name.starts_with("pgpu.") && !is_task_region(&name);
        if name == "scf.parallel" || pgpu_region || name.starts_with("gpu.") {
            return false;
        }
        current = parent.parent();
    }
    false
}

/// An op whose single result is a constant (cloned into kernels, not
/// captured).
fn is_constant(op: Op) -> bool {
    op.num_operands() == 0
        && op.num_regions() == 0
        && op.num_results() == 1
        && matches!(
            op.name().as_str(),
            "arith.constant" | "llvm.mlir.constant" | "llvm.mlir.addressof" | "ub.poison"
        )
}

/// How a captured value travels in the context struct.
enum Slot {
    /// Stored as it is (integers, floats, pointers).
    Plain(String),
    /// `index`, stored as `i64`.
    Index,
    /// A memref, stored as its LLVM descriptor.
    Memref(String),
}

impl Slot {
    fn of(value: Val) -> Option<Slot> {
        let ty = value.melior_type();
        let text = ty.to_string();
        if text == "index" {
            return Some(Slot::Index);
        }
        if ty.is_integer() || ty.is_float() || text == "!llvm.ptr" {
            return Some(Slot::Plain(text));
        }
        let memref = MemRefType::try_from(ty).ok()?;
        if memref.memory_space().is_some() {
            return None;
        }
        let rank = memref.rank();
        Some(Slot::Memref(if rank == 0 {
            "!llvm.struct<(ptr, ptr, i64)>".to_string()
        } else {
            format!("!llvm.struct<(ptr, ptr, i64, array<{rank} x i64>, array<{rank} x i64>)>")
        }))
    }

    /// The field's LLVM type.
    fn field_type(&self) -> &str {
        match self {
            Slot::Plain(ty) | Slot::Memref(ty) => ty,
            Slot::Index => "i64",
        }
    }
}

struct Outliner {
    runtime: RuntimeCalls,
    /// Kernels outlined so far per host function (for their names).
    kernels_of: HashMap<String, usize>,
    functions: HashMap<String, Op>,
    /// Whether each function (transitively) prints or draws random numbers.
    sequential_functions: HashMap<String, bool>,
}

/// Runtime calls whose order the program's output depends on.
fn is_ordered_runtime_call(callee: &str) -> bool {
    callee.starts_with("pgpu_rt_printf") || callee.starts_with("pgpu_rt_rand")
}

impl Outliner {
    /// Whether ops in `scope` call (perhaps through user functions) a
    /// runtime function that must run in program order.
    fn must_stay_ordered(&mut self, scope: Op, visiting: &mut HashSet<String>) -> bool {
        for op in scope.nested() {
            if !op.is("func.call") {
                continue;
            }
            let Some(callee) = symbol_attribute(op, "callee") else {
                return true;
            };
            if is_ordered_runtime_call(&callee) {
                return true;
            }
            if let Some(known) = self.sequential_functions.get(&callee) {
                if *known {
                    return true;
                }
                continue;
            }
            let Some(function) = self.functions.get(&callee).copied() else {
                continue;
            };
            if !visiting.insert(callee.clone()) {
                continue;
            }
            let ordered = self.must_stay_ordered(function, visiting);
            self.sequential_functions.insert(callee, ordered);
            if ordered {
                return true;
            }
        }
        false
    }

    fn outline(&mut self, kernel: Op) -> Built<()> {
        // scf.parallel operands: lower bounds, upper bounds, steps, inits.
        if kernel.num_results() != 0 || kernel.num_operands() != 3 {
            return Ok(());
        }
        if self.must_stay_ordered(kernel, &mut HashSet::new()) {
            return Ok(());
        }
        let Some(body) = kernel.entry_block(0) else {
            return Ok(());
        };
        let Some(function) = kernel.enclosing_function() else {
            return Ok(());
        };
        // Values from outside the loop, in first-use order; constants apart.
        let mut captured: Vec<Val> = vec![];
        let mut constants: Vec<Val> = vec![];
        for op in kernel.nested() {
            for operand in op.operands() {
                if operand.is_defined_within(kernel)
                    || captured.contains(&operand)
                    || constants.contains(&operand)
                {
                    continue;
                }
                if operand.defining_op().is_some_and(is_constant) {
                    constants.push(operand);
                } else {
                    captured.push(operand);
                }
            }
        }
        let (lower, upper, step) = (kernel.operand(0), kernel.operand(1), kernel.operand(2));
        let unit_range = is_index_constant(lower, 0) && is_index_constant(step, 1);
        if !unit_range {
            for bound in [lower, step] {
                if !captured.contains(&bound) {
                    captured.push(bound);
                }
            }
        }
        let Some(slots) = captured
            .iter()
            .map(|value| Slot::of(*value))
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(());
        };
        let struct_type = format!(
            "!llvm.struct<({})>",
            slots
                .iter()
                .map(Slot::field_type)
                .collect::<Vec<_>>()
                .join(", ")
        );

        // The kernel function, right after its host function.
        let host_name = source_name(function);
        let number = self.kernels_of.entry(host_name.clone()).or_insert(0);
        let name = format!("{host_name}_kernel{number}");
        *number += 1;
        let outlined = self.runtime.parse_detached(&format!(
            "func.func private @{name}(%context: !llvm.ptr, %begin: i64, %end: i64) {{\n  func.return\n}}"
        ))?;
        if let Some(next) = function.next() {
            function.block_of().insert_raw_before(next, outlined);
        } else {
            // SAFETY: the module body takes the detached function.
            unsafe { mlir_sys::mlirBlockAppendOwnedOperation(function.block_of().0, outlined.0) };
        }
        outlined.set_location(kernel.location());
        let (Some(entry), Some(ret)) = (
            outlined.entry_block(0),
            outlined.entry_block(0).and_then(|block| block.terminator()),
        ) else {
            return Err(Builder::before(kernel).fail("internal error: empty kernel function"));
        };
        let arguments = entry.arguments();
        let at = Builder::before(ret).at_location_of(kernel);
        let pointer = at.parse_type("!llvm.ptr")?;
        let struct_attribute = at.parse_attribute(&struct_type)?;
        let mut replacement: HashMap<Val, Val> = HashMap::new();
        for (field, (value, slot)) in captured.iter().zip(&slots).enumerate() {
            let address = at.value(
                "llvm.getelementptr",
                &[arguments[0]],
                pointer,
                &[
                    (
                        "rawConstantIndices",
                        at.parse_attribute(&format!("array<i32: 0, {field}>"))?,
                    ),
                    ("elem_type", struct_attribute),
                ],
            )?;
            let field_type = at.parse_type(slot.field_type())?;
            let loaded = at.value("llvm.load", &[address], field_type, &[])?;
            let restored = match slot {
                Slot::Plain(_) => loaded,
                Slot::Index => at.value("arith.index_cast", &[loaded], at.index_type(), &[])?,
                Slot::Memref(_) => at.value(
                    "builtin.unrealized_conversion_cast",
                    &[loaded],
                    value.melior_type(),
                    &[],
                )?,
            };
            replacement.insert(*value, restored);
        }
        for constant in &constants {
            let Some(op) = constant.defining_op() else {
                continue;
            };
            let copy = op.clone_detached();
            at.insert_detached(copy);
            replacement.insert(*constant, copy.result(0));
        }
        let begin = at.value("arith.index_cast", &[arguments[1]], at.index_type(), &[])?;
        let end = at.value("arith.index_cast", &[arguments[2]], at.index_type(), &[])?;
        let one = at.index(1)?;

        // The host side: context, trip count, launch.
        let host = Builder::before(kernel);
        let context = if captured.is_empty() {
            host.value("llvm.mlir.zero", &[], pointer, &[])?
        } else {
            let Some(first) = function.entry_block(0).and_then(|block| block.first()) else {
                return Err(host.fail("internal error: function without a body"));
            };
            let entry_at = host.moved_to(first);
            let i64_type = entry_at.parse_type("i64")?;
            let count = entry_at.value(
                "llvm.mlir.constant",
                &[],
                i64_type,
                &[("value", entry_at.parse_attribute("1 : i64")?)],
            )?;
            entry_at.value(
                "llvm.alloca",
                &[count],
                pointer,
                &[("elem_type", struct_attribute)],
            )?
        };
        for (field, (value, slot)) in captured.iter().zip(&slots).enumerate() {
            let address = host.value(
                "llvm.getelementptr",
                &[context],
                pointer,
                &[
                    (
                        "rawConstantIndices",
                        host.parse_attribute(&format!("array<i32: 0, {field}>"))?,
                    ),
                    ("elem_type", struct_attribute),
                ],
            )?;
            let stored = match slot {
                Slot::Plain(_) => *value,
                Slot::Index => {
                    host.value("arith.index_cast", &[*value], host.parse_type("i64")?, &[])?
                }
                Slot::Memref(ty) => host.value(
                    "builtin.unrealized_conversion_cast",
                    &[*value],
                    host.parse_type(ty)?,
                    &[],
                )?,
            };
            host.op("llvm.store", &[stored, address], &[], &[])?;
        }
        let trips = if unit_range {
            upper
        } else {
            trip_count(&host, lower, upper, step)?
        };
        let i64_type = host.parse_type("i64")?;
        let trips = host.value("arith.index_cast", &[trips], i64_type, &[])?;
        let body_type = "(!llvm.ptr, i64, i64) -> ()";
        let address = host.value(
            "func.constant",
            &[],
            host.parse_type(body_type)?,
            &[("value", host.parse_attribute(&format!("@{name}"))?)],
        )?;
        self.runtime.call(
            &host,
            "pgpu_rt_parallel_for",
            &[trips, address, context],
            &format!("(i64, {body_type}, !llvm.ptr)"),
        )?;

        // Move the loop into the kernel: iterations begin .. end.
        let mut uses = vec![];
        for op in kernel.nested() {
            for (index, operand) in op.operands().into_iter().enumerate() {
                if let Some(new) = replacement.get(&operand) {
                    uses.push((op, index, *new));
                }
            }
        }
        for (op, index, new) in uses {
            op.set_operand(index, new);
        }
        kernel.move_before(ret);
        kernel.set_operands(&[begin, end, one]);
        if !unit_range {
            let (Some(&lower), Some(&step)) = (replacement.get(&lower), replacement.get(&step))
            else {
                return Err(at.fail("internal error: loop bounds not captured"));
            };
            let induction = body.arguments()[0];
            let Some(first) = body.first() else {
                return Err(at.fail("internal error: kernel without a body"));
            };
            let inner = at.moved_to(first);
            let index = inner.index_type();
            let scaled = inner.value("arith.muli", &[induction, step], index, &[])?;
            let original = inner.value("arith.addi", &[lower, scaled], index, &[])?;
            for found in induction.uses() {
                if Some(found.owner) != scaled.defining_op() {
                    found.owner.set_operand(found.index, original);
                }
            }
        }
        Ok(())
    }
}

/// `max(0, ceil((upper - lower) / step))` for a positive step.
fn trip_count(at: &Builder, lower: Val, upper: Val, step: Val) -> Built<Val> {
    let index = at.index_type();
    let span = at.value("arith.subi", &[upper, lower], index, &[])?;
    let trips = at.value("arith.ceildivsi", &[span, step], index, &[])?;
    let zero = at.index(0)?;
    at.value("arith.maxsi", &[trips, zero], index, &[])
}

/// Whether `value` is `arith.constant <expected> : index`.
pub(crate) fn is_index_constant(value: Val, expected: i64) -> bool {
    value.constant_integer() == Some(expected)
}
