//! `pgpu-lower-groups`: runs Fork groups that split, fork, or synchronize
//! inside loops and branches as host code that launches one synchronous
//! spawn per straight-line segment (seeds/fork-to-cuda.txt, Section 3,
//! Figures 4 and 5, with the group bookkeeping on the device).
//!
//! A synchronous spawn (or function marked `pgpu.synchronous`) whose code
//! holds a *host structure* (a `pgpu.group.split`, a `pgpu.group.fork`, a
//! `pgpu.group.alloc`, a call of a synchronous function, a multiprefix on
//! cells that may differ between members, or an `scf.if`/`scf.for`/
//! `scf.while` whose regions hold shared stores, multiprefix operations,
//! `seq`, `farm`, barriers or further structures) is taken apart:
//!
//! * The group is a *level*: its size and id are host values, its members
//!   are numbered by *position* `0 .. size` (the thread index of every
//!   kernel launched for it), and a subgroup level knows the parent
//!   position of each of its positions. The position is the group rank
//!   (`pgpu.group.rank`, Fork's `$$`): every split and fork renumbers the
//!   members in the parent's order, and so does the compaction that makes
//!   a subgroup.
//! * Maximal runs of other ops become `pgpu.spawn synchronous %size`
//!   segments, which `pgpu-lower-synchronous` then lowers (barriers at
//!   shared writes, Priority CRCW claims, multiprefix as scans). Uniform
//!   computations on host values stay host code.
//! * A value a segment defines and later code uses, and a processor's own
//!   cell (`memref.alloca`), lives in a per-processor buffer of the level
//!   (`memref.alloc` marked `pgpu.per_processor`), indexed by position;
//!   code of a subgroup reaches it through the chain of parent positions.
//! * Loops and branches on uniform values run on the host; a uniform value
//!   computed on the device (a shrinking loop's "anyone active") is read
//!   back from its buffer. Loop-carried values stay host values when they
//!   start and change uniformly, and go through buffers otherwise.
//! * `pgpu.group.split` (Figure 4's ComputeSubgroups) compacts the
//!   positions of each side with `pgpu.list.compact` on the device, runs
//!   each non-empty side as a subgroup (ranks renumbered in parent order,
//!   id inherited), and stores the merge values at the parent positions
//!   (RestoreGroup). `pgpu.group.fork` does the same for each subgroup id
//!   `0 .. k`.
//! * A synchronous function becomes a host function
//!   `@__group_<name>(size, id, outermost group's size, arguments, result
//!   buffers)` whose body is lowered the same way, so recursion (a
//!   recursive quicksort that splits its group) recurses on the host. Its
//!   positions are the calling group's.
//! * A multiprefix on cells that may differ between members checks on the
//!   device whether they are one (min = max of the indices, `pgpu.list.
//!   reduce`): then it is the group's rank-order multiprefix on that cell;
//!   otherwise one thread applies the members' values in rank order.
//! * A shared local (`pgpu.group.alloc`) is host memory of the level that
//!   declares it (one allocation, also for a declaration in a loop), freed
//!   when the level ends.
//! * A group of no processors runs nothing.
//!
//! * What is the same in every member (the analysis of [`crate::
//!   uniformity`], run first) stays off the per-member bookkeeping: a
//!   synchronous function's parameters that every call passes uniform are
//!   host values of its host version; a split on a uniform condition is an `scf.if` of
//!   the host; a split on the rank against a uniform bound (`$$ < k`) takes
//!   its sides as ranges of positions, without a compaction; a
//!   multiprefix on a uniform cell is the group's scan; a uniform `arith`
//!   value the host needs is computed by the host from its operands, and a
//!   uniform value of a parent's segment is read back once, before the
//!   subgroups' taskgroup. A group rank that a later segment uses is
//!   recomputed there from the position, not saved.
//! * A synchronous function with a block version (`pgpu-block-groups`)
//!   runs it as one `pgpu.spawn block` when the group fits a block
//!   (`pgpu.block_capacity`, the version's `pgpu.block_threads`), and, when the version splits
//!   (`pgpu.block_splits`), the outermost group has at least one member per
//!   warp scheduler of the device (`pgpu.multiprocessors`): see
//!   [`run_in_one_block`].
//! * The sides of a split, and the subgroups of a fork, are the tasks
//!   (`pgpu.task`) of one `pgpu.taskgroup`: the host runs them one after
//!   the other, and on the CUDA device each one's device work goes to a
//!   stream of its own, so a subgroup's kernels run while the host goes on
//!   with its siblings (a sibling's host reads wait for that sibling's
//!   own work only). The compaction that makes a subgroup runs in the
//!   taskgroup before its task.
//!
//! We write this pass because Fork's group semantics have no upstream
//! counterpart.

use crate::{
    block_groups::BLOCK_VERSION,
    build::{Builder, Built},
    ir::{Blk, Op, Val, static_shape},
    lower_synchronous::{combine_op, is_same_everywhere},
    uniformity::Uniformity,
    unsynchronized::{CallEffects, call_effects, callee, is_private_memory, strip_casts},
};
use melior::ir::operation::OperationLike;
use melior::ir::{
    Block, Region, RegionLike, Type,
    r#type::{MemRefType, ShapedTypeLike},
};
use pgpu_pass_infra::{Pass, PassFailure, emit_error};
use std::collections::HashMap;

/// The attribute marking per-processor buffers.
pub(crate) const PER_PROCESSOR: &str = "pgpu.per_processor";
/// The attribute marking the host structures while the code moves.
const HOST_STRUCTURE: &str = "pgpu.host_structure";
/// The attribute marking host reads of per-processor buffers.
const HOST_READ: &str = "pgpu.host_read";
/// The attribute marking a multiprefix whose location the uniformity
/// analysis found the same in all members (`pgpu-lower-synchronous` runs
/// it as a rank-order scan on that location).
pub(crate) const UNIFORM_LOCATION: &str = "pgpu.uniform_location";
/// The attribute marking, while the pass runs, the ops whose results the
/// uniformity analysis found uniform.
const UNIFORM: &str = "pgpu.uniform";

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct LowerGroups;

impl Pass for LowerGroups {
    const ARGUMENT: &'static str = "pgpu-lower-groups";
    const SUMMARY: &'static str = "Run Fork groups that split, fork or synchronize under control flow as host code launching synchronous segments";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::arith(),
            DialectHandle::memref(),
            DialectHandle::scf(),
        ]
    }

    fn run(&self, module: melior::ir::OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let decisions = Decisions::of_module(module)?;
        let spawns: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| {
                op.is("pgpu.spawn")
                    && op.has_attribute("synchronous")
                    && op
                        .nested()
                        .into_iter()
                        .any(|inner| is_structure(inner, *op))
            })
            .collect();
        for spawn in spawns {
            lower_spawn(spawn, &decisions)?;
        }
        let functions: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("func.func") && op.has_attribute("pgpu.synchronous"))
            .collect();
        for function in &functions {
            lower_function(*function, &decisions)?;
        }
        // Erased last: calls in bodies lowered later (a function's callee
        // may come first in the module) recognize the callee by it.
        for function in functions {
            function.erase();
        }
        for op in module.nested() {
            op.remove_attribute(UNIFORM);
        }
        Ok(())
    }
}

/// What the uniformity analysis decided before the code moves (its
/// answers are about the values present when it ran).
struct Decisions {
    /// Which parameters of each synchronous function are uniform: its host
    /// version takes those as host values.
    uniform_parameters: HashMap<String, Vec<bool>>,
    /// Splits on the rank against a uniform bound.
    rank_ranges: HashMap<Op, RankRange>,
}

/// A split whose condition compares the group rank with a uniform bound
/// (`$$ < k`, `$$ >= k`, ...): its sides are the positions below and from
/// a threshold, known without a compaction.
#[derive(Clone, Copy)]
pub(crate) struct RankRange {
    /// The `arith.cmpi` and the index of its bound operand.
    pub compare: Op,
    pub bound: usize,
    /// The threshold is the bound plus one (`<=`, `>`).
    pub plus_one: bool,
    /// The then side is the ranks below the threshold (else from it).
    pub then_below: bool,
    /// The comparison is unsigned.
    pub unsigned: bool,
}

impl Decisions {
    /// Runs the uniformity analysis on `module`: marks multiprefix
    /// operations on a uniform location, records the splits on rank ranges
    /// and turns splits on a uniform condition into branches.
    fn of_module(module: Op) -> Built<Self> {
        let uniformity = Uniformity::of_module(module);
        // Ops computing uniform values: the host may compute them instead.
        for op in module.nested() {
            let results = op.results();
            if !results.is_empty() && results.iter().all(|value| uniformity.is_uniform(*value)) {
                op.set_unit_attribute(UNIFORM);
            }
        }
        let mut uniform_parameters = HashMap::new();
        let mut rank_ranges = HashMap::new();
        let mut uniform_splits = vec![];
        for op in module.nested() {
            match op.name().as_str() {
                "func.func" if op.has_attribute("pgpu.synchronous") => {
                    let name = crate::inline_spmd::symbol_attribute(op, "sym_name");
                    if let Some(name) = name
                        && let Some(uniform) = uniformity.uniform_parameters(&name)
                    {
                        uniform_parameters.insert(name, uniform.to_vec());
                    }
                }
                "pgpu.multiprefix"
                    if op.operands()[1..]
                        .iter()
                        .all(|operand| uniformity.is_uniform(*operand)) =>
                {
                    op.set_unit_attribute(UNIFORM_LOCATION);
                }
                "pgpu.group.split" if uniformity.is_uniform(op.operand(0)) => {
                    uniform_splits.push(op);
                }
                _ => {}
            }
        }
        // Erases only ops whose results the analysis found divergent.
        for split in uniform_splits {
            branch_on_uniform_condition(split)?;
        }
        // The rank's group is known once those splits are branches.
        for op in module.nested() {
            if op.is("pgpu.group.split")
                && let Some(range) = rank_range(op, &|value| uniformity.is_uniform(value))
            {
                rank_ranges.insert(op, range);
            }
        }
        Ok(Self {
            uniform_parameters,
            rank_ranges,
        })
    }
}

/// The split `split` as a [`RankRange`], if its condition compares the
/// rank of the split's group with a uniform value.
pub(crate) fn rank_range(split: Op, is_uniform: &dyn Fn(Val) -> bool) -> Option<RankRange> {
    let compare = split
        .operand(0)
        .defining_op()
        .filter(|op| op.is("arith.cmpi"))?;
    let predicate = compare.integer_attribute("predicate")?;
    let is_rank = |value: Val| {
        strip_casts(value)
            .defining_op()
            .is_some_and(|op| op.is("pgpu.group.rank") && group_context(op) == group_context(split))
    };
    // `rank PRED bound`, or `bound PRED rank` as the mirrored predicate.
    let (bound, predicate) = if is_rank(compare.operand(0)) {
        (1, predicate)
    } else if is_rank(compare.operand(1)) {
        // Signed 2..5 (slt sle sgt sge), unsigned 6..9 (ult ule ugt uge).
        let mirrored = match predicate {
            2 | 6 => predicate + 2, // k < r: r > k
            3 | 7 => predicate + 2, // k <= r: r >= k
            4 | 8 => predicate - 2, // k > r: r < k
            5 | 9 => predicate - 2, // k >= r: r <= k
            _ => return None,
        };
        (0, mirrored)
    } else {
        return None;
    };
    if !is_uniform(compare.operand(bound)) {
        return None;
    }
    let unsigned = predicate >= 6;
    let (plus_one, then_below) = match predicate - if unsigned { 4 } else { 0 } {
        2 => (false, true),  // r < k
        3 => (true, true),   // r <= k
        4 => (true, false),  // r > k
        5 => (false, false), // r >= k
        _ => return None,
    };
    Some(RankRange {
        compare,
        bound,
        plus_one,
        then_below,
        unsigned,
    })
}

/// The innermost group `op` runs in: its nearest enclosing split, fork,
/// synchronous spawn or synchronous function.
pub(crate) fn group_context(op: Op) -> Option<Op> {
    let mut current = op.parent();
    while let Some(parent) = current {
        let group = parent.is("pgpu.group.split")
            || parent.is("pgpu.group.fork")
            || (parent.is("pgpu.spawn") && parent.has_attribute("synchronous"))
            || (parent.is("func.func") && parent.has_attribute("pgpu.synchronous"));
        if group {
            return Some(parent);
        }
        current = parent.parent();
    }
    None
}

/// Replaces the split `split`, whose condition is the same in all members,
/// by an `scf.if`: the whole group takes one side, with its ranks, size
/// and id unchanged (the one subgroup would be the whole group, ranked in
/// the same order).
pub(crate) fn branch_on_uniform_condition(split: Op) -> Built<Op> {
    let at = Builder::before(split);
    let types: Vec<Type> = split
        .results()
        .into_iter()
        .map(|result| result.melior_type())
        .collect();
    let with_else = split.entry_block(1).is_some();
    let (branch, then_yield, else_yield) = at.if_op(split.operand(0), &types, with_else)?;
    for (region, end) in [(0, Some(then_yield)), (1, else_yield)] {
        let (Some(block), Some(end)) = (split.entry_block(region), end) else {
            continue;
        };
        for inner in block.ops() {
            if inner.is("pgpu.group.merge") {
                end.set_operands(&inner.operands());
            } else {
                inner.move_before(end);
            }
        }
    }
    for (result, new) in split.results().into_iter().zip(branch.results()) {
        result.replace_all_uses(new);
    }
    split.erase();
    Ok(branch)
}

/// Whether `op` (in the synchronous `scope`) must run as host code: a
/// group operation of the host, or control flow around one or around an
/// op that needs the whole group at one point.
fn is_structure(op: Op, scope: Op) -> bool {
    // `seq` and `farm` bodies run in one member or asynchronously: nothing
    // in them needs the group at one point.
    if in_mode_region(op, scope) {
        return false;
    }
    match op.name().as_str() {
        "scf.if" | "scf.for" | "scf.while" => op.nested().into_iter().any(|inner| {
            inner != op && (is_host_group_op(inner, scope) || needs_group_step(inner, scope))
        }),
        _ => is_host_group_op(op, scope),
    }
}

/// Whether `op` is inside a `pgpu.seq` or `pgpu.farm` below `scope`.
fn in_mode_region(op: Op, scope: Op) -> bool {
    std::iter::successors(op.parent(), |parent| parent.parent())
        .take_while(|parent| *parent != scope)
        .any(|parent| parent.is("pgpu.seq") || parent.is("pgpu.farm"))
}

/// Whether `op` is a group operation that runs on the host.
fn is_host_group_op(op: Op, scope: Op) -> bool {
    match op.name().as_str() {
        "pgpu.group.split" | "pgpu.group.fork" | "pgpu.group.alloc" => true,
        "func.call" => calls_synchronous(op),
        "pgpu.multiprefix" => {
            !op.has_attribute(UNIFORM_LOCATION)
                && !op.operands()[1..]
                    .iter()
                    .all(|operand| is_same_everywhere(*operand, scope))
                && multiprefix_location(op, scope).is_some()
        }
        _ => false,
    }
}

/// Whether `op` needs the whole group at one point of the program: it
/// cannot sit under control flow inside a kernel.
fn needs_group_step(op: Op, scope: Op) -> bool {
    match op.name().as_str() {
        "pgpu.multiprefix" | "pgpu.barrier" | "pgpu.seq" | "pgpu.farm" => true,
        "memref.store" => !is_private_memory(op.operand(1), scope),
        "memref.atomic_rmw" => true,
        "func.call" => call_effects(op) == CallEffects::Writes,
        _ => false,
    }
}

/// A group the host code runs: see the module documentation.
struct Level {
    size: Val,
    id: Val,
    /// Parent position by position, and the parent level.
    parent: Option<(Val, usize)>,
    /// The size of the outermost group (the spawn's), passed down through
    /// subgroups and calls: the program's processors.
    whole: Val,
    /// The parent's host op that runs this subgroup (its taskgroup).
    enclosing: Option<Op>,
    /// Allocations go before `anchor`, deallocations before `end`.
    anchor: Op,
    end: Op,
}

struct Lowering<'d> {
    decisions: &'d Decisions,
    levels: Vec<Level>,
    /// Segment spawn -> its level.
    segments: HashMap<Op, usize>,
    /// Per-thread value -> its buffer.
    buffers: HashMap<Val, Val>,
    /// Demoted `alloca` -> (buffer, level).
    cells: HashMap<Val, (Val, usize)>,
    /// (segment, level) -> the thread's position at that level.
    positions: HashMap<(Op, usize), Val>,
    /// (segment, value) -> the value loaded in that segment.
    imported: HashMap<(Op, Val), Val>,
    /// A value loaded in a segment -> the value of another segment it is.
    import_origins: HashMap<Val, Val>,
    /// (value, insertion point) -> the host's read of its first member's.
    host_reads: HashMap<(Val, Op), Val>,
    dead_cells: Vec<Op>,
    /// The location of each multiprefix that runs as host code.
    locations: HashMap<Op, (Val, Val, Option<Val>)>,
}

/// How the host code treats an op of a group's code.
enum Role {
    /// Uniform computation on host values: stays host code.
    Host,
    /// `pgpu.group.size` / `pgpu.group.id`: the level's host values.
    Query,
    /// A processor's own cell: a per-processor buffer.
    Cell,
    /// Runs on the host with regions of group code.
    Structure,
    /// A shared local: host memory of the level.
    GroupMemory,
    /// Goes into a segment.
    Device,
}

impl<'d> Lowering<'d> {
    fn new(decisions: &'d Decisions) -> Self {
        Self {
            decisions,
            levels: vec![],
            segments: HashMap::new(),
            buffers: HashMap::new(),
            cells: HashMap::new(),
            positions: HashMap::new(),
            imported: HashMap::new(),
            import_origins: HashMap::new(),
            host_reads: HashMap::new(),
            dead_cells: vec![],
            locations: HashMap::new(),
        }
    }

    /// Marks the ops of `scope` (the synchronous spawn or function whose
    /// code this lowering takes apart) that are host structures: decided
    /// before the code moves out of `scope`.
    fn plan(&mut self, scope: Op) {
        for op in scope.nested() {
            if is_structure(op, scope) {
                if op.is("pgpu.multiprefix")
                    && let Some(location) = multiprefix_location(op, scope)
                {
                    self.locations.insert(op, location);
                }
                op.set_unit_attribute(HOST_STRUCTURE);
            }
        }
    }

    /// Lowers the group code of the outermost `level` (from its anchor to
    /// its end), then removes the demoted cells.
    fn lower_outermost(&mut self, level: Level) -> Built<()> {
        let (anchor, end) = (level.anchor, level.end);
        self.levels.push(level);
        let first = anchor.next().ok_or(PassFailure)?;
        self.lower_range(first, end, 0)?;
        for cell in std::mem::take(&mut self.dead_cells) {
            cell.erase();
        }
        // A segment that only reads (the merge after a subgroup that leaves
        // no values, a function's empty last step) would be a launch, and
        // on the cuda device it makes its stream wait for the subgroups'
        // tasks before their end.
        for &segment in self.segments.keys() {
            if segment
                .nested()
                .into_iter()
                .all(|op| is_read_only(&op.name()))
            {
                segment.erase();
            }
        }
        Ok(())
    }

    /// Whether `value` is available to host code: not defined in a spawn.
    fn is_host_value(&self, value: Val) -> bool {
        let owner = match value.defining_op() {
            Some(op) => Some(op),
            None => {
                // SAFETY: a live block argument.
                let block = Blk(unsafe { mlir_sys::mlirBlockArgumentGetOwner(value.0) });
                block.parent_op()
            }
        };
        let mut current = owner;
        while let Some(op) = current {
            if op.is("pgpu.spawn") {
                return false;
            }
            current = op.parent();
        }
        true
    }

    /// Whether `value`, used in the host structure `context`, can be
    /// computed by host code once the values in `assumed` are host values.
    fn is_host_computable(&self, value: Val, assumed: &[Val], context: Op) -> bool {
        if assumed.contains(&value) {
            return true;
        }
        if self.home_segment(value).is_some() {
            return false;
        }
        match value.defining_op() {
            Some(op) => match op.name().as_str() {
                "arith.constant" | "ub.poison" | "pgpu.group.size" | "pgpu.group.id" => true,
                "memref.load" => op.has_attribute(HOST_READ),
                name if name.starts_with("arith.") && op.num_regions() == 0 => op
                    .operands()
                    .into_iter()
                    .all(|operand| self.is_host_computable(operand, assumed, context)),
                _ => !op.is_within(context) && self.is_host_value(value),
            },
            None => {
                // SAFETY: a live block argument.
                let block = Blk(unsafe { mlir_sys::mlirBlockArgumentGetOwner(value.0) });
                self.is_host_value(value)
                    && block
                        .parent_op()
                        .is_none_or(|owner| context.is_within(owner) && owner != context)
            }
        }
    }

    fn role(&self, op: Op) -> Role {
        let name = op.name();
        match name.as_str() {
            "pgpu.group.size" | "pgpu.group.id" => return Role::Query,
            "memref.alloca" => return Role::Cell,
            "pgpu.group.alloc" => return Role::GroupMemory,
            "arith.constant" | "memref.get_global" | "ub.poison" => return Role::Host,
            _ => {}
        }
        if op.has_attribute(HOST_READ) || op.is("memref.dealloc") {
            return Role::Host;
        }
        if op.has_attribute(HOST_STRUCTURE) {
            op.remove_attribute(HOST_STRUCTURE);
            return Role::Structure;
        }
        if name.starts_with("arith.")
            && op.num_regions() == 0
            && op
                .operands()
                .into_iter()
                .all(|operand| self.is_host_value(operand))
        {
            return Role::Host;
        }
        Role::Device
    }

    /// Lowers the group code from `first` up to (not including) `end`,
    /// run by `level`.
    fn lower_range(&mut self, first: Op, end: Op, level: usize) -> Built<()> {
        let mut segment: Option<Op> = None;
        let mut next = Some(first);
        while let Some(op) = next {
            if op == end {
                break;
            }
            next = op.next();
            match self.role(op) {
                // Reads back what segments wrote, or frees buffers: stays.
                Role::Host if op.has_attribute(HOST_READ) || op.is("memref.dealloc") => {
                    segment = None;
                }
                Role::Host => {
                    // Host code the open segment's ops may use: before it.
                    if let Some(current) = segment {
                        op.move_before(current);
                    }
                }
                Role::Query => self.answer_query(op, level),
                Role::Cell => self.demote_cell(op, level)?,
                Role::GroupMemory => {
                    // One allocation for the level, even where the
                    // declaration is in a loop (each iteration's variable
                    // starts uninitialized).
                    let at = Builder::before(self.levels[level].anchor);
                    let ty = op.result(0).melior_type();
                    let no_sizes = at.segment_sizes(&[0, 0])?;
                    let memory = at.value(
                        "memref.alloc",
                        &[],
                        ty,
                        &[("operandSegmentSizes", no_sizes)],
                    )?;
                    Builder::before(self.levels[level].end).dealloc(memory)?;
                    op.result(0).replace_all_uses(memory);
                    op.erase();
                }
                Role::Structure => {
                    let previous = segment.take();
                    next = Some(self.lower_structure(op, level, previous)?);
                }
                Role::Device => {
                    let current = match segment {
                        Some(current) => current,
                        None => {
                            let created = self.new_segment(op, level)?;
                            segment = Some(created);
                            created
                        }
                    };
                    self.move_into(op, current)?;
                }
            }
        }
        Ok(())
    }

    /// A new empty segment before `before`, for `level`.
    fn new_segment(&mut self, before: Op, level: usize) -> Built<Op> {
        let at = Builder::before(before);
        let unit = at.unit_attribute();
        let (segment, _) = at.op_with_body(
            "pgpu.spawn",
            &[self.levels[level].size],
            &[("synchronous", unit)],
        )?;
        self.segments.insert(segment, level);
        Ok(segment)
    }

    /// A new segment of `level` before `before`: the segment, its body's
    /// end (where its code goes) and the thread's position.
    fn open_segment(&mut self, before: Op, level: usize) -> Built<(Op, Op, Val)> {
        let segment = self.new_segment(before, level)?;
        let end = body_end(segment)?;
        let position = self.position(segment, level, end)?;
        Ok((segment, end, position))
    }

    /// Stores `value` into `buffer` at `position` at the end of `segment`;
    /// a value of another segment arrives through its buffer.
    fn store_imported(&mut self, segment: Op, position: Val, value: Val, buffer: Val) -> Built<()> {
        let end = body_end(segment)?;
        let store =
            Builder::before(end).op("memref.store", &[value, buffer, position], &[], &[])?;
        self.move_into(store, segment)
    }

    /// A per-processor buffer of `level` of `element`s (with `shape` per
    /// processor), freed when the level ends.
    fn buffer(&self, level: usize, element: Type, shape: &[i64]) -> Built<Val> {
        let at = Builder::before(self.levels[level].anchor);
        let buffer = self.unfreed_buffer(&at, level, element, shape)?;
        Builder::before(self.levels[level].end).dealloc(buffer)?;
        Ok(buffer)
    }

    /// A per-processor buffer of `level` allocated at `at`, which the
    /// caller frees.
    fn unfreed_buffer(
        &self,
        at: &Builder,
        level: usize,
        element: Type,
        shape: &[i64],
    ) -> Built<Val> {
        let dims: String = shape.iter().map(|dim| format!("{dim}x")).collect();
        let ty = at.parse_type(&format!("memref<?x{dims}{element}>"))?;
        let segments = at.segment_sizes(&[1, 0])?;
        let unit = at.unit_attribute();
        at.value(
            "memref.alloc",
            &[self.levels[level].size],
            ty,
            &[("operandSegmentSizes", segments), (PER_PROCESSOR, unit)],
        )
    }

    /// The thread's position at level `target` (its segment's level or an
    /// ancestor), in `segment` (computed before `user`).
    fn position(&mut self, segment: Op, target: usize, user: Op) -> Built<Val> {
        if let Some(known) = self.positions.get(&(segment, target)) {
            return Ok(*known);
        }
        let own = self.segments[&segment];
        let at = Builder::before(user);
        let value = if target == own {
            at.value("pgpu.rank", &[], at.index_type(), &[])?
        } else {
            // The level on the chain whose parent is `target`.
            let mut child = own;
            let map = loop {
                match self.levels[child].parent {
                    Some((map, parent)) if parent == target => break map,
                    Some((_, parent)) => child = parent,
                    None => {
                        return Err(
                            at.fail("internal error: a value of a level that is not an ancestor")
                        );
                    }
                }
            };
            let below = self.position(segment, child, user)?;
            at.load(map, below)?
        };
        self.positions.insert((segment, target), value);
        Ok(value)
    }

    /// Moves the device op `op` to the end of `segment`, reaching values of
    /// other segments and demoted cells through their buffers and replacing
    /// the group queries.
    fn move_into(&mut self, op: Op, segment: Op) -> Built<()> {
        op.move_before(body_end(segment)?);
        let level = self.segments[&segment];
        // Accesses of demoted cells first: they are replaced.
        let mut op = op;
        let mut inner_ops = vec![op];
        inner_ops.extend(op.nested());
        for inner in inner_ops {
            let cell = inner
                .operands()
                .into_iter()
                .enumerate()
                .find_map(|(index, operand)| self.cells.get(&operand).map(|cell| (index, *cell)));
            if let Some((index, (buffer, owner))) = cell {
                let position = self.position(segment, owner, op)?;
                let new = rewrite_cell_access(inner, index, buffer, position)?;
                if inner == op {
                    op = new;
                }
            }
        }
        let mut inner_ops = vec![op];
        inner_ops.extend(op.nested());
        for inner in inner_ops {
            match inner.name().as_str() {
                "pgpu.group.rank" => {
                    // The group rank is the position.
                    let position = self.position(segment, level, op)?;
                    inner.result(0).replace_all_uses(position);
                    inner.erase();
                    continue;
                }
                "pgpu.group.size" | "pgpu.group.id" => {
                    self.answer_query(inner, level);
                    continue;
                }
                _ => {}
            }
            for (index, operand) in inner.operands().into_iter().enumerate() {
                let Some(home) = self.home_segment(operand) else {
                    continue;
                };
                if home == segment {
                    continue;
                }
                let value = self.import(operand, home, segment, op)?;
                inner.set_operand(index, value);
            }
        }
        Ok(())
    }

    /// The segment defining `value`, if a segment does.
    fn home_segment(&self, value: Val) -> Option<Op> {
        let mut current = match value.defining_op() {
            Some(op) => op.parent(),
            None => {
                // SAFETY: a live block argument.
                let block = Blk(unsafe { mlir_sys::mlirBlockArgumentGetOwner(value.0) });
                block.parent_op()
            }
        };
        while let Some(op) = current {
            if self.segments.contains_key(&op) {
                return Some(op);
            }
            current = op.parent();
        }
        None
    }

    /// `value` of `home` loaded in `segment` (before `user`).
    fn import(&mut self, value: Val, home: Op, segment: Op, user: Op) -> Built<Val> {
        if let Some(known) = self.imported.get(&(segment, value)) {
            return Ok(*known);
        }
        let owner = self.segments[&home];
        if let Some(recomputed) = self.recompute_rank(value, owner, segment, user)? {
            self.imported.insert((segment, value), recomputed);
            self.import_origins.insert(recomputed, value);
            return Ok(recomputed);
        }
        let buffer = self.buffer_of(value, home)?;
        let position = self.position(segment, owner, user)?;
        let loaded = Builder::before(user).load(buffer, position)?;
        self.imported.insert((segment, value), loaded);
        self.import_origins.insert(loaded, value);
        Ok(loaded)
    }

    /// A value of a segment of level `owner` that is the thread's position
    /// there (a group rank, Fork's `$` at the start of a `start` body), or
    /// an integer cast of one: recomputed in `segment` (before `user`) from
    /// the position at `owner` instead of going through a buffer.
    fn recompute_rank(
        &mut self,
        value: Val,
        owner: usize,
        segment: Op,
        user: Op,
    ) -> Built<Option<Val>> {
        let Some(op) = value.defining_op() else {
            return Ok(None);
        };
        match op.name().as_str() {
            "pgpu.rank" => Ok(Some(self.position(segment, owner, user)?)),
            "arith.index_cast" | "arith.index_castui" => {
                let Some(position) = self.recompute_rank(op.operand(0), owner, segment, user)?
                else {
                    return Ok(None);
                };
                let copy = op.clone_detached();
                copy.set_operands(&[position]);
                Builder::before(user).insert_detached(copy);
                Ok(Some(copy.result(0)))
            }
            _ => Ok(None),
        }
    }

    /// The buffer holding the per-thread `value` of segment `home`.
    fn buffer_of(&mut self, value: Val, home: Op) -> Built<Val> {
        if let Some(known) = self.buffers.get(&value) {
            return Ok(*known);
        }
        let level = self.segments[&home];
        let buffer = self.buffer(level, value.melior_type(), &[])?;
        let definer = value.defining_op().ok_or(PassFailure)?;
        let after = definer.next().ok_or(PassFailure)?;
        let position = self.position(home, level, after)?;
        // The position may have been computed after the definer's position
        // in the segment; store at the end of the segment instead.
        Builder::before(body_end(home)?).store(value, buffer, position)?;
        self.buffers.insert(value, buffer);
        Ok(buffer)
    }

    /// A per-processor buffer of `level` holding `value` (a value of a
    /// segment of this level or an ancestor, or a host value), filled
    /// before `before`.
    fn materialize(&mut self, value: Val, level: usize, before: Op) -> Built<Val> {
        let buffers = self.materialize_all(&[value], level, before)?;
        Ok(buffers[0])
    }

    /// Per-processor buffers of `level` holding `values`: a value a segment
    /// of this level computes is in its buffer already; the others (values
    /// of ancestor levels, which arrive through the parent positions, and
    /// host values) are stored by one new segment before `before`.
    fn materialize_all(&mut self, values: &[Val], level: usize, before: Op) -> Built<Vec<Val>> {
        let mut segment: Option<(Op, Op, Val)> = None;
        let mut open = |this: &mut Self| -> Built<(Op, Op, Val)> {
            if let Some(known) = segment {
                return Ok(known);
            }
            let created = this.open_segment(before, level)?;
            segment = Some(created);
            Ok(created)
        };
        let mut buffers = vec![];
        for value in values {
            if let Some(home) = self.home_segment(*value)
                && self.segments[&home] == level
            {
                buffers.push(self.buffer_of(*value, home)?);
                continue;
            }
            let buffer = self.buffer(level, value.melior_type(), &[])?;
            let (created, _, position) = open(self)?;
            self.store_imported(created, position, *value, buffer)?;
            buffers.push(buffer);
        }
        Ok(buffers)
    }

    /// The uniform `value` as a host value before `before`, at `level`:
    /// an op the analysis found uniform and the host can compute
    /// ([`host_can_recompute`]: arithmetic, memref views) is computed by the
    /// host from its operands' host values; a scalar a segment computes is
    /// read back from the first member (a segment of an ancestor level:
    /// once, before the subgroups' taskgroup, where the parent's stream is
    /// waited for already when the split's sizes were read). A memref is
    /// never read back (the device wrote device addresses into it): the
    /// host must be able to compute it, else the pass fails.
    fn host_scalar(&mut self, value: Val, level: usize, before: Op) -> Built<Val> {
        if let Some(original) = self.import_origins.get(&value) {
            return self.host_scalar(*original, level, before);
        }
        let home = self.home_segment(value);
        if home.is_none() && self.is_host_value(value) {
            return Ok(value);
        }
        if let Some(op) = value.defining_op()
            && home.is_some()
            && op.has_attribute(UNIFORM)
            && host_can_recompute(op)
        {
            let mut operands = vec![];
            for operand in op.operands() {
                operands.push(self.host_scalar(operand, level, before)?);
            }
            let copy = op.clone_detached();
            copy.set_operands(&operands);
            Builder::before(before).insert_detached(copy);
            let index = op
                .results()
                .iter()
                .position(|result| *result == value)
                .ok_or(PassFailure)?;
            return Ok(copy.result(index));
        }
        if MemRefType::try_from(value.melior_type()).is_ok() {
            let at = value.defining_op().unwrap_or(before);
            return Err(emit_error(
                at.melior_location(),
                "this memref is used by the host of a group (a pointer passed to a synchronous function?) but is computed by the group's members: the host cannot compute it",
            ));
        }
        let (buffer, before) = match home {
            Some(home) => {
                let owner = self.segments[&home];
                let earliest = self.entry_from(owner, level).unwrap_or(before);
                if let Some(known) = self.host_reads.get(&(value, earliest)) {
                    return Ok(*known);
                }
                (self.buffer_of(value, home)?, earliest)
            }
            None => (self.materialize(value, level, before)?, before),
        };
        let at = Builder::before(before);
        let zero = at.index(0)?;
        let unit = at.unit_attribute();
        let read = at.value(
            "memref.load",
            &[buffer, zero],
            value.melior_type(),
            &[(HOST_READ, unit)],
        )?;
        self.host_reads.insert((value, before), read);
        Ok(read)
    }

    /// The host op of `ancestor`'s code that runs the subgroups leading to
    /// `level` (the taskgroup of the split or fork below `ancestor`), if
    /// `level` is a subgroup of it.
    fn entry_from(&self, ancestor: usize, level: usize) -> Option<Op> {
        let mut child = level;
        loop {
            let (_, parent) = self.levels[child].parent?;
            if parent == ancestor {
                return self.levels[child].enclosing;
            }
            child = parent;
        }
    }

    /// Replaces `pgpu.group.size` or `pgpu.group.id` by the host value of
    /// the group at `level`.
    fn answer_query(&self, query: Op, level: usize) {
        let value = if query.is("pgpu.group.size") {
            self.levels[level].size
        } else {
            self.levels[level].id
        };
        query.result(0).replace_all_uses(value);
        query.erase();
    }

    /// Replaces a processor's own cell by a per-processor buffer.
    fn demote_cell(&mut self, alloca: Op, level: usize) -> Built<()> {
        let at = Builder::before(alloca);
        let ty = MemRefType::try_from(alloca.result(0).melior_type())
            .map_err(|_| at.fail("memref.alloca of a non-memref"))?;
        let shape = static_shape(&ty)
            .ok_or_else(|| {
                at.fail("the native backends do not compile a private array of dynamic size in group code that splits yet; run the program with `pgpu run --interpret`")
            })?;
        for found in alloca.result(0).uses() {
            let load = found.owner.is("memref.load") && found.index == 0;
            let store = found.owner.is("memref.store") && found.index == 1;
            if !(load || store) {
                return Err(at.fail(
                    "the native backends do not compile a processor's own array in group code that splits, used other than by loads and stores (passed on or viewed), yet; run the program with `pgpu run --interpret`",
                ));
            }
        }
        let buffer = self.buffer(level, ty.element(), &shape)?;
        self.cells.insert(alloca.result(0), (buffer, level));
        self.dead_cells.push(alloca);
        Ok(())
    }

    /// Lowers a host structure; returns the op to go on with.
    /// `previous` is the segment just before `op`, if any.
    fn lower_structure(&mut self, op: Op, level: usize, previous: Option<Op>) -> Built<Op> {
        let after = op.next().ok_or(PassFailure)?;
        match op.name().as_str() {
            "pgpu.group.split" => self.lower_split(op, level, after, previous),
            "pgpu.group.fork" => self.lower_fork(op, level, after),
            "scf.if" => self.lower_if(op, level, after),
            "scf.for" => self.lower_for(op, level, after),
            "scf.while" => self.lower_while(op, level, after),
            "pgpu.multiprefix" => self.lower_multiprefix(op, level, after),
            _ => self.lower_call(op, level, after),
        }
    }

    /// Results of a structure that lives on the host: each in a buffer of
    /// `level`, loaded by device ops before `after`; returns the buffers and
    /// the op to go on with.
    fn result_buffers(&mut self, op: Op, level: usize, after: Op) -> Built<(Vec<Val>, Op)> {
        let mut buffers = vec![];
        let mut first = None;
        for result in op.results() {
            let buffer = self.buffer(level, result.melior_type(), &[])?;
            first.get_or_insert(reload(result, buffer, after)?);
            buffers.push(buffer);
        }
        Ok((buffers, first.unwrap_or(after)))
    }

    /// Device ops before `before` storing `values` into `buffers` at the
    /// thread's position of the level (through `map` to the parent's).
    fn store_results(
        &self,
        values: &[Val],
        buffers: &[Val],
        map: Option<Val>,
        before: Op,
    ) -> Built<()> {
        let at = Builder::before(before);
        let mut position = at.value("pgpu.rank", &[], at.index_type(), &[])?;
        if let Some(map) = map {
            position = at.load(map, position)?;
        }
        for (value, buffer) in values.iter().zip(buffers) {
            at.store(*value, *buffer, position)?;
        }
        Ok(())
    }

    /// Runs the group region `block` as a subgroup of `parent` in the host
    /// region ending at `end`: `size` members, group id `id`, parent
    /// positions `map` (in order: the subgroup's ranks).
    #[allow(clippy::too_many_arguments)]
    fn enter_subgroup(
        &mut self,
        block: Blk,
        end: Op,
        parent: usize,
        size: Val,
        id: Val,
        map: Val,
        enclosing: Op,
    ) -> Built<()> {
        let at = Builder::before(end);
        let anchor = at.index(0)?.defining_op().ok_or(PassFailure)?;
        let index = self.levels.len();
        let whole = self.levels[parent].whole;
        self.levels.push(Level {
            size,
            id,
            parent: Some((map, parent)),
            whole,
            enclosing: Some(enclosing),
            anchor,
            end,
        });
        for inner in block.ops() {
            if !inner.is("pgpu.group.merge") {
                inner.move_before(end);
            }
        }
        let first = anchor.next().ok_or(PassFailure)?;
        self.lower_range(first, end, index)
    }

    /// `pgpu.group.split`: Figure 4 with the bookkeeping on the device.
    fn lower_split(&mut self, op: Op, level: usize, after: Op, previous: Option<Op>) -> Built<Op> {
        let at = Builder::before(op);
        let index_type = at.index_type();
        // A split on a rank range knows its sides; others compact the
        // positions of each side's flags.
        let range = self.decisions.rank_ranges.get(&op).copied();
        let compactions = match range {
            Some(_) => None,
            None => Some(self.split_flags(op, level, previous)?),
        };
        let (buffers, next) = self.result_buffers(op, level, after)?;
        let ranges = match range {
            Some(range) => Some(self.rank_range_sides(range, level, op)?),
            None => None,
        };
        let size = self.levels[level].size;
        let (taskgroup, taskgroup_end) = at.op_with_body("pgpu.taskgroup", &[], &[])?;
        let sides = Builder::before(taskgroup_end);
        for region in 0..2 {
            let Some(block) = op.entry_block(region) else {
                continue;
            };
            let map = self.buffer(level, index_type, &[])?;
            let (count, then_yield) = match (ranges, compactions) {
                (Some(ranges), _) => {
                    let (count, offset) = ranges[region];
                    self.members_in_range(&sides, count, offset, map)?
                }
                (None, Some((iota, flags))) => members_of(
                    &sides,
                    Compaction {
                        iota,
                        flags: flags[region],
                        positions: map,
                        size,
                    },
                )?,
                (None, None) => return Err(at.fail("internal error: a split without its sides")),
            };
            if let Some(merge) = block.terminator() {
                self.store_results(&merge.operands(), &buffers, Some(map), merge)?;
            }
            let id = self.levels[level].id;
            let (_, task_end) = Builder::before(then_yield).op_with_body("pgpu.task", &[], &[])?;
            self.enter_subgroup(block, task_end, level, count, id, map, taskgroup)?;
        }
        op.erase();
        Ok(next)
    }

    /// The bookkeeping of the split `op` (on a condition that is not a rank
    /// range): per-processor buffers of the positions (`0 .. size`) and of
    /// the then and else sides' flags, stored in the segment computing the
    /// condition (`previous`, if it does) or a new one.
    fn split_flags(
        &mut self,
        op: Op,
        level: usize,
        previous: Option<Op>,
    ) -> Built<(Val, [Val; 2])> {
        let at = Builder::before(op);
        let condition = op.operand(0);
        let flags = self.materialize(condition, level, op)?;
        let i1 = at.parse_type("i1")?;
        let index_type = at.index_type();
        let others = self.buffer(level, i1, &[])?;
        let iota = self.buffer(level, index_type, &[])?;
        let (end, position) = match previous {
            Some(segment) if self.home_segment(condition) == Some(segment) => {
                let end = body_end(segment)?;
                (end, self.position(segment, level, end)?)
            }
            _ => {
                let (_, end, position) = self.open_segment(op, level)?;
                (end, position)
            }
        };
        let inside = Builder::before(end);
        let flag = inside.load(flags, position)?;
        let one = inside.constant(i1, 1)?;
        let other = inside.value("arith.xori", &[flag, one], i1, &[])?;
        inside.store(other, others, position)?;
        inside.store(position, iota, position)?;
        Ok((iota, [flags, others]))
    }

    /// The sides of the rank-range split `op`: (count, first position) of the then and else sides, host values
    /// before `op`.
    fn rank_range_sides(
        &mut self,
        range: RankRange,
        level: usize,
        op: Op,
    ) -> Built<[(Val, Val); 2]> {
        let bound = range.compare.operand(range.bound);
        let bound = self.host_scalar(bound, level, op)?;
        let at = Builder::before(op);
        let index_type = at.index_type();
        let cast = if range.unsigned {
            "arith.index_castui"
        } else {
            "arith.index_cast"
        };
        let bound = if bound.melior_type() == index_type {
            bound
        } else {
            at.value(cast, &[bound], index_type, &[])?
        };
        let size = self.levels[level].size;
        let zero = at.index(0)?;
        let one = at.index(1)?;
        // The number of ranks below the threshold, `0 ..= size`.
        let split = if range.unsigned {
            // min(k, size - 1) + 1 for `<=`: k + 1 may wrap (the group has
            // members here).
            if range.plus_one {
                let last = at.value("arith.subi", &[size, one], index_type, &[])?;
                let below = at.value("arith.minui", &[bound, last], index_type, &[])?;
                at.value("arith.addi", &[below, one], index_type, &[])?
            } else {
                at.value("arith.minui", &[bound, size], index_type, &[])?
            }
        } else {
            let threshold = if range.plus_one {
                at.value("arith.addi", &[bound, one], index_type, &[])?
            } else {
                bound
            };
            let above_zero = at.value("arith.maxsi", &[threshold, zero], index_type, &[])?;
            at.value("arith.minsi", &[above_zero, size], index_type, &[])?
        };
        let rest = at.value("arith.subi", &[size, split], index_type, &[])?;
        let below = (split, zero);
        let from = (rest, split);
        Ok(if range.then_below {
            [below, from]
        } else {
            [from, below]
        })
    }

    /// The members of one side of a rank-range split: the `count`
    /// positions from `offset`, written into `positions` by a spawn.
    /// Returns the count and the end of an `scf.if` that runs when there
    /// are any.
    fn members_in_range(
        &mut self,
        at: &Builder,
        count: Val,
        offset: Val,
        positions: Val,
    ) -> Built<(Val, Op)> {
        let zero = at.index(0)?;
        let any = at.cmpi(8, count, zero)?;
        let (_, then_yield, _) = at.if_op(any, &[], false)?;
        let (fill_end, slot) = self.open_spawn(then_yield, count)?;
        let inside = Builder::before(fill_end);
        let position = inside.value("arith.addi", &[slot, offset], at.index_type(), &[])?;
        inside.store(position, positions, slot)?;
        Ok((count, then_yield))
    }

    /// `pgpu.group.fork`: a subgroup for each id `0 .. k`, its members in
    /// the parent's order (their positions compacted).
    fn lower_fork(&mut self, op: Op, level: usize, after: Op) -> Built<Op> {
        let at = Builder::before(op);
        let index_type = at.index_type();
        let i1 = at.parse_type("i1")?;
        let count = self.host_scalar(op.operand(0), level, op)?;
        let ids = self.materialize(op.operand(1), level, op)?;
        let iota = self.buffer(level, index_type, &[])?;
        let members = self.buffer(level, i1, &[])?;
        let (buffers, next) = self.result_buffers(op, level, after)?;
        self.define_skipped_results(op, level, &buffers)?;
        let zero = at.index(0)?;
        let one = at.index(1)?;
        let size = self.levels[level].size;
        let block = op
            .entry_block(0)
            .ok_or_else(|| at.fail("pgpu.group.fork without a body"))?;
        // for (g = 0; g < k; g++), each subgroup a task
        let (taskgroup, taskgroup_end) = at.op_with_body("pgpu.taskgroup", &[], &[])?;
        let tasks = Builder::before(taskgroup_end);
        let (_, group, end) = tasks.for_loop(zero, count, one)?;
        // Members of subgroup g, in position order.
        let (_, segment_end, position) = self.open_segment(end, level)?;
        let inside = Builder::before(segment_end);
        let id = inside.load(ids, position)?;
        let same = inside.cmpi(0, id, group)?;
        inside.store(same, members, position)?;
        inside.store(position, iota, position)?;
        // Their parent positions: the subgroup's ranks in order, in a
        // buffer of this subgroup's own (the next one's compaction runs on
        // the parent's stream while this one's task may still run on its
        // own), which the task frees when it ends.
        let at_end = Builder::before(end);
        let positions = self.unfreed_buffer(&at_end, level, index_type, &[])?;
        let none = at_end.index(0)?;
        let compaction = Compaction {
            iota,
            flags: members,
            positions,
            size,
        };
        let found = compaction.build(&at_end, none)?;
        let any = at_end.cmpi(8, found, none)?;
        let (_, then_yield, else_yield) = at_end.if_op(any, &[], true)?;
        let else_yield = else_yield.ok_or(PassFailure)?;
        Builder::before(else_yield).dealloc(positions)?;
        if let Some(merge) = block.terminator() {
            self.store_results(&merge.operands(), &buffers, Some(positions), merge)?;
        }
        let (_, task_end) = Builder::before(then_yield).op_with_body("pgpu.task", &[], &[])?;
        self.enter_subgroup(block, task_end, level, found, group, positions, taskgroup)?;
        Builder::before(task_end).dealloc(positions)?;
        op.erase();
        Ok(next)
    }

    /// A member whose fork id is outside `0 .. k` runs no subgroup, and its
    /// results of `fork` are undefined (the front end keeps its values from
    /// before). Zeros in its slots of the result `buffers`, stored where
    /// the ids are computed, keep later reads of them off uninitialized
    /// memory.
    fn define_skipped_results(&mut self, fork: Op, level: usize, buffers: &[Val]) -> Built<()> {
        if buffers.is_empty() {
            return Ok(());
        }
        let segment = match self.home_segment(fork.operand(1)) {
            Some(home) if self.segments[&home] == level => home,
            _ => self.open_segment(fork, level)?.0,
        };
        let end = body_end(segment)?;
        let position = self.position(segment, level, end)?;
        for (result, buffer) in fork.results().into_iter().zip(buffers) {
            let zero = zero_of(&Builder::before(end), result.melior_type())?;
            self.store_imported(segment, position, zero, *buffer)?;
        }
        Ok(())
    }

    /// A plain spawn of `count` threads before `before` (bookkeeping): its
    /// body's end and the thread's rank.
    fn open_spawn(&mut self, before: Op, count: Val) -> Built<(Op, Val)> {
        let at = Builder::before(before);
        let (_, end) = at.op_with_body("pgpu.spawn", &[count], &[])?;
        let rank = Builder::before(end).value("pgpu.rank", &[], at.index_type(), &[])?;
        Ok((end, rank))
    }

    /// Carried values (`inits[i]` entering, `yields[i]` fed back) that stay
    /// host values: they start as host values and change by host
    /// computations of such values.
    fn uniform_carried(
        &self,
        context: Op,
        args: &[Val],
        inits: &[Val],
        yields: &[Val],
    ) -> Vec<bool> {
        let mut uniform: Vec<bool> = inits
            .iter()
            .map(|init| self.is_host_value(*init) && self.home_segment(*init).is_none())
            .collect();
        loop {
            let assumed: Vec<Val> = args
                .iter()
                .zip(&uniform)
                .filter(|(_, keep)| **keep)
                .map(|(arg, _)| *arg)
                .collect();
            let next: Vec<bool> = uniform
                .iter()
                .zip(yields)
                .map(|(keep, value)| *keep && self.is_host_computable(*value, &assumed, context))
                .collect();
            if next == uniform {
                return uniform;
            }
            uniform = next;
        }
    }

    /// Demotes a loop-carried value that differs between members to a new
    /// buffer of `level` (returned): the loop carries poison in its place
    /// (operand `init` of `op`, operand `fed_back` of `terminator`), the
    /// block argument `arg` becomes a load at the start of `block`, and the
    /// value fed back a store before `terminator`. The caller stores the
    /// initial value before the loop.
    #[allow(clippy::too_many_arguments)]
    fn demote_carried(
        &mut self,
        level: usize,
        op: Op,
        init: usize,
        arg: Val,
        block: Blk,
        terminator: Op,
        fed_back: usize,
    ) -> Built<Val> {
        let ty = arg.melior_type();
        let buffer = self.buffer(level, ty, &[])?;
        op.set_operand(init, Builder::before(op).poison(ty)?);
        Self::load_at_start(arg, buffer, block)?;
        let end = Builder::before(terminator);
        let position = end.value("pgpu.rank", &[], end.index_type(), &[])?;
        end.store(terminator.operand(fed_back), buffer, position)?;
        terminator.set_operand(fed_back, end.poison(ty)?);
        Ok(buffer)
    }

    /// Demotes the carried value: the block argument `arg` becomes a load
    /// of `buffer` at the start of its block.
    fn load_at_start(arg: Val, buffer: Val, block: Blk) -> Built<()> {
        reload(arg, buffer, block.first().ok_or(PassFailure)?).map(|_| ())
    }

    /// A host structure whose carried values are demoted where they differ
    /// between members: `inits` (operand indices of `op`) are stored before
    /// `op`; yields are stored before each terminator.
    fn store_before(
        &mut self,
        values: &[Val],
        buffers: &[Val],
        level: usize,
        before: Op,
    ) -> Built<()> {
        if values.is_empty() {
            return Ok(());
        }
        let (segment, _, position) = self.open_segment(before, level)?;
        for (value, buffer) in values.iter().zip(buffers) {
            self.store_imported(segment, position, *value, *buffer)?;
        }
        Ok(())
    }

    /// A multiprefix on locations that may differ between members. When
    /// they turn out the same at run time (a reduction of the indices on
    /// the device: quicksort's `mpadd(&count[lo], ...)` with `lo` the
    /// group's), a segment does it as on one location (a rank-order scan);
    /// otherwise one thread goes through the members in rank (position)
    /// order, each getting the location's value before adding its own.
    fn lower_multiprefix(&mut self, op: Op, level: usize, after: Op) -> Built<Op> {
        let at = Builder::before(op);
        let (base, index, offset) = *self
            .locations
            .get(&op)
            .ok_or_else(|| at.fail("internal error: a multiprefix location"))?;
        if offset.is_some_and(|offset| {
            !self.is_host_value(offset) || self.home_segment(offset).is_some()
        }) {
            return Err(at.fail(
                "the native backends do not compile a multiprefix on a cell of a view that differs between members yet; run the program with `pgpu run --interpret`",
            ));
        }
        let combine =
            combine_op(op).ok_or_else(|| at.fail("a multiprefix of this kind and type"))?;
        let kind = op
            .melior()
            .attribute("kind")
            .map_err(|_| at.fail("a multiprefix without a kind"))?;
        let operands = self.materialize_all(&[op.operand(0), index], level, op)?;
        let (values, indices) = (operands[0], operands[1]);
        let (results, next) = self.result_buffers(op, level, after)?;
        let index_type = at.index_type();
        let size = self.levels[level].size;
        let i32_type = at.parse_type("i32")?;
        let reduce = |combining: i64| -> Built<Val> {
            let kind = melior::ir::attribute::IntegerAttribute::new(i32_type, combining).into();
            at.value(
                "pgpu.list.reduce",
                &[indices, size],
                index_type,
                &[("kind", kind)],
            )
        };
        let (low, high) = (reduce(2)?, reduce(3)?);
        let same = at.cmpi(0, low, high)?;
        let one = at.index(1)?;
        let (_, uniform_end, spread_end) = at.if_op(same, &[], true)?;
        let spread_end = spread_end.ok_or(PassFailure)?;
        // One location: a segment of the group.
        let (_, segment_end, position) = self.open_segment(uniform_end, level)?;
        let inside = Builder::before(segment_end);
        let mut element = low;
        if let Some(offset) = offset {
            element = inside.value("arith.addi", &[element, offset], index_type, &[])?;
        }
        let value = inside.load(values, position)?;
        let ty = value.melior_type();
        let prefix = inside.value(
            "pgpu.multiprefix",
            &[value, base, element],
            ty,
            &[("kind", kind)],
        )?;
        inside.store(prefix, results[0], position)?;
        // Several: one thread in rank order.
        let (spawn_end, _) = self.open_spawn(spread_end, one)?;
        let inside = Builder::before(spawn_end);
        let zero = inside.index(0)?;
        let (_, member, end) = inside.for_loop(zero, size, one)?;
        let step_at = Builder::before(end);
        let mut element = step_at.load(indices, member)?;
        if let Some(offset) = offset {
            element = step_at.value("arith.addi", &[element, offset], index_type, &[])?;
        }
        let value = step_at.load(values, member)?;
        let old = step_at.value("memref.load", &[base, element], ty, &[])?;
        step_at.store(old, results[0], member)?;
        let new = step_at.value(combine, &[old, value], ty, &[])?;
        step_at.op("memref.store", &[new, base, element], &[], &[])?;
        op.erase();
        Ok(next)
    }

    /// A call of a synchronous function: the group calls its host version
    /// (see [`lower_function`]) with its size, id and the outermost group's
    /// size, the uniform arguments' host values and per-processor buffers
    /// of the others and the results.
    fn lower_call(&mut self, op: Op, level: usize, after: Op) -> Built<Op> {
        let at = Builder::before(op);
        let callee = crate::inline_spmd::symbol_attribute(op, "callee")
            .ok_or_else(|| at.fail(&format!("internal error: {} as a call", op.name())))?;
        // Uniform parameters take host values, the others buffers.
        let uniform = self.decisions.uniform_parameters.get(&callee).cloned();
        let is_uniform = |index: usize| {
            uniform
                .as_ref()
                .is_some_and(|uniform| uniform.get(index) == Some(&true))
        };
        let operands = op.operands();
        let divergent: Vec<Val> = operands
            .iter()
            .enumerate()
            .filter(|(index, _)| !is_uniform(*index))
            .map(|(_, value)| *value)
            .collect();
        let mut buffers = self.materialize_all(&divergent, level, op)?.into_iter();
        let level_data = &self.levels[level];
        let mut call_operands = vec![level_data.size, level_data.id, level_data.whole];
        for (index, value) in operands.into_iter().enumerate() {
            if is_uniform(index) {
                call_operands.push(self.host_scalar(value, level, op)?);
            } else {
                call_operands.push(buffers.next().ok_or(PassFailure)?);
            }
        }
        let mut operands = call_operands;
        let (buffers, next) = self.result_buffers(op, level, after)?;
        operands.extend(buffers);
        let symbol = at.parse_attribute(&format!("@{}", group_function_name(&callee)))?;
        at.op("func.call", &operands, &[], &[("callee", symbol)])?;
        op.erase();
        Ok(next)
    }

    fn lower_if(&mut self, op: Op, level: usize, after: Op) -> Built<Op> {
        let condition = self.host_scalar(op.operand(0), level, op)?;
        op.set_operand(0, condition);
        let (buffers, next) = self.result_buffers(op, level, after)?;
        for region in 0..2 {
            let Some(block) = op.entry_block(region) else {
                continue;
            };
            let terminator = block.terminator().ok_or(PassFailure)?;
            let yielded = terminator.operands();
            self.store_results(&yielded, &buffers, None, terminator)?;
            let at = Builder::before(terminator);
            for (index, value) in yielded.iter().enumerate() {
                let poison = at.poison(value.melior_type())?;
                terminator.set_operand(index, poison);
            }
            let first = block.first().ok_or(PassFailure)?;
            self.lower_range(first, terminator, level)?;
        }
        Ok(next)
    }

    fn lower_for(&mut self, op: Op, level: usize, after: Op) -> Built<Op> {
        for index in 0..3 {
            let bound = self.host_scalar(op.operand(index), level, op)?;
            op.set_operand(index, bound);
        }
        let block = op.entry_block(0).ok_or(PassFailure)?;
        let terminator = block.terminator().ok_or(PassFailure)?;
        let args = block.arguments()[1..].to_vec();
        let inits = op.operands()[3..].to_vec();
        let yields = terminator.operands();
        let uniform = self.uniform_carried(op, &args, &inits, &yields);
        let mut demoted = (vec![], vec![]);
        for (index, keep) in uniform.iter().enumerate() {
            if *keep {
                continue;
            }
            let buffer =
                self.demote_carried(level, op, 3 + index, args[index], block, terminator, index)?;
            demoted.0.push(inits[index]);
            demoted.1.push(buffer);
            reload(op.result(index), buffer, after)?;
        }
        self.store_before(&demoted.0, &demoted.1, level, op)?;
        let first = block.first().ok_or(PassFailure)?;
        self.lower_range(first, terminator, level)?;
        op.next().ok_or(PassFailure)
    }

    fn lower_while(&mut self, op: Op, level: usize, after: Op) -> Built<Op> {
        let (Some(before), Some(body)) = (op.entry_block(0), op.entry_block(1)) else {
            return Err(Builder::before(op).fail("scf.while without its regions"));
        };
        let condition = before.terminator().ok_or(PassFailure)?;
        let yield_op = body.terminator().ok_or(PassFailure)?;
        // Before-region arguments are entered by the inits and the yields,
        // after-region arguments by what the condition forwards.
        let args = before.arguments();
        let inits = op.operands();
        let yields = yield_op.operands();
        let forwarded = condition.operands()[1..].to_vec();
        let body_args = body.arguments();
        let mut uniform: Vec<bool> = inits.iter().map(|init| self.is_host_value(*init)).collect();
        let mut uniform_after = vec![true; forwarded.len()];
        let assumed_of = |uniform: &[bool], uniform_after: &[bool]| -> Vec<Val> {
            let kept = args.iter().zip(uniform).filter(|(_, keep)| **keep);
            let kept_after = body_args
                .iter()
                .zip(uniform_after)
                .filter(|(_, keep)| **keep);
            kept.chain(kept_after).map(|(arg, _)| *arg).collect()
        };
        loop {
            let assumed = assumed_of(&uniform, &uniform_after);
            let next: Vec<bool> = uniform
                .iter()
                .zip(&yields)
                .map(|(keep, value)| *keep && self.is_host_computable(*value, &assumed, op))
                .collect();
            let next_after: Vec<bool> = uniform_after
                .iter()
                .zip(&forwarded)
                .map(|(keep, value)| *keep && self.is_host_computable(*value, &assumed, op))
                .collect();
            if next == uniform && next_after == uniform_after {
                break;
            }
            uniform = next;
            uniform_after = next_after;
        }
        let assumed = assumed_of(&uniform, &uniform_after);
        let mut demoted = (vec![], vec![]);
        for (index, keep) in uniform.iter().enumerate() {
            if *keep {
                continue;
            }
            let buffer =
                self.demote_carried(level, op, index, args[index], before, yield_op, index)?;
            demoted.0.push(inits[index]);
            demoted.1.push(buffer);
        }
        self.store_before(&demoted.0, &demoted.1, level, op)?;
        // After-region arguments and results that differ between members.
        let mut first_after = None;
        for (index, value) in forwarded.iter().enumerate() {
            if uniform_after[index] {
                continue;
            }
            let ty = value.melior_type();
            let buffer = self.buffer(level, ty, &[])?;
            let end = Builder::before(condition);
            // The operand now (a demoted argument became a load).
            let value = condition.operand(index + 1);
            end.store(
                value,
                buffer,
                end.value("pgpu.rank", &[], end.index_type(), &[])?,
            )?;
            condition.set_operand(index + 1, end.poison(ty)?);
            Self::load_at_start(body.arguments()[index], buffer, body)?;
            first_after.get_or_insert(reload(op.result(index), buffer, after)?);
        }
        // The condition: uniform, computed on the host or read back.
        let test = condition.operand(0);
        if !self.is_host_computable(test, &assumed, op) {
            let ty = test.melior_type();
            let buffer = self.buffer(level, ty, &[])?;
            let end = Builder::before(condition);
            end.store(
                test,
                buffer,
                end.value("pgpu.rank", &[], end.index_type(), &[])?,
            )?;
            let zero = end.index(0)?;
            let unit = end.unit_attribute();
            let read = end.value("memref.load", &[buffer, zero], ty, &[(HOST_READ, unit)])?;
            condition.set_operand(0, read);
        }
        let first = before.first().ok_or(PassFailure)?;
        self.lower_range(first, condition, level)?;
        let first = body.first().ok_or(PassFailure)?;
        self.lower_range(first, yield_op, level)?;
        Ok(first_after.unwrap_or(after))
    }
}

/// The location of a multiprefix as a list the same in all members, an
/// index that may differ, and an extra index: `%list[%i]`, or the front
/// end's `&list[i]` (a view of `list` at offset `i`, indexed by a constant).
fn multiprefix_location(op: Op, scope: Op) -> Option<(Val, Val, Option<Val>)> {
    let memref = op.operand(1);
    let indices = &op.operands()[2..];
    if indices.len() != 1 {
        return None;
    }
    if is_same_everywhere(memref, scope) {
        return Some((memref, indices[0], None));
    }
    let view = memref
        .defining_op()
        .filter(|view| view.is("memref.reinterpret_cast"))?;
    let metadata = view
        .operand(0)
        .defining_op()
        .filter(|metadata| metadata.is("memref.extract_strided_metadata"))?;
    let list = metadata
        .operand(0)
        .defining_op()
        .filter(|cast| cast.is("memref.cast"))?
        .operand(0);
    let sum = view
        .operand(1)
        .defining_op()
        .filter(|sum| sum.is("arith.addi"))?;
    if sum.operand(0) != metadata.result(1) {
        return None;
    }
    // An identity layout: the view's offset is the element index.
    let list_type = list.melior_type().to_string();
    let plain = list_type.starts_with("memref<") && !list_type.contains(',');
    (plain
        && is_same_everywhere(list, scope)
        && MemRefType::try_from(list.melior_type()).ok()?.rank() == 1)
        .then_some((list, sum.operand(1), Some(indices[0])))
}

/// Replaces the synchronous spawn `spawn` by host code launching its
/// segments.
fn lower_spawn(spawn: Op, decisions: &Decisions) -> Built<()> {
    let mut lowering = Lowering::new(decisions);
    lowering.plan(spawn);
    // A group without members runs nothing (and has no position 0 to read
    // uniform values back from).
    let outside = Builder::before(spawn);
    let zero = outside.index(0)?;
    let any = outside.cmpi(8, spawn.operand(0), zero)?;
    let (_, then_yield, _) = outside.if_op(any, &[], false)?;
    spawn.move_before(then_yield);
    let at = Builder::before(spawn);
    let anchor = at.index(0)?.defining_op().ok_or(PassFailure)?;
    let id = at.index(0)?;
    let Some(body) = spawn.entry_block(0) else {
        return Err(at.fail("pgpu.spawn without a body"));
    };
    for op in body.ops() {
        if !op.is("pgpu.yield") {
            op.move_before(spawn);
        }
    }
    lowering.lower_outermost(Level {
        size: spawn.operand(0),
        id,
        parent: None,
        whole: spawn.operand(0),
        enclosing: None,
        anchor,
        end: spawn,
    })?;
    let function = spawn.enclosing_function();
    spawn.erase();
    if let Some(function) = function {
        unmark(function);
    }
    Ok(())
}

/// The zero of a scalar type (an integer, index or float type).
fn zero_of<'c>(at: &Builder<'c>, ty: Type<'c>) -> Built<Val> {
    let text = ty.to_string();
    if text.starts_with('f') || text.starts_with("bf") {
        let attribute = at.parse_attribute(&format!("0.0 : {text}"))?;
        return at.value("arith.constant", &[], ty, &[("value", attribute)]);
    }
    at.constant(ty, 0)
}

/// Whether the host can compute `op` from its operands' host values when
/// its results are uniform: pure scalar arithmetic, and the views of a
/// memref (a pointer passed to a synchronous function, a cell's address).
/// A view must not be read back from a device buffer instead: the device
/// stored device addresses in it.
fn host_can_recompute(op: Op) -> bool {
    let name = op.name();
    let dialect = name.split('.').next().unwrap_or("");
    op.num_regions() == 0
        && (matches!(dialect, "arith" | "math" | "index")
            || matches!(
                name.as_str(),
                "memref.cast"
                    | "memref.reinterpret_cast"
                    | "memref.subview"
                    | "memref.extract_strided_metadata"
                    | "memref.dim"
                    | "memref.get_global"
            ))
}

/// Whether a segment's op only reads memory and always ends.
fn is_read_only(name: &str) -> bool {
    let dialect = name.split('.').next().unwrap_or("");
    matches!(dialect, "arith" | "math" | "index")
        || matches!(
            name,
            "memref.load"
                | "memref.dim"
                | "memref.cast"
                | "memref.get_global"
                | "scf.if"
                | "scf.for"
                | "scf.yield"
                | "pgpu.yield"
                | "pgpu.rank"
                | "pgpu.size"
                | "pgpu.group.rank"
                | "pgpu.group.size"
                | "pgpu.group.id"
        )
}

/// The host version of a synchronous function takes the group's size and
/// id and the outermost group's size, then the arguments.
const FIRST_ARGUMENT: usize = 3;

/// Warp schedulers per multiprocessor (4 on every CUDA GPU since Maxwell):
/// a splitting group runs in one block only when the outermost group has
/// at least this many members per multiprocessor ([`run_in_one_block`]).
const WARP_SCHEDULERS_PER_MULTIPROCESSOR: i64 = 4;

/// The host version of the synchronous function `name`.
fn group_function_name(name: &str) -> String {
    format!("__group_{name}")
}

/// Replaces the synchronous function `function` by its host version: it
/// takes the calling group's size and id, the outermost group's size, each
/// uniform argument
/// as a host value and each other argument and each result as a
/// per-processor buffer, and runs its body as the group's host code.
fn lower_function(function: Op, decisions: &Decisions) -> Built<()> {
    let at = Builder::before(function);
    let name = crate::inline_spmd::symbol_attribute(function, "sym_name")
        .ok_or_else(|| at.fail("func.func without a name"))?;
    let old = function
        .entry_block(0)
        .ok_or_else(|| at.fail("a synchronous function without a body"))?;
    if old.next_in_region().is_some() {
        return Err(at.fail("a synchronous function of several blocks"));
    }
    let old_return = old
        .terminator()
        .filter(|op| op.is("func.return"))
        .ok_or_else(|| at.fail("a synchronous function without func.return"))?;
    let list = |ty: Type| at.parse_type(&format!("memref<?x{ty}>"));
    let index_type = at.index_type();
    let uniform = decisions
        .uniform_parameters
        .get(&name)
        .cloned()
        .unwrap_or_default();
    let is_uniform = |index: usize| uniform.get(index) == Some(&true);
    let mut types = vec![index_type, index_type, index_type];
    for (index, argument) in old.arguments().into_iter().enumerate() {
        let ty = argument.melior_type();
        types.push(if is_uniform(index) { ty } else { list(ty)? });
    }
    for result in old_return.operands() {
        types.push(list(result.melior_type())?);
    }
    let signature: Vec<String> = types.iter().map(|ty| ty.to_string()).collect();
    let function_type = at.parse_attribute(&format!("({}) -> ()", signature.join(", ")))?;
    let symbol = at.parse_attribute(&format!("\"{}\"", group_function_name(&name)))?;
    let region = Region::new();
    let arguments: Vec<_> = types.iter().map(|ty| (*ty, at.location())).collect();
    region.append_block(Block::new(&arguments));
    let host = at.op_with_regions(
        "func.func",
        &[],
        &[],
        &[("sym_name", symbol), ("function_type", function_type)],
        vec![region],
    )?;
    let block = host.entry_block(0).ok_or(PassFailure)?;
    let parameters = block.arguments();
    let new_return = at
        .at_location_of(old_return)
        .append_to(block, "func.return", &[])?;
    let mut lowering = Lowering::new(decisions);
    lowering.plan(function);
    let inside = Builder::before(new_return);
    let anchor = inside.index(0)?.defining_op().ok_or(PassFailure)?;
    // Arguments: uniform ones as they are, the others each member's own
    // from the buffers.
    let position = inside.value("pgpu.rank", &[], index_type, &[])?;
    let argument_count = old.arguments().len();
    for (index, argument) in old.arguments().into_iter().enumerate() {
        let parameter = parameters[FIRST_ARGUMENT + index];
        let value = if is_uniform(index) {
            parameter
        } else {
            inside.load(parameter, position)?
        };
        argument.replace_all_uses(value);
    }
    let results = old_return.operands();
    for op in old.ops() {
        if op != old_return {
            op.move_before(new_return);
        }
    }
    // Results: each member's own, into the buffers.
    let end = Builder::before(new_return);
    let position = end.value("pgpu.rank", &[], index_type, &[])?;
    for (index, result) in results.into_iter().enumerate() {
        end.store(
            result,
            parameters[FIRST_ARGUMENT + argument_count + index],
            position,
        )?;
    }
    // The stores hold the results now; the old return would keep uses of
    // values whose segment the lowering may erase.
    old_return.erase();
    lowering.lower_outermost(Level {
        size: parameters[0],
        id: parameters[1],
        parent: None,
        whole: parameters[2],
        enclosing: None,
        anchor,
        end: new_return,
    })?;
    if let Some(version) = crate::inline_spmd::symbol_attribute(function, BLOCK_VERSION) {
        let max_threads = function
            .integer_attribute(crate::block_groups::BLOCK_THREADS)
            .unwrap_or(i64::MAX);
        let splits = function.has_attribute(crate::block_groups::BLOCK_SPLITS);
        run_in_one_block(
            host,
            &version,
            &uniform,
            argument_count,
            max_threads,
            splits,
        )?;
    }
    unmark(host);
    Ok(())
}

/// Versions the host version `host` of a synchronous function on the
/// block capacity: a group of `1 ..= min(pgpu.block_capacity,
/// max_threads)` members runs as one
/// `pgpu.spawn block` of the block version `version` (thread = position =
/// rank, the whole block's range, slot `2 * size`), with the scratch lists
/// it needs; otherwise the host code runs.
///
/// A version that `splits` also needs the outermost group (the program's
/// processors) to have at least [`WARP_SCHEDULERS_PER_MULTIPROCESSOR`] x
/// `pgpu.multiprocessors` members. In one block, the subgroups of a split
/// share the block's warps: small ones (quicksort's leaves, one member
/// each, sorting sequentially) share one warp 32 to 1 and run one after
/// the other. On the host path every subgroup's kernels are its own, so
/// with fewer processors than the device has warp schedulers each leaf
/// runs at full speed on a scheduler of its own, and that is worth more
/// than the launches the block path saves. With more processors the
/// leaves share schedulers anyway and the saved launches win. Measured on
/// the H200 (132 multiprocessors, 528 schedulers), quicksort of 10^7
/// values: 256 processors, block path 3.5 s vs host path 1.3 s; 1024, 0.33
/// vs 0.5 s; 4608, 0.09 vs 0.29 s. The work per member decides where the
/// line lies (the same program with less data per member prefers the
/// block path earlier), and the compiler does not know it: the bound is a
/// device-relative default, and `--no-block-groups` or `--block-threads`
/// move the choice.
fn run_in_one_block(
    host: Op,
    version: &str,
    uniform: &[bool],
    argument_count: usize,
    max_threads: i64,
    splits: bool,
) -> Built<()> {
    let block = host.entry_block(0).ok_or(PassFailure)?;
    let parameters = block.arguments();
    let first = block.first().ok_or(PassFailure)?;
    let at = Builder::before(first);
    let Some(version_op) = crate::unsynchronized::module_function(host, version) else {
        return Err(at.fail(&format!("internal error: no function @{version}")));
    };
    let index_type = at.index_type();
    let i1 = at.parse_type("i1")?;
    let size = parameters[0];
    let capacity = at.value("pgpu.block_capacity", &[], index_type, &[])?;
    let bound = at.index(max_threads)?;
    let capacity = at.value("arith.minui", &[capacity, bound], index_type, &[])?;
    let zero = at.index(0)?;
    let some = at.cmpi(8, size, zero)?;
    let fits = at.cmpi(7, size, capacity)?;
    let mut fits = at.value("arith.andi", &[some, fits], i1, &[])?;
    if splits {
        let multiprocessors = at.value("pgpu.multiprocessors", &[], index_type, &[])?;
        let schedulers = at.index(WARP_SCHEDULERS_PER_MULTIPROCESSOR)?;
        let schedulers = at.value(
            "arith.muli",
            &[multiprocessors, schedulers],
            index_type,
            &[],
        )?;
        let crowded = at.cmpi(9, parameters[2], schedulers)?;
        fits = at.value("arith.andi", &[fits, crowded], i1, &[])?;
    }
    let (branch, then_yield, else_yield) = at.if_op(fits, &[], true)?;
    let else_yield = else_yield.ok_or(PassFailure)?;
    let terminator = block.terminator().ok_or(PassFailure)?;
    let mut moving = false;
    for op in block.ops() {
        if op == terminator {
            break;
        }
        if moving {
            op.move_before(else_yield);
        }
        moving |= op == branch;
    }
    let inside = Builder::before(then_yield);
    let scratch: Vec<Val> = crate::block_groups::scratch_types(version_op)
        .into_iter()
        .map(|element| inside.alloc(element, size))
        .collect::<Built<_>>()?;
    let two = inside.index(2)?;
    let slot = inside.value("arith.muli", &[size, two], index_type, &[])?;
    let unit = inside.unit_attribute();
    let (spawn, end) = inside.op_with_body("pgpu.spawn", &[size], &[("block", unit)])?;
    for list in &scratch {
        inside.dealloc(*list)?;
    }
    let body = inside.moved_to(end);
    let thread = body.value("pgpu.rank", &[], index_type, &[])?;
    let mut operands = vec![];
    for index in 0..argument_count {
        let parameter = parameters[FIRST_ARGUMENT + index];
        operands.push(if uniform.get(index) == Some(&true) {
            parameter
        } else {
            body.load(parameter, thread)?
        });
    }
    operands.extend([parameters[1], thread, zero, size, slot]);
    operands.extend(&scratch);
    let version_parameters = version_op.entry_block(0).ok_or(PassFailure)?.arguments();
    let globals = crate::block_groups::global_names(version_op);
    let first_global = version_parameters.len() - globals.len();
    for (name, parameter) in globals.iter().zip(&version_parameters[first_global..]) {
        operands.push(body.value(
            "memref.get_global",
            &[],
            parameter.melior_type(),
            &[("name", body.parse_attribute(&format!("@{name}"))?)],
        )?);
    }
    let result_buffers = &parameters[FIRST_ARGUMENT + argument_count..];
    let types: Vec<Type> = result_buffers
        .iter()
        .map(|buffer| crate::build::memref_element_type(*buffer))
        .collect::<Built<_>>()?;
    let symbol = body.parse_attribute(&format!("@{version}"))?;
    let call = body.op("func.call", &operands, &types, &[("callee", symbol)])?;
    for (result, buffer) in call.results().into_iter().zip(result_buffers) {
        body.store(result, *buffer, thread)?;
    }
    let _ = spawn;
    Ok(())
}

/// The positions whose `flags` are set, in order, compacted into
/// `positions` on the device (`iota` holds `0 .. size`).
#[derive(Clone, Copy)]
struct Compaction {
    iota: Val,
    flags: Val,
    positions: Val,
    size: Val,
}

impl Compaction {
    /// The compaction at `at`, from `base` of the positions buffer;
    /// returns `base` plus the count.
    fn build(self, at: &Builder, base: Val) -> Built<Val> {
        at.value(
            "pgpu.list.compact",
            &[self.iota, self.flags, self.positions, self.size, base],
            at.index_type(),
            &[],
        )
    }
}

/// The members `compact` finds; returns their count and the end of an
/// `scf.if` that runs when there are any.
fn members_of(at: &Builder, compact: Compaction) -> Built<(Val, Op)> {
    let zero = at.index(0)?;
    let count = compact.build(at, zero)?;
    let any = at.cmpi(8, count, zero)?;
    let (_, then_yield, _) = at.if_op(any, &[], false)?;
    Ok((count, then_yield))
}

/// Removes the marks of host structures left in code that stayed on the
/// device (which the native backends then report).
fn unmark(function: Op) {
    for op in function.nested() {
        op.remove_attribute(HOST_STRUCTURE);
    }
}

/// Replaces the uses of `value` by a load of `buffer` at the thread's
/// position, device ops before `before` (placed in a segment when the
/// lowering reaches them); returns the first of them.
fn reload(value: Val, buffer: Val, before: Op) -> Built<Op> {
    let at = Builder::before(before);
    let position = at.value("pgpu.rank", &[], at.index_type(), &[])?;
    let loaded = at.load(buffer, position)?;
    value.replace_all_uses(loaded);
    position.defining_op().ok_or(PassFailure)
}

/// The end of a spawn's body (its `pgpu.yield`).
fn body_end(spawn: Op) -> Built<Op> {
    spawn
        .entry_block(0)
        .and_then(Blk::terminator)
        .ok_or(PassFailure)
}

/// Rewrites the load or store `access` of a demoted cell (operand
/// `index`) to its buffer at `position`; returns the new access.
fn rewrite_cell_access(access: Op, index: usize, buffer: Val, position: Val) -> Built<Op> {
    let at = Builder::before(access);
    let operands = access.operands();
    let mut new_operands = operands[..index].to_vec();
    new_operands.push(buffer);
    new_operands.push(position);
    new_operands.extend_from_slice(&operands[index + 1..]);
    let new = if access.is("memref.load") {
        let new = at.op(
            "memref.load",
            &new_operands,
            &[access.result(0).melior_type()],
            &[],
        )?;
        access.result(0).replace_all_uses(new.result(0));
        new
    } else {
        at.op("memref.store", &new_operands, &[], &[])?
    };
    access.erase();
    Ok(new)
}

/// Whether the call `op` calls a function marked `pgpu.synchronous`.
fn calls_synchronous(op: Op) -> bool {
    callee(op).is_some_and(|function| function.has_attribute("pgpu.synchronous"))
}
