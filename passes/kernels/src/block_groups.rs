//! `pgpu-block-groups`: gives each Fork synchronous function whose whole
//! recursion can run inside one thread block a *block version*, so that a
//! group call of at most a block's threads runs as one kernel instead of a
//! launch per segment and per recursion level (seeds/fork-to-cuda.txt,
//! Section 3 runs every split through the host; its quicksort spends 31%
//! of the time in the host's group bookkeeping).
//!
//! The block version `@__block_<f>` of a synchronous function `@f` is a
//! plain function marked `pgpu.block_group`, called by every member with
//! its own arguments plus the group's context: its id, the thread's index
//! in the block, and the group's *range* of threads `first .. first +
//! count` with the `slot` of its barrier word; then one scratch list per
//! multiprefix type and every global it (or a block version it calls)
//! uses, as arguments (a kernel gets no globals of its own). The members
//! of a group are always a contiguous range of the block's threads in rank
//! order (rank = thread - first), so the code needs no rank lists:
//!
//! * the statement rules of `pgpu-lower-synchronous` (barriers before and
//!   after every shared write, `seq`, `farm`, a call that writes; Priority
//!   CRCW claims; one value from every member: the first member's store,
//!   or an atomic exchange where the elements differ) with
//!   `pgpu.range_barrier` of the group's range;
//! * a split on a uniform condition is an `scf.if`; a split on the rank
//!   against a uniform bound (`$$ < k`, as `pgpu-lower-groups` recognizes)
//!   is an `scf.if` on each member's condition whose sides run with the
//!   ranges below and from the threshold, between barriers of the parent's
//!   range. A side gets slot `2 * s` (below) or `2 * s + 1` (from) for the
//!   split at thread `s`; a side that is the whole parent keeps the
//!   parent's slot. Two ranges alive at once never split at the same
//!   thread (their parents would be nested, and the outer split separates
//!   `s - 1` from `s`), so live ranges never share a word;
//! * a call of a synchronous function calls its block version with the
//!   same context (recursion stays in the kernel, on the thread's stack);
//! * a multiprefix in `farm` or `seq` is an atomic fetch-and-op, as in
//!   `pgpu-lower-synchronous`;
//! * a multiprefix on a uniform location is a scan in the scratch list:
//!   each member stores its value at its thread, every 32nd rank folds its
//!   chunk in place, and each member folds the old value, the totals of the
//!   chunks before its own and its left neighbour's prefix (three range
//!   barriers; the last rank stores the new value, as in
//!   `pgpu-lower-synchronous`); one whose results nobody reads is an
//!   atomic update per member;
//! * group queries read the context;
//! * a shared local (`pgpu.group.alloc`, Fork's `sh int a[K];`) lives in
//!   the block's shared memory: an uninitialized `memref.global "private"
//!   @__shared_<f>_<i>` in `#gpu.address_space<workgroup>` that the block
//!   version reaches with `memref.get_global` (not an argument: kernels
//!   reach it directly). `gpu-kernel-outlining` copies it into the kernel
//!   module, where `convert-gpu-to-nvvm` makes it a `.shared` array
//!   beside the range barriers' words (`pgpu-define-range-barrier` erases
//!   the host module's copy). The Fork paper keeps shared variables in
//!   global memory because a group may span blocks
//!   (seeds/fork-to-cuda.txt, Section 3); a block version's group is one
//!   block.
//!
//! A workgroup global is one copy per block, while a shared local is a
//! fresh allocation per activation of its function. So a function with
//! shared locals gets a block version only where at most one activation
//! of it is live in a block at a time: it is not recursive (directly or
//! through other functions: the inner call would overwrite the outer's
//! arrays) and no block version calls it, directly or through other
//! functions, from inside a split on a rank range (the two sides run at
//! once and could both call it). Calls at statement level of one range
//! follow one another, and separate block spawns are separate blocks.
//! Each shared local must be statically shaped, of an element type of
//! known size, reached by all members together, and used only as the
//! memory of loads, stores, atomic updates and multiprefix cells, directly
//! or through views (`memref.reinterpret_cast`, as Fork's `mpadd(&s, v)`
//! makes, `memref.subview`, `memref.cast`), which move to workgroup memory
//! with it (a call would need the memory space in its callee's types);
//! a store to it that may conflict (which would need claims in the same
//! memory) keeps the function off the block path, as the claims of a
//! store to any memory but a global do. Last, the shared locals of a
//! function and of every function it calls, directly or not, each
//! rounded up to 16 bytes, plus the range barriers' 8196 bytes of words,
//! must fit the block's static shared memory (`shared-bytes`, 48 KiB on
//! every CUDA chip). Where these fail the function (and every caller)
//! keeps today's host path, whose shared locals are global memory; both
//! paths compute the same results.
//!
//! A function gets no block version, and its calls keep the host path of
//! `pgpu-lower-groups` only, when it (or a synchronous function it calls)
//! forks, declares shared locals that the rules above keep out of shared
//! memory, splits on a private condition that is
//! not a rank range, synchronizes under control flow that is not uniform
//! (a shrinking loop), runs a multiprefix on a location that differs
//! between members or of floats (the scan's order of additions would
//! differ from the host's), calls other functions, or has host-only code
//! (I/O, random numbers, list variables). The original function is marked
//! `pgpu.block_version = "__block_<f>"` (and `pgpu.block_splits` when its
//! block version splits into sub-ranges, itself or through a call), and
//! `pgpu-lower-groups` versions its host version on `pgpu.block_capacity`
//! (and, for one that splits, on how busy the device is).
//!
//! We write this pass because Fork's group semantics have no upstream
//! counterpart.

use crate::{
    build::{Builder, Built},
    inline_spmd::symbol_attribute,
    ir::{Blk, Op, Val},
    lower_groups::{RankRange, branch_on_uniform_condition, rank_range},
    lower_synchronous::{
        Members, Writers, as_atomic_update, as_fetch_and_op, atomic_kind, combine_op, common_write,
        farm, fetch_and_op_kind, first_member_only, is_same_everywhere, resolve_conflicts,
        sequential,
    },
    offload_kernels::is_descriptor_global,
    runtime_calls::RuntimeCalls,
    uniformity::Uniformity,
    unsynchronized::{is_private_memory, is_rank_injective, module_function},
};
use melior::ir::operation::OperationLike;
use melior::ir::{
    Block, Region, RegionLike, Type, TypeLike,
    attribute::{ArrayAttribute, FlatSymbolRefAttribute, TypeAttribute},
    r#type::{MemRefType, ShapedTypeLike},
};
use pgpu_pass_infra::{Pass, PassFailure, PassOption, PassOptions};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The attribute naming a synchronous function's block version.
pub(crate) const BLOCK_VERSION: &str = "pgpu.block_version";
/// The attribute of a block version listing the globals it takes, in
/// order, after its scratch lists.
pub(crate) const BLOCK_GLOBALS: &str = "pgpu.block_globals";
/// The attribute of a block version listing the element types of its
/// scratch lists, in order, after its five context arguments.
pub(crate) const BLOCK_SCRATCH: &str = "pgpu.block_scratch";
/// The context arguments after a block version's own: id, thread, first,
/// count, slot.
pub(crate) const CONTEXT_ARGUMENTS: usize = 5;

/// The attribute of a synchronous function with a block version: the
/// largest group it runs in a block (the pass's `max-threads`).
pub(crate) const BLOCK_THREADS: &str = "pgpu.block_threads";

/// The unit attribute of a synchronous function whose block version
/// splits (itself or through a call): its subgroups would share the
/// block's multiprocessor, so `pgpu-lower-groups` runs it in a block only
/// while the device is busy with other groups.
pub(crate) const BLOCK_SPLITS: &str = "pgpu.block_splits";

/// The bytes of shared memory a block kernel's range barriers take: the
/// NVPTX backend's `@pgpu_range_barrier_words`, 2 * 1024 + 1 words of 4
/// bytes (`pgpu-define-range-barrier`).
pub(crate) const RANGE_BARRIER_BYTES: u64 = (2 * 1024 + 1) * 4;

/// The memory space of shared locals in block versions (CUDA's shared
/// memory, NVVM address space 3).
pub(crate) const WORKGROUP: &str = "#gpu.address_space<workgroup>";

/// The prefix of the workgroup globals holding block versions' shared
/// locals: `@__shared_<f>_<i>` is the `i`-th of `@f`.
const SHARED_PREFIX: &str = "__shared_";

/// The pass.
#[derive(Debug, Default)]
pub struct BlockGroups {
    max_threads: u64,
    shared_bytes: u64,
}

impl Pass for BlockGroups {
    const ARGUMENT: &'static str = "pgpu-block-groups";
    const SUMMARY: &'static str = "Give Fork synchronous functions a version that runs a whole group (and its recursion) in one thread block";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const OPTIONS: &'static [PassOption] = &[
        PassOption {
            name: "max-threads",
            description: "largest group run in one block, besides the device's block capacity: smaller groups leave more of the GPU's multiprocessors to their siblings",
            default: "256",
        },
        PassOption {
            name: "shared-bytes",
            description: "static shared memory of one block (48 KiB on every CUDA chip): a block version's shared locals and the range barriers' words must fit",
            default: "49152",
        },
    ];

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::arith(),
            DialectHandle::gpu(),
            DialectHandle::memref(),
            DialectHandle::scf(),
        ]
    }

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        let max_threads = options.parse("max-threads")?;
        if max_threads == 0 {
            return Err("max-threads must be at least 1".into());
        }
        let shared_bytes = options.parse("shared-bytes")?;
        Ok(Self {
            max_threads,
            shared_bytes,
        })
    }

    fn run(&self, module: melior::ir::OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let uniformity = Uniformity::of_module(module);
        let is_uniform = |value: Val| uniformity.is_uniform(value);
        let functions: BTreeMap<String, Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("func.func") && op.has_attribute("pgpu.synchronous"))
            .filter(|op| op.entry_block(0).is_some())
            // Versioned by an earlier run: running again changes nothing.
            .filter(|op| !op.has_attribute(BLOCK_VERSION))
            .filter_map(|op| Some((symbol_attribute(op, "sym_name")?, op)))
            .collect();
        let mut plans: BTreeMap<String, Plan> = BTreeMap::new();
        for (name, function) in &functions {
            if let Some(plan) = Plan::of(*function, &is_uniform) {
                plans.insert(name.clone(), plan);
            }
        }
        drop_callers_of_missing(&mut plans);
        // Shared locals live in the block's shared memory: one copy per
        // block, so only where one activation at a time uses it, and only
        // as much as fits beside the range barriers' words.
        for name in concurrent_shared_locals(&plans) {
            plans.remove(&name);
        }
        drop_callers_of_missing(&mut plans);
        let oversized: Vec<String> = plans
            .keys()
            .filter(|name| {
                shared_bytes(&plans, name) > self.shared_bytes.saturating_sub(RANGE_BARRIER_BYTES)
            })
            .cloned()
            .collect();
        for name in oversized {
            plans.remove(&name);
        }
        drop_callers_of_missing(&mut plans);
        if plans.is_empty() {
            return Ok(());
        }
        // Globals: each function's own and its callees'.
        loop {
            let mut changed = false;
            let snapshot: HashMap<String, BTreeMap<String, String>> = plans
                .iter()
                .map(|(name, plan)| (name.clone(), plan.globals.clone()))
                .collect();
            for plan in plans.values_mut() {
                for callee in &plan.callees {
                    for (global, ty) in &snapshot[callee] {
                        if !plan.globals.contains_key(global) {
                            plan.globals.insert(global.clone(), ty.clone());
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let scratch: BTreeSet<String> = plans
            .values()
            .flat_map(|plan| plan.scan_types.iter().cloned())
            .collect();
        let scratch: Vec<String> = scratch.into_iter().collect();
        // Splits: a function's own and its callees'.
        let mut splitting: BTreeSet<String> = plans
            .iter()
            .filter(|(_, plan)| !plan.ranges.is_empty())
            .map(|(name, _)| name.clone())
            .collect();
        loop {
            let more: Vec<String> = plans
                .iter()
                .filter(|(name, plan)| {
                    !splitting.contains(*name)
                        && plan.callees.iter().any(|callee| splitting.contains(callee))
                })
                .map(|(name, _)| name.clone())
                .collect();
            if more.is_empty() {
                break;
            }
            splitting.extend(more);
        }
        let mut built = vec![];
        for (name, plan) in &plans {
            let function = functions[name];
            let at = Builder::before(function);
            function.set_attribute(
                BLOCK_THREADS,
                at.parse_attribute(&format!("{} : i64", self.max_threads))?,
            );
            if splitting.contains(name) {
                function.set_attribute(BLOCK_SPLITS, at.unit_attribute());
            }
            built.push((build_block_function(function, name, plan, &scratch)?, plan));
        }
        let mut runtime = RuntimeCalls::new(module);
        for (version, plan) in built {
            version.lower(&mut runtime, plan, &scratch)?;
        }
        Ok(())
    }
}

/// What the pass knows of one function before it is copied.
struct Plan {
    /// Synchronous functions it calls.
    callees: BTreeSet<String>,
    /// Globals it uses (with claims of its conflicting stores): name ->
    /// type.
    globals: BTreeMap<String, String>,
    /// Element types of its multiprefix scans.
    scan_types: BTreeSet<String>,
    /// How the writers of its shared stores resolve (a store missing here
    /// writes each member's own element).
    writers: HashMap<Op, Writers>,
    /// Splits on a rank range.
    ranges: HashMap<Op, RankRange>,
    /// Its shared locals (`pgpu.group.alloc`), which the block version
    /// keeps in workgroup memory.
    shared_locals: Vec<Op>,
    /// Calls placed inside a rank-range split (their callees may run in
    /// two sub-ranges at once).
    split_callees: BTreeSet<String>,
}

impl Plan {
    /// The plan of `function`, or `None` when its own code cannot run in a
    /// block (see the module documentation).
    fn of(function: Op, is_uniform: &dyn Fn(Val) -> bool) -> Option<Self> {
        let mut plan = Plan {
            callees: BTreeSet::new(),
            globals: BTreeMap::new(),
            scan_types: BTreeSet::new(),
            writers: HashMap::new(),
            ranges: HashMap::new(),
            shared_locals: vec![],
            split_callees: BTreeSet::new(),
        };
        for op in function.nested() {
            let name = op.name();
            match name.as_str() {
                "pgpu.group.rank" | "pgpu.group.size" | "pgpu.group.id" | "pgpu.yield"
                | "pgpu.group.merge" => {}
                "pgpu.group.split" => {
                    if !at_statement_level(op, function, is_uniform) {
                        return None;
                    }
                    if !is_uniform(op.operand(0)) {
                        plan.ranges.insert(op, rank_range(op, is_uniform)?);
                    }
                }
                "pgpu.seq" | "pgpu.farm" if !at_statement_level(op, function, is_uniform) => {
                    return None;
                }
                "pgpu.seq" | "pgpu.farm" => {}
                "pgpu.barrier" => {
                    let parent = op.parent()?;
                    if !parent.is("pgpu.farm") || !at_statement_level(parent, function, is_uniform)
                    {
                        return None;
                    }
                }
                // In `farm` or `seq`: an atomic fetch-and-op.
                "pgpu.multiprefix" if in_mode(op, function) => {
                    fetch_and_op_kind(op)?;
                }
                "pgpu.multiprefix" => {
                    let ty = op.result(0).melior_type();
                    let uniform_location =
                        op.operands()[1..].iter().all(|value| is_uniform(*value));
                    if !uniform_location
                        || ty.is_float()
                        || combine_op(op).is_none()
                        || !at_statement_level(op, function, is_uniform)
                    {
                        return None;
                    }
                    if !op.result(0).uses().is_empty() || atomic_kind(op).is_none() {
                        plan.scan_types.insert(ty.to_string());
                    }
                }
                "func.call" => {
                    let callee = symbol_attribute(op, "callee")?;
                    let synchronous = crate::unsynchronized::callee(op)
                        .is_some_and(|function| function.has_attribute("pgpu.synchronous"));
                    if !synchronous || !at_statement_level(op, function, is_uniform) {
                        return None;
                    }
                    if inside_rank_split(op, function, is_uniform) {
                        plan.split_callees.insert(callee.clone());
                    }
                    plan.callees.insert(callee);
                }
                "pgpu.group.alloc" => {
                    if !at_statement_level(op, function, is_uniform)
                        || workgroup_bytes(op).is_none()
                        || !only_accessed(op.result(0))
                    {
                        return None;
                    }
                    plan.shared_locals.push(op);
                }
                "memref.get_global" => {
                    if is_descriptor_global(op.result(0)) {
                        return None;
                    }
                    let global = symbol_attribute(op, "name")?;
                    plan.globals
                        .insert(global, op.result(0).melior_type().to_string());
                }
                "memref.store" => {
                    if is_private_memory(op.operand(1), function) || in_mode(op, function) {
                        continue;
                    }
                    if !at_statement_level(op, function, is_uniform) {
                        return None;
                    }
                    let same =
                        |value: Val| is_uniform(value) || is_same_everywhere(value, function);
                    if op.operands().into_iter().all(same) {
                        plan.writers.insert(op, Writers::First);
                    } else if is_conflicting(op, function, is_uniform) {
                        // Claims need a global target (a claim global).
                        let target = op.operand(1);
                        let global = target
                            .defining_op()
                            .filter(|op| op.is("memref.get_global"))?;
                        let name = symbol_attribute(global, "name")?;
                        let target_type = MemRefType::try_from(target.melior_type()).ok()?;
                        plan.globals
                            .insert(format!("__crcw_claim_{name}"), claim_type(target_type));
                        plan.writers.insert(op, Writers::Claims);
                    } else if !is_own_element(op, function) {
                        plan.writers.insert(op, Writers::Exchange);
                    }
                }
                "memref.alloc" | "memref.dealloc" | "memref.copy" | "func.call_indirect" => {
                    return None;
                }
                _ if name.starts_with("pgpu.") => return None,
                _ => {}
            }
        }
        Some(plan)
    }
}

/// Removes, until none is left, the plans of functions that call one
/// without a plan: a function whose callee has no block version has none
/// either.
fn drop_callers_of_missing(plans: &mut BTreeMap<String, Plan>) {
    loop {
        let excluded: Vec<String> = plans
            .iter()
            .filter(|(_, plan)| {
                plan.callees
                    .iter()
                    .any(|callee| !plans.contains_key(callee))
            })
            .map(|(name, _)| name.clone())
            .collect();
        if excluded.is_empty() {
            return;
        }
        for name in excluded {
            plans.remove(&name);
        }
    }
}

/// The functions `name` calls, directly or not (itself only when it
/// recurses).
fn reachable(plans: &BTreeMap<String, Plan>, name: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut pending: Vec<&String> = plans
        .get(name)
        .map(|plan| plan.callees.iter().collect())
        .unwrap_or_default();
    while let Some(callee) = pending.pop() {
        if found.insert(callee.clone())
            && let Some(plan) = plans.get(callee)
        {
            pending.extend(&plan.callees);
        }
    }
    found
}

/// The functions with shared locals of which two activations may be live
/// in one block at once: a recursive one (the inner call would use the
/// outer's memory), and one called, directly or not, from inside a split
/// on a rank range (both sides may call it at the same time).
fn concurrent_shared_locals(plans: &BTreeMap<String, Plan>) -> Vec<String> {
    let mut split_reached: BTreeSet<String> = BTreeSet::new();
    for plan in plans.values() {
        for callee in &plan.split_callees {
            split_reached.insert(callee.clone());
            split_reached.extend(reachable(plans, callee));
        }
    }
    plans
        .iter()
        .filter(|(name, plan)| {
            !plan.shared_locals.is_empty()
                && (split_reached.contains(*name) || reachable(plans, name).contains(*name))
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// The bytes of shared memory a block kernel running the block version of
/// `name` needs for shared locals: its own and those of every function
/// it calls, directly or not.
fn shared_bytes(plans: &BTreeMap<String, Plan>, name: &str) -> u64 {
    std::iter::once(name.to_string())
        .chain(reachable(plans, name))
        .filter_map(|function| plans.get(&function))
        .flat_map(|plan| &plan.shared_locals)
        .filter_map(|alloc| workgroup_bytes(*alloc))
        .sum()
}

/// The bytes the shared local `alloc` takes in shared memory, rounded up
/// to 16 (the most an array is aligned to); `None` for an element type
/// of unknown size.
fn workgroup_bytes(alloc: Op) -> Option<u64> {
    let memref = MemRefType::try_from(alloc.result(0).melior_type()).ok()?;
    let element = crate::ir::element_bytes(&memref.element().to_string())?;
    let count = crate::ir::static_shape(&memref)?
        .into_iter()
        .try_fold(1u64, |count, size| {
            count.checked_mul(u64::try_from(size).ok()?)
        })?;
    count
        .checked_mul(u64::try_from(element).ok()?)?
        .checked_next_multiple_of(16)
}

/// The ops that make a view of a memref (their operand 0) whose memory
/// space is the source's: a moved shared local takes them along.
const VIEWS: [&str; 3] = ["memref.reinterpret_cast", "memref.subview", "memref.cast"];

/// Whether `memory` (a shared local, or a view of it) is only loaded from,
/// stored to, updated atomically, the cell of a multiprefix (Fork's
/// `mpadd(&s, v)` views a shared scalar) or viewed for such uses: uses
/// that take a memref of any memory space, so that the shared local can
/// move to workgroup memory with only its views' types changed (a call or
/// anything else would need the memory space in its own types).
fn only_accessed(memory: Val) -> bool {
    memory.uses().iter().all(|found| {
        let owner = found.owner;
        match owner.name().as_str() {
            "memref.load" => found.index == 0,
            "memref.store" | "memref.atomic_rmw" | "pgpu.multiprefix" => found.index == 1,
            name if VIEWS.contains(&name) => found.index == 0 && only_accessed(owner.result(0)),
            _ => false,
        }
    })
}

/// Gives the views of `memory` (now in workgroup memory), and theirs, the
/// workgroup memory space.
fn move_views(at: &Builder, memory: Val) -> Built<()> {
    for found in memory.uses() {
        let view = found.owner;
        if !VIEWS.contains(&view.name().as_str()) {
            continue;
        }
        let result = view.result(0);
        let text = result.melior_type().to_string();
        let Some(open) = text.strip_suffix('>') else {
            return Err(at.fail(&format!("internal error: a view of type {text}")));
        };
        result.set_type(at.parse_type(&format!("{open}, {WORKGROUP}>"))?);
        move_views(at, result)?;
    }
    Ok(())
}

/// Whether `op` lies inside a split of `function` on a rank range (a
/// condition that is not uniform).
fn inside_rank_split(op: Op, function: Op, is_uniform: &dyn Fn(Val) -> bool) -> bool {
    std::iter::successors(op.parent(), |parent| parent.parent())
        .take_while(|parent| *parent != function)
        .any(|parent| parent.is("pgpu.group.split") && !is_uniform(parent.operand(0)))
}

/// The type of the claim global of a global of `target_type`: its shape,
/// of `i32`.
pub(crate) fn claim_type(target_type: MemRefType) -> String {
    let shape = target_type.to_string();
    let element = target_type.element().to_string();
    let dims = shape
        .trim_start_matches("memref<")
        .trim_end_matches('>')
        .strip_suffix(element.as_str())
        .unwrap_or("")
        .to_string();
    format!("memref<{dims}i32>")
}

/// Whether the shared store `store` may conflict: not one element per
/// member, and of a value that may differ between members.
fn is_conflicting(store: Op, function: Op, is_uniform: &dyn Fn(Val) -> bool) -> bool {
    let value = store.operand(0);
    !is_own_element(store, function) && !is_uniform(value) && !is_same_everywhere(value, function)
}

/// Whether each member's `store` writes an element of its own.
fn is_own_element(store: Op, function: Op) -> bool {
    let indices = &store.operands()[2..];
    indices.len() == 1 && is_rank_injective(indices[0], function)
}

/// Whether `op` is inside a `pgpu.seq` or `pgpu.farm` of `function`.
fn in_mode(op: Op, function: Op) -> bool {
    std::iter::successors(op.parent(), |parent| parent.parent())
        .take_while(|parent| *parent != function)
        .any(|parent| parent.is("pgpu.seq") || parent.is("pgpu.farm"))
}

/// Whether all members of the group reach `op` together: every region
/// between it and `function` is a split's side or a branch or loop on
/// uniform values.
fn at_statement_level(op: Op, function: Op, is_uniform: &dyn Fn(Val) -> bool) -> bool {
    std::iter::successors(op.parent(), |parent| parent.parent())
        .take_while(|parent| *parent != function)
        .all(|parent| match parent.name().as_str() {
            "pgpu.group.split" => true,
            "scf.if" => is_uniform(parent.operand(0)),
            "scf.for" => parent.operands()[..3]
                .iter()
                .all(|value| is_uniform(*value)),
            "scf.while" => parent
                .entry_block(0)
                .and_then(|block| block.terminator())
                .is_some_and(|condition| is_uniform(condition.operand(0))),
            _ => false,
        })
}

/// Whether `op` needs the group's barriers or holds code that does.
fn is_statement(op: Op, function: Op) -> bool {
    match op.name().as_str() {
        "pgpu.group.split" | "pgpu.multiprefix" | "pgpu.seq" | "pgpu.farm" | "func.call" => true,
        "memref.store" => !is_private_memory(op.operand(1), function),
        "scf.if" | "scf.for" | "scf.while" => op
            .nested()
            .into_iter()
            .any(|inner| is_statement(inner, function)),
        _ => false,
    }
}

/// A group inside the block: its id, the thread running the code and the
/// group's range of threads with its barrier slot.
#[derive(Clone, Copy)]
struct Range {
    id: Val,
    thread: Val,
    first: Val,
    count: Val,
    slot: Val,
}

impl Members for Range {
    fn rank(&self, at: &Builder) -> Built<Val> {
        at.value(
            "arith.subi",
            &[self.thread, self.first],
            at.index_type(),
            &[],
        )
    }

    fn barrier(&self, at: &Builder) -> Built<()> {
        at.op(
            "pgpu.range_barrier",
            &[self.first, self.count, self.slot],
            &[],
            &[],
        )
        .map(|_| ())
    }
}

/// A block version being lowered.
struct BlockVersion {
    function: Op,
    writers: HashMap<Op, Writers>,
    ranges: HashMap<Op, RankRange>,
    /// Scratch list and accumulator cell per element type.
    scratch: HashMap<String, (Val, Val)>,
}

/// The name of the block version of `name`.
pub(crate) fn block_function_name(name: &str) -> String {
    format!("__block_{name}")
}

/// Copies `function` into its block version (not yet lowered): the
/// signature gets the context, the scratch lists and the globals.
fn build_block_function(
    function: Op,
    name: &str,
    plan: &Plan,
    scratch: &[String],
) -> Built<BlockVersion> {
    let at = Builder::before(function);
    let copy = function.clone_detached();
    // The plan's ops, carried over to the copy.
    let ops: HashMap<Op, Op> = std::iter::once(function)
        .chain(function.nested())
        .zip(std::iter::once(copy).chain(copy.nested()))
        .collect();
    let writers = plan
        .writers
        .iter()
        .map(|(op, writers)| (ops[op], *writers))
        .collect();
    let ranges = plan
        .ranges
        .iter()
        .map(|(split, range)| {
            (
                ops[split],
                RankRange {
                    compare: ops[&range.compare],
                    ..*range
                },
            )
        })
        .collect();
    let shared_locals: Vec<Op> = plan.shared_locals.iter().map(|op| ops[op]).collect();
    // The signature.
    let old = copy.entry_block(0).ok_or(PassFailure)?;
    let old_return = old
        .terminator()
        .filter(|op| op.is("func.return"))
        .ok_or_else(|| at.fail("a synchronous function without func.return"))?;
    let index_type = at.index_type();
    let mut types: Vec<Type> = old
        .arguments()
        .into_iter()
        .map(|argument| argument.melior_type())
        .collect();
    let own = types.len();
    types.extend([index_type; CONTEXT_ARGUMENTS]);
    for element in scratch {
        types.push(at.parse_type(&format!("memref<?x{element}>"))?);
    }
    for ty in plan.globals.values() {
        types.push(at.parse_type(ty)?);
    }
    let inputs: Vec<String> = types.iter().map(|ty| ty.to_string()).collect();
    let outputs: Vec<String> = old_return
        .operands()
        .into_iter()
        .map(|value| value.melior_type().to_string())
        .collect();
    let function_type = at.parse_attribute(&format!(
        "({}) -> ({})",
        inputs.join(", "),
        outputs.join(", ")
    ))?;
    let symbol = at.parse_attribute(&format!("\"{}\"", block_function_name(name)))?;
    let private = at.parse_attribute("\"private\"")?;
    let scratch_types: Vec<String> = scratch.to_vec();
    let scratch_attribute = at.parse_attribute(&format!("[{}]", scratch_types.join(", ")))?;
    let globals: Vec<String> = plan.globals.keys().map(|name| format!("@{name}")).collect();
    let globals_attribute = at.parse_attribute(&format!("[{}]", globals.join(", ")))?;
    let region = Region::new();
    let arguments: Vec<_> = types.iter().map(|ty| (*ty, at.location())).collect();
    region.append_block(Block::new(&arguments));
    let version = at.op_with_regions(
        "func.func",
        &[],
        &[],
        &[
            ("sym_name", symbol),
            ("function_type", function_type),
            ("sym_visibility", private),
            (BLOCK_SCRATCH, scratch_attribute),
            (BLOCK_GLOBALS, globals_attribute),
        ],
        vec![region],
    )?;
    version.set_unit_attribute("pgpu.block_group");
    let block = version.entry_block(0).ok_or(PassFailure)?;
    let parameters = block.arguments();
    let placeholder = at.append_to(block, "func.return", &[])?;
    for (argument, parameter) in old.arguments().into_iter().zip(&parameters) {
        argument.replace_all_uses(*parameter);
    }
    for op in old.ops() {
        op.move_before(placeholder);
    }
    placeholder.erase();
    copy.erase();
    for (index, alloc) in shared_locals.into_iter().enumerate() {
        place_in_workgroup_memory(alloc, &format!("{SHARED_PREFIX}{name}_{index}"))?;
    }
    function.set_attribute(
        BLOCK_VERSION,
        at.parse_attribute(&format!("\"{}\"", block_function_name(name)))?,
    );
    // Scratch lists and one accumulator cell per type, at the entry.
    let entry = Builder::before(block.first().ok_or(PassFailure)?);
    let mut scratch_values = HashMap::new();
    for (index, element) in scratch.iter().enumerate() {
        let cell_type = at.parse_type(&format!("memref<{element}>"))?;
        let segments = entry.segment_sizes(&[0, 0])?;
        let cell = entry.value(
            "memref.alloca",
            &[],
            cell_type,
            &[("operandSegmentSizes", segments)],
        )?;
        scratch_values.insert(
            element.clone(),
            (parameters[own + CONTEXT_ARGUMENTS + index], cell),
        );
    }
    Ok(BlockVersion {
        function: version,
        writers,
        ranges,
        scratch: scratch_values,
    })
}

/// Replaces the shared local `alloc` of a block version by the workgroup
/// global `@<global>` (uninitialized, as a fresh shared local), made
/// before the block version.
fn place_in_workgroup_memory(alloc: Op, global: &str) -> Built<()> {
    let at = Builder::before(alloc);
    let memref = MemRefType::try_from(alloc.result(0).melior_type())
        .map_err(|_| at.fail("internal error: a shared local that is not a memref"))?;
    let shape = crate::ir::static_shape(&memref)
        .ok_or_else(|| at.fail("internal error: a shared local of dynamic shape"))?;
    let ty: Type = MemRefType::new(
        memref.element(),
        &shape,
        None,
        Some(at.parse_attribute(WORKGROUP)?),
    )
    .into();
    let function = alloc
        .enclosing_function()
        .ok_or_else(|| at.fail("internal error: a shared local outside a function"))?;
    let module_level = Builder::before(function).at_location_of(alloc);
    module_level.op(
        "memref.global",
        &[],
        &[],
        &[
            ("sym_name", at.parse_attribute(&format!("\"{global}\""))?),
            ("sym_visibility", at.parse_attribute("\"private\"")?),
            ("type", TypeAttribute::new(ty).into()),
            ("initial_value", at.unit_attribute()),
        ],
    )?;
    let address = at.value(
        "memref.get_global",
        &[],
        ty,
        &[("name", at.parse_attribute(&format!("@{global}"))?)],
    )?;
    alloc.result(0).replace_all_uses(address);
    alloc.erase();
    move_views(&at, address)
}

/// Whether `op` takes the address of a workgroup global (a block
/// version's shared local, which kernels reach directly).
pub(crate) fn is_workgroup_global(op: Op) -> bool {
    op.is("memref.get_global") && is_workgroup_memory(op.result(0).melior_type())
}

/// Whether `ty` is a memref in workgroup memory.
pub(crate) fn is_workgroup_memory(ty: Type) -> bool {
    MemRefType::try_from(ty)
        .ok()
        .and_then(|memref| memref.memory_space())
        .is_some_and(|space| space.to_string() == WORKGROUP)
}

impl BlockVersion {
    /// Lowers the body to per-thread code with range barriers, then reads
    /// the globals from the arguments.
    fn lower(mut self, runtime: &mut RuntimeCalls, plan: &Plan, scratch: &[String]) -> Built<()> {
        let block = self.function.entry_block(0).ok_or(PassFailure)?;
        let parameters = block.arguments();
        let own = parameters.len() - CONTEXT_ARGUMENTS - scratch.len() - plan.globals.len();
        let context = &parameters[own..own + CONTEXT_ARGUMENTS];
        let range = Range {
            id: context[0],
            thread: context[1],
            first: context[2],
            count: context[3],
            slot: context[4],
        };
        self.lower_block(runtime, block, range)?;
        remove_repeated_barriers(self.function);
        // Globals (also claims made while lowering) from the arguments.
        let globals = &parameters[own + CONTEXT_ARGUMENTS + scratch.len()..];
        let names: Vec<&String> = plan.globals.keys().collect();
        for op in self.function.nested() {
            if !op.is("memref.get_global") || is_workgroup_global(op) {
                continue;
            }
            let name = symbol_attribute(op, "name").unwrap_or_default();
            let Some(index) = names.iter().position(|global| **global == name) else {
                return Err(Builder::before(op).fail(&format!(
                    "internal error: the block version does not take the global @{name}"
                )));
            };
            op.result(0).replace_all_uses(globals[index]);
            op.erase();
        }
        Ok(())
    }

    /// Lowers the statements of `block`, run by the members of `range`.
    fn lower_block(&mut self, runtime: &mut RuntimeCalls, block: Blk, range: Range) -> Built<()> {
        for op in block.ops() {
            self.lower_op(runtime, op, range)?;
        }
        Ok(())
    }

    fn lower_op(&mut self, runtime: &mut RuntimeCalls, op: Op, range: Range) -> Built<()> {
        let at = Builder::before(op);
        let function = self.function;
        match op.name().as_str() {
            "pgpu.group.rank" | "pgpu.group.size" | "pgpu.group.id" => {
                answer_query(op, range)?;
            }
            "pgpu.group.split" => self.lower_split(runtime, op, range)?,
            "pgpu.multiprefix" => {
                // Its first barrier (after each member stored its value)
                // also ends the statements before it.
                let last = self.multiprefix(op, range)?;
                range.barrier(&after(last)?)?;
            }
            "pgpu.seq" | "pgpu.farm" => {
                answer_queries(op, range)?;
                for inner in op.nested() {
                    if inner.is("pgpu.multiprefix") {
                        as_fetch_and_op(inner)?;
                    }
                }
                for inner in op.nested() {
                    if inner.is("pgpu.barrier") {
                        range.barrier(&Builder::before(inner))?;
                        inner.erase();
                    }
                }
                // Code that only reads shared memory needs no barriers: the
                // writes before it end with one, those after it start
                // with one.
                let writes = writes_shared(op, function);
                if writes {
                    range.barrier(&at)?;
                }
                let last = if op.is("pgpu.seq") {
                    sequential(op, &range)?
                } else {
                    farm(op)?
                };
                if writes {
                    range.barrier(&after(last)?)?;
                }
            }
            "memref.store" if !is_private_memory(op.operand(1), function) => {
                range.barrier(&at)?;
                let last = match self.writers.get(&op) {
                    Some(Writers::Claims) => resolve_conflicts(runtime, function, op, &range)?,
                    Some(Writers::First) => first_member_only(op, &range)?,
                    Some(Writers::Exchange) => common_write(op)?,
                    Some(Writers::Own) | None => op,
                };
                range.barrier(&after(last)?)?;
            }
            "func.call" => {
                range.barrier(&at)?;
                let call = self.call(op, range)?;
                range.barrier(&after(call)?)?;
            }
            "scf.if" | "scf.for" | "scf.while" if is_statement(op, function) => {
                // Uniform control (checked): every member takes the same
                // path, and the statements inside synchronize as usual.
                for region in 0..op.num_regions() {
                    let mut block = op.entry_block(region);
                    while let Some(current) = block {
                        self.lower_block(runtime, current, range)?;
                        block = current.next_in_region();
                    }
                }
            }
            _ => answer_queries(op, range)?,
        }
        Ok(())
    }

    /// A split: on a uniform condition a branch, on a rank range a branch
    /// whose sides run with their own ranges, between barriers of
    /// `range`.
    fn lower_split(&mut self, runtime: &mut RuntimeCalls, split: Op, range: Range) -> Built<()> {
        let Some(rank_range) = self.ranges.get(&split).copied() else {
            let branch = branch_on_uniform_condition(split)?;
            for region in 0..2 {
                if let Some(block) = branch.entry_block(region) {
                    self.lower_block(runtime, block, range)?;
                }
            }
            return Ok(());
        };
        let at = Builder::before(split);
        // The condition compares the rank: answer that query first.
        let compare = rank_range.compare;
        for operand in compare.operands() {
            if let Some(query) = crate::unsynchronized::strip_casts(operand).defining_op()
                && query.is("pgpu.group.rank")
            {
                answer_query(query, range)?;
            }
        }
        range.barrier(&at)?;
        let threshold = threshold(&at, rank_range, range.count)?;
        let index_type = at.index_type();
        let split_at = at.value("arith.addi", &[range.first, threshold], index_type, &[])?;
        let rest = at.value("arith.subi", &[range.count, threshold], index_type, &[])?;
        // A proper split (both sides non-empty) gives its sides words of
        // their own.
        let zero = at.index(0)?;
        let some_below = at.cmpi(8, threshold, zero)?;
        let some_above = at.cmpi(6, threshold, range.count)?;
        let proper = at.value(
            "arith.andi",
            &[some_below, some_above],
            at.parse_type("i1")?,
            &[],
        )?;
        let two = at.index(2)?;
        let one = at.index(1)?;
        let below_word = at.value("arith.muli", &[split_at, two], index_type, &[])?;
        let above_word = at.value("arith.addi", &[below_word, one], index_type, &[])?;
        let select =
            |word: Val| at.value("arith.select", &[proper, word, range.slot], index_type, &[]);
        let below = Range {
            count: threshold,
            slot: select(below_word)?,
            ..range
        };
        let above = Range {
            first: split_at,
            count: rest,
            slot: select(above_word)?,
            ..range
        };
        let (then_range, else_range) = if rank_range.then_below {
            (below, above)
        } else {
            (above, below)
        };
        let branch = branch_on_uniform_condition(split)?;
        for (region, side) in [(0, then_range), (1, else_range)] {
            if let Some(block) = branch.entry_block(region) {
                self.lower_block(runtime, block, side)?;
            }
        }
        range.barrier(&after(branch)?)?;
        Ok(())
    }

    /// A call of a synchronous function: its block version, with the
    /// caller's context, scratch lists and the callee's globals.
    fn call(&mut self, call: Op, range: Range) -> Built<Op> {
        let at = Builder::before(call);
        let callee = symbol_attribute(call, "callee").ok_or(PassFailure)?;
        let version = block_function_name(&callee);
        let mut operands = call.operands();
        operands.extend([range.id, range.thread, range.first, range.count, range.slot]);
        let parameters = self.function.entry_block(0).ok_or(PassFailure)?.arguments();
        let own_globals = global_names(self.function);
        // The scratch lists: the same in every block version.
        let scratch_count = self.scratch.len();
        let first_scratch = parameters.len() - own_globals.len() - scratch_count;
        operands.extend(&parameters[first_scratch..first_scratch + scratch_count]);
        let callee_op = module_function(self.function, &version)
            .ok_or_else(|| at.fail(&format!("internal error: no block version of @{callee}")))?;
        for global in global_names(callee_op) {
            let index = own_globals
                .iter()
                .position(|name| *name == global)
                .ok_or_else(|| at.fail(&format!("internal error: @{global} not passed on")))?;
            operands.push(parameters[first_scratch + scratch_count + index]);
        }
        let types: Vec<Type> = call
            .results()
            .into_iter()
            .map(|result| result.melior_type())
            .collect();
        let symbol = at.parse_attribute(&format!("@{version}"))?;
        let new = at.op("func.call", &operands, &types, &[("callee", symbol)])?;
        for (old, new) in call.results().into_iter().zip(new.results()) {
            old.replace_all_uses(new);
        }
        call.erase();
        Ok(new)
    }

    /// A multiprefix on a location the same in all members: an atomic
    /// update when nobody reads the prefixes, else the scan of the module
    /// documentation. Returns the last op.
    fn multiprefix(&mut self, op: Op, range: Range) -> Built<Op> {
        let at = Builder::before(op);
        let combine =
            combine_op(op).ok_or_else(|| at.fail("internal error: an unsupported multiprefix"))?;
        let ty = op.result(0).melior_type();
        if let Some(update) = as_atomic_update(op)? {
            // Every member's reads of the location before it come first.
            range.barrier(&Builder::before(update))?;
            return Ok(update);
        }
        let (scratch, accumulator) = *self
            .scratch
            .get(&ty.to_string())
            .ok_or_else(|| at.fail("internal error: no scratch list for the multiprefix"))?;
        let value = op.operand(0);
        let cell = op.operands()[1..].to_vec();
        let index_type = at.index_type();
        let fold = |at: &Builder, with: Val| -> Built<()> {
            let so_far = at.value("memref.load", &[accumulator], ty, &[])?;
            let next = at.value(combine, &[so_far, with], ty, &[])?;
            at.op("memref.store", &[next, accumulator], &[], &[])?;
            Ok(())
        };
        at.store(value, scratch, range.thread)?;
        range.barrier(&at)?;
        let rank = range.rank(&at)?;
        let lane_mask = at.index(31)?;
        let chunk = at.index(32)?;
        let one = at.index(1)?;
        let zero = at.index(0)?;
        let lane = at.value("arith.andi", &[rank, lane_mask], index_type, &[])?;
        // Every 32nd rank folds its chunk in place.
        let leads = at.cmpi(0, lane, zero)?;
        let (_, lead_end, _) = at.if_op(leads, &[], false)?;
        let inside = at.moved_to(lead_end);
        let own = inside.load(scratch, range.thread)?;
        inside.op("memref.store", &[own, accumulator], &[], &[])?;
        let start = inside.value("arith.addi", &[range.thread, one], index_type, &[])?;
        let chunk_end = inside.value("arith.addi", &[range.thread, chunk], index_type, &[])?;
        let range_end = inside.value("arith.addi", &[range.first, range.count], index_type, &[])?;
        let end = inside.value("arith.minui", &[chunk_end, range_end], index_type, &[])?;
        let (_, element, loop_end) = inside.for_loop(start, end, one)?;
        let body = inside.moved_to(loop_end);
        let next = body.load(scratch, element)?;
        fold(&body, next)?;
        let folded = body.value("memref.load", &[accumulator], ty, &[])?;
        body.store(folded, scratch, element)?;
        range.barrier(&at)?;
        // Old value, chunk totals before this one, the left neighbour.
        let old = at.value("memref.load", &cell, ty, &[])?;
        at.op("memref.store", &[old, accumulator], &[], &[])?;
        let chunks = at.value("arith.divui", &[rank, chunk], index_type, &[])?;
        let (_, index, chunks_end) = at.for_loop(zero, chunks, one)?;
        let body = at.moved_to(chunks_end);
        let offset = body.value("arith.muli", &[index, chunk], index_type, &[])?;
        let start = body.value("arith.addi", &[range.first, offset], index_type, &[])?;
        let last_of_chunk = body.value("arith.addi", &[start, lane_mask], index_type, &[])?;
        let total = body.load(scratch, last_of_chunk)?;
        fold(&body, total)?;
        let inside_chunk = at.cmpi(1, lane, zero)?;
        let (_, left_end, _) = at.if_op(inside_chunk, &[], false)?;
        let left = at.moved_to(left_end);
        let neighbour = left.value("arith.subi", &[range.thread, one], index_type, &[])?;
        let prefix = left.load(scratch, neighbour)?;
        fold(&left, prefix)?;
        let result = at.value("memref.load", &[accumulator], ty, &[])?;
        range.barrier(&at)?;
        // The last rank stores the new value (its result with its value).
        let last_rank = at.value("arith.subi", &[range.count, one], index_type, &[])?;
        let is_last = at.cmpi(0, rank, last_rank)?;
        let (store_if, store_end, _) = at.if_op(is_last, &[], false)?;
        let last = at.moved_to(store_end);
        let total = last.value(combine, &[result, value], ty, &[])?;
        let mut operands = vec![total];
        operands.extend(cell);
        last.op("memref.store", &operands, &[], &[])?;
        op.result(0).replace_all_uses(result);
        op.erase();
        Ok(store_if)
    }
}

/// The names of the globals a block version takes.
pub(crate) fn global_names(function: Op) -> Vec<String> {
    let Ok(attribute) = function.melior().attribute(BLOCK_GLOBALS) else {
        return vec![];
    };
    let Ok(array) = ArrayAttribute::try_from(attribute) else {
        return vec![];
    };
    (0..array.len())
        .filter_map(|index| array.element(index).ok())
        .filter_map(|element| FlatSymbolRefAttribute::try_from(element).ok())
        .map(|symbol| symbol.value().to_string())
        .collect()
}

/// The element types of a block version's scratch lists.
pub(crate) fn scratch_types<'c>(function: Op) -> Vec<Type<'c>> {
    let Ok(attribute) = function.melior().attribute(BLOCK_SCRATCH) else {
        return vec![];
    };
    let Ok(array) = ArrayAttribute::try_from(attribute) else {
        return vec![];
    };
    (0..array.len())
        .filter_map(|index| array.element(index).ok())
        .filter_map(|element| TypeAttribute::try_from(element).ok())
        .map(|ty| ty.value())
        .collect()
}

/// A builder right after `op`.
fn after<'c>(op: Op) -> Built<Builder<'c>> {
    let next = op
        .next()
        .ok_or_else(|| Builder::before(op).fail("internal error: a statement ends its block"))?;
    Ok(Builder::before(next))
}

/// Replaces the group query `query` by the context's value.
fn answer_query(query: Op, range: Range) -> Built<()> {
    let at = Builder::before(query);
    let value = match query.name().as_str() {
        "pgpu.group.rank" => range.rank(&at)?,
        "pgpu.group.size" => range.count,
        _ => range.id,
    };
    query.result(0).replace_all_uses(value);
    query.erase();
    Ok(())
}

/// Answers the group queries nested in `op` from `range`.
fn answer_queries(op: Op, range: Range) -> Built<()> {
    for inner in op.nested() {
        if matches!(
            inner.name().as_str(),
            "pgpu.group.rank" | "pgpu.group.size" | "pgpu.group.id"
        ) {
            answer_query(inner, range)?;
        }
    }
    Ok(())
}

/// The number of ranks `0 .. count` on the lower side of the rank range
/// `split` (as an index): its bound (plus one for `<=`, `>`), clamped to
/// `0 ..= count`.
fn threshold(at: &Builder, split: RankRange, count: Val) -> Built<Val> {
    let i64_type = at.parse_type("i64")?;
    let bound = split.compare.operand(split.bound);
    let ty = bound.melior_type();
    let wide = if ty.is_index() {
        at.value("arith.index_cast", &[bound], i64_type, &[])?
    } else if crate::ir::integer_width(ty) == Some(64) {
        bound
    } else {
        let extend = if split.unsigned {
            "arith.extui"
        } else {
            "arith.extsi"
        };
        at.value(extend, &[bound], i64_type, &[])?
    };
    let wide = if split.plus_one {
        let one = at.constant(i64_type, 1)?;
        at.value("arith.addi", &[wide, one], i64_type, &[])?
    } else {
        wide
    };
    let count = at.value("arith.index_cast", &[count], i64_type, &[])?;
    let clamped = if split.unsigned {
        at.value("arith.minui", &[wide, count], i64_type, &[])?
    } else {
        let zero = at.constant(i64_type, 0)?;
        let positive = at.value("arith.maxsi", &[wide, zero], i64_type, &[])?;
        at.value("arith.minsi", &[positive, count], i64_type, &[])?
    };
    at.value("arith.index_cast", &[clamped], at.index_type(), &[])
}

/// Whether `op`'s code may write memory other than the members' own
/// cells or synchronize.
fn writes_shared(op: Op, function: Op) -> bool {
    op.nested()
        .into_iter()
        .any(|inner| match inner.name().as_str() {
            "memref.store" => !is_private_memory(inner.operand(1), function),
            "memref.atomic_rmw" | "pgpu.range_barrier" | "func.call" => true,
            _ => false,
        })
}

/// Whether `op` neither touches memory nor synchronizes: pure arithmetic
/// and address computations.
fn is_pure(op: Op) -> bool {
    let name = op.name();
    op.num_regions() == 0
        && (name.starts_with("arith.")
            || name.starts_with("index.")
            || matches!(name.as_str(), "memref.get_global" | "memref.dim"))
}

/// Removes range barriers that follow one with the same operands with
/// only pure ops in between.
fn remove_repeated_barriers(function: Op) {
    let mut erased = HashSet::new();
    for op in function.nested() {
        if !op.is("pgpu.range_barrier") || erased.contains(&op) {
            continue;
        }
        let mut next = op.next();
        while let Some(current) = next {
            next = current.next();
            if current.is("pgpu.range_barrier") && current.operands() == op.operands() {
                erased.insert(current);
                current.erase();
            } else if !is_pure(current) {
                break;
            }
        }
    }
}
