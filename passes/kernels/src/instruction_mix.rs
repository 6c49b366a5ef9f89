//! Instruction mix of kernels, the input of the Petri-net performance
//! model (`pgpu-perf-model`, seeds/petri-net-gpu-model.txt Section 4: the
//! initial markings x_a, x_s and x_g of a warp part).
//!
//! A kernel is any of
//!
//! * an outermost `scf.parallel` of host code (the kernel stage, `pgpu
//!   emit --stage kernels`): its iterations are the threads, the product
//!   of its trip counts the launch size;
//! * a `gpu.launch`: its grid times block sizes;
//! * a `gpu.func` marked `gpu.kernel`, once per `gpu.launch_func` of it,
//!   with that launch's sizes and arguments.
//!
//! Per thread the analysis counts, walking the body:
//!
//! * **global accesses**: `memref.load`/`store`, atomics, `vector` and
//!   `affine` loads and stores on memory outside the thread (no memory
//!   space, or `#gpu.address_space<global>`), but for a `memref.load` of
//!   an element the thread loaded or stored earlier in the same block with
//!   no store or op with effects between: LLVM keeps that value in a
//!   register, so the load reaches no memory (`loops.rs`, `Forwarding`).
//!   Likewise, from its second iteration on, a loop whose only store is
//!   to an element the loop does not move loads that element from a
//!   register (`carried_loads`);
//! * **shared accesses**: the same on `#gpu.address_space<workgroup>` (or
//!   memory space 3);
//! * **arithmetic**: every other op that does work (`arith` but constants,
//!   `math`, `index`, GPU queries, shuffles, barriers, calls of functions
//!   the module does not define), and accesses to the thread's own memory
//!   (`memref.alloca` in the kernel, `#gpu.address_space<private>`), which
//!   live in registers.
//!
//! A loop multiplies its body by its trip count (`instruction_mix/loops.rs`:
//! `scf.for`, counted `scf.while` loops in closed form, others stepped
//! through) when its bounds are known: constants, `pgpu.argi` (the
//! program's argument or its default), pure integer arithmetic on known
//! values, a function's argument that all its calls pass the same known
//! value, a kernel's argument that its launch passes a known value, the
//! thread's rank, an enclosing loop's variable (the body is then counted
//! iteration by iteration). Counts that depend on the thread are taken for
//! the busiest of the first, middle and last thread. A loop whose trip
//! count is not known (bounds from memory) counts its body once, and the
//! kernel's report lists it: its mix is then a lower bound.
//! Both sides of an `scf.if` count, as a warp whose threads diverge runs
//! both (the SIMT worst case; a one-sided guard such as the bounds test of
//! a kernel costs nothing more). A call of a function defined in the
//! module adds the callee's mix; a recursive call counts once and is
//! listed. Terminators and constants cost nothing.
//!
//! Each kernel also gets its **launches per run of the program**, for the
//! model's warm launches: the trip counts of the host loops around its
//! launch site (`scf.for`, `scf.while`; a site in a `scf.while`'s
//! condition runs once more than its body), times the runs of the host
//! function it is in: the sum over that function's calls of their own
//! counts (`main`, and a function nothing calls, run once). A loop whose
//! count is not known, or a recursive function, makes the count unknown.
//! What runs between two launches of a kernel is its *repeat scope*: the
//! innermost host loop around the launch site (looked for through the
//! call of its function where it has one call), else its function. The
//! kernels launched in that scope, or in functions called from it, are
//! the ones whose data share the cache with it between its launches.
//!
//! We write this analysis ourselves: upstream MLIR has no instruction
//! counting that distinguishes memory spaces or folds trip counts across
//! calls and launches.

use crate::{
    inline_spmd::symbol_attribute,
    ir::{Blk, Op, Val},
    runtime_calls::source_name,
};
use melior::ir::{TypeLike, operation::OperationLike, r#type::MemRefType};
use pgpu_pass_infra::integer::{self, IntegerBinary, IntegerFault, sign_extend, zero_extend};
use pgpu_perf_model::Mix;
use std::collections::{HashMap, HashSet};

mod loops;

/// Something the analysis could not know statically, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// `file:line:col` (or empty).
    pub position: String,
    pub reason: String,
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.position.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.position, self.reason)
        }
    }
}

/// The mix and launch of one kernel launch.
#[derive(Debug, Clone)]
pub struct KernelMix {
    /// `f kernel k` (host kernels, as the runtime's launch sites name
    /// them), `@module::@function` or `f gpu.launch k`.
    pub name: String,
    pub position: String,
    /// Per thread.
    pub mix: Mix,
    /// Threads launched, when known.
    pub threads: Result<u64, Unknown>,
    /// Threads per block, when the launch fixes it.
    pub block: Option<u64>,
    /// Launches per run of the program, when known.
    pub launches: Result<u64, Unknown>,
    /// Indices (into the analysis's list) of the kernels launched in this
    /// one's repeat scope, itself included; empty when nothing repeats it.
    pub repeated_with: Vec<usize>,
    /// The launch site: the host kernel or `gpu.launch`, or the
    /// `gpu.launch_func`.
    pub(crate) site: Op,
    /// Whether the thread count reads the program's arguments
    /// (`pgpu.argi`): it then holds for those arguments only.
    pub threads_read_arguments: bool,
    /// Loops counted once and calls left out: the mix is a lower bound
    /// when this is not empty.
    pub unknown: Vec<Unknown>,
    /// The op that carries the estimate (the kernel, or its launch).
    pub(crate) anchor: Op,
}

/// The kernels of `module` and their mixes: host kernels (outermost
/// `scf.parallel`, and the grid and block spawns the cuda target launches
/// whole, numbered with them as the runtime's launch sites are),
/// `gpu.launch` and `gpu.func` kernels; `args` are the program's
/// arguments (`pgpu.argi i` is `args[i]`, or its default beyond them).
pub(crate) fn kernel_mixes(module: Op, args: &[i64]) -> Vec<KernelMix> {
    let mut analysis = Analysis::new(module, args);
    let mut kernels = Vec::new();
    let mut numbers: HashMap<String, usize> = HashMap::new();
    for op in module.nested() {
        let number = |numbers: &mut HashMap<String, usize>, function: &str| {
            let counter = numbers.entry(function.to_string()).or_insert(0);
            *counter += 1;
            *counter - 1
        };
        let spawn_kernel =
            op.is("pgpu.spawn") && (op.has_attribute("block") || op.has_attribute("grid"));
        if (op.is("scf.parallel") || spawn_kernel) && is_host_kernel(op) {
            let function = op.enclosing_function().map(source_name).unwrap_or_default();
            let k = number(&mut numbers, &function);
            analysis.read_arguments = false;
            let threads = if spawn_kernel {
                analysis.value(op.operand(0)).and_then(|n| {
                    u64::try_from(n).map_err(|_| analysis.unknown(op, "a negative thread count"))
                })
            } else {
                analysis.parallel_trips(op)
            };
            // A block spawn is one block of all its threads.
            let block = if op.has_attribute("block") {
                threads.as_ref().ok().copied()
            } else {
                None
            };
            let read_arguments = analysis.read_arguments;
            let mut kernel =
                analysis.kernel(op, op, op, format!("{function} kernel {k}"), threads, block);
            kernel.threads_read_arguments = read_arguments;
            kernels.push(kernel);
        } else if op.is("gpu.launch") {
            let function = op.enclosing_function().map(source_name).unwrap_or_default();
            let k = number(&mut numbers, &format!("{function} launch"));
            let (threads, block) = analysis.launch_sizes(op, 0);
            kernels.push(analysis.kernel(
                op,
                op,
                op,
                format!("{function} gpu.launch {k}"),
                threads,
                block,
            ));
        } else if op.is("gpu.func") && op.has_attribute("gpu.kernel") {
            let name = kernel_symbol(op);
            let launches = analysis.launches.get(&name).cloned().unwrap_or_default();
            if launches.is_empty() {
                let unknown =
                    Err(analysis.unknown(op, "the kernel has no gpu.launch_func in this module"));
                kernels.push(analysis.kernel(op, op, op, name.clone(), unknown, None));
            }
            let several = launches.len() > 1;
            for launch in launches {
                let (threads, block) = analysis.launch_sizes(launch, launch_operand_start(launch));
                analysis.bound_launch = Some(launch);
                let anchor = if several { launch } else { op };
                kernels.push(analysis.kernel(op, anchor, launch, name.clone(), threads, block));
                analysis.bound_launch = None;
            }
        }
    }
    // The kernels launched in each repeat scope, found once per scope.
    let mut members: HashMap<Op, Vec<usize>> = HashMap::new();
    for index in 0..kernels.len() {
        let Some(scope) = analysis.repeat_scope(kernels[index].site) else {
            continue;
        };
        let repeated_with = members.entry(scope).or_insert_with(|| {
            let called = analysis.functions_called_within(scope);
            (0..kernels.len())
                .filter(|&other| {
                    let site = kernels[other].site;
                    site.is_within(scope)
                        || site
                            .enclosing_function()
                            .is_some_and(|function| called.contains(&function))
                })
                .collect()
        });
        kernels[index].repeated_with = repeated_with.clone();
    }
    kernels
}

/// An outermost `scf.parallel` of host code (not in a kernel or another
/// parallel loop).
fn is_host_kernel(op: Op) -> bool {
    let mut current = op.parent();
    while let Some(parent) = current {
        let name = parent.name();
        if name == "scf.parallel" || name.starts_with("gpu.") {
            return false;
        }
        if name == "func.func" {
            return true;
        }
        current = parent.parent();
    }
    false
}

/// `@module::@function` of a `gpu.func`.
fn kernel_symbol(function: Op) -> String {
    let module = function
        .parent()
        .and_then(|module| symbol_attribute(module, "sym_name"))
        .unwrap_or_default();
    let name = symbol_attribute(function, "sym_name").unwrap_or_default();
    format!("@{module}::@{name}")
}

/// The segment sizes of `op` (`operandSegmentSizes`), read from its text.
fn segment_sizes(op: Op) -> Option<Vec<usize>> {
    let attribute = op.melior().attribute("operandSegmentSizes").ok()?;
    let text = attribute.to_string();
    let list = text.split_once(':')?.1.trim_end_matches('>');
    list.split(',').map(|n| n.trim().parse().ok()).collect()
}

/// Index of a `gpu.launch_func`'s first grid size (after its async
/// dependencies).
fn launch_operand_start(launch: Op) -> usize {
    segment_sizes(launch)
        .and_then(|sizes| sizes.first().copied())
        .unwrap_or(0)
}

/// Index of the first kernel operand of a `gpu.launch_func`.
fn kernel_operand_start(launch: Op) -> Option<usize> {
    let sizes = segment_sizes(launch)?;
    // asyncDependencies, grid x/y/z, block x/y/z, cluster x/y/z,
    // dynamicSharedMemorySize, kernelOperands, asyncObject.
    Some(sizes.iter().take(11).sum())
}

struct Analysis<'a> {
    args: &'a [i64],
    /// Calls of each function, by symbol name.
    calls: HashMap<String, Vec<Op>>,
    /// Functions by symbol name.
    functions: HashMap<String, Op>,
    /// `gpu.launch_func`s by kernel (`@module::@function`).
    launches: HashMap<String, Vec<Op>>,
    /// Values being evaluated (breaks cycles through recursive calls).
    evaluating: HashSet<Val>,
    /// The launch whose arguments bind the kernel being analysed.
    bound_launch: Option<Op>,
    /// Functions whose mix is being counted (recursion).
    counting: Vec<Op>,
    /// Set when an evaluation reads a `pgpu.argi`.
    read_arguments: bool,
    /// Values of block arguments: the sampled thread's loop indices and
    /// loop variables counted iteration by iteration (an error where a
    /// variable's value is not known).
    bindings: HashMap<Val, Result<i64, Unknown>>,
    /// The rank of the thread whose mix is being counted (`pgpu.rank`).
    thread: Option<i64>,
    /// The loop indices of the host kernel being counted, for `thread`.
    thread_indices: HashMap<Val, Result<i64, Unknown>>,
    /// Set when an evaluation reads the thread's rank.
    read_thread: bool,
    /// Per-iteration body walks left to the thread being counted.
    walks_left: u64,
}

impl<'a> Analysis<'a> {
    fn new(module: Op, args: &'a [i64]) -> Self {
        let mut calls: HashMap<String, Vec<Op>> = HashMap::new();
        let mut functions = HashMap::new();
        let mut launches: HashMap<String, Vec<Op>> = HashMap::new();
        for op in module.nested() {
            if op.is("gpu.launch_func")
                && let Ok(kernel) = op.melior().attribute("kernel")
            {
                launches.entry(kernel.to_string()).or_default().push(op);
            } else if op.is("func.call")
                && let Some(callee) = symbol_attribute(op, "callee")
            {
                calls.entry(callee).or_default().push(op);
            } else if (op.is("func.func") || op.is("gpu.func"))
                && let Some(name) = symbol_attribute(op, "sym_name")
            {
                functions.entry(name).or_insert(op);
            }
        }
        Self {
            args,
            calls,
            functions,
            launches,
            evaluating: HashSet::new(),
            bound_launch: None,
            counting: Vec::new(),
            read_arguments: false,
            bindings: HashMap::new(),
            thread: None,
            thread_indices: HashMap::new(),
            read_thread: false,
            walks_left: loops::ITERATION_WALKS,
        }
    }

    fn unknown(&self, op: Op, reason: &str) -> Unknown {
        Unknown {
            position: op.source_position(),
            reason: reason.to_string(),
        }
    }

    /// The kernel `body_of` of `threads` threads, launched at `site`. Its
    /// mix is the busiest of the threads sampled (the first, the middle and
    /// the last one) when the counts read the thread's rank (`pgpu.rank`, a
    /// host kernel's loop index); SIMT warps run as long as their busiest
    /// lane.
    fn kernel(
        &mut self,
        body_of: Op,
        anchor: Op,
        site: Op,
        name: String,
        threads: Result<u64, Unknown>,
        block: Option<u64>,
    ) -> KernelMix {
        let count = threads.as_ref().map_or(1, |&count| count.max(1));
        let mut samples = vec![0, count / 2, count - 1];
        samples.dedup();
        let mut busiest: Option<(Mix, Vec<Unknown>)> = None;
        for rank in samples {
            self.bind_thread(body_of, rank as i64);
            self.read_thread = false;
            self.walks_left = loops::ITERATION_WALKS;
            let mut unknown = Vec::new();
            let mix = self.regions(body_of, &mut unknown);
            self.thread = None;
            self.thread_indices.clear();
            if busiest
                .as_ref()
                .is_none_or(|(most, _)| mix.instructions() > most.instructions())
            {
                busiest = Some((mix, unknown));
            }
            if !self.read_thread {
                break;
            }
        }
        let (mix, unknown) = busiest.unwrap_or_default();
        let launches = self.launch_count(site);
        KernelMix {
            name,
            position: body_of.source_position(),
            mix,
            threads,
            block,
            launches,
            repeated_with: Vec::new(),
            site,
            threads_read_arguments: false,
            unknown,
            anchor,
        }
    }

    /// Makes `rank` the thread being counted: `pgpu.rank`, and the loop
    /// indices of a host kernel's `scf.parallel` (the last dimension the
    /// fastest).
    fn bind_thread(&mut self, kernel: Op, rank: i64) {
        self.thread = Some(rank);
        if !kernel.is("scf.parallel") {
            return;
        }
        let Some(indices) = kernel.entry_block(0).map(|body| body.arguments()) else {
            return;
        };
        let dims = indices.len();
        let mut rest = rank;
        let mut values = vec![Ok(0); dims];
        for dim in (0..dims).rev() {
            let (lower, step) = (kernel.operand(dim), kernel.operand(2 * dims + dim));
            let trips = self.trips(kernel, lower, kernel.operand(dims + dim), step);
            values[dim] = trips.and_then(|trips| {
                let trips = (trips.max(1)) as i64;
                let index = rest % trips;
                rest /= trips;
                Ok(self.value(lower)? + index * self.value(step)?)
            });
        }
        self.thread_indices = indices.into_iter().zip(values).collect();
    }

    /// How many times `site` runs in one run of the program (see the
    /// header).
    fn launch_count(&mut self, site: Op) -> Result<u64, Unknown> {
        let read_arguments = self.read_arguments;
        let mut calling = Vec::new();
        let count = self.runs(site, &mut calling);
        self.read_arguments = read_arguments;
        count
    }

    /// [`Self::launch_count`] of `site`, below the functions `calling`
    /// (recursion).
    fn runs(&mut self, site: Op, calling: &mut Vec<Op>) -> Result<u64, Unknown> {
        let mut count: u64 = 1;
        let mut child = site;
        while let Some(op) = child.parent() {
            let trips = match op.name().as_str() {
                "scf.for" => self.trips(op, op.operand(0), op.operand(1), op.operand(2))?,
                "scf.while" => {
                    let in_condition = op.entry_block(0) == Some(child.block_of());
                    self.while_trips(op)? + u64::from(in_condition)
                }
                "func.func" => return Ok(count.saturating_mul(self.function_runs(op, calling)?)),
                _ => 1,
            };
            count = count.saturating_mul(trips);
            child = op;
        }
        Ok(count)
    }

    /// Runs of a host function: the sum of its calls' runs, or 1 for one
    /// nothing calls (`main`).
    fn function_runs(&mut self, function: Op, calling: &mut Vec<Op>) -> Result<u64, Unknown> {
        let name = symbol_attribute(function, "sym_name").unwrap_or_default();
        let calls = self.calls.get(&name).cloned().unwrap_or_default();
        if calls.is_empty() {
            return Ok(1);
        }
        if calling.contains(&function) {
            return Err(self.unknown(function, "a recursive function launches it"));
        }
        calling.push(function);
        let total = calls.into_iter().try_fold(0u64, |total, call| {
            Ok(total.saturating_add(self.runs(call, calling)?))
        });
        calling.pop();
        total
    }

    /// The repeat scope of `site` (see the header): the innermost host loop
    /// around it, through the single call of its function; else that
    /// function, unless nothing calls it more than once (`None`).
    fn repeat_scope(&self, site: Op) -> Option<Op> {
        let mut seen = Vec::new();
        let mut child = site;
        while let Some(op) = child.parent() {
            if op.is("scf.for") || op.is("scf.while") {
                return Some(op);
            }
            if op.is("func.func") {
                let name = symbol_attribute(op, "sym_name").unwrap_or_default();
                match self.calls.get(&name).map(Vec::as_slice) {
                    None | Some([]) => return None,
                    Some([call]) if !seen.contains(&op) => {
                        seen.push(op);
                        child = *call;
                        continue;
                    }
                    Some(_) => return Some(op),
                }
            }
            child = op;
        }
        None
    }

    /// The functions called in `scope`, directly or through the functions
    /// it calls.
    fn functions_called_within(&self, scope: Op) -> HashSet<Op> {
        let mut called = HashSet::new();
        let mut work = vec![scope];
        while let Some(op) = work.pop() {
            for nested in op.nested() {
                if !nested.is("func.call") {
                    continue;
                }
                let callee = symbol_attribute(nested, "callee")
                    .and_then(|name| self.functions.get(&name).copied());
                if let Some(callee) = callee
                    && called.insert(callee)
                {
                    work.push(callee);
                }
            }
        }
        called
    }

    /// Threads of a host kernel: the product of its trip counts.
    fn parallel_trips(&mut self, op: Op) -> Result<u64, Unknown> {
        let dims = segment_sizes(op)
            .and_then(|sizes| sizes.first().copied())
            .unwrap_or(op.num_operands() / 3);
        let mut product: u64 = 1;
        for dim in 0..dims {
            let trips = self.trips(
                op,
                op.operand(dim),
                op.operand(dims + dim),
                op.operand(2 * dims + dim),
            )?;
            product = product.saturating_mul(trips);
        }
        Ok(product)
    }

    /// Threads and block size of a `gpu.launch` or `gpu.launch_func` whose
    /// grid sizes start at operand `start`.
    fn launch_sizes(&mut self, launch: Op, start: usize) -> (Result<u64, Unknown>, Option<u64>) {
        let mut product = |range: std::ops::Range<usize>| -> Result<u64, Unknown> {
            let mut product: u64 = 1;
            for index in range {
                let size = self.value(launch.operand(index))?;
                product = product.saturating_mul(size.max(0) as u64);
            }
            Ok(product)
        };
        let grid = product(start..start + 3);
        let block = product(start + 3..start + 6);
        let threads = match (grid, &block) {
            (Ok(grid), Ok(block)) => Ok(grid.saturating_mul(*block)),
            (Err(error), _) => Err(error),
            (_, Err(error)) => Err(error.clone()),
        };
        (threads, block.ok())
    }

    fn trips(&mut self, at: Op, lower: Val, upper: Val, step: Val) -> Result<u64, Unknown> {
        let lower = self.value(lower)?;
        let upper = self.value(upper)?;
        let step = self.value(step)?;
        if step <= 0 {
            return Err(self.unknown(at, "the loop's step is not positive"));
        }
        Ok(if upper <= lower {
            0
        } else {
            ((upper - lower) as u64).div_ceil(step as u64)
        })
    }

    /// The compile-time value of an integer or index value.
    fn value(&mut self, value: Val) -> Result<i64, Unknown> {
        if let Some(bound) = self.bindings.get(&value) {
            return bound.clone();
        }
        if let Some(index) = self.thread_indices.get(&value) {
            self.read_thread = true;
            return index.clone();
        }
        if !self.evaluating.insert(value) {
            return Err(Unknown {
                position: String::new(),
                reason: "a value that depends on itself through recursive calls".to_string(),
            });
        }
        let result = match value.defining_op() {
            Some(op) => self.result_value(op, value),
            None => self.argument_value(value),
        };
        self.evaluating.remove(&value);
        result
    }

    /// The value of `result`, a result of `op`.
    fn result_value(&mut self, op: Op, result: Val) -> Result<i64, Unknown> {
        let name = op.name();
        if name == "arith.constant" {
            return op
                .integer_attribute("value")
                .ok_or_else(|| self.unknown(op, "a constant that is not an integer"));
        }
        if name == "pgpu.argi" {
            self.read_arguments = true;
            let index = self.value(op.operand(0))?;
            let default = self.value(op.operand(1))?;
            return Ok(usize::try_from(index)
                .ok()
                .and_then(|index| self.args.get(index).copied())
                .unwrap_or(default));
        }
        if name == "pgpu.rank"
            && let Some(rank) = self.thread
        {
            self.read_thread = true;
            return Ok(rank);
        }
        if name == "scf.if" {
            // The yielded value of the branch the known condition takes.
            let condition = self.value(op.operand(0))?;
            let region = if condition & 1 != 0 { 0 } else { 1 };
            let index = op
                .results()
                .iter()
                .position(|&other| other == result)
                .unwrap_or(0);
            let yielded = op
                .entry_block(region)
                .and_then(Blk::terminator)
                .filter(|terminator| index < terminator.num_operands())
                .map(|terminator| terminator.operand(index))
                .ok_or_else(|| self.unknown(op, "an 'scf.if' without the yielded value"))?;
            return self.value(yielded);
        }
        let operands: Vec<Val> = op.operands();
        let evaluate = |analysis: &mut Self, index: usize| analysis.value(operands[index]);
        let width = result_width(op);
        let value = match name.as_str() {
            "arith.index_cast" | "arith.index_castui" | "arith.extsi" | "arith.extui" => {
                let value = evaluate(self, 0)?;
                if name.ends_with("ui") {
                    let source_width = integer_width_of(operands[0]);
                    zero_extend(value, source_width) as i64
                } else {
                    value
                }
            }
            "arith.trunci" => evaluate(self, 0)?,
            "arith.select" => {
                let condition = evaluate(self, 0)?;
                evaluate(self, if condition & 1 != 0 { 1 } else { 2 })?
            }
            "arith.cmpi" => {
                let (a, b) = (evaluate(self, 0)?, evaluate(self, 1)?);
                let predicate = op.integer_attribute("predicate").unwrap_or(-1);
                let outcome = integer::compare(predicate, a, b, integer_width_of(operands[0]));
                i64::from(outcome.ok_or_else(|| self.unknown(op, "an unknown comparison"))?)
            }
            binary if operands.len() == 2 => {
                let kind = IntegerBinary::from_op_name(binary).ok_or_else(|| {
                    self.unknown(
                        op,
                        &format!("the value of '{name}' is not known at compile time"),
                    )
                })?;
                let (a, b) = (evaluate(self, 0)?, evaluate(self, 1)?);
                kind.evaluate(a, b, width).map_err(|fault| {
                    self.unknown(
                        op,
                        match fault {
                            IntegerFault::DivisionByZero => "a division by zero",
                            IntegerFault::SignedDivisionOverflow => "a signed division overflow",
                            IntegerFault::ShiftOutOfRange => {
                                "a shift by the width or more (poison)"
                            }
                        },
                    )
                })?
            }
            _ => {
                return Err(self.unknown(
                    op,
                    &format!("the value of '{name}' is not known at compile time"),
                ));
            }
        };
        Ok(sign_extend(value, width))
    }

    /// A block argument: a function's (all calls agree) or a kernel's (its
    /// launch passes a known value).
    fn argument_value(&mut self, value: Val) -> Result<i64, Unknown> {
        // SAFETY: `value` is a live block argument.
        let (block, number) = unsafe {
            (
                Blk(mlir_sys::mlirBlockArgumentGetOwner(value.0)),
                mlir_sys::mlirBlockArgumentGetArgNumber(value.0) as usize,
            )
        };
        let owner = block.parent_op();
        let is_entry = owner.and_then(|owner| owner.entry_block(0)) == Some(block);
        match owner {
            Some(function) if is_entry && function.is("func.func") => {
                let name = symbol_attribute(function, "sym_name").unwrap_or_default();
                let calls = self.calls.get(&name).cloned().unwrap_or_default();
                if calls.is_empty() {
                    return Err(self.unknown(
                        function,
                        &format!("argument {number} of @{name}, which nothing in the module calls"),
                    ));
                }
                let mut found = None;
                for call in calls {
                    let value = self.value(call.operand(number))?;
                    if found.is_some_and(|known| known != value) {
                        return Err(self.unknown(
                            function,
                            &format!("argument {number} of @{name}, which its calls pass different values"),
                        ));
                    }
                    found = Some(value);
                }
                found.ok_or_else(|| self.unknown(function, "an argument without calls"))
            }
            Some(function) if is_entry && function.is("gpu.func") => {
                let launch = self.bound_launch.ok_or_else(|| {
                    self.unknown(
                        function,
                        &format!("argument {number} of a kernel not launched here"),
                    )
                })?;
                let start = kernel_operand_start(launch)
                    .ok_or_else(|| self.unknown(launch, "a launch without operand segments"))?;
                self.value(launch.operand(start + number))
            }
            Some(op) => Err(self.unknown(
                op,
                &format!(
                    "a block argument of '{}' (a loop variable or a region's value)",
                    op.name()
                ),
            )),
            None => Err(Unknown {
                position: String::new(),
                reason: "a block argument outside any operation".to_string(),
            }),
        }
    }

    /// The mix of all regions of `op`, per thread.
    fn regions(&mut self, op: Op, unknown: &mut Vec<Unknown>) -> Mix {
        let mut mix = Mix::default();
        for region in 0..op.num_regions() {
            add(&mut mix, self.region_mix(op, region, unknown));
        }
        mix
    }

    fn op_mix(&mut self, op: Op, unknown: &mut Vec<Unknown>) -> Mix {
        let name = op.name();
        match name.as_str() {
            "scf.for" => self.for_mix(op, unknown),
            "scf.parallel" => {
                let body = self.regions(op, unknown);
                match self.parallel_trips(op) {
                    Ok(trips) => scale(body, trips),
                    Err(why) => {
                        unknown.push(Unknown {
                            position: op.source_position(),
                            reason: format!("nested parallel loop with an unknown trip count, counted once ({why})"),
                        });
                        body
                    }
                }
            }
            "scf.while" => self.while_mix(op, unknown),
            "func.call" => self.call_mix(op, unknown),
            _ if op.num_regions() > 0 => {
                let mut mix = self.regions(op, unknown);
                if is_memory_access(&name) {
                    add(&mut mix, self.access(op));
                }
                mix
            }
            _ if is_memory_access(&name) => self.access(op),
            _ if costs_nothing(&name) => Mix::default(),
            _ => Mix {
                arithmetic: 1,
                ..Mix::default()
            },
        }
    }

    fn call_mix(&mut self, call: Op, unknown: &mut Vec<Unknown>) -> Mix {
        let callee = symbol_attribute(call, "callee").unwrap_or_default();
        let one = Mix {
            arithmetic: 1,
            ..Mix::default()
        };
        let Some(&function) = self.functions.get(&callee) else {
            return one;
        };
        if function.entry_block(0).is_none() {
            return one;
        }
        if self.counting.contains(&function) {
            unknown.push(self.unknown(
                call,
                &format!("recursive call of @{callee}, counted as one operation"),
            ));
            return one;
        }
        self.counting.push(function);
        let mut mix = self.regions(function, unknown);
        self.counting.pop();
        add(&mut mix, one);
        mix
    }

    /// One memory access by `op`, classified by the memory it reaches.
    fn access(&self, op: Op) -> Mix {
        let memref = op
            .operands()
            .into_iter()
            .find(|operand| MemRefType::try_from(operand.melior_type()).is_ok());
        let space = memref.map(memory_kind).unwrap_or(MemoryKind::Global);
        match space {
            MemoryKind::Shared => Mix {
                shared: 1,
                ..Mix::default()
            },
            MemoryKind::Global => Mix {
                global: 1,
                ..Mix::default()
            },
            MemoryKind::Private => Mix {
                arithmetic: 1,
                ..Mix::default()
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemoryKind {
    Global,
    Shared,
    Private,
}

/// The memory `memref` lives in: its type's memory space, else private
/// when it comes from a `memref.alloca` (through views), else global.
fn memory_kind(memref: Val) -> MemoryKind {
    if let Ok(ty) = MemRefType::try_from(memref.melior_type())
        && let Some(space) = ty.memory_space()
    {
        let text = space.to_string();
        if text.contains("workgroup") || text.trim_start_matches(' ').starts_with('3') {
            return MemoryKind::Shared;
        }
        if text.contains("private") || text.starts_with('5') {
            return MemoryKind::Private;
        }
        return MemoryKind::Global;
    }
    let mut current = memref;
    while let Some(op) = current.defining_op() {
        match op.name().as_str() {
            "memref.alloca" => return MemoryKind::Private,
            "memref.cast"
            | "memref.subview"
            | "memref.reinterpret_cast"
            | "memref.view"
            | "memref.collapse_shape"
            | "memref.expand_shape" => current = op.operand(0),
            _ => break,
        }
    }
    MemoryKind::Global
}

fn is_memory_access(name: &str) -> bool {
    matches!(
        name,
        "memref.load"
            | "memref.store"
            | "memref.atomic_rmw"
            | "memref.generic_atomic_rmw"
            | "affine.load"
            | "affine.store"
            | "vector.load"
            | "vector.store"
            | "vector.transfer_read"
            | "vector.transfer_write"
            | "vector.maskedload"
            | "vector.maskedstore"
    )
}

/// Ops that do no work at run time.
fn costs_nothing(name: &str) -> bool {
    matches!(
        name,
        "arith.constant"
            | "scf.yield"
            | "scf.reduce"
            | "scf.reduce.return"
            | "scf.condition"
            | "pgpu.yield"
            | "pgpu.group.merge"
            | "gpu.terminator"
            | "gpu.return"
            | "gpu.yield"
            | "func.return"
            | "memref.alloca"
            | "memref.cast"
            | "memref.subview"
            | "memref.reinterpret_cast"
            | "memref.view"
            | "memref.collapse_shape"
            | "memref.expand_shape"
            | "memref.extract_aligned_pointer_as_index"
            | "memref.extract_strided_metadata"
            | "memref.get_global"
            | "memref.assume_alignment"
            | "ub.poison"
            | "llvm.mlir.undef"
            | "llvm.mlir.poison"
            | "llvm.mlir.constant"
            | "llvm.return"
    )
}

fn add(total: &mut Mix, part: Mix) {
    total.arithmetic = total.arithmetic.saturating_add(part.arithmetic);
    total.shared = total.shared.saturating_add(part.shared);
    total.global = total.global.saturating_add(part.global);
}

/// `mix` less `part` (never below zero).
fn subtract(mix: Mix, part: Mix) -> Mix {
    Mix {
        arithmetic: mix.arithmetic.saturating_sub(part.arithmetic),
        shared: mix.shared.saturating_sub(part.shared),
        global: mix.global.saturating_sub(part.global),
    }
}

fn scale(mix: Mix, times: u64) -> Mix {
    Mix {
        arithmetic: mix.arithmetic.saturating_mul(times),
        shared: mix.shared.saturating_mul(times),
        global: mix.global.saturating_mul(times),
    }
}

fn integer_width_of(value: Val) -> u32 {
    crate::ir::integer_width(value.melior_type()).unwrap_or(64)
}

fn result_width(op: Op) -> u32 {
    if op.num_results() == 0 {
        return 64;
    }
    let ty = op.result(0).melior_type();
    if ty.is_index() {
        64
    } else {
        crate::ir::integer_width(ty).unwrap_or(64)
    }
}
