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
//! the upstream lowering to LLVM. The context struct (`context_struct`)
//! and the ordering analysis (`host_effects`) are shared with
//! `pgpu-outline-tasks`.
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
    context_struct::{
        Captures, ContextStruct, NewFunctions, function_address, replace_uses_within,
    },
    host_effects::CallGraph,
    ir::{Op, Val},
};
use melior::ir::OperationRef;
use pgpu_pass_infra::{Pass, PassFailure};

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
            functions: NewFunctions::new(module),
            calls: CallGraph::new(module),
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

/// The type of a kernel function: context, begin, end.
const KERNEL_BODY: &str = "(!llvm.ptr, i64, i64) -> ()";

/// `pgpu_rt_parallel_for(trip count, kernel, context)`.
const PARALLEL_FOR: &str = "(i64, (!llvm.ptr, i64, i64) -> (), !llvm.ptr)";

struct Outliner {
    /// The runtime's functions, the kernel functions' names.
    functions: NewFunctions,
    /// Which functions print or draw random numbers.
    calls: CallGraph,
}

impl Outliner {
    fn outline(&mut self, kernel: Op) -> Built<()> {
        // scf.parallel operands: lower bounds, upper bounds, steps, inits.
        if kernel.num_results() != 0 || kernel.num_operands() != 3 {
            return Ok(());
        }
        if self.calls.effects(kernel).ordered {
            return Ok(());
        }
        let Some(body) = kernel.entry_block(0) else {
            return Ok(());
        };
        let Some(function) = kernel.enclosing_function() else {
            return Ok(());
        };
        // Values from outside the loop, in first-use order; constants apart.
        let mut captures = Captures::of(kernel);
        let (lower, upper, step) = (kernel.operand(0), kernel.operand(1), kernel.operand(2));
        let unit_range = is_index_constant(lower, 0) && is_index_constant(step, 1);
        if !unit_range {
            captures.capture(lower);
            captures.capture(step);
        }
        let Some(context) = ContextStruct::new(captures) else {
            return Ok(());
        };

        // The kernel function, right after its host function, and the
        // context on the host.
        let outlining = context.outline(
            &mut self.functions,
            kernel,
            function,
            "kernel",
            "%context: !llvm.ptr, %begin: i64, %end: i64",
        )?;
        let (at, host) = (&outlining.inside, &outlining.host);
        let arguments = &outlining.parameters;
        let begin = at.value("arith.index_cast", &[arguments[1]], at.index_type(), &[])?;
        let end = at.value("arith.index_cast", &[arguments[2]], at.index_type(), &[])?;
        let one = at.index(1)?;

        // The host side: trip count, launch.
        let trips = if unit_range {
            upper
        } else {
            trip_count(host, lower, upper, step)?
        };
        let i64_type = host.parse_type("i64")?;
        let trips = host.value("arith.index_cast", &[trips], i64_type, &[])?;
        let address = function_address(host, &outlining.name, KERNEL_BODY)?;
        let arguments = [trips, address, outlining.context];
        self.functions
            .runtime
            .call(host, "pgpu_rt_parallel_for", &arguments, PARALLEL_FOR)?;

        // Move the loop into the kernel: iterations begin .. end.
        let replacement = &outlining.replacement;
        replace_uses_within(kernel, replacement);
        kernel.move_before(outlining.ret);
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
