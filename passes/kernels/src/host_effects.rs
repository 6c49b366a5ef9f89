//! What code does that decides whether it may leave its place in program
//! order, for the passes that hand code to the runtime's threads
//! (`pgpu-outline-cpu-kernels`, `pgpu-outline-tasks`).
//!
//! [`Effects`] of a region op or function, callees included: whether it
//! prints, draws random numbers or reads the clock (`ordered`: its order
//! is the program's output), whether it calls a function with no body in
//! the module other than the runtime's thread-safe ones (`foreign`),
//! whether it allocates or frees temporary lists, the memory its host
//! code (not its kernels: see [`crate::outline_cpu_kernels::is_host_code`])
//! writes that it did not allocate itself (`host_writes`), and the memory
//! it reads and writes anywhere, kernels and collectives included
//! (`accesses`), by [`Place`]. [`CallGraph::new`] summarizes every
//! function of the module once, by a fixpoint over the call graph
//! (recursion included); a call maps its callee's accesses through
//! parameters to its own operands, so that a function filling a list its
//! caller allocated writes the caller's own memory.
//!
//! Memory is named by the list it belongs to ([`list_of`]): views, and the
//! LLVM descriptors and device pointers that `pgpu-offload-kernels` builds
//! for GPU kernels and collectives, lead back to the host list. A
//! [`Footprint`] holds the lists of one function that code reads and
//! writes, for comparing two pieces of code of that function.

use crate::{
    context_struct::functions_by_name,
    inline_spmd::symbol_attribute,
    ir::{Op, Val},
    memory_effects::{list_effects, may_alias},
    offload_block::{BLOCK_ENTER, RANGE_BARRIER},
    offload_grid::GRID_BARRIER,
    outline_cpu_kernels::is_host_code,
};
use melior::ir::{operation::OperationLike, r#type::MemRefType};
use std::collections::{BTreeSet, HashMap};

/// Runtime calls whose order the program's output depends on.
pub(crate) fn is_ordered_runtime_call(callee: &str) -> bool {
    callee.starts_with("pgpu_rt_printf") || callee.starts_with("pgpu_rt_rand")
}

/// The runtime's functions (`pgpu_rt_*`, and the `mgpu*` launches of
/// upstream's `gpu-to-llvm`): before `pgpu-lower-to-runtime` they access
/// no list of the program's themselves (kernels and host code do, after
/// `pgpu_rt_to_device` or `pgpu_rt_to_host`). The device functions that
/// grid and block kernels call (the NVPTX backend defines them in each
/// kernel module: barriers on words of their own) count as such.
fn is_runtime_call(callee: &str) -> bool {
    callee.starts_with("pgpu_rt_")
        || callee.starts_with("mgpu")
        || [GRID_BARRIER, RANGE_BARRIER, BLOCK_ENTER].contains(&callee)
}

/// Runtime functions that may run on any thread, in any order: all but
/// printing, random numbers and the clock.
fn is_thread_safe_runtime_call(callee: &str) -> bool {
    is_runtime_call(callee)
        && !is_ordered_runtime_call(callee)
        && !callee.starts_with("pgpu_rt_wtime")
}

/// pgpu ops of host I/O that `pgpu-lower-to-runtime` has not lowered yet
/// and whose order is the program's.
fn is_ordered_op(name: &str) -> bool {
    matches!(
        name,
        "pgpu.printf" | "pgpu.rand_u32" | "pgpu.rand_seed" | "pgpu.wtime"
    )
}

/// Ops that allocate the memory they return.
fn is_allocation(op: Op) -> bool {
    matches!(
        op.name().as_str(),
        "memref.alloc"
            | "memref.alloca"
            | "pgpu.dnew"
            | "pgpu.dtempnew"
            | "llvm.alloca"
            | "gpu.alloc"
    )
}

/// The list (memref or pointer) whose memory `value` addresses: through
/// views, pointer arithmetic and casts, and the LLVM descriptors and
/// device pointers of `pgpu-offload-kernels`
/// (`builtin.unrealized_conversion_cast`, `llvm.extractvalue`, the
/// pointers `llvm.insertvalue` puts in fields 0 and 1, `pgpu_rt_to_device`)
/// back to the host list.
pub(crate) fn list_of(value: Val) -> Val {
    let mut current = value;
    while let Some(op) = current.defining_op() {
        current = match op.name().as_str() {
            "memref.cast"
            | "memref.subview"
            | "memref.reinterpret_cast"
            | "memref.view"
            | "memref.expand_shape"
            | "memref.collapse_shape"
            | "memref.transpose"
            | "memref.extract_aligned_pointer_as_index"
            | "builtin.unrealized_conversion_cast"
            | "llvm.getelementptr"
            | "llvm.inttoptr"
            | "llvm.ptrtoint"
            | "llvm.addrspacecast"
            | "arith.index_cast"
            | "arith.index_castui" => op.operand(0),
            // A descriptor's pointers, not its offset, sizes or strides.
            "llvm.extractvalue" if is_pointer_field(op) => op.operand(0),
            // Operands: the aggregate, the value put in.
            "llvm.insertvalue" => op.operand(usize::from(is_pointer_field(op))),
            // The base buffer, not the offset, sizes or strides.
            "memref.extract_strided_metadata" if op.result(0) == current => op.operand(0),
            "func.call"
                if symbol_attribute(op, "callee").as_deref() == Some("pgpu_rt_to_device") =>
            {
                op.operand(0)
            }
            // An address plus an offset.
            "arith.addi" => {
                return [op.operand(0), op.operand(1)]
                    .into_iter()
                    .map(list_of)
                    .find(|list| is_memory(*list))
                    .unwrap_or(current);
            }
            _ => break,
        };
    }
    current
}

/// Whether the `llvm.extractvalue` or `llvm.insertvalue` `op` reads or
/// writes field 0 or 1 of a memref descriptor (its pointers).
fn is_pointer_field(op: Op) -> bool {
    let position = op
        .melior()
        .attribute("position")
        .map(|position| position.to_string())
        .unwrap_or_default();
    matches!(position.as_str(), "array<i64: 0>" | "array<i64: 1>")
}

/// Whether `op` uses the list at its operand `index` only as an address to
/// access or to read the metadata of: the address goes nowhere else.
fn is_address_use(op: Op, index: usize) -> bool {
    match op.name().as_str() {
        "memref.load"
        | "memref.generic_atomic_rmw"
        | "memref.dealloc"
        | "memref.dim"
        | "memref.rank"
        | "memref.extract_strided_metadata"
        | "llvm.load"
        | "llvm.atomicrmw"
        | "llvm.cmpxchg"
        | "llvm.extractvalue" => index == 0,
        "memref.store" | "memref.atomic_rmw" | "llvm.store" => index == 1,
        "memref.copy" => index <= 1,
        "gpu.launch_func" | "gpu.memcpy" | "gpu.memset" | "gpu.dealloc" | "arith.cmpi"
        | "llvm.icmp" => true,
        name => name.starts_with("pgpu.list."),
    }
}

/// Whether `value` is a memref or a pointer.
fn is_memory(value: Val) -> bool {
    let ty = value.melior_type();
    MemRefType::try_from(ty).is_ok() || ty.to_string() == "!llvm.ptr"
}

/// Memory that code accesses and did not allocate.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Place {
    /// What parameter `i` of a function points to.
    Parameter(usize),
    /// A `memref.global`.
    Global(String),
    /// Anything else: memory from outside a region, a pointer of unknown
    /// origin.
    Other,
}

/// Where the memory of `list` (a memref or a pointer) lives, seen from
/// `scope`: `None` when `scope` allocated it.
pub(crate) fn place(list: Val, scope: Op) -> Option<Place> {
    let base = list_of(list);
    match base.defining_op() {
        Some(op) if is_allocation(op) => (!op.is_within(scope)).then_some(Place::Other),
        Some(op) if op.is("memref.get_global") => Some(
            symbol_attribute(op, "name")
                .map(Place::Global)
                .unwrap_or(Place::Other),
        ),
        Some(_) => Some(Place::Other),
        None => {
            let parameters = scope
                .is("func.func")
                .then(|| scope.entry_block(0))
                .flatten()
                .map(|entry| entry.arguments())
                .unwrap_or_default();
            Some(
                parameters
                    .iter()
                    .position(|parameter| *parameter == base)
                    .map_or(Place::Other, Place::Parameter),
            )
        }
    }
}

/// Whether an op reads or writes memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// The lists `op` itself reads and writes (not through the ops nested in
/// it, nor through callees): loads, stores, atomics, copies, deallocations
/// (a write: the list is gone), the `pgpu.list` collectives by their
/// operands, and every list a `gpu.launch_func` passes (read and written).
/// `None` when unknown: a `pgpu.list` op not known here, `pgpu.dtempfree`.
fn accessed_lists(op: Op) -> Option<Vec<(Val, Access)>> {
    use Access::{Read, Write};
    let name = op.name();
    let memory = |value: &Val| is_memory(*value);
    Some(match name.as_str() {
        "memref.load" | "llvm.load" => vec![(op.operand(0), Read)],
        "memref.store" | "llvm.store" => vec![(op.operand(1), Write)],
        "memref.atomic_rmw" => vec![(op.operand(1), Read), (op.operand(1), Write)],
        "memref.generic_atomic_rmw" | "llvm.atomicrmw" | "llvm.cmpxchg" => {
            vec![(op.operand(0), Read), (op.operand(0), Write)]
        }
        "memref.copy" => vec![(op.operand(0), Read), (op.operand(1), Write)],
        "memref.dealloc" => vec![(op.operand(0), Write)],
        // Destination, source (after the async dependencies).
        "gpu.memcpy" | "gpu.memset" | "gpu.dealloc" => {
            let lists: Vec<Val> = op.operands().into_iter().filter(memory).collect();
            lists
                .into_iter()
                .enumerate()
                .map(|(index, list)| (list, if index == 0 { Write } else { Read }))
                .collect()
        }
        "gpu.launch_func" => op
            .operands()
            .into_iter()
            .filter(memory)
            .flat_map(|list| [(list, Read), (list, Write)])
            .collect(),
        "pgpu.dtempfree" => return None,
        _ if name.starts_with("pgpu.list.") => {
            let (reads, writes) = list_effects(op)?;
            let present = |&&i: &&usize| i < op.num_operands();
            let reads = reads.iter().filter(present).map(|&i| (op.operand(i), Read));
            let writes = writes
                .iter()
                .filter(present)
                .map(|&i| (op.operand(i), Write));
            reads.chain(writes).collect()
        }
        _ => vec![],
    })
}

/// Memory that code accesses and did not allocate, by place.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Accesses {
    pub reads: BTreeSet<Place>,
    pub writes: BTreeSet<Place>,
}

impl Accesses {
    fn add(&mut self, place: Place, access: Access) {
        match access {
            Access::Read => self.reads.insert(place),
            Access::Write => self.writes.insert(place),
        };
    }
}

/// The lists of one function that code reads and writes (as
/// [`list_of`] names them), and the places its callees access otherwise.
#[derive(Default)]
pub(crate) struct Footprint {
    reads: Vec<Val>,
    writes: Vec<Val>,
    places: Accesses,
}

impl Footprint {
    fn add(&mut self, list: Val, access: Access) {
        let list = list_of(list);
        let lists = match access {
            Access::Read => &mut self.reads,
            Access::Write => &mut self.writes,
        };
        if !lists.contains(&list) {
            lists.push(list);
        }
    }

    /// The places of the lists seen from `scope`, its own allocations
    /// left out.
    fn places_in(&self, scope: Op) -> Accesses {
        let mut accesses = self.places.clone();
        for (lists, access) in [(&self.reads, Access::Read), (&self.writes, Access::Write)] {
            for place in lists.iter().filter_map(|list| place(*list, scope)) {
                accesses.add(place, access);
            }
        }
        accesses
    }

    /// Whether code with footprint `self` and code with footprint
    /// `other`, both in `function`, may access one location, one of them
    /// writing it.
    pub fn conflicts(&self, other: &Footprint, function: Op, calls: &CallGraph) -> bool {
        let written = (&self.writes, &self.places.writes);
        let read = (&self.reads, &self.places.reads);
        let other_written = (&other.writes, &other.places.writes);
        let other_read = (&other.reads, &other.places.reads);
        let overlap = |a, b| overlap(a, b, function, calls);
        overlap(written, other_written)
            || overlap(written, other_read)
            || overlap(read, other_written)
    }
}

type Lists<'a> = (&'a Vec<Val>, &'a BTreeSet<Place>);

/// Whether two sets of lists and places of `function` may share memory.
fn overlap(
    (lists, places): Lists,
    (other_lists, other_places): Lists,
    function: Op,
    calls: &CallGraph,
) -> bool {
    // Whether `list` may lie at `place`: a global is no allocation of the
    // function's, unknown memory none whose address never escapes.
    let may_hold = |place: &Place, list: &Val| match (place, self::place(*list, function)) {
        (_, None) => !matches!(place, Place::Global(_)) && calls.escapes(*list),
        (Place::Global(name), Some(Place::Global(global))) => global == *name,
        _ => true,
    };
    lists
        .iter()
        .any(|list| other_lists.iter().any(|other| may_alias(*list, *other)))
        || places
            .iter()
            .any(|place| other_lists.iter().any(|list| may_hold(place, list)))
        || other_places
            .iter()
            .any(|place| lists.iter().any(|list| may_hold(place, list)))
        || places.iter().any(|place| {
            other_places.iter().any(|other| match (place, other) {
                (Place::Global(name), Place::Global(other)) => name == other,
                _ => true,
            })
        })
}

/// What a region op or a function does, callees included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    /// Prints, draws random numbers or reads the clock.
    pub ordered: bool,
    /// Calls a function the module has no body of (other than the
    /// runtime's thread-safe ones), or calls indirectly.
    pub foreign: bool,
    /// Allocates or frees temporary lists (`pgpu.dtempnew`,
    /// `pgpu.dtempfree`): a `dtempfree` frees what the thread allocated
    /// since its function's entry, callees' lists included.
    pub temporaries: bool,
    /// Memory its host code writes that it did not allocate.
    pub host_writes: BTreeSet<Place>,
    /// Memory it reads and writes anywhere (host code, kernels,
    /// collectives) that it did not allocate.
    pub accesses: Accesses,
    /// The parameters whose address may be kept where code reaching
    /// memory through unknown values ([`Place::Other`]) finds it.
    pub escapes: BTreeSet<usize>,
}

/// Every function's [`Effects`].
pub(crate) struct CallGraph {
    functions: HashMap<String, Op>,
    summaries: HashMap<String, Effects>,
}

impl CallGraph {
    pub fn new(module: Op) -> CallGraph {
        let functions: HashMap<String, Op> = functions_by_name(module)
            .into_iter()
            .filter(|(_, function)| function.entry_block(0).is_some())
            .collect();
        let mut graph = CallGraph {
            functions,
            summaries: HashMap::new(),
        };
        // Effects only grow with the callees' summaries: a fixpoint.
        loop {
            let mut changed = false;
            for (name, function) in &graph.functions {
                let effects = graph.effects(*function);
                if graph.summaries.get(name) != Some(&effects) {
                    graph.summaries.insert(name.clone(), effects);
                    changed = true;
                }
            }
            if !changed {
                return graph;
            }
        }
    }

    /// The effects of the ops nested in `scope` (a function or a region
    /// op), with those of the functions they call.
    pub fn effects(&self, scope: Op) -> Effects {
        let mut effects = Effects::default();
        let (mut all, mut host) = (Footprint::default(), Footprint::default());
        for op in scope.nested() {
            let name = op.name();
            effects.ordered |= is_ordered_op(&name);
            effects.temporaries |= matches!(name.as_str(), "pgpu.dtempnew" | "pgpu.dtempfree");
            if matches!(
                name.as_str(),
                "func.call" | "llvm.call" | "func.call_indirect"
            ) {
                self.call_flags(op, &mut effects);
            }
            self.add_accesses(op, &mut all, false);
            if is_host_code(op) {
                self.add_accesses(op, &mut host, true);
            }
        }
        effects.accesses = all.places_in(scope);
        effects.host_writes = host.places_in(scope).writes;
        if scope.is("func.func") {
            let parameters = scope.entry_block(0).map(|entry| entry.arguments());
            for (index, parameter) in parameters.unwrap_or_default().into_iter().enumerate() {
                if is_memory(parameter) && self.escapes(parameter) {
                    effects.escapes.insert(index);
                }
            }
        }
        effects
    }

    /// Whether the address of `root` (an allocation or a parameter) may be
    /// kept where code reaching memory through unknown values finds it:
    /// stored as a value, returned, yielded, passed to a callee that lets
    /// it escape, or turned by an op [`list_of`] does not see through.
    /// Values that [`list_of`] leads back to `root` carry its address.
    pub fn escapes(&self, root: Val) -> bool {
        let mut carriers = vec![root];
        let mut seen = vec![root];
        while let Some(value) = carriers.pop() {
            for found in value.uses() {
                let op = found.owner;
                let mut carried = false;
                for result in op.results() {
                    if list_of(result) == root {
                        carried = true;
                        if !seen.contains(&result) {
                            seen.push(result);
                            carriers.push(result);
                        }
                    }
                }
                if carried || is_address_use(op, found.index) || self.keeps_in(op, found.index) {
                    continue;
                }
                return true;
            }
        }
        false
    }

    /// Whether the call `op` keeps the address it is passed at operand
    /// `index` to itself: a runtime function, or a function whose
    /// parameter does not escape.
    fn keeps_in(&self, op: Op, index: usize) -> bool {
        if !op.is("func.call") {
            return false;
        }
        let Some(callee) = symbol_attribute(op, "callee") else {
            return false;
        };
        match self.summaries.get(&callee) {
            Some(summary) => !summary.escapes.contains(&index),
            // Not summarized yet.
            None => is_runtime_call(&callee) || self.functions.contains_key(&callee),
        }
    }

    /// What the ops `ops` of one function read and write.
    pub fn footprint(&self, ops: impl IntoIterator<Item = Op>) -> Footprint {
        let mut footprint = Footprint::default();
        for op in ops {
            self.add_accesses(op, &mut footprint, false);
        }
        footprint
    }

    /// Whether the call `op` prints, calls foreign code, or uses
    /// temporary lists.
    fn call_flags(&self, op: Op, effects: &mut Effects) {
        let Some(callee) = symbol_attribute(op, "callee") else {
            effects.foreign = true;
            return;
        };
        if is_ordered_runtime_call(&callee) && op.is("func.call") {
            effects.ordered = true;
        }
        if !self.functions.contains_key(&callee) {
            effects.foreign |= !is_thread_safe_runtime_call(&callee);
        } else if let Some(summary) = self.summaries.get(&callee) {
            effects.ordered |= summary.ordered;
            effects.foreign |= summary.foreign;
            effects.temporaries |= summary.temporaries;
        }
    }

    /// Adds what `op` itself reads and writes (a call: what its callee
    /// does through its operands, and elsewhere) to `footprint`; with
    /// `host_writes`, only what it writes as host code.
    fn add_accesses(&self, op: Op, footprint: &mut Footprint, host_writes: bool) {
        let call = matches!(
            op.name().as_str(),
            "func.call" | "llvm.call" | "func.call_indirect"
        );
        if host_writes && op.name().starts_with("gpu.") {
            // Device work (launches, copies): not the host's.
            return;
        }
        if !call {
            match accessed_lists(op) {
                Some(lists) => {
                    for (list, access) in lists {
                        if !host_writes || access == Access::Write {
                            footprint.add(list, access);
                        }
                    }
                }
                None => {
                    footprint.places.add(Place::Other, Access::Write);
                    footprint.places.add(Place::Other, Access::Read);
                }
            }
            return;
        }
        let callee = symbol_attribute(op, "callee");
        let Some(summary) = callee
            .as_ref()
            .and_then(|callee| self.summaries.get(callee))
        else {
            // Not summarized yet, or the runtime's: nothing; else anything.
            let known = callee.is_some_and(|callee| {
                self.functions.contains_key(&callee) || is_runtime_call(&callee)
            });
            if !known {
                footprint.places.add(Place::Other, Access::Write);
                footprint.places.add(Place::Other, Access::Read);
            }
            return;
        };
        let empty = BTreeSet::new();
        let (reads, writes) = if host_writes {
            (&empty, &summary.host_writes)
        } else {
            (&summary.accesses.reads, &summary.accesses.writes)
        };
        for (places, access) in [(reads, Access::Read), (writes, Access::Write)] {
            for place in places {
                match place {
                    Place::Parameter(index) if *index < op.num_operands() => {
                        footprint.add(op.operand(*index), access);
                    }
                    Place::Parameter(_) => footprint.places.add(Place::Other, access),
                    other => footprint.places.add(other.clone(), access),
                }
            }
        }
    }
}
