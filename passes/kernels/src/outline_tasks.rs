//! `pgpu-outline-tasks`: runs the host code of the tasks of a task group
//! (Fork's sibling subgroups) on threads of their own.
//!
//! Each eligible `pgpu.task { body }` is moved into a new function
//! `func.func private @<function>_task<k>(%context: !llvm.ptr)`, right
//! after the function it is in, `k` counting the tasks outlined from that
//! function; the body's ops (its `pgpu.yield` left out) go, in order,
//! before the new function's `func.return`. The values the body uses from
//! outside travel in a context struct as in `pgpu-outline-cpu-kernels`
//! (`context_struct`): integers, floats and `!llvm.ptr` as they are,
//! `index` as `i64`, memrefs as their LLVM descriptors, constants cloned.
//! In place of the task the host fills the struct (one `llvm.alloca` at
//! its function's entry) and calls
//! `pgpu_rt_task_spawn(@<function>_task<k>, context, bytes)`, `bytes` the
//! struct's size (`getelementptr` of null at index 1, `ptrtoint`; a null
//! context and 0 bytes when nothing is captured). The runtime
//! (`backends/runtime`, `device.rs`) copies the context at the call, runs
//! the body on a task thread on the cuda device (at once, inline, on the
//! cpu device) and waits for it at `pgpu_rt_tasks_end`.
//!
//! Tasks are taken outer ones first: a task group nested in an outlined
//! task is in the new function when its own tasks are outlined, so they
//! are named after it (`@f_task0_task0`, `@f_task0_task1` for the tasks
//! of a group inside `@f`'s first task).
//!
//! A task is outlined only when its body may run concurrently with the
//! host code after it and with its sibling tasks; the others keep their
//! place, and `pgpu-lower-to-runtime` brackets them with
//! `pgpu_rt_task_begin`/`_end` (host code in program order). Eligible
//! are the tasks
//!
//! * whose parent chain reaches their `pgpu.taskgroup` through host control
//!   flow only (`scf.if`, `scf.for`, `scf.while`, `scf.execute_region`);
//! * whose captured values all have a slot in the context struct (not an
//!   unranked memref, nor one in another memory space);
//! * that neither print, draw random numbers nor read the clock
//!   (`pgpu.printf`, `pgpu.rand_*`, `pgpu.wtime`, or their runtime calls),
//!   directly or through the functions they call: the program's output
//!   depends on their order (`host_effects`);
//! * that call no function the module has no body of, other than the
//!   runtime's thread-safe ones (`pgpu_rt_*` but printf, rand and wtime;
//!   `mgpu*`), and nothing indirectly: whether others may run on two
//!   threads at once is unknown;
//! * whose host code (not their kernels: `gpu.launch` bodies and
//!   `scf.parallel` loops are device work, which task groups already let
//!   overlap) writes only memory the task allocated itself (the body's or
//!   a callee's `memref.alloc`, `memref.alloca`, `pgpu.dnew`,
//!   `pgpu.dtempnew`): stores, atomics, `memref.copy`, deallocations and
//!   the `pgpu.list` collectives' outputs, directly or through called
//!   functions (a callee's writes through a parameter are writes of the
//!   caller's operand). Two sibling tasks writing one location on two
//!   threads would race where the host's order made the result
//!   deterministic;
//! * that neither allocate nor free temporary lists (`pgpu.dtempnew`,
//!   `pgpu.dtempfree`): the runtime keeps them per thread, and a function's
//!   `dtempfree` frees what its callees allocated;
//! * whose memory the code of the group after them (not in a task: tasks
//!   do not write what other tasks read) neither writes nor reads where the
//!   task writes, kernels and collectives included: code that may run
//!   after the spawn (it follows the task, or shares a loop with it) used
//!   to issue its accesses after the task's, and the runtime orders device
//!   work on a list by the order of its accesses' issue, which is no
//!   longer the program's once the task has a thread. The typical case is
//!   a list of a subgroup's members that the next iteration of the group's
//!   loop recomputes while the task still reads it. The memory of both
//!   sides is the lists they access ([`crate::host_effects::list_of`] leads the
//!   GPU versions' device pointers back to the host list), the globals,
//!   and what their callees access through their parameters; memory
//!   reached through values of unknown origin (a memref loaded from a list
//!   of memrefs) may be any but the function's own allocations whose
//!   address never escapes.
//!
//! The pass runs in the cuda pipeline right before `pgpu-lower-to-runtime`,
//! after `pgpu-offload-kernels` and `pgpu-link-gpu-collectives`: the
//! tasks' kernels are `gpu.launch` regions by then, which move with the
//! body and are outlined later by `gpu-kernel-outlining`, and host I/O is
//! still `pgpu` ops that show their order. The cpu pipeline leaves it out:
//! the cpu device runs tasks inline anyway.
//!
//! We write this pass because the ops are ours: upstream has no task
//! groups (`async.execute` has no notion of a group's device streams, and
//! OpenMP's tasks would need libomp at run time).

use crate::{
    build::Built,
    context_struct::{
        Captures, ContextStruct, NewFunctions, function_address, replace_uses_within,
    },
    host_effects::CallGraph,
    ir::Op,
    outline_cpu_kernels::is_host_code,
};
use melior::ir::OperationRef;
use pgpu_pass_infra::{Pass, PassFailure};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct OutlineTasks;

impl Pass for OutlineTasks {
    const ARGUMENT: &'static str = "pgpu-outline-tasks";
    const SUMMARY: &'static str = "Run the host code of pgpu.tasks that may run concurrently on threads of their own (pgpu_rt_task_spawn)";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::func(),
            DialectHandle::llvm(),
            DialectHandle::arith(),
        ]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        // Judged before any moves, outer tasks first.
        let calls = CallGraph::new(module);
        let tasks: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.task") && is_eligible(&calls, *op))
            .collect();
        let mut functions = NewFunctions::new(module);
        for task in tasks {
            outline(&mut functions, task)?;
        }
        Ok(())
    }
}

/// The `pgpu.taskgroup` of `task` when only host control flow lies
/// between them.
fn taskgroup_of(task: Op) -> Option<Op> {
    let mut current = task.parent();
    while let Some(op) = current {
        match op.name().as_str() {
            "pgpu.taskgroup" => return Some(op),
            "scf.if" | "scf.for" | "scf.while" | "scf.execute_region" => current = op.parent(),
            _ => return None,
        }
    }
    None
}

/// Whether `task` may run on a thread of its own (see the module docs).
fn is_eligible(calls: &CallGraph, task: Op) -> bool {
    let Some(group) = taskgroup_of(task) else {
        return false;
    };
    if !is_host_code(task) || !ContextStruct::fits(task) {
        return false;
    }
    let effects = calls.effects(task);
    !effects.ordered
        && !effects.foreign
        && !effects.temporaries
        && effects.host_writes.is_empty()
        && !conflicts_later(calls, task, group)
}

/// Whether code of `group` outside its tasks that may run after `task` was
/// spawned (host code, kernels, collectives) may access memory that `task`
/// accesses, one of them writing it.
fn conflicts_later(calls: &CallGraph, task: Op, group: Op) -> bool {
    let Some(function) = group.enclosing_function() else {
        return true;
    };
    let later = group
        .nested()
        .into_iter()
        .filter(|op| !is_within_any(*op, group, &["pgpu.task"]) && !runs_before(*op, task, group));
    calls
        .footprint(task.nested())
        .conflicts(&calls.footprint(later), function, calls)
}

/// Whether `op` or an ancestor of it below `group` is one of the ops
/// `names`.
fn is_within_any(op: Op, group: Op, names: &[&str]) -> bool {
    std::iter::successors(Some(op), |inner| inner.parent())
        .take_while(|inner| *inner != group)
        .any(|inner| names.contains(&inner.name().as_str()))
}

/// Whether `op` (in `group`, outside `task`) has run whenever `task` is
/// spawned in one run of `group`'s body: it comes before an ancestor of
/// `task` in a block, or lies in the other branch of an `scf.if` holding
/// `task`, and no loop holds both.
fn runs_before(op: Op, task: Op, group: Op) -> bool {
    let mut ancestor = task;
    while let Some(parent) = ancestor.parent() {
        if let Some(outer) = op.ancestor_under(parent) {
            let before = if outer.block_of() == ancestor.block_of() {
                precedes(outer, ancestor)
            } else {
                parent.is("scf.if")
            };
            return before
                && !is_within_any(parent, group, &["scf.for", "scf.while", "scf.parallel"]);
        }
        if parent == group {
            break;
        }
        ancestor = parent;
    }
    false
}

/// Whether `first` comes before `second` in their block.
fn precedes(first: Op, second: Op) -> bool {
    std::iter::successors(first.next(), |op| op.next()).any(|op| op == second)
}

/// The type of a task function: its context.
const TASK_BODY: &str = "(!llvm.ptr) -> ()";

/// `pgpu_rt_task_spawn(task, context, bytes)`.
const TASK_SPAWN: &str = "((!llvm.ptr) -> (), !llvm.ptr, i64)";

/// Moves `task` into a new function and spawns it.
fn outline(functions: &mut NewFunctions, task: Op) -> Built<()> {
    let Some(function) = task.enclosing_function() else {
        return Ok(());
    };
    let Some(context) = ContextStruct::new(Captures::of(task)) else {
        return Ok(());
    };
    // The task function, right after its function, and the context on the
    // host, which the runtime copies at the spawn.
    let outlining = context.outline(functions, task, function, "task", "%context: !llvm.ptr")?;
    let host = &outlining.host;
    let bytes = context.bytes(host)?;
    let address = function_address(host, &outlining.name, TASK_BODY)?;
    let arguments = [address, outlining.context, bytes];
    functions
        .runtime
        .call(host, "pgpu_rt_task_spawn", &arguments, TASK_SPAWN)?;

    // The body moves into the task function.
    replace_uses_within(task, &outlining.replacement);
    task.move_body_before(outlining.ret);
    task.erase();
    Ok(())
}
