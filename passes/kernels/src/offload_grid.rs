//! Grid spawns in `pgpu-offload-kernels`: a `pgpu.spawn grid %n` (made by
//! `pgpu-grid-fuse`) becomes one GPU kernel whose barriers are grid-wide.
//!
//! ```text
//! scf.if (pgpu_rt_device_is_cuda() != 0) {
//!   pgpu_rt_launch_site(...); device views of the lists it uses
//!   gpu.launch blocks(ceil(n / N)) threads(N) {
//!     %j = block_id * N + thread_id; %active = %j < n
//!     %v = scf.if %active -> (T) { segment 0 } else { ub.poison }
//!     func.call @pgpu_grid_barrier()
//!     scf.if %active { segment 1, using %v }
//!   }
//! } else {
//!   pgpu_rt_grid_unavailable()   // the CPU device has no grid barriers
//! }
//! ```
//!
//! Every launched thread reaches every barrier: the threads past `n`
//! (the last block's) skip the code between barriers, not the barriers,
//! which is why `pgpu-grid-fuse` accepts barriers directly in the body
//! only. Values that one segment defines and later ones use leave its
//! `scf.if` as results (poison in the skipping threads, which never use
//! them); they stay in registers. `pgpu.rank` is `%j`, `pgpu.size` is `n`;
//! `pgpu.require` bodies (host code before the first barrier) run before
//! the launch, and global reads move out of the body as they do out of any
//! kernel (`hoist_global_reads`). `@pgpu_grid_barrier` is declared here and defined per kernel
//! module by the NVPTX backend (`pgpu-define-grid-barrier`), which also
//! marks the module so that the runtime launches it cooperatively.

use crate::{
    build::{Builder, Built},
    grid_fuse::runs_in_grid_kernel,
    ir::{Op, Val},
    offload_kernels::{Offload, outside_lists},
};
use melior::ir::Type;
use std::collections::HashMap;

/// The device function every grid barrier calls.
pub(crate) const GRID_BARRIER: &str = "pgpu_grid_barrier";

impl Offload {
    /// Offloads the grid spawn `spawn` (host code).
    pub(crate) fn offload_grid(&mut self, spawn: Op) -> Built<()> {
        let at = Builder::before(spawn);
        let site_name = self.site_name(spawn);
        let count = spawn.operand(0);
        replace_sizes(spawn, count);
        inline_requires(spawn)?;
        if let Some(bad) = spawn
            .nested()
            .into_iter()
            .find(|op| !runs_in_grid_kernel(*op))
        {
            return Err(Builder::before(bad).fail(&format!(
                "'{}' cannot run in a grid kernel (the body of a `pgpu.spawn grid`)",
                bad.name()
            )));
        }
        let (inside, views) = self.spawn_dispatch(spawn, &site_name, "pgpu_rt_grid_unavailable")?;
        let (thread, linear) = self.launch(&inside, count, spawn)?;
        let active = thread.cmpi(2, linear, count)?;
        bind_thread(spawn, linear, &views);
        let Some(body) = spawn.entry_block(0) else {
            return Err(at.fail("internal error: a grid spawn without a body"));
        };
        let mut segment = vec![];
        for op in body.ops() {
            if op.is("pgpu.yield") {
                break;
            }
            if op.is("pgpu.barrier") {
                guard_segment(&thread, active, &segment)?;
                segment.clear();
                self.runtime.call(&thread, GRID_BARRIER, &[], "()")?;
                op.erase();
            } else {
                segment.push(op);
            }
        }
        guard_segment(&thread, active, &segment)?;
        spawn.erase();
        Ok(())
    }
}

impl Offload {
    /// What grid and block spawns share before their launch: the dispatch
    /// before `spawn`, whose CPU branch calls `unavailable` (the CPU device
    /// runs neither; code versioned on the capacity never gets there),
    /// and in its GPU branch the launch site and the device views of the
    /// lists the spawn uses. Returns a builder in the GPU branch and the
    /// views.
    pub(crate) fn spawn_dispatch<'c>(
        &mut self,
        spawn: Op,
        site_name: &str,
        unavailable: &str,
    ) -> Built<(Builder<'c>, HashMap<Val, Val>)> {
        let at = Builder::before(spawn);
        let lists = outside_lists(spawn);
        let (_, then_yield, else_yield) = self.dispatch(&at, &[])?;
        let on_cpu = at.moved_to(else_yield).at_location_of(spawn);
        self.runtime.call(&on_cpu, unavailable, &[], "()")?;
        let inside = at.moved_to(then_yield).at_location_of(spawn);
        self.launch_site(&inside, site_name, spawn)?;
        let mut views = HashMap::new();
        for (list, write) in &lists {
            views.insert(*list, self.device_view(&inside, *list, *write)?);
        }
        Ok((inside, views))
    }
}

/// Replaces the `pgpu.size` queries of `spawn` by its thread count.
pub(crate) fn replace_sizes(spawn: Op, count: Val) {
    for op in spawn.nested() {
        if op.is("pgpu.size") {
            op.result(0).replace_all_uses(count);
            op.erase();
        }
    }
}

/// Replaces the `pgpu.rank` queries of `spawn` by `rank` (the launched
/// thread's) and its uses of lists by their device `views`.
pub(crate) fn bind_thread(spawn: Op, rank: Val, views: &HashMap<Val, Val>) {
    for op in spawn.nested() {
        if op.is("pgpu.rank") {
            op.result(0).replace_all_uses(rank);
            op.erase();
            continue;
        }
        for (position, operand) in op.operands().into_iter().enumerate() {
            if let Some(view) = views.get(&operand) {
                op.set_operand(position, *view);
            }
        }
    }
}

/// Moves `segment` (ops of the spawn body, in order) into `scf.if %active`
/// at `thread`; the values later code uses become its results.
fn guard_segment(thread: &Builder, active: Val, segment: &[Op]) -> Built<()> {
    if segment.is_empty() {
        return Ok(());
    }
    let escaping: Vec<Val> = segment
        .iter()
        .flat_map(|op| op.results())
        .filter(|value| {
            value
                .uses()
                .iter()
                .any(|found| !segment.iter().any(|op| found.owner.is_within(*op)))
        })
        .collect();
    let types: Vec<Type> = escaping.iter().map(|value| value.melior_type()).collect();
    let (guard, then_yield, else_yield) = thread.if_op(active, &types, !types.is_empty())?;
    for op in segment {
        op.move_before(then_yield);
    }
    then_yield.set_operands(&escaping);
    if let Some(else_yield) = else_yield {
        let skip = thread.moved_to(else_yield);
        let poison = types
            .iter()
            .map(|ty| skip.poison(*ty))
            .collect::<Built<Vec<Val>>>()?;
        else_yield.set_operands(&poison);
    }
    for (position, value) in escaping.into_iter().enumerate() {
        for found in value.uses() {
            if !found.owner.is_within(guard) {
                found.owner.set_operand(found.index, guard.result(position));
            }
        }
    }
    Ok(())
}

/// Runs the bodies of the `pgpu.require` ops directly in `spawn`'s body
/// before it (host code), their results replaced by what they yield.
fn inline_requires(spawn: Op) -> Built<()> {
    let Some(body) = spawn.entry_block(0) else {
        return Ok(());
    };
    for require in body.ops().into_iter().filter(|op| op.is("pgpu.require")) {
        let Some(inner) = require.entry_block(0) else {
            continue;
        };
        let mut yielded = vec![];
        for op in inner.ops() {
            if op.is("pgpu.yield") {
                yielded = op.operands();
            } else {
                op.move_before(spawn);
            }
        }
        for (result, value) in require.results().into_iter().zip(yielded) {
            result.replace_all_uses(value);
        }
        require.erase();
    }
    Ok(())
}
