//! The bulk-synchronous scheduler of `pgpu.spawn` (and of gpu kernels).
//!
//! Every logical thread is a [`Fiber`] with private slots; memory is shared.
//! One *round* runs each live thread, in rank order, until it stops at a
//! synchronization point (barrier, superstep entry, collective, thread
//! primitive, `pgpu.require`) or ends. Then:
//!
//! 1. thread output (printf) of the superstep is flushed in rank order
//!    (not at a `pgpu.require`, which does not end the superstep);
//! 2. `pgpu.thread.put` values are delivered to their target threads;
//! 3. every thread must wait at the same set of ops (one per `pgpu.par`
//!    branch still running), else the threads diverged: an error;
//! 4. each of those ops is resolved once for all threads: barriers do
//!    nothing (a rank-reassigning one saves every thread's context for
//!    `pgpu.set_oldrank`), collectives combine the threads' operands in rank
//!    order and write each thread's result, `pgpu.require` runs its body once
//!    with the first thread's values, and thread primitives
//!    (`fork`/`kill`/`sortby`/`split`) rebuild the thread list — ranks are
//!    positions in it, and the old rank of each thread is remembered;
//! 5. the threads' contexts are saved for `pgpu.thread.get` when the program
//!    uses it, and the race detector's shadow map starts afresh.
//!
//! A `pgpu.spawn block` has a scheduler of its own (module `block`): its
//! ranges synchronize independently, so no step here applies to it, and a
//! `pgpu.range_barrier` reached under this scheduler is an error.

use crate::InterpError;
use crate::exec::*;
use crate::ir::*;
use crate::list::compare_keys;
use crate::scalar::{combine, identity};
use crate::value::*;
use std::rc::Rc;

/// One logical thread.
#[derive(Debug, Clone, Default)]
pub struct Thread {
    pub fiber: Fiber,
    pub done: bool,
    pub oldrank: Option<usize>,
    pub out: Vec<u8>,
    pub gpu: Option<[i64; 12]>,
    /// Fork: the stack of groups (id, rank, size) the thread is in.
    pub groups: Vec<crate::fork::Group>,
}

/// Waiting fibers of a fiber tree: (path through `pgpu.par` branches, op).
fn collect_waiting(fiber: &Fiber, path: &mut Vec<usize>, out: &mut Vec<(Vec<usize>, OpId)>) {
    if let Some(op) = fiber.waiting {
        out.push((path.clone(), op));
        return;
    }
    if let Some(CtlKind::Par(state)) = fiber
        .acts
        .last()
        .and_then(|a| a.ctl.last())
        .map(|c| &c.kind)
    {
        for (index, branch) in state.branches.iter().enumerate() {
            if state.results[index].is_none() {
                path.push(index);
                collect_waiting(branch, path, out);
                path.pop();
            }
        }
    }
}

fn fiber_at<'f>(fiber: &'f mut Fiber, path: &[usize]) -> Option<&'f mut Fiber> {
    let Some((&first, rest)) = path.split_first() else {
        return Some(fiber);
    };
    match fiber
        .acts
        .last_mut()
        .and_then(|a| a.ctl.last_mut())
        .map(|c| &mut c.kind)
    {
        Some(CtlKind::Par(state)) => fiber_at(state.branches.get_mut(first)?, rest),
        _ => None,
    }
}

impl Interp<'_> {
    /// A fiber for an SPMD body: the region's own frame filled with the
    /// values it captures from `host` (or, without a frame, a copy of the
    /// host's slots).
    fn body_fiber(
        &self,
        host: &Activation,
        frame: Option<&Frame>,
        region: RegionId,
        args: &[Val],
    ) -> Fiber {
        let slots = match frame {
            Some(frame) => {
                let mut slots = vec![Val::Unset; frame.nslots as usize];
                for &(outer, inner) in &frame.captures {
                    slots[inner as usize] = host.slots[outer as usize].clone();
                }
                slots
            }
            None => host.slots.clone(),
        };
        let mut act = Activation {
            func: host.func,
            slots,
            ctl: Vec::new(),
            ret: Box::new([]),
            allocas: Vec::new(),
            dtemps: Vec::new(),
        };
        if let Some(&entry) = self.prog.regions[region as usize].blocks.first() {
            for (&slot, value) in self.prog.blocks[entry as usize].args.iter().zip(args) {
                act.slots[slot as usize] = value.clone();
            }
            act.ctl.push(Ctl {
                block: entry,
                pc: 0,
                kind: CtlKind::Base,
            });
        }
        Fiber {
            acts: vec![act],
            waiting: None,
            passed: false,
        }
    }

    /// The fiber every thread of `spawn` starts from.
    pub(crate) fn spawn_fiber(&self, host: &Activation, spawn: &Op) -> Fiber {
        self.body_fiber(host, spawn.frame.as_deref(), spawn.regions[0], &[])
    }

    /// Runs a `pgpu.spawn` of `count` threads; returns the temporary lists
    /// allocated inside it (they belong to the spawning function).
    pub fn run_spawn(&mut self, host: &Activation, op: &Op, count: usize) -> R<Vec<u32>> {
        if self.cur.is_some() || self.in_spawn {
            return Err(self.fail(op, "pgpu.spawn inside an SPMD region"));
        }
        if count > self.options.max_threads {
            return Err(self.fail(
                op,
                format!(
                    "pgpu.spawn of {count} threads exceeds the limit of {}",
                    self.options.max_threads
                ),
            ));
        }
        let template = self.body_fiber(host, op.frame.as_deref(), op.regions[0], &[]);
        if count == 0 {
            self.in_spawn = true;
            self.spawn_dtemps.clear();
            let result = self.run_requires_without_threads(template);
            self.in_spawn = false;
            result?;
            return Ok(std::mem::take(&mut self.spawn_dtemps));
        }
        let threads = vec![
            Thread {
                fiber: template,
                ..Thread::default()
            };
            count
        ];
        self.in_spawn = true;
        self.spawn_dtemps.clear();
        let result = self.run_bsp(threads);
        self.in_spawn = false;
        result?;
        Ok(std::mem::take(&mut self.spawn_dtemps))
    }

    /// Runs threads bulk-synchronously until all have ended.
    pub fn run_bsp(&mut self, mut threads: Vec<Thread>) -> R<()> {
        let prog = self.prog;
        self.get_snapshot = None;
        self.rr_snapshot = None;
        self.puts.clear();
        let result = (|| -> R<()> {
            // A require does not end the superstep: the race detector's
            // record goes on across it.
            let mut new_superstep = true;
            loop {
                let size = threads.len();
                let race = self.options.race_detection && size > 1;
                if new_superstep {
                    self.mem.clear_shadow();
                }
                let mut failure = None;
                for (rank, thread) in threads.iter_mut().enumerate() {
                    if thread.done {
                        continue;
                    }
                    self.cur = Some(ThreadCtx {
                        rank,
                        size,
                        oldrank: thread.oldrank,
                        out: std::mem::take(&mut thread.out),
                        gpu: thread.gpu,
                        group: None,
                    });
                    self.mem.race_thread = race.then_some(rank as u32);
                    let result = self.run_fiber(&mut thread.fiber);
                    if let Some(ctx) = self.cur.take() {
                        thread.out = ctx.out;
                        thread.oldrank = ctx.oldrank;
                    }
                    match result {
                        Ok(Stop::Done(_)) => thread.done = true,
                        Ok(Stop::Sync) => {}
                        Err(error) => {
                            failure = Some(error);
                            break;
                        }
                    }
                }
                self.mem.race_thread = None;
                let points: Vec<Vec<(Vec<usize>, OpId)>> = threads
                    .iter()
                    .map(|t| {
                        let mut out = Vec::new();
                        collect_waiting(&t.fiber, &mut Vec::new(), &mut out);
                        out
                    })
                    .collect();
                // A require is hoisted before its superstep's kernel, so the
                // superstep's thread output goes on across it (and a
                // require's own output comes first).
                let at_requires_only = failure.is_none()
                    && points.iter().any(|p| !p.is_empty())
                    && points
                        .iter()
                        .flatten()
                        .all(|(_, id)| matches!(prog.ops[*id as usize].kind, K::Require));
                if !at_requires_only {
                    for thread in threads.iter_mut() {
                        let out = std::mem::take(&mut thread.out);
                        self.emit(&out);
                    }
                }
                if let Some(error) = failure {
                    return Err(error);
                }
                for put in std::mem::take(&mut self.puts) {
                    if let Some(slot) = threads
                        .get_mut(put.target)
                        .and_then(|t| fiber_at(&mut t.fiber, &put.path))
                        .and_then(|f| f.acts.get_mut(put.depth))
                        .and_then(|a| a.slots.get_mut(put.slot as usize))
                    {
                        *slot = put.value;
                    }
                }
                let alive = threads.iter().filter(|t| !t.done).count();
                if alive == 0 {
                    return Ok(());
                }
                let Some(waiting) = points.iter().find(|p| !p.is_empty()) else {
                    return Err(InterpError::new(
                        "internal error: no thread waits".into(),
                        None,
                    ));
                };
                let first_op = &prog.ops[waiting[0].1 as usize];
                if alive != size {
                    return Err(self.fail(
                        first_op,
                        format!(
                            "'{}' reached by {alive} of {size} threads; the others finished the SPMD region (divergent synchronization)",
                            first_op.name
                        ),
                    ));
                }
                let order: Vec<OpId> = points[0].iter().map(|(_, op)| *op).collect();
                let mut sorted_order = order.clone();
                sorted_order.sort_unstable();
                for (rank, list) in points.iter().enumerate() {
                    let mut ops: Vec<OpId> = list.iter().map(|(_, op)| *op).collect();
                    ops.sort_unstable();
                    if ops != sorted_order {
                        let other = &prog.ops[list.first().map_or(order[0], |p| p.1) as usize];
                        let mut error = self.fail(
                            other,
                            format!(
                                "thread {rank} waits at '{}' while thread 0 waits at '{}' (divergent synchronization)",
                                other.name, first_op.name
                            ),
                        );
                        error.notes.push(crate::Note {
                            message: "thread 0 waits here".into(),
                            location: prog.loc(first_op.loc),
                        });
                        return Err(error);
                    }
                }
                // Collectives and barriers first; a thread primitive last.
                // Par branches may wait at the same op (a function called
                // in two branches): its k-th waiting fibers in all threads
                // form the k-th instance, resolved on its own.
                let mut primitive = None;
                let mut rank_reassigned = false;
                for (position, &op_id) in order.iter().enumerate() {
                    let op = &prog.ops[op_id as usize];
                    let instance = order[..position].iter().filter(|&&o| o == op_id).count();
                    let paths: Vec<Vec<usize>> = points
                        .iter()
                        .map(|list| {
                            list.iter()
                                .filter(|(_, o)| *o == op_id)
                                .nth(instance)
                                .map(|(path, _)| path.clone())
                                .unwrap_or_default()
                        })
                        .collect();
                    match op.kind {
                        K::ThreadFork | K::ThreadKill | K::ThreadSortBy | K::ThreadSplit => {
                            if order.len() > 1 || paths.iter().any(|p| !p.is_empty()) {
                                return Err(self.fail(
                                    op,
                                    format!("'{}' inside pgpu.par is not supported", op.name),
                                ));
                            }
                            primitive = Some(op);
                        }
                        K::Barrier {
                            rank_reassigned: true,
                        }
                        | K::Superstep {
                            rank_reassigned: true,
                        } => {
                            rank_reassigned = true;
                        }
                        _ => self.resolve(op, &mut threads, &paths)?,
                    }
                }
                for (thread, list) in threads.iter_mut().zip(&points) {
                    for (path, _) in list {
                        if let Some(fiber) = fiber_at(&mut thread.fiber, path) {
                            fiber.waiting = None;
                            fiber.passed = true;
                        }
                    }
                }
                if let Some(op) = primitive {
                    let before = threads.first().map(|thread| thread.fiber.clone());
                    threads = self.thread_primitive(op, threads)?;
                    if threads.is_empty()
                        && let Some(fiber) = before
                    {
                        return self.run_requires_without_threads(fiber);
                    }
                }
                let snapshot = |threads: &[Thread]| -> Vec<Vec<Vec<Val>>> {
                    threads
                        .iter()
                        .map(|t| t.fiber.acts.iter().map(|a| a.slots.clone()).collect())
                        .collect()
                };
                // The saved contexts stay until the next barrier (a
                // require is none), so set_oldrank may follow a require.
                let only_require = order
                    .iter()
                    .all(|&id| matches!(prog.ops[id as usize].kind, K::Require));
                new_superstep = !only_require;
                if !only_require {
                    self.rr_snapshot = None;
                    self.rr_claimed.clear();
                }
                if rank_reassigned {
                    self.rr_snapshot = Some(snapshot(&threads));
                    self.rr_claimed = vec![false; threads.len()];
                }
                if prog.uses_thread_get && !only_require {
                    self.get_snapshot = Some(
                        threads
                            .iter()
                            .map(|t| FiberSnapshot::of(&t.fiber))
                            .collect(),
                    );
                }
            }
        })();
        self.cur = None;
        self.mem.race_thread = None;
        self.mem.clear_shadow();
        self.get_snapshot = None;
        self.rr_snapshot = None;
        result
    }

    /// Operand `index` of `op` in each thread (at its waiting fiber).
    fn operands_of(
        &self,
        op: &Op,
        threads: &mut [Thread],
        paths: &[Vec<usize>],
        index: usize,
    ) -> R<Vec<Val>> {
        let mut values = Vec::with_capacity(threads.len());
        for (thread, path) in threads.iter_mut().zip(paths) {
            let act = fiber_at(&mut thread.fiber, path)
                .and_then(|f| f.acts.last())
                .ok_or_else(|| self.fail(op, "internal error: lost thread context"))?;
            let value = act.slots[op.operands[index] as usize].clone();
            if !value.is_set() {
                return Err(self.fail(
                    op,
                    format!("'{}' uses a value that was never defined", op.name),
                ));
            }
            values.push(value);
        }
        Ok(values)
    }

    fn write_results(
        &self,
        op: &Op,
        threads: &mut [Thread],
        paths: &[Vec<usize>],
        results: Vec<Vec<Val>>,
    ) {
        for ((thread, path), values) in threads.iter_mut().zip(paths).zip(results) {
            if let Some(act) = fiber_at(&mut thread.fiber, path).and_then(|f| f.acts.last_mut()) {
                for (&slot, value) in op.results.iter().zip(values) {
                    act.slots[slot as usize] = value;
                }
            }
        }
    }

    fn int_of(&self, op: &Op, value: &Val) -> R<i64> {
        match value {
            Val::Int(v) => Ok(*v),
            Val::Poison => Err(self.fail(op, format!("'{}' on a poison value", op.name))),
            other => Err(self.fail(
                op,
                format!("'{}' expects an integer, got {other:?}", op.name),
            )),
        }
    }

    fn list_store(&mut self, op: &Op, list: &MemDesc, index: i64, value: Val) -> R<()> {
        let element = self
            .mem
            .element(list, &[index])
            .map_err(|message| self.fail(op, message))?;
        self.mem.set_raw(list.alloc, element, value);
        Ok(())
    }

    /// Runs a `pgpu.require` body on the host with the values of `thread`
    /// (the first thread's, which must be uniform) and `thread.size` `n`.
    fn run_require(&mut self, op: &Op, thread: &Activation, n: usize) -> R<Vec<Val>> {
        let mut fiber = self.body_fiber(thread, None, op.regions[0], &[]);
        // The body is host code (it may even spawn): save the SPMD state
        // around it.
        let saved = (
            self.in_spawn,
            std::mem::take(&mut self.fiber_path),
            std::mem::take(&mut self.fiber_depths),
            self.get_snapshot.take(),
            self.rr_snapshot.take(),
            std::mem::take(&mut self.rr_claimed),
            std::mem::take(&mut self.puts),
            self.require_size.replace(n),
        );
        self.in_spawn = false;
        self.mem.race_thread = self
            .options
            .race_detection
            .then_some(crate::memory::HOST_THREAD);
        let result = self.run_fiber(&mut fiber);
        self.mem.race_thread = None;
        (
            self.in_spawn,
            self.fiber_path,
            self.fiber_depths,
            self.get_snapshot,
            self.rr_snapshot,
            self.rr_claimed,
            self.puts,
            self.require_size,
        ) = saved;
        if let Some(act) = fiber.acts.first_mut() {
            self.spawn_dtemps.append(&mut act.dtemps);
        }
        match result? {
            Stop::Done(values) => Ok(values),
            Stop::Sync => Err(self.fail(op, "synchronization inside pgpu.require")),
        }
    }

    /// The rest of a spawn whose thread set became empty (every thread
    /// killed, or forked into none; `fiber` is a thread's just before): no
    /// thread code runs, but the `require` blocks still run on the host, in
    /// order, with `thread.size` 0, as in compiled code, where they run
    /// before the superstep is launched (seeds/bsgp.txt, Section 5;
    /// docs/models.md). Values that only threads compute are undefined
    /// there.
    pub(crate) fn run_requires_without_threads(&mut self, mut fiber: Fiber) -> R<()> {
        while let Some(mut act) = fiber.acts.pop() {
            while let Some(ctl) = act.ctl.pop() {
                let block = &self.prog.blocks[ctl.block as usize];
                for &op_id in block.ops.get(ctl.pc as usize..).unwrap_or_default() {
                    self.run_requires_in(op_id, &mut act)?;
                }
            }
        }
        Ok(())
    }

    /// Runs `op` if it is a `require`, or the requires of a superstep.
    fn run_requires_in(&mut self, op_id: OpId, act: &mut Activation) -> R<()> {
        let prog = self.prog;
        let op = &prog.ops[op_id as usize];
        match op.kind {
            K::Require => {
                let values = self.run_require(op, act, 0)?;
                Self::set_results(act, op, values);
            }
            K::Superstep { .. } => {
                for &region in &op.regions {
                    for &block in &prog.regions[region as usize].blocks {
                        for &inner in &prog.blocks[block as usize].ops {
                            self.run_requires_in(inner, act)?;
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Resolves a barrier, collective or require for all threads.
    fn resolve(&mut self, op: &Op, threads: &mut [Thread], paths: &[Vec<usize>]) -> R<()> {
        let n = threads.len();
        let width = op.in_ty.int_width().unwrap_or(64);
        match &op.kind {
            K::Barrier { .. } | K::Superstep { .. } | K::GpuBarrier => {}
            K::Require => {
                let first = fiber_at(&mut threads[0].fiber, &paths[0])
                    .and_then(|f| f.acts.last())
                    .ok_or_else(|| self.fail(op, "internal error: lost thread context"))?
                    .clone();
                let values = self.run_require(op, &first, n)?;
                self.write_results(op, threads, paths, vec![values; n]);
            }
            K::PReduce(kind) => {
                let values = self.operands_of(op, threads, paths, 0)?;
                let mut acc = identity(*kind, op.in_ty);
                for value in &values {
                    acc = combine(*kind, &acc, value, width)
                        .ok_or_else(|| self.fail(op, "pgpu.reduce of mismatched values"))?;
                }
                self.write_results(op, threads, paths, vec![vec![acc]; n]);
            }
            K::Scan { kind, inclusive } => {
                let values = self.operands_of(op, threads, paths, 0)?;
                let mut acc = identity(*kind, op.in_ty);
                let mut scanned = Vec::with_capacity(n);
                for value in &values {
                    let next = combine(*kind, &acc, value, width)
                        .ok_or_else(|| self.fail(op, "pgpu.scan of mismatched values"))?;
                    scanned.push(if *inclusive { next.clone() } else { acc });
                    acc = next;
                }
                let results = scanned.into_iter().map(|s| vec![s, acc.clone()]).collect();
                self.write_results(op, threads, paths, results);
            }
            K::Compact | K::SplitList => {
                let sources = self.operands_of(op, threads, paths, 0)?;
                let flags = self.operands_of(op, threads, paths, 1)?;
                let lists = self.operands_of(op, threads, paths, 2)?;
                let bases = self.operands_of(op, threads, paths, 3)?;
                let list = match &lists[0] {
                    Val::Mem(desc) => Rc::clone(desc),
                    _ => return Err(self.fail(op, "dereference of a null or poison list")),
                };
                let base = self.int_of(op, &bases[0])?;
                let flags: Vec<bool> = flags
                    .iter()
                    .map(|f| self.int_of(op, f).map(|v| v != 0))
                    .collect::<R<_>>()?;
                let mut position = base;
                let order: Vec<usize> = if matches!(op.kind, K::Compact) {
                    (0..n).filter(|&t| flags[t]).collect()
                } else {
                    (0..n)
                        .filter(|&t| !flags[t])
                        .chain((0..n).filter(|&t| flags[t]))
                        .collect()
                };
                for t in order {
                    self.list_store(op, &list, position, sources[t].clone())?;
                    position += 1;
                }
                self.write_results(op, threads, paths, vec![vec![Val::Int(position)]; n]);
            }
            K::SortIdx => {
                let keys = self.operands_of(op, threads, paths, 0)?;
                if keys.iter().any(|k| matches!(k, Val::Poison)) {
                    return Err(self.fail(op, "pgpu.sort_idx of a poison key"));
                }
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&a, &b| compare_keys(&keys[a], &keys[b]));
                let results = order
                    .into_iter()
                    .map(|r| vec![Val::Int(r as i64)])
                    .collect();
                self.write_results(op, threads, paths, results);
            }
            _ => return Err(self.fail(op, format!("'{}' is not a synchronization point", op.name))),
        }
        Ok(())
    }

    /// fork / kill / sortby / split: the new thread list.
    fn thread_primitive(&mut self, op: &Op, mut threads: Vec<Thread>) -> R<Vec<Thread>> {
        let paths = vec![Vec::new(); threads.len()];
        let values = self.operands_of(op, &mut threads, &paths, 0)?;
        let mut next = Vec::new();
        match op.kind {
            K::ThreadFork => {
                let width = op.out_ty.int_width().unwrap_or(64);
                let mut total = 0usize;
                for value in &values {
                    total = total.saturating_add(self.int_of(op, value)?.max(0) as usize);
                }
                if total > self.options.max_threads {
                    return Err(self.fail(
                        op,
                        format!(
                            "pgpu.thread.fork creates {total} threads, more than the limit of {}",
                            self.options.max_threads
                        ),
                    ));
                }
                for (rank, (thread, value)) in threads.into_iter().zip(&values).enumerate() {
                    let count = self.int_of(op, value)?;
                    for child in 0..count.max(0) {
                        let mut clone = thread.clone();
                        clone.oldrank = Some(rank);
                        if let Some(act) = clone.fiber.acts.last_mut() {
                            act.slots[op.results[0] as usize] = Val::Int(sext(child, width));
                        }
                        next.push(clone);
                    }
                }
            }
            K::ThreadKill => {
                for (rank, (mut thread, value)) in threads.into_iter().zip(&values).enumerate() {
                    if self.int_of(op, value)? == 0 {
                        thread.oldrank = Some(rank);
                        next.push(thread);
                    }
                }
            }
            K::ThreadSortBy | K::ThreadSplit => {
                if values.iter().any(|k| matches!(k, Val::Poison)) {
                    return Err(self.fail(op, format!("'{}' of a poison value", op.name)));
                }
                let mut order: Vec<usize> = (0..threads.len()).collect();
                if matches!(op.kind, K::ThreadSortBy) {
                    order.sort_by(|&a, &b| compare_keys(&values[a], &values[b]));
                } else {
                    order.sort_by_key(|&t| matches!(values[t], Val::Int(v) if v != 0));
                }
                let mut slots: Vec<Option<Thread>> = threads.into_iter().map(Some).collect();
                for old in order {
                    if let Some(mut thread) = slots[old].take() {
                        thread.oldrank = Some(old);
                        next.push(thread);
                    }
                }
            }
            _ => {}
        }
        Ok(next)
    }

    fn launch_sizes(
        &self,
        op: &Op,
        act: &Activation,
        segments: &[i32],
    ) -> R<([i64; 3], [i64; 3], usize)> {
        // Segments: async deps, grid x y z, block x y z, cluster x y z, ...
        let start = segments.first().copied().unwrap_or(0).max(0) as usize;
        let mut sizes = [0i64; 6];
        for (index, size) in sizes.iter_mut().enumerate() {
            let slot = op.operands[start + index] as usize;
            *size = match act.slots[slot] {
                Val::Int(v) if v > 0 => v,
                ref other => {
                    return Err(self.fail(op, format!("gpu launch with an invalid size {other:?}")));
                }
            };
        }
        let before_kernel: usize = segments
            .iter()
            .take(segments.len().saturating_sub(2))
            .map(|&s| s.max(0) as usize)
            .sum();
        Ok((
            [sizes[0], sizes[1], sizes[2]],
            [sizes[3], sizes[4], sizes[5]],
            before_kernel,
        ))
    }

    /// A fresh allocation of a statically shaped memref type.
    fn alloc_static(&mut self, ty: Ty) -> R<Val> {
        let shape = self
            .prog
            .memty(ty)
            .map(|t| t.shape.clone())
            .ok_or_else(|| {
                InterpError::new("gpu memory attribution of a non-memref type".into(), None)
            })?;
        let sizes: Vec<i64> = shape
            .iter()
            .map(|d| {
                d.ok_or_else(|| {
                    InterpError::new("gpu memory attribution of a dynamic shape".into(), None)
                })
            })
            .collect::<R<_>>()?;
        let count = sizes
            .iter()
            .fold(1i64, |acc, &s| acc.saturating_mul(s))
            .max(0) as usize;
        let alloc = self
            .mem
            .allocate(count, crate::memory::AllocKind::Workgroup, None)
            .map_err(|m| InterpError::new(m, None))?;
        let strides = contiguous_strides(&sizes);
        Ok(Val::Mem(Rc::new(MemDesc {
            alloc,
            offset: 0,
            sizes,
            strides,
        })))
    }

    /// Runs a grid block by block; each block's threads run
    /// bulk-synchronously (gpu.barrier is their barrier). Workgroup memory
    /// is allocated per block, private memory per thread; both are passed
    /// to `make` after the ids.
    fn run_grid(
        &mut self,
        grid: [i64; 3],
        block: [i64; 3],
        attributions: &[Ty],
        workgroup: usize,
        mut make: impl FnMut(&mut Self, [i64; 12], Vec<Val>) -> R<Fiber>,
    ) -> R<()> {
        let per_block = block[0].saturating_mul(block[1]).saturating_mul(block[2]) as usize;
        if per_block > self.options.max_threads {
            return Err(InterpError::new(
                format!("gpu block of {per_block} threads is too large"),
                None,
            ));
        }
        let workgroup = workgroup.min(attributions.len());
        for bz in 0..grid[2] {
            for by in 0..grid[1] {
                for bx in 0..grid[0] {
                    let mut owned = Vec::new();
                    let mut shared = Vec::new();
                    for &ty in &attributions[..workgroup] {
                        let value = self.alloc_static(ty)?;
                        if let Val::Mem(desc) = &value {
                            owned.push(desc.alloc);
                        }
                        shared.push(value);
                    }
                    let mut threads = Vec::with_capacity(per_block);
                    for tz in 0..block[2] {
                        for ty in 0..block[1] {
                            for tx in 0..block[0] {
                                let ids = [
                                    tx, ty, tz, bx, by, bz, block[0], block[1], block[2], grid[0],
                                    grid[1], grid[2],
                                ];
                                let mut extra = shared.clone();
                                for &ty in &attributions[workgroup..] {
                                    let value = self.alloc_static(ty)?;
                                    if let Val::Mem(desc) = &value {
                                        owned.push(desc.alloc);
                                    }
                                    extra.push(value);
                                }
                                let fiber = make(self, ids, extra)?;
                                threads.push(Thread {
                                    fiber,
                                    gpu: Some(ids),
                                    ..Thread::default()
                                });
                            }
                        }
                    }
                    self.run_bsp(threads)?;
                    for alloc in owned {
                        let _ = self.mem.free(alloc, "gpu block end");
                    }
                }
            }
        }
        Ok(())
    }

    /// `gpu.launch`: every block runs its threads bulk-synchronously.
    pub fn run_gpu_launch(
        &mut self,
        host: &Activation,
        op: &Op,
        segments: &[i32],
        workgroup: usize,
        attributions: &[Ty],
    ) -> R<()> {
        if self.cur.is_some() {
            return Err(self.fail(op, "gpu.launch inside an SPMD region"));
        }
        let (grid, block, _) = self.launch_sizes(op, host, segments)?;
        let region = op.regions[0];
        self.in_spawn = true;
        let result = self.run_grid(grid, block, attributions, workgroup, |this, ids, extra| {
            let mut args: Vec<Val> = [3, 4, 5, 0, 1, 2, 9, 10, 11, 6, 7, 8]
                .iter()
                .map(|&i| Val::Int(ids[i]))
                .collect();
            args.extend(extra);
            Ok(this.body_fiber(host, op.frame.as_deref(), region, &args))
        });
        self.in_spawn = false;
        result.map_err(|e| {
            if e.location.is_none() {
                self.fail(op, e.message)
            } else {
                e
            }
        })
    }

    /// `gpu.launch_func` of a `gpu.func` kernel.
    pub fn run_gpu_launch_func(
        &mut self,
        host: &Activation,
        op: &Op,
        func: FuncId,
        segments: &[i32],
    ) -> R<()> {
        if self.cur.is_some() {
            return Err(self.fail(op, "gpu.launch_func inside an SPMD region"));
        }
        let (grid, block, first) = self.launch_sizes(op, host, segments)?;
        let count = segments
            .get(segments.len().saturating_sub(2))
            .copied()
            .unwrap_or(0)
            .max(0) as usize;
        let mut args = Vec::new();
        for index in first..first + count {
            let slot = *op
                .operands
                .get(index)
                .ok_or_else(|| self.fail(op, "gpu.launch_func: malformed operands"))?;
            args.push(host.slots[slot as usize].clone());
        }
        self.in_spawn = true;
        let kernel = &self.prog.funcs[func as usize];
        let (attributions, workgroup) = (kernel.attributions.clone(), kernel.workgroup);
        let result = self.run_grid(grid, block, &attributions, workgroup, |this, _, extra| {
            let mut all = args.clone();
            all.extend(extra);
            this.function_fiber(func, all)
        });
        self.in_spawn = false;
        result
    }
}
