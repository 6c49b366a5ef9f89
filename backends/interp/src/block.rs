//! The scheduler of `pgpu.spawn block`: one thread block whose threads
//! synchronize in ranges with `pgpu.range_barrier`.
//!
//! The `n` threads (at most [`BLOCK_CAPACITY`]) are [`Fiber`]s with private
//! slots; memory is shared; `pgpu.rank` is the thread's index and
//! `pgpu.size` is `n`. Unlike the bulk-synchronous scheduler of ordinary
//! spawns (module `spmd`), threads do not wait for each other as a whole:
//! a range barrier `(first, count, slot)` holds only the threads
//! `first .. first+count-1`, which may be reached in a `pgpu.block_group`
//! function, under control flow and in recursion. One *step*:
//!
//! 1. runs every runnable thread, in rank order, until it ends or stops at
//!    a range barrier (the barrier's range must contain the thread, lie in
//!    the block, and name a slot of the block's `2n + 1`); any other
//!    synchronization (`pgpu.barrier`, a superstep, a collective, a thread
//!    primitive, `pgpu.require`, a Fork group op, `gpu.barrier`) synchronizes
//!    a whole spawn and is an error here;
//! 2. flushes the threads' output (printf) in rank order;
//! 3. checks the slots of the waiting threads: the members of one range
//!    (same first and count) use one slot, and two different ranges waiting
//!    at the same time use different slots (the compiler's slot numbering
//!    must keep ranges that may wait together apart);
//! 4. releases every *complete* range, one whose threads all wait at a range
//!    barrier of that same first and count (not necessarily the same op).
//!    When no thread can run and no range is complete, the threads are
//!    deadlocked: the error names a waiting range and what a missing member
//!    does (finished, or waiting at another range).
//!
//! Race detection works with happens-before across range barriers
//! (`memory::Clocks`): a released range joins its members' vector clocks,
//! so accesses of different ranges are races unless a chain of barriers
//! orders them, and nothing is cleared at a barrier.

use crate::exec::*;
use crate::ir::*;
use crate::memory::Clocks;
use crate::{InterpError, Note};
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// Where a range barrier holds a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wait {
    op: OpId,
    first: usize,
    count: usize,
    slot: usize,
}

impl Wait {
    fn range(&self) -> (usize, usize) {
        (self.first, self.count)
    }

    fn contains(&self, rank: usize) -> bool {
        rank >= self.first && rank - self.first < self.count
    }
}

/// `threads a..b`, the ranks of a range.
fn describe(first: usize, count: usize) -> String {
    format!("threads {first}..{}", first + count - 1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Runnable,
    Waiting(Wait),
    Done,
}

/// One thread of a block spawn.
#[derive(Debug)]
struct BlockThread {
    fiber: Fiber,
    state: State,
    out: Vec<u8>,
}

impl Interp<'_> {
    /// Runs a `pgpu.spawn block` of `count` threads; returns the temporary
    /// lists allocated inside it (they belong to the spawning function).
    pub fn run_block_spawn(&mut self, host: &Activation, op: &Op, count: usize) -> R<Vec<u32>> {
        if self.cur.is_some() || self.in_spawn {
            return Err(self.fail(op, "pgpu.spawn inside an SPMD region"));
        }
        if count > BLOCK_CAPACITY {
            return Err(self.fail(
                op,
                format!(
                    "pgpu.spawn block of {count} threads exceeds the block capacity of {BLOCK_CAPACITY} (pgpu.block_capacity): its threads must form one thread block"
                ),
            ));
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
        let template = self.spawn_fiber(host, op);
        let mut threads: Vec<BlockThread> = (0..count)
            .map(|_| BlockThread {
                fiber: template.clone(),
                state: State::Runnable,
                out: Vec::new(),
            })
            .collect();
        self.in_spawn = true;
        self.in_block = true;
        self.spawn_dtemps.clear();
        let race = self.options.race_detection && count > 1;
        self.mem.clocks = race.then(|| Clocks::new(count));
        let result = self.run_block(&mut threads, race);
        self.cur = None;
        self.mem.race_thread = None;
        self.mem.clocks = None;
        self.in_block = false;
        self.in_spawn = false;
        result?;
        Ok(std::mem::take(&mut self.spawn_dtemps))
    }

    /// Runs the threads of a block step by step until all have ended.
    fn run_block(&mut self, threads: &mut [BlockThread], race: bool) -> R<()> {
        let size = threads.len();
        loop {
            let mut failure = None;
            for (rank, thread) in threads.iter_mut().enumerate() {
                if thread.state != State::Runnable {
                    continue;
                }
                self.cur = Some(ThreadCtx {
                    rank,
                    size,
                    oldrank: None,
                    out: std::mem::take(&mut thread.out),
                    gpu: None,
                    group: None,
                });
                self.mem.race_thread = race.then_some(rank as u32);
                let result = self
                    .run_fiber(&mut thread.fiber)
                    .and_then(|stop| self.stopped(&thread.fiber, stop, rank, size));
                if let Some(ctx) = self.cur.take() {
                    thread.out = ctx.out;
                }
                match result {
                    Ok(state) => thread.state = state,
                    Err(error) => {
                        failure = Some(error);
                        break;
                    }
                }
            }
            self.mem.race_thread = None;
            for thread in threads.iter_mut() {
                let out = std::mem::take(&mut thread.out);
                self.emit(&out);
            }
            if let Some(error) = failure {
                return Err(error);
            }
            if threads.iter().all(|t| t.state == State::Done) {
                return Ok(());
            }
            self.check_slots(threads)?;
            let complete = complete_ranges(threads);
            if complete.is_empty() {
                return Err(self.deadlock(threads));
            }
            for (first, count) in complete {
                for thread in &mut threads[first..first + count] {
                    thread.fiber.waiting = None;
                    thread.fiber.passed = true;
                    thread.state = State::Runnable;
                }
                if let Some(clocks) = &mut self.mem.clocks {
                    clocks.synchronize(first..first + count);
                }
            }
        }
    }

    /// The state of thread `rank` after its fiber stopped with `stop`: its
    /// range barrier (checked), or the end.
    fn stopped(&self, fiber: &Fiber, stop: Stop, rank: usize, size: usize) -> R<State> {
        if let Stop::Done(_) = stop {
            return Ok(State::Done);
        }
        let prog = self.prog;
        let (Some(op_id), Some(act)) = (fiber.waiting, fiber.acts.last()) else {
            return Err(InterpError::new(
                format!(
                    "internal error: thread {rank} of a block spawn stopped outside a synchronization op"
                ),
                None,
            ));
        };
        let op = &prog.ops[op_id as usize];
        if !matches!(op.kind, K::RangeBarrier) {
            return Err(self.fail(
                op,
                format!(
                    "'{}' synchronizes all threads of a spawn: it cannot be reached in a block spawn, whose threads synchronize in ranges with 'pgpu.range_barrier' (thread {rank})",
                    op.name
                ),
            ));
        }
        let operand = |index: usize, what: &str| -> R<usize> {
            let value = self.int_strict(op, act, index)?;
            usize::try_from(value).map_err(|_| {
                self.fail(
                    op,
                    format!("pgpu.range_barrier with a negative {what} {value} (thread {rank})"),
                )
            })
        };
        let first = operand(0, "first thread")?;
        let count = operand(1, "thread count")?;
        let slot = operand(2, "slot")?;
        if count == 0 {
            return Err(self.fail(
                op,
                format!("pgpu.range_barrier of no threads (count 0), reached by thread {rank}"),
            ));
        }
        if first.checked_add(count).is_none_or(|end| end > size) {
            return Err(self.fail(
                op,
                format!(
                    "pgpu.range_barrier of threads {first}..{} (count {count}), but the block has {size} threads",
                    first.saturating_add(count - 1)
                ),
            ));
        }
        let wait = Wait {
            op: op_id,
            first,
            count,
            slot,
        };
        if !wait.contains(rank) {
            return Err(self.fail(
                op,
                format!(
                    "thread {rank} reaches a range barrier of {}, which does not contain it",
                    describe(first, count)
                ),
            ));
        }
        if slot > 2 * size {
            return Err(self.fail(
                op,
                format!(
                    "pgpu.range_barrier slot {slot} is outside the block's synchronization words 0..{} (2n + 1 for {size} threads)",
                    2 * size
                ),
            ));
        }
        Ok(State::Waiting(wait))
    }

    /// The members of one range use one slot, and ranges waiting at the
    /// same time use different slots.
    fn check_slots(&self, threads: &[BlockThread]) -> R<()> {
        let prog = self.prog;
        // The first waiting thread (lowest rank) of each range and slot.
        let mut ranges: HashMap<(usize, usize), (usize, Wait)> = HashMap::new();
        let mut slots: HashMap<usize, (usize, Wait)> = HashMap::new();
        for (rank, thread) in threads.iter().enumerate() {
            let State::Waiting(wait) = thread.state else {
                continue;
            };
            let op = &prog.ops[wait.op as usize];
            if let Some(&(other_rank, other)) = ranges.get(&wait.range()) {
                if other.slot != wait.slot {
                    let mut error = self.fail(
                        op,
                        format!(
                            "thread {rank} waits at the range barrier of {} with slot {}, but thread {other_rank} waits at it with slot {}: the threads of a range must use one slot",
                            describe(wait.first, wait.count),
                            wait.slot,
                            other.slot
                        ),
                    );
                    error.notes.push(Note {
                        message: format!("thread {other_rank} waits here with slot {}", other.slot),
                        location: prog.loc(prog.ops[other.op as usize].loc),
                    });
                    return Err(error);
                }
                continue;
            }
            ranges.insert(wait.range(), (rank, wait));
            let (other_rank, other) = match slots.entry(wait.slot) {
                Entry::Occupied(entry) => *entry.get(),
                Entry::Vacant(entry) => {
                    entry.insert((rank, wait));
                    continue;
                }
            };
            let mut error = self.fail(
                    op,
                    format!(
                        "slot {} is used by two ranges waiting at the same time: {} (thread {rank} waits here) and {} (thread {other_rank}); ranges that may wait at the same time need different slots",
                        wait.slot,
                        describe(wait.first, wait.count),
                        describe(other.first, other.count)
                    ),
                );
            error.notes.push(Note {
                message: format!(
                    "thread {other_rank} waits here at the range barrier of {} with slot {}",
                    describe(other.first, other.count),
                    other.slot
                ),
                location: prog.loc(prog.ops[other.op as usize].loc),
            });
            return Err(error);
        }
        Ok(())
    }

    /// The error of threads that wait with no complete range: the first
    /// waiting range, how many of its threads wait, and what a missing
    /// member does.
    fn deadlock(&self, threads: &[BlockThread]) -> InterpError {
        let prog = self.prog;
        let Some(wait) = threads.iter().find_map(|t| match t.state {
            State::Waiting(wait) => Some(wait),
            _ => None,
        }) else {
            return InterpError::new(
                "internal error: a block spawn stalled without waiting threads".into(),
                None,
            );
        };
        let members = &threads[wait.first..wait.first + wait.count];
        let present = members
            .iter()
            .filter(|t| matches!(t.state, State::Waiting(w) if w.range() == wait.range()))
            .count();
        let missing = members
            .iter()
            .enumerate()
            .find(|(_, t)| !matches!(t.state, State::Waiting(w) if w.range() == wait.range()));
        let op = &prog.ops[wait.op as usize];
        let mut message = format!(
            "deadlock in a block spawn: no thread can run and no range is complete; {present} of the {} threads of the range barrier of {} (slot {}) wait",
            wait.count,
            describe(wait.first, wait.count),
            wait.slot
        );
        let mut notes = Vec::new();
        if let Some((offset, thread)) = missing {
            let rank = wait.first + offset;
            match thread.state {
                State::Waiting(other) => {
                    message.push_str(&format!(
                        "; thread {rank} waits at the range barrier of {} (slot {})",
                        describe(other.first, other.count),
                        other.slot
                    ));
                    notes.push(Note {
                        message: format!("thread {rank} waits here"),
                        location: prog.loc(prog.ops[other.op as usize].loc),
                    });
                }
                State::Done => {
                    message.push_str(&format!("; thread {rank} has finished"));
                }
                State::Runnable => {}
            }
        }
        let mut error = self.fail(op, message);
        error.notes = notes;
        error
    }
}

/// The ranges whose threads all wait at a range barrier of that range, in
/// the order of their first waiting thread.
fn complete_ranges(threads: &[BlockThread]) -> Vec<(usize, usize)> {
    let mut seen = std::collections::HashSet::new();
    let mut complete = Vec::new();
    for thread in threads {
        let State::Waiting(wait) = thread.state else {
            continue;
        };
        if !seen.insert(wait.range()) {
            continue;
        }
        let all = threads[wait.first..wait.first + wait.count]
            .iter()
            .all(|t| matches!(t.state, State::Waiting(w) if w.range() == wait.range()));
        if all {
            complete.push(wait.range());
        }
    }
    complete
}
