//! `pgpu-split-kernels`: turns every BSGP spawn made of supersteps into host
//! code and one kernel per superstep (seeds/bsgp.txt, Section 4.2 steps 3,
//! 4, 6 and 7; Listing 4).
//!
//! For each superstep, in order, the host code before the spawn gets:
//!
//! 1. the superstep's `pgpu.require` bodies, hoisted ("CPU code inserted
//!    via a require block is placed before the containing kernel's launching
//!    code"), with `pgpu.size` read as the current thread count;
//! 2. the allocation of the temporary buffers first written by it (the
//!    minimum-flow plan of [`crate::buffer_plan`]) and of its collectives'
//!    input lists;
//! 3. the kernel: an `scf.parallel` over the ranks `0 .. size`, from where
//!    upstream passes map it to a GPU grid or to CPU threads. Its body is the
//!    superstep's code with `pgpu.rank`/`pgpu.size`/`pgpu.oldrank` replaced,
//!    loads of the saved values it uses at its start (indexed by the old rank
//!    after a rank reassignment: right after `thread.oldrank = e` for
//!    `barrier(RANK_REASSIGNED)`, or from the permutation a thread primitive
//!    left), `thread.get` as a guarded load of the sender's saved slot,
//!    `thread.put` as a guarded store into the receiver's slot (the default
//!    saving of the put variable removed), stores of the values later
//!    supersteps load (and of values moved to a buffer under the new ranks),
//!    and the first phase of the collectives that end the superstep: each
//!    thread writes its operand to the collective's input list;
//! 4. the global phase of those collectives as host `pgpu.list.*` ops
//!    (reduce, scan, sort_idx, compact, split; `thread.sortby/split/kill`
//!    become a permutation "new rank -> old rank" and `thread.fork` an
//!    expansion, with the new thread count);
//! 5. the deallocation of every buffer after its last reading kernel.
//!
//! A `dtempnew` list a require allocates that nothing after the spawn uses
//! becomes a plain buffer, freed after its last use rather than at the
//! function's `dtempfree`.
//!
//! Uniform values (require results, collective totals and arithmetic on
//! them) are host values passed to the kernels as they are. The host/kernel
//! split is the same for every frontend: the kernels are plain
//! `scf.parallel` loops and the host code plain `memref`, `arith`, `scf`
//! and `pgpu.list` ops.

use crate::{
    buffer_plan::{Placement, Plan},
    build::{Builder, Built},
    form_supersteps::is_boundary_op,
    ir::{Blk, Op, Val},
    lower_synchronous::as_fetch_and_op,
    value_saving::{Supersteps, is_pure, superstep_spawns},
};
use melior::ir::{OperationRef, Type, operation::OperationLike};
use mlir_sys::mlirOperationIsBeforeInBlock;
use pgpu_pass_infra::{Pass, PassFailure, emit_error};
use std::collections::HashMap;

/// What a `thread.get` reads: a saved value's slot, or a uniform value.
#[derive(Clone, Copy)]
enum Sent {
    Slot {
        memref: Val,
        permutation: Option<Val>,
    },
    Uniform(Val),
}

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct SplitKernels;

/// The old rank of a superstep's threads after a rank reassignment.
#[derive(Clone, Copy)]
struct OldRank {
    value: Val,
    /// The op after which loads by it go: `pgpu.set_oldrank` (erased
    /// afterwards), or the load from the permutation.
    anchor: Op,
    /// The permutation "new rank -> old rank" a thread primitive made.
    permutation: Option<Val>,
}

impl Pass for SplitKernels {
    const ARGUMENT: &'static str = "pgpu-split-kernels";
    const SUMMARY: &'static str = "Turn each superstep into an scf.parallel kernel and the spawn into host code with buffers and pgpu.list collectives";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::scf(),
            DialectHandle::arith(),
            DialectHandle::memref(),
        ]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        for supersteps in superstep_spawns(Op::of(module)) {
            let plan = Plan::of(&supersteps)?;
            Splitter::new(&supersteps, &plan)?.run()?;
        }
        Ok(())
    }
}

/// A list the host frees after the kernel of superstep `last`.
struct Temporary {
    memref: Val,
    last: usize,
}

/// The lowering state of one spawn.
struct Splitter<'a, 'c> {
    supersteps: &'a Supersteps,
    plan: &'a Plan,
    /// Inserts host code before the spawn.
    host: Builder<'c>,
    /// The thread count of the superstep being lowered.
    size: Val,
    /// `sizes[k]`: the thread count of superstep `k` (filled as we go).
    sizes: Vec<Val>,
    /// Host values of crossing values (by index into `plan.crossing`).
    host_values: HashMap<usize, Val>,
    /// The memref of each segment (flow buffer or collective output).
    segment_memref: HashMap<usize, Val>,
    /// The memref of each flow buffer, once allocated.
    buffers: Vec<Option<Val>>,
    /// New rank -> old rank, left by a thread primitive for the next step.
    permutation: Option<Val>,
    temporaries: Vec<Temporary>,
    /// Host copies of values computed in the spawn (memoized).
    hoisted: HashMap<Val, Val>,
    /// Segments written by `thread.put`, not by their owner's rank.
    put_segments: Vec<usize>,
    /// The kernel being built: its code counts as the spawn's.
    kernel: Option<Op>,
    /// `dtempnew` lists the spawn's requires allocate.
    temporary_lists: Vec<Op>,
    /// Every kernel made so far with its thread index.
    kernels: Vec<(Op, Val)>,
}

impl<'a, 'c> Splitter<'a, 'c> {
    fn new(supersteps: &'a Supersteps, plan: &'a Plan) -> Built<Self> {
        let spawn = supersteps.spawn;
        let host = Builder::before(spawn);
        let size = spawn.operand(0);
        Ok(Self {
            supersteps,
            plan,
            host,
            size,
            sizes: vec![],
            host_values: HashMap::new(),
            segment_memref: HashMap::new(),
            buffers: vec![None; plan.allocation.buffers.len()],
            permutation: None,
            temporaries: vec![],
            hoisted: HashMap::new(),
            put_segments: vec![],
            kernel: None,
            temporary_lists: vec![],
            kernels: vec![],
        })
    }

    fn run(mut self) -> Built<()> {
        for step in 0..self.supersteps.steps.len() {
            self.lower_step(step)?;
            self.free_after(step)?;
        }
        if cfg!(debug_assertions) {
            self.check_buffer_slots()?;
        }
        for superstep in self.supersteps.steps.iter().rev() {
            superstep.erase();
        }
        for list in std::mem::take(&mut self.temporary_lists) {
            self.free_at_last_use(list)?;
        }
        self.supersteps.spawn.erase();
        Ok(())
    }

    /// The buffer plan's safety, checked on the kernels it produced (debug
    /// builds, so in every pipeline the tests run): within one kernel a
    /// temporary buffer may be both written and read, or written twice,
    /// only when every such access is to the thread's own slot. A thread
    /// that reads or writes another thread's slot (`thread.get`, a load by
    /// old rank, `thread.put`) while a slot of the same buffer is written
    /// may see, or overwrite, a value another thread still needs.
    fn check_buffer_slots(&self) -> Built<()> {
        for &(kernel, rank) in &self.kernels {
            let accesses: Vec<Op> = kernel
                .nested()
                .into_iter()
                .filter(|op| op.is("memref.load") || op.is("memref.store"))
                .collect();
            for buffer in self.buffers.iter().flatten() {
                // (op, writes, own slot) of each access to `buffer`.
                let touching: Vec<(Op, bool, bool)> = accesses
                    .iter()
                    .filter_map(|op| {
                        let writes = op.is("memref.store");
                        let memref = op.operand(usize::from(writes));
                        let index = op.operands().get(usize::from(writes) + 1).copied();
                        (memref == *buffer).then_some((*op, writes, index == Some(rank)))
                    })
                    .collect();
                let written = touching.iter().filter(|(_, writes, _)| *writes).count();
                let shared = written > 0 && touching.len() > 1;
                if let Some((op, _, _)) =
                    touching.iter().find(|(_, _, own)| !own).filter(|_| shared)
                {
                    return Err(emit_error(
                        op.melior_location(),
                        "internal error: the buffer plan shares a temporary buffer within one kernel \
                         whose threads access other threads' slots of it",
                    ));
                }
            }
        }
        Ok(())
    }

    /// A `dtempnew` list of a require that only this spawn's code reads and
    /// writes (no use after it, no escape through a store or a call) is the
    /// compiler's to manage: it becomes a buffer freed after its last use
    /// instead of at `dtempfree`.
    fn free_at_last_use(&self, list: Op) -> Built<()> {
        let spawn = self.supersteps.spawn;
        let host_block = spawn.block_of();
        let mut values = vec![list.result(0)];
        let mut last: Option<Op> = None;
        while let Some(value) = values.pop() {
            for found in value.uses() {
                let mut user = found.owner;
                while user.block_of() != host_block {
                    match user.parent() {
                        Some(parent) => user = parent,
                        None => return Ok(()),
                    }
                }
                // SAFETY: both ops are live and in the host block.
                if user == spawn || unsafe { mlirOperationIsBeforeInBlock(spawn.0, user.0) } {
                    return Ok(());
                }
                match found.owner.name().as_str() {
                    // Views of the list: follow them.
                    "memref.cast"
                    | "memref.reinterpret_cast"
                    | "memref.subview"
                    | "memref.extract_strided_metadata" => values.push(found.owner.result(0)),
                    "memref.load" | "memref.dim" => {}
                    "memref.store" if found.index == 1 => {}
                    name if name.starts_with("pgpu.list.") => {}
                    // Stored, passed or returned: it escapes.
                    _ => return Ok(()),
                }
                // SAFETY: as above.
                if last.is_none_or(|last| unsafe { mlirOperationIsBeforeInBlock(last.0, user.0) }) {
                    last = Some(user);
                }
            }
        }
        let builder = Builder::before(list);
        let element = crate::build::memref_element_type(list.result(0))?;
        let buffer = builder.alloc(element, list.operand(0))?;
        list.result(0).replace_all_uses(buffer);
        list.erase();
        if let Some(after) = last.and_then(Op::next) {
            Builder::before(after).dealloc(buffer)?;
        }
        Ok(())
    }

    /// The index of the crossing value that is result `result` of step `step`.
    fn crossing_index(&self, step: usize, result: usize) -> Option<usize> {
        self.plan
            .crossing
            .iter()
            .position(|value| value.step == step && value.result == result)
    }

    /// The crossing value a superstep result stands for.
    fn crossing_of_result(&self, value: Val) -> Option<usize> {
        let op = value.defining_op()?;
        let step = self.supersteps.steps.iter().position(|step| *step == op)?;
        let result = op.results().iter().position(|result| *result == value)?;
        self.crossing_index(step, result)
    }

    /// `value` (used by host code of superstep `step`) as a host value.
    fn on_host(&mut self, value: Val, step: usize) -> Built<Val> {
        let spawn = self.supersteps.spawn;
        if let Some(hoisted) = self.hoisted.get(&value) {
            return Ok(*hoisted);
        }
        let Some(op) = value.defining_op() else {
            return Ok(value);
        };
        let in_kernel = self.kernel.is_some_and(|kernel| op.is_within(kernel));
        if !op.is_within(spawn) && !in_kernel {
            return Ok(value);
        }
        if let Some(index) = self.crossing_of_result(value) {
            return self.host_values.get(&index).copied().ok_or_else(|| {
                emit_error(
                    op.melior_location(),
                    "host code uses a value that differs between threads",
                )
            });
        }
        if op.is("pgpu.size") {
            return Ok(self.size);
        }
        let pure = is_pure(op) && op.num_results() == 1;
        let top_level = op.parent() == Some(self.supersteps.steps[step])
            || self
                .kernel
                .is_some_and(|kernel| op.parent() == Some(kernel));
        if !pure || !top_level {
            return Err(emit_error(
                op.melior_location(),
                "host code (a require block or a collective's list) uses a value that differs between threads",
            ));
        }
        // Operands first: each lands before the spawn, so the copy goes
        // after them.
        let operands = op
            .operands()
            .into_iter()
            .map(|operand| self.on_host(operand, step))
            .collect::<Built<Vec<Val>>>()?;
        let copy = op.clone_detached();
        self.host
            .moved_to(self.supersteps.spawn)
            .insert_detached(copy);
        for (index, hoisted) in operands.into_iter().enumerate() {
            copy.set_operand(index, hoisted);
        }
        let result = copy.result(0);
        self.hoisted.insert(value, result);
        Ok(result)
    }

    fn lower_step(&mut self, step: usize) -> Built<()> {
        let superstep = self.supersteps.steps[step];
        let Some(body) = superstep.entry_block(0) else {
            return Ok(());
        };
        self.sizes.push(self.size);
        for op in body.ops() {
            if op.is("pgpu.require") {
                self.hoist_require(op, step)?;
            }
        }
        self.place_host_values(step, body, false)?;
        self.allocate_buffers(step)?;
        let host = Builder::before(self.supersteps.spawn).at_location_of(superstep);
        let (kernel, end, rank) = host.parallel(self.size)?;
        self.kernel = Some(kernel);
        self.kernels.push((kernel, rank));
        let kernel_body = end.block_of();
        let boundary: Vec<Op> = body
            .ops()
            .into_iter()
            .filter(|op| is_boundary_op(*op))
            .collect();
        let terminator = body.terminator();
        // The collectives move too, so that their operands are rewritten
        // like the kernel's; their first phase replaces them.
        for op in body.ops() {
            if Some(op) != terminator {
                op.move_before(end);
            }
        }
        let old_rank = self.old_rank(step, kernel_body, end, rank)?;
        let old_rank = self.replace_thread_queries(kernel, rank, old_rank)?;
        // A multiprefix in a plain spawn is asynchronous (its threads run in
        // no defined order within the superstep): an atomic fetch-and-op.
        for multiprefix in kernel
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.multiprefix"))
        {
            if as_fetch_and_op(multiprefix)?.is_none() {
                return Err(emit_error(
                    multiprefix.melior_location(),
                    "a multiprefix of this kind and element type in a pgpu.spawn has no atomic \
                     fetch-and-op (an index multiprefix has none)",
                ));
            }
        }
        // Loads go after the op that defines the old rank, else first.
        let loads_before = match old_rank {
            Some(old) => old.anchor.next().unwrap_or(end),
            None => kernel_body.first().unwrap_or(end),
        };
        let loaded = self.load_saved(step, kernel, loads_before, rank, old_rank)?;
        if let Some(old) = old_rank.filter(|old| old.anchor.is("pgpu.set_oldrank")) {
            old.anchor.erase();
        }
        self.lower_put(step, kernel)?;
        self.save(step, body, end, rank, &loaded)?;
        let mut lists = vec![];
        for op in &boundary {
            lists.push(self.collective_first_phase(*op, kernel, end, rank)?);
        }
        for (op, list) in boundary.iter().zip(lists) {
            self.collective_global_phase(step, *op, list)?;
        }
        self.place_host_values(step, body, true)?;
        // The superstep's yield goes first: it uses the collectives' results.
        if let Some(terminator) = terminator {
            terminator.erase();
        }
        for op in boundary {
            op.erase();
        }
        self.kernel = None;
        Ok(())
    }

    /// Moves a require's body before the spawn; its results become the
    /// values it yields.
    fn hoist_require(&mut self, require: Op, step: usize) -> Built<()> {
        let Some(block) = require.entry_block(0) else {
            return Ok(());
        };
        let spawn = self.supersteps.spawn;
        let mut yielded = vec![];
        for op in block.ops() {
            if op.is("pgpu.yield") {
                yielded = op.operands();
                continue;
            }
            op.move_before(spawn);
            if op.is("pgpu.dtempnew") {
                self.temporary_lists.push(op);
            }
            for nested in std::iter::once(op).chain(op.nested()) {
                if nested.is("pgpu.size") {
                    nested.result(0).replace_all_uses(self.size);
                    nested.erase();
                    continue;
                }
                for (index, operand) in nested.operands().into_iter().enumerate() {
                    if let Some(definition) = operand.defining_op()
                        && definition.is_within(spawn)
                        && !definition.is_within(op)
                    {
                        let hoisted = self.on_host(operand, step)?;
                        nested.set_operand(index, hoisted);
                    }
                }
            }
        }
        for (result, value) in require.results().into_iter().zip(yielded) {
            result.replace_all_uses(value);
        }
        require.erase();
        Ok(())
    }

    /// Records the host values among the step's crossing values: before the
    /// kernel those computed from host values, after it (`collectives`) the
    /// collectives' totals, which [`Self::collective_global_phase`] set.
    fn place_host_values(&mut self, step: usize, body: Blk, collectives: bool) -> Built<()> {
        let Some(terminator) = body.terminator() else {
            return Ok(());
        };
        for (index, value) in self.plan.crossing.iter().enumerate() {
            if value.step != step
                || !matches!(self.plan.placement[index], Placement::Host)
                || self.host_values.contains_key(&index)
            {
                continue;
            }
            let yielded = terminator.operand(value.result);
            let from_collective = yielded.defining_op().is_some_and(is_boundary_op);
            if from_collective != collectives {
                continue;
            }
            if collectives {
                return Err(emit_error(
                    terminator.melior_location(),
                    "internal error: a collective's total has no host value",
                ));
            }
            let hoisted = self.on_host(yielded, step)?;
            self.host_values.insert(index, hoisted);
        }
        Ok(())
    }

    fn allocate_buffers(&mut self, step: usize) -> Built<()> {
        for (buffer, (first, last)) in self.plan.buffer_lives.iter().enumerate() {
            if *first != step {
                continue;
            }
            let class = &self.plan.allocation.buffers[buffer].class;
            let element = self.host.parse_type(&class.0)?;
            let memref = self.host.alloc(element, self.size)?;
            self.buffers[buffer] = Some(memref);
            self.temporaries.push(Temporary {
                memref,
                last: *last,
            });
        }
        for (index, segment) in self.plan.segments.iter().enumerate() {
            if let Some(buffer) = segment.buffer
                && let Some(memref) = self.buffers[buffer]
                && segment.start == step
            {
                self.segment_memref.insert(index, memref);
            }
        }
        Ok(())
    }

    /// The old rank of this step's threads, if ranks changed at its start.
    fn old_rank(&mut self, step: usize, body: Blk, end: Op, rank: Val) -> Built<Option<OldRank>> {
        if !self.supersteps.ranks_change[step] {
            return Ok(None);
        }
        if self.supersteps.steps[step].has_attribute("rank_reassigned") {
            let Some(set) = body.ops().into_iter().find(|op| op.is("pgpu.set_oldrank")) else {
                return Err(emit_error(
                    self.supersteps.steps[step].melior_location(),
                    "after barrier(RANK_REASSIGNED) the superstep must set thread.oldrank at its top level",
                ));
            };
            return Ok(Some(OldRank {
                value: set.operand(0),
                anchor: set,
                permutation: None,
            }));
        }
        let Some(permutation) = self.permutation.take() else {
            return Err(emit_error(
                self.supersteps.steps[step].melior_location(),
                "internal error: ranks changed without a permutation",
            ));
        };
        let first = body.first().unwrap_or(end);
        let old = Builder::before(first).load(permutation, rank)?;
        let anchor = old
            .defining_op()
            .ok_or_else(|| emit_error(end.melior_location(), "internal error: no load"))?;
        Ok(Some(OldRank {
            value: old,
            anchor,
            permutation: Some(permutation),
        }))
    }

    /// `pgpu.rank`, `pgpu.size` and `pgpu.oldrank` in the kernel; returns
    /// `old` with its value after the replacement (`thread.oldrank =
    /// thread.rank` sets the old rank to a query replaced here).
    fn replace_thread_queries(
        &self,
        kernel: Op,
        rank: Val,
        old: Option<OldRank>,
    ) -> Built<Option<OldRank>> {
        let replace = |op: Op, replacement: Val| {
            op.result(0).replace_all_uses(replacement);
            op.erase();
        };
        for op in kernel.nested() {
            match op.name().as_str() {
                "pgpu.rank" => replace(op, rank),
                "pgpu.size" => replace(op, self.size),
                _ => {}
            }
        }
        let old = old.map(|old| OldRank {
            value: if old.anchor.is("pgpu.set_oldrank") {
                old.anchor.operand(0)
            } else {
                old.value
            },
            ..old
        });
        for op in kernel
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.oldrank"))
        {
            let value = old.map(|old| old.value).ok_or_else(|| {
                emit_error(
                    op.melior_location(),
                    "thread.oldrank before any rank reassignment",
                )
            })?;
            replace(op, value);
        }
        Ok(old)
    }

    /// The segment of crossing value `index` that superstep `step` reads.
    fn segment_read_in(&self, index: usize, step: usize) -> Option<usize> {
        let Placement::PerThread(segments) = &self.plan.placement[index] else {
            return None;
        };
        segments.iter().copied().find(|segment| {
            let segment = &self.plan.segments[*segment];
            segment.start < step && step <= segment.end
        })
    }

    /// Replaces the kernel's uses of earlier supersteps' results by host
    /// values or loads; returns the loaded values by crossing index.
    fn load_saved(
        &mut self,
        step: usize,
        kernel: Op,
        before: Op,
        rank: Val,
        old_rank: Option<OldRank>,
    ) -> Built<HashMap<usize, Val>> {
        let old = old_rank.map(|old| old.value);
        let mut loaded = HashMap::new();
        let mut gets = vec![];
        // The superstep's yield may forward an earlier value: it reads the
        // load too.
        let terminator = self.supersteps.steps[step]
            .entry_block(0)
            .and_then(Blk::terminator);
        let reads = |owner: Op| owner.is_within(kernel) || Some(owner) == terminator;
        for (index, value) in self.plan.crossing.iter().enumerate() {
            if value.step >= step {
                continue;
            }
            let result = self.supersteps.steps[value.step].result(value.result);
            let inside: Vec<_> = result
                .uses()
                .into_iter()
                .filter(|found| reads(found.owner))
                .collect();
            let resaved = self.plan.segments.iter().any(|segment| {
                segment.start == step && segment.value == index && segment.buffer.is_some()
            });
            if inside.is_empty() && !resaved {
                continue;
            }
            if let Placement::Host = self.plan.placement[index] {
                let host = self.host_values.get(&index).copied().ok_or_else(|| {
                    emit_error(
                        self.supersteps.steps[step].melior_location(),
                        "internal error: host value missing",
                    )
                })?;
                for found in inside {
                    if found.owner.is("pgpu.thread.get") && found.index == 1 {
                        // Every thread holds the same value.
                        gets.push((found.owner, Sent::Uniform(host)));
                    } else {
                        found.owner.set_operand(found.index, host);
                    }
                }
                continue;
            }
            let Some(segment) = self.segment_read_in(index, step) else {
                continue;
            };
            let memref = self.segment_memref.get(&segment).copied().ok_or_else(|| {
                emit_error(
                    self.supersteps.steps[step].melior_location(),
                    "internal error: segment without memory",
                )
            })?;
            let by_old = self.plan.segments[segment].by_old_rank_at_end
                && self.plan.segments[segment].end == step;
            // thread.get reads the sender's slot of the same list; a list
            // still by old rank is read at the sender's old rank. Lowered
            // after the loads: a get may be the op the loads go before.
            let is_get =
                |found: &crate::ir::Use| found.owner.is("pgpu.thread.get") && found.index == 1;
            for found in inside.iter().filter(|found| is_get(found)) {
                let permutation = old_rank.and_then(|old| old.permutation).filter(|_| by_old);
                // The list is by this superstep's ranks (re-saved after a
                // change, or the result of the primitive itself, such as
                // thread.fork's child index) or reached through the
                // permutation.
                let slot = Sent::Slot {
                    memref,
                    permutation,
                };
                gets.push((found.owner, slot));
            }
            let plain: Vec<_> = result
                .uses()
                .into_iter()
                .filter(|found| reads(found.owner) && !is_get(found))
                .collect();
            if plain.is_empty() && !resaved {
                continue;
            }
            let index_value = if by_old {
                old.ok_or_else(|| {
                    emit_error(kernel.melior_location(), "internal error: no old rank")
                })?
            } else {
                rank
            };
            if by_old {
                self.check_after(&plain, before)?;
            }
            let value = Builder::before(before)
                .at_location_of(kernel)
                .load(memref, index_value)?;
            for found in plain {
                found.owner.set_operand(found.index, value);
            }
            loaded.insert(index, value);
        }
        // A get of a value from outside the spawn (a host variable, a
        // function argument): every thread holds that value.
        for get in kernel.nested() {
            if get.is("pgpu.thread.get")
                && !get.operand(1).is_defined_within(self.supersteps.spawn)
                && !gets.iter().any(|(known, _)| *known == get)
            {
                gets.push((get, Sent::Uniform(get.operand(1))));
            }
        }
        // The sender is a rank of this superstep's threads.
        for (get, sent) in gets {
            self.lower_get(get, sent, self.sizes[step])?;
        }
        Ok(loaded)
    }

    /// Fails if a use precedes the loads by old rank (`thread.oldrank` set).
    fn check_after(&self, uses: &[crate::ir::Use], loads: Op) -> Built<()> {
        let block = loads.block_of();
        for found in uses {
            let mut user = found.owner;
            while user.block_of() != block {
                let Some(parent) = user.parent() else { break };
                user = parent;
            }
            // SAFETY: both ops are live and in `block`.
            if user.block_of() == block && unsafe { mlirOperationIsBeforeInBlock(user.0, loads.0) }
            {
                return Err(emit_error(
                    found.owner.melior_location(),
                    "a value saved before barrier(RANK_REASSIGNED) is used before thread.oldrank is set",
                ));
            }
        }
        Ok(())
    }

    /// `thread.get(r, v)`: v's slot of thread r, if r is a rank; with
    /// `permutation` (v's list is by old rank, right after the ranks
    /// changed), the slot of r's old rank; a uniform v is v itself.
    fn lower_get(&self, get: Op, sent: Sent, count: Val) -> Built<()> {
        let builder = Builder::before(get);
        let target = get.operand(0);
        let inside = builder.cmpi(6, target, count)?;
        let ty: Type = get.result(0).melior_type();
        let (branch, then_yield, else_yield) = builder.if_op(inside, &[ty], true)?;
        let value = match sent {
            Sent::Uniform(value) => value,
            Sent::Slot {
                memref,
                permutation,
            } => {
                let slot = match permutation {
                    Some(permutation) => Builder::before(then_yield).load(permutation, target)?,
                    None => target,
                };
                Builder::before(then_yield).load(memref, slot)?
            }
        };
        then_yield.set_operands(&[value]);
        if let Some(else_yield) = else_yield {
            let poison = Builder::before(else_yield).poison(ty)?;
            else_yield.set_operands(&[poison]);
        }
        get.result(0).replace_all_uses(branch.result(0));
        get.erase();
        Ok(())
    }

    /// `thread.put(r, p, v)`: a store into p's new slot of thread r; the
    /// list starts out poison, and p's new version is not saved by rank.
    fn lower_put(&mut self, step: usize, kernel: Op) -> Built<()> {
        for put in kernel
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.thread.put"))
        {
            let result = put.result(0);
            let builder = Builder::before(put);
            let ty: Type = result.melior_type();
            let crossing = result
                .uses()
                .iter()
                .find(|found| {
                    found.owner.is("pgpu.yield")
                        && found.owner.parent() == Some(self.supersteps.steps[step])
                })
                .and_then(|found| self.crossing_index(step, found.index));
            let poison = builder.poison(ty)?;
            let Some(segment) = crossing.and_then(|index| match &self.plan.placement[index] {
                Placement::PerThread(segments) => segments.first().copied(),
                Placement::Host => None,
            }) else {
                result.replace_all_uses(poison);
                put.erase();
                continue;
            };
            let memref = self.segment_memref.get(&segment).copied().ok_or_else(|| {
                emit_error(
                    put.melior_location(),
                    "internal error: the put variable has no list",
                )
            })?;
            // Poison first (a separate kernel, so that no put races it).
            let host = Builder::before(kernel).at_location_of(put);
            let (_, fill_end, fill_rank) = host.parallel(self.size)?;
            let fill = Builder::before(fill_end);
            let poison_fill = fill.poison(ty)?;
            fill.store(poison_fill, memref, fill_rank)?;
            let target = put.operand(0);
            let inside = builder.cmpi(6, target, self.size)?;
            let (_, then_yield, _) = builder.if_op(inside, &[], false)?;
            Builder::before(then_yield).store(put.operand(2), memref, target)?;
            // p's new value is read after the next barrier only: poison
            // here, and `save` does not store it by rank.
            result.replace_all_uses(poison);
            self.put_segments.push(segment);
            put.erase();
        }
        Ok(())
    }

    /// Stores, at the kernel's end, the values later supersteps load: the
    /// step's own saved values and those it moves under the new ranks.
    fn save(
        &self,
        step: usize,
        body: Blk,
        end: Op,
        rank: Val,
        loaded: &HashMap<usize, Val>,
    ) -> Built<()> {
        let builder = Builder::before(end);
        for (index, segment) in self.plan.segments.iter().enumerate() {
            if segment.start != step
                || segment.buffer.is_none()
                || self.put_segments.contains(&index)
            {
                continue;
            }
            let value = &self.plan.crossing[segment.value];
            let stored = if value.step == step {
                let Some(terminator) = body.terminator() else {
                    continue;
                };
                terminator.operand(value.result)
            } else {
                match loaded.get(&segment.value) {
                    Some(loaded) => *loaded,
                    None => continue,
                }
            };
            let memref = self.segment_memref.get(&index).copied().ok_or_else(|| {
                emit_error(
                    end.melior_location(),
                    "internal error: saved segment without a buffer",
                )
            })?;
            builder.at_location_of(end).store(stored, memref, rank)?;
        }
        Ok(())
    }

    /// A new list of the current thread count for a collective, allocated
    /// before `before`.
    fn list(&mut self, before: Op, element: Type<'c>, last: usize) -> Built<Val> {
        let memref = self.host.moved_to(before).alloc(element, self.size)?;
        self.temporaries.push(Temporary { memref, last });
        Ok(memref)
    }

    /// In the kernel, each thread writes the collective's operands to its
    /// input lists at its rank; returns the lists.
    fn collective_first_phase(
        &mut self,
        op: Op,
        kernel_op: Op,
        end: Op,
        rank: Val,
    ) -> Built<Vec<Val>> {
        let step = self.sizes.len() - 1;
        let kernel = Builder::before(end).at_location_of(op);
        let mut lists = vec![];
        let mut write = |splitter: &mut Self, value: Val| -> Built<()> {
            let list = splitter.list(kernel_op, value.melior_type(), step)?;
            kernel.store(value, list, rank)?;
            lists.push(list);
            Ok(())
        };
        match op.name().as_str() {
            "pgpu.reduce" | "pgpu.scan" | "pgpu.sort_idx" | "pgpu.thread.sortby"
            | "pgpu.thread.fork" => {
                write(self, op.operand(0))?;
            }
            "pgpu.compact" | "pgpu.split" => {
                write(self, op.operand(0))?;
                write(self, op.operand(1))?;
            }
            "pgpu.thread.split" => {
                write(self, rank)?;
                write(self, op.operand(0))?;
            }
            "pgpu.thread.kill" => {
                write(self, rank)?;
                let i1 = kernel.parse_type("i1")?;
                let one = kernel.constant(i1, 1)?;
                let keep = kernel.value("arith.xori", &[op.operand(0), one], i1, &[])?;
                write(self, keep)?;
            }
            other => {
                return Err(emit_error(
                    op.melior_location(),
                    &format!("pgpu-split-kernels cannot lower '{other}'"),
                ));
            }
        }
        Ok(lists)
    }

    /// The collective's host phase after the kernel; records its results.
    fn collective_global_phase(&mut self, step: usize, op: Op, lists: Vec<Val>) -> Built<()> {
        let host = Builder::before(self.supersteps.spawn).at_location_of(op);
        let index_type = host.index_type();
        let count = self.size;
        let kind = || {
            op.melior()
                .attribute("kind")
                .map_err(|_| emit_error(op.melior_location(), "collective without a kind"))
        };
        let result_crossing = |splitter: &Self, value: Val| -> Option<usize> {
            value
                .uses()
                .iter()
                .find(|found| {
                    found.owner.is("pgpu.yield")
                        && found.owner.parent() == Some(splitter.supersteps.steps[step])
                })
                .and_then(|found| splitter.crossing_index(step, found.index))
        };
        match op.name().as_str() {
            "pgpu.reduce" => {
                let total = host.value(
                    "pgpu.list.reduce",
                    &[lists[0], count],
                    op.result(0).melior_type(),
                    &[("kind", kind()?)],
                )?;
                self.set_host(result_crossing(self, op.result(0)), total);
            }
            "pgpu.scan" => {
                let ty = op.result(0).melior_type();
                let scanned = self.list(self.supersteps.spawn, ty, step)?;
                let mut attributes = vec![("kind", kind()?)];
                if op.has_attribute("inclusive") {
                    attributes.push(("inclusive", host.unit_attribute()));
                }
                let total = host.value(
                    "pgpu.list.scan",
                    &[lists[0], scanned, count],
                    ty,
                    &attributes,
                )?;
                self.set_host(result_crossing(self, op.result(1)), total);
                self.set_collective_output(result_crossing(self, op.result(0)), scanned);
            }
            "pgpu.sort_idx" => {
                let indices = self.list(self.supersteps.spawn, index_type, step)?;
                host.op("pgpu.list.sort_idx", &[lists[0], indices, count], &[], &[])?;
                self.set_collective_output(result_crossing(self, op.result(0)), indices);
            }
            name @ ("pgpu.compact" | "pgpu.split") => {
                let list = self.on_host(op.operand(2), step)?;
                let base = self.on_host(op.operand(3), step)?;
                let length = host.value(
                    &format!("pgpu.list.{}", &name[5..]),
                    &[lists[0], lists[1], list, count, base],
                    index_type,
                    &[],
                )?;
                self.set_host(result_crossing(self, op.result(0)), length);
            }
            "pgpu.thread.sortby" => {
                let permutation = self.list(self.supersteps.spawn, index_type, step + 1)?;
                host.op(
                    "pgpu.list.sort_idx",
                    &[lists[0], permutation, count],
                    &[],
                    &[],
                )?;
                self.permutation = Some(permutation);
            }
            "pgpu.thread.split" => {
                let permutation = self.list(self.supersteps.spawn, index_type, step + 1)?;
                let zero = host.index(0)?;
                host.value(
                    "pgpu.list.split",
                    &[lists[0], lists[1], permutation, count, zero],
                    index_type,
                    &[],
                )?;
                self.permutation = Some(permutation);
            }
            "pgpu.thread.kill" => {
                let permutation = self.list(self.supersteps.spawn, index_type, step + 1)?;
                let zero = host.index(0)?;
                let survivors = host.value(
                    "pgpu.list.compact",
                    &[lists[0], lists[1], permutation, count, zero],
                    index_type,
                    &[],
                )?;
                self.permutation = Some(permutation);
                self.size = survivors;
            }
            "pgpu.thread.fork" => {
                let ty = op.result(0).melior_type();
                // `add` is case 0 of the combining-kind enum.
                let add = host.i32_attribute(0)?;
                let total =
                    host.value("pgpu.list.reduce", &[lists[0], count], ty, &[("kind", add)])?;
                let total = if ty.to_string() == "index" {
                    total
                } else {
                    host.value("arith.index_cast", &[total], index_type, &[])?
                };
                let parents = host.alloc(index_type, total)?;
                let children = host.alloc(ty, total)?;
                self.temporaries.push(Temporary {
                    memref: parents,
                    last: step + 1,
                });
                let last_child_use = self
                    .plan
                    .segments
                    .iter()
                    .filter(|segment| segment.start == step)
                    .map(|segment| segment.end)
                    .max()
                    .unwrap_or(step + 1);
                self.temporaries.push(Temporary {
                    memref: children,
                    last: last_child_use,
                });
                let forked = host.value(
                    "pgpu.list.expand",
                    &[lists[0], parents, children, count],
                    index_type,
                    &[],
                )?;
                self.permutation = Some(parents);
                self.size = forked;
                self.set_collective_output(result_crossing(self, op.result(0)), children);
            }
            other => {
                return Err(emit_error(
                    op.melior_location(),
                    &format!("pgpu-split-kernels cannot lower '{other}'"),
                ));
            }
        }
        Ok(())
    }

    fn set_host(&mut self, crossing: Option<usize>, value: Val) {
        if let Some(index) = crossing {
            self.host_values.insert(index, value);
        }
    }

    /// A collective's output list holds the first segment of `crossing`.
    fn set_collective_output(&mut self, crossing: Option<usize>, memref: Val) {
        let Some(index) = crossing else { return };
        if let Placement::PerThread(segments) = &self.plan.placement[index]
            && let Some(first) = segments.first()
        {
            self.segment_memref.insert(*first, memref);
            let last = self.plan.segments[*first].end;
            if let Some(temporary) = self
                .temporaries
                .iter_mut()
                .find(|temporary| temporary.memref == memref)
            {
                temporary.last = temporary.last.max(last);
            }
        }
    }

    /// Frees the buffers and lists whose last reader was step `step`.
    fn free_after(&mut self, step: usize) -> Built<()> {
        let (done, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.temporaries)
            .into_iter()
            .partition(|temporary| temporary.last <= step);
        self.temporaries = kept;
        for temporary in done {
            self.host.dealloc(temporary.memref)?;
        }
        Ok(())
    }
}
