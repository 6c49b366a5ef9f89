//! Block spawns in `pgpu-offload-kernels`: a `pgpu.spawn block %n` (made by
//! the group lowering for Fork group calls that fit one thread block)
//! becomes one GPU kernel of one block of `n` threads, whose threads
//! synchronize ranges of themselves.
//!
//! ```text
//! scf.if (pgpu_rt_device_is_cuda() != 0) {
//!   pgpu_rt_launch_site(...); device views of the lists it uses
//!   gpu.launch blocks(1) threads(n) {
//!     func.call @pgpu_block_enter()          // zero the barrier words
//!     body, with pgpu.rank = thread_id.x, pgpu.size = n and
//!       pgpu.range_barrier %f, %c, %s -> func.call @pgpu_range_barrier(%f, %c, %s)
//!   }
//! } else {
//!   pgpu_rt_block_unavailable()   // the CPU device has no block spawns
//! }
//! ```
//!
//! Unlike a grid kernel, every launched thread is a thread of the spawn
//! (`n` is at most `pgpu.block_capacity`, 1024), so the body needs no
//! guard, and a range barrier may stand anywhere (under control flow that
//! is the same in the range's threads). The body may call functions
//! defined in the module, typically the `pgpu.block_group` functions of a
//! Fork group's recursion: they are device code, and every function
//! reachable from the body is checked (no pgpu ops besides range barriers,
//! no globals: a global read in device code would read the kernel
//! module's copy of it, no indirect calls, no declarations). Their range
//! barriers become the same calls. Upstream's `gpu-kernel-outlining` copies
//! the callees, recursive ones included, into the kernel's `gpu.module`,
//! where the NVPTX backend's `pgpu-define-range-barrier` defines the two
//! functions declared here (a software barrier over a contiguous range of
//! the block's threads, on words in shared memory) and removes the host
//! module's copies of the block-group functions. Global reads of the body
//! leave it as they leave any kernel (`hoist_global_reads`), and
//! `pgpu-lower-to-runtime` lowers a block spawn that reaches it (the CPU
//! target's) to `pgpu_rt_block_unavailable()`.
//!
//! We write this lowering ourselves: upstream MLIR maps loops to grids of
//! blocks and knows no barrier over part of a block.

use crate::{
    block_groups::is_workgroup_global,
    build::{Builder, Built},
    grid_fuse::runs_on_device,
    inline_spmd::symbol_attribute,
    ir::Op,
    offload_grid::{bind_thread, replace_sizes},
    offload_kernels::{Offload, launch_shaped},
};
use std::collections::HashMap;

/// The unit attribute of the functions a block spawn's threads run.
pub(crate) const BLOCK_GROUP: &str = "pgpu.block_group";

/// The device function every range barrier calls: `(first, count, slot)`.
pub(crate) const RANGE_BARRIER: &str = "pgpu_range_barrier";

/// The device function a block kernel calls first (initializes the
/// words of its range barriers).
pub(crate) const BLOCK_ENTER: &str = "pgpu_block_enter";

/// The runtime function of the CPU branch.
pub(crate) const BLOCK_UNAVAILABLE: &str = "pgpu_rt_block_unavailable";

/// The pgpu ops a block spawn's body keeps until it is offloaded.
const BODY_OPS: [&str; 4] = ["pgpu.rank", "pgpu.size", "pgpu.range_barrier", "pgpu.yield"];

/// The functions of `module` (its top-level `func.func`s) by name.
pub(crate) fn module_functions(module: Op) -> HashMap<String, Op> {
    module
        .entry_block(0)
        .map(|body| {
            body.ops()
                .into_iter()
                .filter(|op| op.is("func.func"))
                .filter_map(|op| Some((symbol_attribute(op, "sym_name")?, op)))
                .collect()
        })
        .unwrap_or_default()
}

/// The functions the block spawn `spawn` calls, directly or not, in the
/// order found; an error at the first op of them that cannot run in a
/// block kernel.
pub(crate) fn block_callees(spawn: Op, functions: &HashMap<String, Op>) -> Built<Vec<Op>> {
    let mut found: Vec<Op> = vec![];
    let mut pending: Vec<Op> = spawn
        .nested()
        .into_iter()
        .filter(|op| op.is("func.call"))
        .collect();
    while let Some(call) = pending.pop() {
        let callee = symbol_attribute(call, "callee").unwrap_or_default();
        // A function that an earlier block spawn also calls has its range
        // barriers rewritten already (the backend defines the callee).
        if callee == RANGE_BARRIER {
            continue;
        }
        let function = functions
            .get(&callee)
            .copied()
            .filter(|function| function.entry_block(0).is_some());
        let Some(function) = function else {
            return Err(Builder::before(call).fail(&format!(
                "calls @{callee}, which is not a function of the module with a body: a block \
                 kernel (`pgpu.spawn block`) calls device code only"
            )));
        };
        if found.contains(&function) {
            continue;
        }
        found.push(function);
        for op in function.nested() {
            if op.is("func.call") {
                pending.push(op);
            } else if !runs_on_device(op, &["pgpu.range_barrier"])
                || (op.is("memref.get_global") && !is_workgroup_global(op))
            {
                let why = if op.is("memref.get_global") {
                    "takes the address of a global: functions of block kernels get globals as \
                     arguments"
                } else {
                    "cannot run in a function of a block kernel (device code)"
                };
                return Err(Builder::before(op).fail(&format!("'{}' {why}", op.name())));
            }
        }
    }
    Ok(found)
}

impl Offload {
    /// Offloads the block spawn `spawn` (host code); `functions` are the
    /// module's.
    pub(crate) fn offload_block(
        &mut self,
        spawn: Op,
        functions: &HashMap<String, Op>,
    ) -> Built<()> {
        let at = Builder::before(spawn);
        let site_name = self.site_name(spawn);
        let count = spawn.operand(0);
        replace_sizes(spawn, count);
        if let Some(bad) = spawn
            .nested()
            .into_iter()
            .find(|op| !op.is("func.call") && !runs_on_device(*op, &BODY_OPS))
        {
            return Err(Builder::before(bad).fail(&format!(
                "'{}' cannot run in a block kernel (the body of a `pgpu.spawn block`)",
                bad.name()
            )));
        }
        let callees = block_callees(spawn, functions)?;
        let (inside, views) = self.spawn_dispatch(spawn, &site_name, BLOCK_UNAVAILABLE)?;
        let blocks = inside.index(1)?;
        let (thread, ids, terminator) = launch_shaped(&inside, count, blocks, count, spawn)?;
        self.runtime.call(&thread, BLOCK_ENTER, &[], "()")?;
        // Thread ids are arguments 3..6 of the launch body.
        bind_thread(spawn, ids[3], &views);
        let Some(body) = spawn.entry_block(0) else {
            return Err(at.fail("internal error: a block spawn without a body"));
        };
        for op in body.ops() {
            if !op.is("pgpu.yield") {
                op.move_before(terminator);
            }
        }
        spawn.erase();
        let mut barriers: Vec<Op> = terminator
            .block_of()
            .ops()
            .into_iter()
            .flat_map(|op| std::iter::once(op).chain(op.nested()))
            .filter(|op| op.is("pgpu.range_barrier"))
            .collect();
        for function in callees {
            if function.has_attribute(BLOCK_GROUP) && self.rewritten_groups.insert(function) {
                barriers.extend(
                    function
                        .nested()
                        .into_iter()
                        .filter(|op| op.is("pgpu.range_barrier")),
                );
            }
        }
        for barrier in barriers {
            let at = Builder::before(barrier);
            self.runtime.call(
                &at,
                RANGE_BARRIER,
                &barrier.operands(),
                "(index, index, index)",
            )?;
            barrier.erase();
        }
        Ok(())
    }
}
