//! Fork's synchronous groups: `pgpu.spawn synchronous` and the group ops.
//!
//! A synchronous group executes in lock-step with PRAM semantics
//! (seeds/fork-to-cuda.txt): every member executes one operation per step,
//! in rank order; stores of a step are buffered and committed together
//! after it, so every read of a step sees the memory before the step and,
//! of concurrent writes to one element, the lowest rank's wins (Priority
//! CRCW). Multiprefix operations are immediate, so they combine in rank
//! order within a step. Output is printed per step in rank order.
//!
//! When all members wait at a group op, the group resolves it:
//! `pgpu.group.split` partitions the members by the condition (id
//! inherited) and `pgpu.group.fork` by the `id` operand; either way the
//! group ranks (Fork's `$$`) are renumbered in the parent's order, so
//! every group's members are in the spawn's order. Each subgroup then runs its
//! region in lock-step on its own, one subgroup after the other, until all
//! its members reach `pgpu.group.merge`, where they form the parent group
//! again. `pgpu.group.alloc` makes one allocation that every member gets.
//! `pgpu.seq` runs its region in the member of group rank 0 alone;
//! `pgpu.farm` runs it in every member asynchronously (with immediate
//! writes; explicit barriers synchronize the members).

use crate::exec::*;
use crate::ir::*;
use crate::memory::AllocKind;
use crate::spmd::Thread;
use crate::value::*;

/// (group id, group rank, group size).
pub type Group = (i64, i64, i64);

impl Interp<'_> {
    /// Runs a synchronous spawn of `count` processors.
    pub fn run_sync_spawn(&mut self, host: &Activation, op: &Op, count: usize) -> R<Vec<u32>> {
        if self.cur.is_some() || self.in_spawn {
            return Err(self.fail(op, "pgpu.spawn inside an SPMD region"));
        }
        if count > self.options.max_threads {
            return Err(self.fail(
                op,
                format!("pgpu.spawn of {count} threads exceeds the limit"),
            ));
        }
        let template = self.spawn_fiber(host, op);
        let mut threads: Vec<Thread> = (0..count)
            .map(|rank| Thread {
                fiber: template.clone(),
                groups: vec![(0, rank as i64, count as i64)],
                ..Thread::default()
            })
            .collect();
        self.in_spawn = true;
        self.spawn_dtemps.clear();
        self.step_mode = true;
        self.mem.pending = Some(Vec::new());
        let members: Vec<usize> = (0..count).collect();
        let result = self.run_group(&mut threads, &members).and_then(|()| {
            match threads
                .iter()
                .find(|t| !t.done)
                .and_then(|t| t.fiber.waiting)
            {
                Some(waiting) => {
                    let op = &self.prog.ops[waiting as usize];
                    Err(self.fail(op, format!("'{}' outside a group region", op.name)))
                }
                None => Ok(()),
            }
        });
        self.mem.commit();
        self.mem.pending = None;
        self.step_mode = false;
        self.in_spawn = false;
        self.cur = None;
        result?;
        Ok(std::mem::take(&mut self.spawn_dtemps))
    }

    fn enter_member(&mut self, thread: &mut Thread, rank: usize, size: usize) -> R<Stop> {
        self.cur = Some(ThreadCtx {
            rank,
            size,
            oldrank: None,
            out: std::mem::take(&mut thread.out),
            gpu: None,
            group: thread.groups.last().copied(),
        });
        let result = self.run_fiber(&mut thread.fiber);
        if let Some(ctx) = self.cur.take() {
            thread.out = ctx.out;
        }
        result
    }

    fn flush(&mut self, threads: &mut [Thread], members: &[usize]) {
        for &m in members {
            let out = std::mem::take(&mut threads[m].out);
            self.emit(&out);
        }
    }

    /// Moves a waiting member past its op (the group resolved it).
    fn advance(thread: &mut Thread) {
        thread.fiber.waiting = None;
        thread.fiber.passed = false;
        if let Some(ctl) = thread.fiber.acts.last_mut().and_then(|a| a.ctl.last_mut()) {
            ctl.pc += 1;
        }
    }

    fn member_int(&self, op: &Op, thread: &Thread, index: usize) -> R<i64> {
        let act = thread
            .fiber
            .acts
            .last()
            .ok_or_else(|| self.fail(op, "internal error: lost thread context"))?;
        match &act.slots[op.operands[index] as usize] {
            Val::Int(v) => Ok(*v),
            _ => Err(self.fail(op, format!("'{}' of a poison or undefined value", op.name))),
        }
    }

    /// Runs `members` (in group rank order) in lock-step until they all
    /// end or wait at a `pgpu.group.merge`.
    fn run_group(&mut self, threads: &mut [Thread], members: &[usize]) -> R<()> {
        let prog = self.prog;
        let size = threads.len();
        loop {
            let mut stepped = false;
            for &m in members {
                let thread = &mut threads[m];
                if thread.done || thread.fiber.waiting.is_some() {
                    continue;
                }
                stepped = true;
                let result = self.enter_member(thread, m, size);
                match result {
                    Ok(Stop::Done(_)) => thread.done = true,
                    Ok(Stop::Sync) => {}
                    Err(error) => {
                        self.flush(threads, members);
                        return Err(error);
                    }
                }
            }
            self.mem.commit();
            self.flush(threads, members);
            if stepped {
                continue;
            }
            let done = members.iter().filter(|&&m| threads[m].done).count();
            if done == members.len() {
                return Ok(());
            }
            let waiting: Vec<OpId> = members
                .iter()
                .filter_map(|&m| threads[m].fiber.waiting)
                .collect();
            let first = &prog.ops[waiting[0] as usize];
            if done > 0 || waiting.iter().any(|&w| w != waiting[0]) {
                return Err(self.fail(
                    first,
                    format!("'{}' is not reached by every member of the group (divergent synchronization)", first.name),
                ));
            }
            let op_id = waiting[0];
            match first.kind {
                K::GroupMerge => return Ok(()),
                K::Barrier { .. } => {
                    for &m in members {
                        threads[m].fiber.waiting = None;
                        threads[m].fiber.passed = true;
                    }
                }
                K::GroupSplit => {
                    let mut sides = (Vec::new(), Vec::new());
                    for &m in members {
                        if self.member_int(first, &threads[m], 0)? != 0 {
                            sides.0.push(m);
                        } else {
                            sides.1.push(m);
                        }
                    }
                    let parent_id = threads[members[0]].groups.last().map_or(0, |g| g.0);
                    let subgroups = [(0, sides.0), (1, sides.1)]
                        .into_iter()
                        .map(|(region, list)| {
                            let size = list.len() as i64;
                            let list = list
                                .into_iter()
                                .enumerate()
                                .map(|(rank, m)| (m, (parent_id, rank as i64, size)))
                                .collect();
                            (first.regions.get(region).copied(), list)
                        })
                        .collect();
                    self.run_subgroups(threads, op_id, subgroups)?;
                }
                K::GroupFork => {
                    let count = self.member_int(first, &threads[members[0]], 0)?;
                    let mut lists: Vec<Vec<usize>> =
                        vec![Vec::new(); count.clamp(0, 1 << 20) as usize];
                    let mut outside = Vec::new();
                    for &m in members {
                        let id = self.member_int(first, &threads[m], 1)?;
                        match usize::try_from(id).ok().and_then(|i| lists.get_mut(i)) {
                            Some(list) => list.push(m),
                            None => outside.push(m),
                        }
                    }
                    // Each subgroup keeps the parent's order: its group
                    // ranks are renumbered 0 .. size-1 in it.
                    let mut subgroups = Vec::new();
                    for (id, list) in lists.into_iter().enumerate() {
                        let size = list.len() as i64;
                        subgroups.push((
                            first.regions.first().copied(),
                            list.into_iter()
                                .enumerate()
                                .map(|(rank, m)| (m, (id as i64, rank as i64, size)))
                                .collect(),
                        ));
                    }
                    subgroups.push((None, outside.into_iter().map(|m| (m, (0, 0, 0))).collect()));
                    self.run_subgroups(threads, op_id, subgroups)?;
                }
                K::GroupAlloc => {
                    // One allocation for the group, in every member's slot.
                    let leader = &threads[members[0]];
                    let act =
                        leader.fiber.acts.last().ok_or_else(|| {
                            self.fail(first, "internal error: lost thread context")
                        })?;
                    let desc = self.allocate(first, act, 0, AllocKind::Heap)?;
                    for &m in members {
                        let thread = &mut threads[m];
                        if let Some(act) = thread.fiber.acts.last_mut() {
                            act.slots[first.results[0] as usize] = Val::Mem(desc.clone());
                        }
                        Self::advance(thread);
                    }
                }
                K::Seq => {
                    for &m in members {
                        Self::advance(&mut threads[m]);
                    }
                    let leader = members[0];
                    let region = first.regions[0];
                    let thread = &mut threads[leader];
                    self.cur = Some(ThreadCtx {
                        rank: leader,
                        size,
                        out: std::mem::take(&mut thread.out),
                        group: thread.groups.last().copied(),
                        ..ThreadCtx::default()
                    });
                    let pending = self.mem.pending.take();
                    self.step_mode = false;
                    let result = self.run_region(&mut thread.fiber, region, &[]);
                    self.step_mode = true;
                    self.mem.pending = pending;
                    if let Some(ctx) = self.cur.take() {
                        thread.out = ctx.out;
                    }
                    self.flush(threads, members);
                    result?;
                }
                K::Farm => self.run_farm(threads, members, first)?,
                _ => {
                    return Err(self.fail(
                        first,
                        format!(
                            "'{}' is not supported in synchronous (Fork) code",
                            first.name
                        ),
                    ));
                }
            }
        }
    }

    /// Runs the subgroups of a split or fork one after the other; each
    /// member enters `region` (or skips the op when `None`), and at the
    /// merge the parent group is restored.
    #[allow(clippy::type_complexity)]
    fn run_subgroups(
        &mut self,
        threads: &mut [Thread],
        op_id: OpId,
        subgroups: Vec<(Option<RegionId>, Vec<(usize, Group)>)>,
    ) -> R<()> {
        let prog = self.prog;
        let op = &prog.ops[op_id as usize];
        for (region, list) in subgroups {
            if list.is_empty() {
                continue;
            }
            let region = region.filter(|&r| !prog.regions[r as usize].blocks.is_empty());
            for &(m, group) in &list {
                let thread = &mut threads[m];
                match region {
                    Some(region) => {
                        Self::advance(thread);
                        if let Some(act) = thread.fiber.acts.last_mut() {
                            enter_region(act, prog, region, CtlKind::Results(op_id));
                            thread.groups.push(group);
                        }
                    }
                    None => {
                        // Members with nothing to run pass the op in the
                        // next step, as the others pass the merge: the
                        // group stays in lock step.
                        thread.fiber.waiting = None;
                        thread.fiber.passed = true;
                        if let Some(act) = thread.fiber.acts.last_mut() {
                            for &slot in op.results.iter() {
                                act.slots[slot as usize] = Val::Poison;
                            }
                        }
                    }
                }
            }
            if region.is_none() {
                continue;
            }
            let members: Vec<usize> = list.iter().map(|&(m, _)| m).collect();
            self.run_group(threads, &members)?;
            for &m in &members {
                let thread = &mut threads[m];
                let at_merge = thread
                    .fiber
                    .waiting
                    .is_some_and(|w| matches!(prog.ops[w as usize].kind, K::GroupMerge));
                if !at_merge {
                    return Err(self.fail(
                        op,
                        format!("'{}': a subgroup member did not reach the merge", op.name),
                    ));
                }
                thread.groups.pop();
                thread.fiber.waiting = None;
                thread.fiber.passed = true;
            }
        }
        Ok(())
    }

    /// `pgpu.farm`: every member runs the region asynchronously.
    fn run_farm(&mut self, threads: &mut [Thread], members: &[usize], op: &Op) -> R<()> {
        let prog = self.prog;
        let size = threads.len();
        for &m in members {
            let thread = &mut threads[m];
            Self::advance(thread);
            if let Some(act) = thread.fiber.acts.last_mut() {
                enter_region(act, prog, op.regions[0], CtlKind::Base);
            }
        }
        let pending = self.mem.pending.take();
        self.step_mode = false;
        let mut finished = vec![false; members.len()];
        let result = (|| -> R<()> {
            loop {
                for (index, &m) in members.iter().enumerate() {
                    if finished[index] {
                        continue;
                    }
                    let thread = &mut threads[m];
                    match self.enter_member(thread, m, size)? {
                        Stop::Done(values) => {
                            finished[index] = true;
                            if let Some(act) = thread.fiber.acts.last_mut() {
                                for (&slot, value) in op.results.iter().zip(values) {
                                    act.slots[slot as usize] = value;
                                }
                            }
                        }
                        Stop::Sync => {}
                    }
                }
                self.flush(threads, members);
                if finished.iter().all(|&f| f) {
                    return Ok(());
                }
                for (index, &m) in members.iter().enumerate() {
                    let thread = &mut threads[m];
                    if finished[index] {
                        continue;
                    }
                    match thread.fiber.waiting.map(|w| &prog.ops[w as usize]) {
                        Some(waiting) if matches!(waiting.kind, K::Barrier { .. }) => {
                            thread.fiber.waiting = None;
                            thread.fiber.passed = true;
                        }
                        Some(waiting) => {
                            return Err(self.fail(
                                waiting,
                                format!("'{}' is not supported in pgpu.farm", waiting.name),
                            ));
                        }
                        None => {}
                    }
                }
            }
        })();
        self.step_mode = true;
        self.mem.pending = pending;
        result
    }
}

/// Pushes `region`'s entry block onto `act`'s control stack.
fn enter_region(act: &mut Activation, prog: &Program, region: RegionId, kind: CtlKind) {
    if let Some(&entry) = prog.regions[region as usize].blocks.first() {
        act.ctl.push(Ctl {
            block: entry,
            pc: 0,
            kind,
        });
    }
}
