//! `pgpu-offload-kernels{block-size=N}`: gives every host kernel (an
//! outermost `scf.parallel` of host code) a GPU version, chosen at run time,
//! and keeps host code's view of the lists coherent.
//!
//! Each kernel becomes
//!
//! ```text
//! scf.if (pgpu_rt_device_is_cuda() != 0) {
//!   pgpu_rt_launch_site("f kernel k", file, line, col)
//!   %view = device view of every list the kernel uses (pgpu_rt_to_device)
//!   %stream = gpu.wait async
//!   %b = pgpu_rt_kernel_block_size(n, N)   (N, or less for a small kernel;
//!         the kernel's pgpu.block_size where pgpu-model-block-size set one)
//!   gpu.launch async [%stream] blocks(ceil(n / %b)) threads(%b) {
//!     %j = block_id * %b + thread_id
//!     scf.if (%j < n) { body with %i = lb + j * step, on the views }
//!   }
//! } else {
//!   the original scf.parallel (for pgpu-outline-cpu-kernels)
//! }  {pgpu.device_dispatch}
//! ```
//!
//! A device view is the list's memref descriptor with both pointers
//! replaced by the device address `pgpu_rt_to_device(aligned, write)`
//! returns (the runtime keeps a device mirror of every host allocation;
//! `write` when the kernel stores into the list, which makes the host copy
//! stale). Upstream's `gpu-kernel-outlining` then turns the launches into
//! `gpu.func` kernels and `gpu.launch_func`.
//!
//! Host code reads and writes lists in host memory: before each host
//! access (`memref.load`/`store`/`copy`, and the pointer arguments of the
//! runtime's `pgpu_rt_list_*` collectives) the pass calls
//! `pgpu_rt_to_host(aligned, write)`, which copies the list back only when
//! a kernel changed it. The call is hoisted out of enclosing loops and
//! conditionals that launch nothing and call no user function, so a host
//! loop over a list syncs once. Accesses in the CPU branch of a dispatch
//! need no sync (that branch runs only on the CPU device).
//!
//! `pgpu.taskgroup` and `pgpu.task` are host code whose body runs exactly
//! once, like `scf.execute_region`: kernels, collectives and host accesses
//! in them are handled as anywhere in host code, and a sync leaves a task
//! that launches nothing as it leaves such a region.
//!
//! Global arrays are runtime blocks (`pgpu-lower-to-runtime` registers them
//! at start-up): kernels take their addresses as operands and host
//! accesses sync like a list's. Reads of global list variables (a list's
//! descriptor) that a kernel does not write move out of it first. Kernels
//! that call functions (printf, random numbers, user functions), still
//! touch host globals or have results stay on the host: their accesses
//! are host accesses. Host stack cells (`memref.alloca`) that kernels use
//! become runtime allocations freed at the end of their block, so that
//! they have device mirrors.
//! A `pgpu.spawn grid` becomes one kernel with grid-wide barriers
//! (`offload_grid.rs`), a `pgpu.spawn block` one kernel of one thread block
//! whose threads synchronize in ranges (`offload_block.rs`); the functions
//! a block kernel calls are device code, without host syncs.
//!
//! We write this pass because upstream's GPU mapping
//! (`gpu-map-parallel-loops`, `convert-parallel-loops-to-gpu`) maps every
//! loop of a function and knows nothing of our runtime's device choice or
//! memory mirrors.

use crate::{
    build::{Builder, Built},
    inline_spmd::symbol_attribute,
    ir::{Op, Val, sort_writes_keys},
    model_block_size::MODEL_BLOCK_SIZE,
    offload_block::{BLOCK_GROUP, block_callees, module_functions},
    outline_cpu_kernels::is_host_code,
    outline_cpu_kernels::is_index_constant,
    outline_cpu_kernels::is_task_region,
    runtime_calls::{RuntimeCalls, source_name},
};
use melior::ir::{
    Block, OperationRef, Region, RegionLike, Type,
    attribute::AttributeLike,
    r#type::{MemRefType, ShapedTypeLike},
};
use pgpu_pass_infra::{Pass, PassFailure, PassOption, PassOptions};
use std::collections::{HashMap, HashSet};

/// The dispatch `scf.if` this pass builds.
const DISPATCH: &str = "pgpu.device_dispatch";

/// The pass.
#[derive(Debug)]
pub struct OffloadKernels {
    block_size: i64,
}

impl Default for OffloadKernels {
    fn default() -> Self {
        Self { block_size: 256 }
    }
}

impl Pass for OffloadKernels {
    const ARGUMENT: &'static str = "pgpu-offload-kernels";
    const SUMMARY: &'static str =
        "Give host kernels a GPU version chosen at run time and keep host list accesses coherent";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const OPTIONS: &'static [PassOption] = &[PassOption {
        name: "block-size",
        description: "threads per block of the GPU kernels",
        default: "256",
    }];

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::func(),
            DialectHandle::llvm(),
            DialectHandle::arith(),
            DialectHandle::scf(),
            DialectHandle::gpu(),
            DialectHandle::memref(),
        ]
    }

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        let block_size: i64 = options.parse("block-size")?;
        if !(1..=1024).contains(&block_size) {
            return Err(format!("block-size {block_size} is not between 1 and 1024"));
        }
        Ok(Self { block_size })
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let functions = module_functions(module);
        let mut offload = Offload {
            runtime: RuntimeCalls::new(module),
            block_size: self.block_size,
            kernels_of: HashMap::new(),
            launches: HashMap::new(),
            device_functions: HashSet::new(),
            rewritten_groups: HashSet::new(),
        };
        for sort in module.nested() {
            if sort.is("pgpu.list.sort_idx") && sort.num_operands() > 3 && is_host_code(sort) {
                gather_unsupported_sorted_keys(sort)?;
            }
        }
        let kernels: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| {
                (op.is("scf.parallel")
                    || (op.is("pgpu.spawn")
                        && (op.has_attribute("grid") || op.has_attribute("block"))))
                    && is_host_code(*op)
            })
            .collect();
        // What block kernels call runs on the device only: no host syncs
        // in it (and no globals: their reads may leave the kernels).
        for kernel in &kernels {
            if kernel.is("pgpu.spawn") && kernel.has_attribute("block") {
                offload
                    .device_functions
                    .extend(block_callees(*kernel, &functions)?);
            }
        }
        check_device_only(module, &offload.device_functions)?;
        for alloca in module.nested() {
            if alloca.is("memref.alloca")
                && is_host_code(alloca)
                && alloca
                    .result(0)
                    .uses()
                    .iter()
                    .any(|found| kernels.iter().any(|kernel| found.owner.is_within(*kernel)))
            {
                heap_allocate(alloca)?;
            }
        }
        for kernel in &kernels {
            hoist_global_reads(*kernel, &offload.device_functions);
        }
        for kernel in kernels {
            if kernel.is("pgpu.spawn") && kernel.has_attribute("block") {
                offload.offload_block(kernel, &functions)?;
            } else if kernel.is("pgpu.spawn") {
                offload.offload_grid(kernel)?;
            } else if is_offloadable(kernel) {
                offload.offload(kernel)?;
            }
        }
        let collectives: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.name().starts_with("pgpu.list.") && is_host_access_site(*op))
            .collect();
        for collective in collectives {
            offload.offload_collective(collective)?;
        }
        offload.sync_host_accesses(module)
    }
}

/// A kernel the GPU can run: no results, one dimension, no calls, no
/// host globals.
fn is_offloadable(kernel: Op) -> bool {
    kernel.num_results() == 0
        && kernel.num_operands() == 3
        && !kernel.nested().iter().any(|op| {
            let name = op.name();
            name == "func.call"
                || name == "func.call_indirect"
                || name == "memref.get_global"
                || name.starts_with("pgpu.")
        })
}

/// Moves reads of host globals out of `kernel` when it does not write them:
/// `memref.get_global` and the `memref.load`s of its value without indices
/// (a global list variable holds its list's descriptor) go before the
/// kernel, so that the GPU version gets the list as an argument. A global
/// the kernel stores into, or any global of a kernel that calls functions
/// other than `device_functions` (which use no globals), stays (and keeps
/// the kernel on the host).
fn hoist_global_reads(kernel: Op, device_functions: &HashSet<Op>) {
    let nested = kernel.nested();
    // A global array's address is the same everywhere: the kernel takes it
    // as an operand (the runtime registers global arrays, so they have
    // device mirrors).
    for op in &nested {
        if op.is("memref.get_global") && !is_descriptor_global(op.result(0)) {
            op.move_before(kernel);
        }
    }
    let nested = kernel.nested();
    // A called function might write a global (the functions of block
    // kernels use none: `offload_block`).
    let calls_host_code = |op: &Op| {
        op.is("func.call_indirect")
            || (op.is("func.call")
                && !device_functions.iter().any(|function| {
                    symbol_attribute(*function, "sym_name") == symbol_attribute(*op, "callee")
                }))
    };
    if nested.iter().any(calls_host_code) {
        return;
    }
    let written: Vec<String> = nested
        .iter()
        .filter(|op| op.is("memref.get_global"))
        .filter(|op| {
            op.result(0)
                .uses()
                .iter()
                .any(|found| !(found.owner.is("memref.load") && found.index == 0))
        })
        .filter_map(|op| symbol_attribute(*op, "name"))
        .collect();
    for op in nested {
        if !op.is("memref.get_global") {
            continue;
        }
        let Some(name) = symbol_attribute(op, "name") else {
            continue;
        };
        let loads: Vec<Op> = op
            .result(0)
            .uses()
            .iter()
            .map(|found| found.owner)
            .collect();
        if written.contains(&name) || loads.iter().any(|load| load.num_operands() != 1) {
            continue;
        }
        op.move_before(kernel);
        for load in loads {
            load.move_before(kernel);
        }
    }
}

/// For keys the GPU sort does not write back itself ([`sort_writes_keys`])
/// the sort drops its sorted-keys output and a kernel gathers the keys
/// through the permutation instead.
fn gather_unsupported_sorted_keys(sort: Op) -> Built<()> {
    let keys = sort.operand(0);
    let gathered = MemRefType::try_from(keys.melior_type())
        .is_ok_and(|memref| !sort_writes_keys(memref.element()));
    let Some(next) = sort.next().filter(|_| gathered) else {
        return Ok(());
    };
    let at = Builder::before(next).at_location_of(sort);
    at.gather(keys, sort.operand(1), sort.operand(2), sort.operand(3))?;
    sort.set_operands(&sort.operands()[..3]);
    Ok(())
}

/// Replaces a host `memref.alloca` that kernels use by `memref.alloc`
/// (runtime memory, which has a device mirror), freed at the end of its
/// block.
fn heap_allocate(alloca: Op) -> Built<()> {
    let at = Builder::before(alloca);
    let Some(terminator) = alloca.block_of().terminator() else {
        return Ok(());
    };
    let count = i32::try_from(alloca.num_operands()).unwrap_or(0);
    let segments = at.segment_sizes(&[count, 0])?;
    let list = at.value(
        "memref.alloc",
        &alloca.operands(),
        alloca.result(0).melior_type(),
        &[("operandSegmentSizes", segments)],
    )?;
    alloca.result(0).replace_all_uses(list);
    alloca.erase();
    at.moved_to(terminator).dealloc(list)
}

/// `llvm.extractvalue` of the field at `position` (e.g. `3, 0`).
fn extract(at: &Builder, aggregate: Val, position: &str, ty: Type) -> Built<Val> {
    let position = at.parse_attribute(&format!("array<i64: {position}>"))?;
    at.value(
        "llvm.extractvalue",
        &[aggregate],
        ty,
        &[("position", position)],
    )
}

/// `llvm.insertvalue` of `value` at `position`.
fn insert(at: &Builder, aggregate: Val, value: Val, position: &str, ty: Type) -> Built<Val> {
    let position = at.parse_attribute(&format!("array<i64: {position}>"))?;
    at.value(
        "llvm.insertvalue",
        &[aggregate, value],
        ty,
        &[("position", position)],
    )
}

/// The LLVM descriptor type of a ranked memref type.
fn descriptor_type(memref: &MemRefType) -> String {
    let rank = memref.rank();
    if rank == 0 {
        "!llvm.struct<(ptr, ptr, i64)>".to_string()
    } else {
        format!("!llvm.struct<(ptr, ptr, i64, array<{rank} x i64>, array<{rank} x i64>)>")
    }
}

pub(crate) struct Offload {
    pub(crate) runtime: RuntimeCalls,
    block_size: i64,
    kernels_of: HashMap<String, usize>,
    /// Whether an op (transitively) launches kernels or calls a user
    /// function.
    launches: HashMap<Op, bool>,
    /// The functions block kernels call (transitively): device code.
    device_functions: HashSet<Op>,
    /// The `pgpu.block_group` functions whose range barriers are calls
    /// already.
    pub(crate) rewritten_groups: HashSet<Op>,
}

impl Offload {
    /// The aligned pointer of `memref` as `!llvm.ptr`.
    fn aligned_pointer(&self, at: &Builder, memref: Val) -> Built<Val> {
        at.index_to_pointer(at.aligned_index(memref)?)
    }

    /// The LLVM descriptor of `memref`: its memref type, descriptor type
    /// and value.
    fn host_descriptor<'c>(
        at: &Builder<'c>,
        memref: Val,
    ) -> Built<(MemRefType<'c>, Type<'c>, Val)> {
        let Ok(memref_type) = MemRefType::try_from(memref.melior_type()) else {
            return Err(at.fail("internal error: a device view of a non-memref"));
        };
        let descriptor = at.parse_type(&descriptor_type(&memref_type))?;
        let host = at.value(
            "builtin.unrealized_conversion_cast",
            &[memref],
            descriptor,
            &[],
        )?;
        Ok((memref_type, descriptor, host))
    }

    /// The device address of the descriptor `host`'s aligned pointer
    /// (`pgpu_rt_to_device`, marking the host copy stale when `write`).
    fn device_address(&mut self, at: &Builder, host: Val, write: bool) -> Built<Val> {
        let aligned = extract(at, host, "1", at.parse_type("!llvm.ptr")?)?;
        let write = at.constant(at.parse_type("i32")?, i64::from(write))?;
        Ok(self.runtime.call(
            at,
            "pgpu_rt_to_device",
            &[aligned, write],
            "(!llvm.ptr, i32) -> !llvm.ptr",
        )?[0])
    }

    /// `memref` with its pointers replaced by the device mirror's.
    pub(crate) fn device_view(&mut self, at: &Builder, memref: Val, write: bool) -> Built<Val> {
        let (_, descriptor, host) = Self::host_descriptor(at, memref)?;
        let device = self.device_address(at, host, write)?;
        let first = insert(at, host, device, "0", descriptor)?;
        let both = insert(at, first, device, "1", descriptor)?;
        at.value(
            "builtin.unrealized_conversion_cast",
            &[both],
            memref.melior_type(),
            &[],
        )
    }

    /// A rank-1 `memref<?xT>` (identity layout) on the device mirror of
    /// `memref`'s elements: the view's offset is folded into the pointer.
    fn dense_device_view(&mut self, at: &Builder, memref: Val, write: bool) -> Built<Val> {
        let (memref_type, descriptor, host) = Self::host_descriptor(at, memref)?;
        if memref_type.rank() != 1 {
            return Err(at.fail("collectives take rank-1 lists"));
        }
        let element = memref_type.element().to_string();
        let llvm_element = if element == "index" {
            "i64".to_string()
        } else {
            element.clone()
        };
        let pointer = at.parse_type("!llvm.ptr")?;
        let i64_type = at.parse_type("i64")?;
        let offset = extract(at, host, "2", i64_type)?;
        let size = extract(at, host, "3, 0", i64_type)?;
        let device = self.device_address(at, host, write)?;
        let first = at.value(
            "llvm.getelementptr",
            &[device, offset],
            pointer,
            &[
                (
                    "rawConstantIndices",
                    at.parse_attribute("array<i32: -2147483648>")?,
                ),
                ("elem_type", at.parse_attribute(&llvm_element)?),
            ],
        )?;
        let zero = at.constant(i64_type, 0)?;
        let one = at.constant(i64_type, 1)?;
        let mut dense = at.value("llvm.mlir.undef", &[], descriptor, &[])?;
        for (value, field) in [
            (device, "0"),
            (first, "1"),
            (zero, "2"),
            (size, "3, 0"),
            (one, "4, 0"),
        ] {
            dense = insert(at, dense, value, field, descriptor)?;
        }
        let dense_type = at.parse_type(&format!("memref<?x{element}>"))?;
        at.value(
            "builtin.unrealized_conversion_cast",
            &[dense],
            dense_type,
            &[],
        )
    }

    /// `scf.if (pgpu_rt_device_is_cuda() != 0) {...} else {...}` before
    /// `at` with `results`, marked as a dispatch; returns it and the
    /// terminators of its branches.
    pub(crate) fn dispatch(&mut self, at: &Builder, results: &[Type]) -> Built<(Op, Op, Op)> {
        let i32_type = at.parse_type("i32")?;
        let is_cuda = self
            .runtime
            .call(at, "pgpu_rt_device_is_cuda", &[], "() -> i32")?[0];
        let zero = at.constant(i32_type, 0)?;
        let on_gpu = at.cmpi(1, is_cuda, zero)?;
        let (dispatch, then_yield, else_yield) = at.if_op(on_gpu, results, true)?;
        // SAFETY: live op; a unit attribute of its context.
        unsafe {
            mlir_sys::mlirOperationSetAttributeByName(
                dispatch.0,
                crate::ir::string_ref(DISPATCH),
                at.unit_attribute().to_raw(),
            )
        };
        let Some(else_yield) = else_yield else {
            return Err(at.fail("internal error: dispatch without an else region"));
        };
        Ok((dispatch, then_yield, else_yield))
    }

    /// Records the source position of the next launches for error reports.
    pub(crate) fn launch_site(&mut self, at: &Builder, name: &str, op: Op) -> Built<()> {
        let i32_type = at.parse_type("i32")?;
        let (file, line, column) = op.file_line_column();
        let site = [
            self.runtime.string_constant(at, name)?,
            self.runtime.string_constant(at, &file)?,
            at.constant(i32_type, i64::from(line))?,
            at.constant(i32_type, i64::from(column))?,
        ];
        self.runtime.call(
            at,
            "pgpu_rt_launch_site",
            &site,
            "(!llvm.ptr, !llvm.ptr, i32, i32)",
        )?;
        Ok(())
    }

    /// Gives a host `pgpu.list.*` collective a GPU version: a call of
    /// `@pgpu_coll_<name>_<T>` (defined by `pgpu-link-gpu-collectives`) on
    /// dense device views, dispatched like kernels.
    fn offload_collective(&mut self, op: Op) -> Built<()> {
        let at = Builder::before(op);
        let name = op.name();
        let short = name.trim_start_matches("pgpu.list.").to_string();
        let element = MemRefType::try_from(op.operand(0).melior_type())
            .map(|memref| memref.element().to_string())
            .map_err(|_| at.fail("a collective on a non-list"))?;
        let kind = || -> Built<&'static str> {
            let code = op
                .integer_attribute("kind")
                .ok_or_else(|| at.fail("list collective without a kind"))?;
            i32::try_from(code)
                .ok()
                .and_then(|code| pgpu_runtime::elem::Kind::from_code("pgpu.list", code).ok())
                .map(pgpu_runtime::elem::Kind::name)
                .ok_or_else(|| at.fail(&format!("unknown collective kind {code}")))
        };
        // A scan whose total nobody uses: the version that does not read
        // it back (the host goes on without waiting for the scan).
        let values_only = short == "scan" && op.result(0).uses().is_empty();
        let (symbol, written): (String, &[usize]) = match short.as_str() {
            "reduce" => (format!("pgpu_coll_reduce_{}_{element}", kind()?), &[]),
            "scan" if values_only => (format!("pgpu_coll_scan_values_{}_{element}", kind()?), &[1]),
            "scan" => (format!("pgpu_coll_scan_{}_{element}", kind()?), &[1]),
            "sort_idx" if op.num_operands() > 3 => {
                (format!("pgpu_coll_sort_idx_sorted_{element}"), &[1, 3])
            }
            "sort_idx" => (format!("pgpu_coll_sort_idx_{element}"), &[1]),
            "compact" | "split" => (format!("pgpu_coll_{short}_{element}"), &[2]),
            "expand" => (format!("pgpu_coll_expand_{element}"), &[1, 2]),
            _ => return Ok(()),
        };
        let results: Vec<Type> = op
            .results()
            .iter()
            .map(|value| value.melior_type())
            .collect();
        let uses: Vec<(Op, usize, usize)> = op
            .results()
            .iter()
            .enumerate()
            .flat_map(|(result, value)| {
                value
                    .uses()
                    .into_iter()
                    .map(move |found| (found.owner, found.index, result))
            })
            .collect();
        let (dispatch, then_yield, else_yield) = self.dispatch(&at, &results)?;
        let inside = at.moved_to(then_yield).at_location_of(op);
        self.launch_site(&inside, &short, op)?;
        let mut arguments = vec![];
        let mut types = vec![];
        for (position, operand) in op.operands().into_iter().enumerate() {
            if MemRefType::try_from(operand.melior_type()).is_ok() {
                let view = self.dense_device_view(&inside, operand, written.contains(&position))?;
                types.push(view.melior_type().to_string());
                arguments.push(view);
            } else {
                types.push(operand.melior_type().to_string());
                arguments.push(operand);
            }
        }
        if short == "scan" {
            let i1 = inside.parse_type("i1")?;
            let inclusive = inside.constant(i1, i64::from(op.has_attribute("inclusive")))?;
            types.push("i1".to_string());
            arguments.push(inclusive);
        }
        let output = match results.first() {
            Some(ty) if !values_only => format!(" -> {ty}"),
            _ => String::new(),
        };
        let signature = format!("({}){output}", types.join(", "));
        let mut gpu_results = self
            .runtime
            .call(&inside, &symbol, &arguments, &signature)?;
        if values_only {
            gpu_results = vec![inside.poison(results[0])?];
        }
        then_yield.set_operands(&gpu_results);
        op.move_before(else_yield);
        else_yield.set_operands(&op.results());
        for (owner, index, result) in uses {
            owner.set_operand(index, dispatch.result(result));
        }
        Ok(())
    }

    /// The name of `kernel` in error reports: `<function> kernel <k>`.
    pub(crate) fn site_name(&mut self, kernel: Op) -> String {
        let host_name = kernel
            .enclosing_function()
            .map(source_name)
            .unwrap_or_default();
        let number = self.kernels_of.entry(host_name.clone()).or_insert(0);
        let site_name = format!("{host_name} kernel {number}");
        *number += 1;
        site_name
    }

    fn offload(&mut self, kernel: Op) -> Built<()> {
        let at = Builder::before(kernel);
        if kernel.enclosing_function().is_none() {
            return Ok(());
        }
        let site_name = self.site_name(kernel);

        let lists = outside_lists(kernel);

        // if (cuda) { ... } else { kernel }
        let (_, then_yield, else_yield) = self.dispatch(&at, &[])?;
        let gpu_side = kernel.clone_detached();
        kernel.move_before(else_yield);
        let inside = at.moved_to(then_yield).at_location_of(kernel);
        self.launch_site(&inside, &site_name, kernel)?;
        let mut views = HashMap::new();
        for (list, write) in &lists {
            views.insert(*list, self.device_view(&inside, *list, *write)?);
        }
        let (lower, upper, step) = (kernel.operand(0), kernel.operand(1), kernel.operand(2));
        let index = inside.index_type();
        let span = inside.value("arith.subi", &[upper, lower], index, &[])?;
        let trips = inside.value("arith.ceildivsi", &[span, step], index, &[])?;
        let (thread, linear) = self.launch_spread(&inside, trips, kernel)?;
        let in_range = thread.cmpi(2, linear, trips)?;
        let (_, body_yield, _) = thread.if_op(in_range, &[], false)?;
        let lane = thread.moved_to(body_yield);
        // The usual unit range needs no arithmetic (and no kernel
        // parameters for its bounds).
        let induction = if is_index_constant(lower, 0) && is_index_constant(step, 1) {
            linear
        } else {
            let strided = lane.value("arith.muli", &[linear, step], index, &[])?;
            lane.value("arith.addi", &[lower, strided], index, &[])?
        };

        // The kernel body, cloned, on the device views.
        at.insert_detached(gpu_side);
        let Some(gpu_body) = gpu_side.entry_block(0) else {
            return Err(at.fail("internal error: kernel without a body"));
        };
        for argument in gpu_body.arguments() {
            argument.replace_all_uses(induction);
        }
        for op in gpu_side.nested() {
            for (position, operand) in op.operands().into_iter().enumerate() {
                if let Some(view) = views.get(&operand) {
                    op.set_operand(position, *view);
                }
            }
        }
        for op in gpu_body.ops() {
            if op.is("scf.reduce") {
                continue;
            }
            op.move_before(body_yield);
        }
        gpu_side.erase();
        Ok(())
    }

    /// `if (trips > 0) { gpu.launch async blocks(ceil(trips / N))
    /// threads(N) { } }` before `inside`: a builder at the end of the
    /// launch body and the thread's linear id there (`block_id * N +
    /// thread_id`, which may reach past `trips`).
    pub(crate) fn launch<'c>(
        &mut self,
        inside: &Builder<'c>,
        trips: Val,
        kernel: Op,
    ) -> Built<(Builder<'c>, Val)> {
        let block_size = inside.index(self.block_size)?;
        launch_blocks_of(inside, trips, block_size, kernel)
    }

    /// Like [`Self::launch`], with the block size the runtime picks for
    /// `trips` threads (`pgpu_rt_kernel_block_size`: N, or smaller blocks
    /// that spread a small kernel over every multiprocessor).
    fn launch_spread<'c>(
        &mut self,
        inside: &Builder<'c>,
        trips: Val,
        kernel: Op,
    ) -> Built<(Builder<'c>, Val)> {
        if let Some(chosen) = kernel.integer_attribute(MODEL_BLOCK_SIZE) {
            // `pgpu-model-block-size` chose it with the performance model.
            let block_size = inside.index(chosen)?;
            return launch_blocks_of(inside, trips, block_size, kernel);
        }
        let most = inside.index(self.block_size)?;
        let block_size = self.runtime.call(
            inside,
            "pgpu_rt_kernel_block_size",
            &[trips, most],
            "(index, index) -> index",
        )?[0];
        launch_blocks_of(inside, trips, block_size, kernel)
    }

    /// Whether `op` launches kernels or calls a user function (which may).
    fn launches(&mut self, op: Op) -> bool {
        if let Some(known) = self.launches.get(&op) {
            return *known;
        }
        let found = op.nested().into_iter().chain([op]).any(|inner| {
            inner.is("gpu.launch")
                || inner.has_attribute(DISPATCH)
                || (inner.is("func.call")
                    && !symbol_attribute(inner, "callee")
                        .is_some_and(|callee| callee.starts_with("pgpu_rt_")))
        });
        self.launches.insert(op, found);
        found
    }

    /// Where a host sync of `list` for the access `op` goes: before the
    /// outermost enclosing loop or conditional that launches nothing and
    /// does not define the list.
    fn sync_point(&mut self, op: Op, list: Val) -> Op {
        let mut point = op;
        while let Some(parent) = point.parent() {
            let name = parent.name();
            let hoistable = (matches!(
                name.as_str(),
                "scf.for" | "scf.while" | "scf.if" | "scf.parallel" | "scf.execute_region"
            ) || is_task_region(&name))
                && !parent.has_attribute(DISPATCH);
            let movable = list.is_defined_within(parent) && !is_global_address(list);
            if !hoistable || movable || self.launches(parent) {
                break;
            }
            point = parent;
        }
        point
    }

    fn sync_host_accesses(&mut self, module: Op) -> Built<()> {
        let mut requests: Vec<(Op, Val, bool)> = vec![];
        for op in module.nested() {
            let on_device = op
                .enclosing_function()
                .is_some_and(|function| self.device_functions.contains(&function));
            if on_device || !is_host_access_site(op) {
                continue;
            }
            let accesses: Vec<(Val, bool)> = match op.name().as_str() {
                "memref.load" => vec![(op.operand(0), false)],
                "memref.store" => vec![(op.operand(1), true)],
                "memref.copy" => vec![(op.operand(0), false), (op.operand(1), true)],
                "memref.atomic_rmw" => vec![(op.operand(1), true)],
                "func.call" => {
                    if !symbol_attribute(op, "callee")
                        .is_some_and(|callee| callee.starts_with("pgpu_rt_list_"))
                    {
                        continue;
                    }
                    op.operands()
                        .into_iter()
                        .filter(|operand| operand.melior_type().to_string() == "!llvm.ptr")
                        .map(|operand| (operand, true))
                        .collect()
                }
                _ => continue,
            };
            for (list, write) in accesses {
                if is_host_only_memory(list) {
                    continue;
                }
                let point = if op.is("func.call") {
                    op
                } else {
                    self.sync_point(op, list)
                };
                match requests
                    .iter_mut()
                    .find(|(at, known, _)| *at == point && *known == list)
                {
                    Some((_, _, known_write)) => *known_write |= write,
                    None => requests.push((point, list, write)),
                }
            }
        }
        for (point, list, write) in requests {
            let at = Builder::before(point);
            // A global's address taken inside the loop the sync left.
            let list = match list.defining_op().filter(|def| def.is_within(point)) {
                Some(address) => {
                    let copy = address.clone_detached();
                    point.block_of().insert_raw_before(point, copy);
                    copy.result(0)
                }
                None => list,
            };
            let pointer = if list.melior_type().to_string() == "!llvm.ptr" {
                list
            } else {
                self.aligned_pointer(&at, list)?
            };
            let write = at.constant(at.parse_type("i32")?, i64::from(write))?;
            self.runtime.call(
                &at,
                "pgpu_rt_to_host",
                &[pointer, write],
                "(!llvm.ptr, i32)",
            )?;
        }
        Ok(())
    }
}

/// A 1-D launch of `trips` threads in blocks of `block_size` (see
/// [`Offload::launch`]): the builder in its body and the linear id
/// (`block_id * block_dim + thread_id`).
fn launch_blocks_of<'c>(
    inside: &Builder<'c>,
    trips: Val,
    block_size: Val,
    kernel: Op,
) -> Built<(Builder<'c>, Val)> {
    let index = inside.index_type();
    let blocks = inside.value("arith.ceildivsi", &[trips, block_size], index, &[])?;
    let (thread, ids, _) = launch_shaped(inside, trips, blocks, block_size, kernel)?;
    // Block ids are arguments 0..3, thread ids 3..6, block sizes 9..12.
    let scaled = thread.value("arith.muli", &[ids[0], ids[9]], index, &[])?;
    let linear = thread.value("arith.addi", &[scaled, ids[3]], index, &[])?;
    Ok((thread, linear))
}

/// `if (trips > 0) { gpu.launch async blocks(blocks) threads(threads) { }
/// }` (1-D) before `inside`: a builder at the end of the launch body, the
/// body's arguments (block ids 0..3, thread ids 3..6, then the sizes) and
/// its terminator.
pub(crate) fn launch_shaped<'c>(
    inside: &Builder<'c>,
    trips: Val,
    blocks: Val,
    threads: Val,
    kernel: Op,
) -> Built<(Builder<'c>, Vec<Val>, Op)> {
    let index = inside.index_type();
    let one = inside.index(1)?;
    // Launch nothing for an empty range.
    let positive = inside.cmpi(4, trips, inside.index(0)?)?;
    let (_, launch_yield, _) = inside.if_op(positive, &[], false)?;
    let launcher = inside.moved_to(launch_yield);
    // Asynchronous: nothing waits for the kernel here. The runtime's
    // one stream orders it before later copies and launches, and every
    // host access of a list it writes waits for the device
    // (pgpu_rt_to_host downloads after a synchronization).
    let token = launcher.parse_type("!gpu.async.token")?;
    let stream = launcher.value("gpu.wait", &[], token, &[])?;
    let segments = launcher.segment_sizes(&[1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0])?;
    let arguments: Vec<(Type, melior::ir::Location)> =
        (0..12).map(|_| (index, kernel.melior_location())).collect();
    let body = Block::new(&arguments);
    let region = Region::new();
    region.append_block(body);
    let launch = launcher.op_with_regions(
        "gpu.launch",
        &[stream, blocks, one, one, threads, one, one],
        &[token],
        &[("operandSegmentSizes", segments)],
        vec![region],
    )?;
    let Some(launch_body) = launch.entry_block(0) else {
        return Err(inside.fail("internal error: gpu.launch without a body"));
    };
    let terminator =
        melior::ir::operation::OperationBuilder::new("gpu.terminator", kernel.melior_location())
            .build()
            .map_err(|error| inside.fail(&format!("cannot build gpu.terminator: {error}")))?;
    let terminator = launch_body.append(terminator);
    let thread = inside.moved_to(terminator).at_location_of(kernel);
    Ok((thread, launch_body.arguments(), terminator))
}

/// Fails when a function that block kernels call (`device_functions`) is
/// also called from host code: it would need host syncs there and none on
/// the device.
fn check_device_only(module: Op, device_functions: &HashSet<Op>) -> Built<()> {
    let names: HashSet<String> = device_functions
        .iter()
        .filter_map(|function| symbol_attribute(*function, "sym_name"))
        .collect();
    for call in module.nested() {
        if !call.is("func.call") {
            continue;
        }
        let Some(callee) = symbol_attribute(call, "callee").filter(|callee| names.contains(callee))
        else {
            continue;
        };
        let from_device = call
            .enclosing_function()
            .is_some_and(|function| device_functions.contains(&function))
            || std::iter::successors(call.parent(), |parent| parent.parent())
                .any(|parent| parent.is("pgpu.spawn") && parent.has_attribute("block"));
        if !from_device {
            return Err(Builder::before(call).fail(&format!(
                "calls @{callee}, which a block kernel (`pgpu.spawn block`) calls too: the \
                 functions of block kernels run on the device only (give block kernels a copy \
                 marked `{BLOCK_GROUP}`)"
            )));
        }
    }
    Ok(())
}

/// Whether `list` is a global's address (`memref.get_global`), the same
/// wherever it is taken.
fn is_global_address(list: Val) -> bool {
    list.defining_op()
        .is_some_and(|op| op.is("memref.get_global"))
}

/// Whether `global` (a `memref.get_global` result) is a global list
/// variable: it holds a list's descriptor, whose pointers are host
/// addresses. Global arrays of plain elements are runtime blocks instead.
pub(crate) fn is_descriptor_global(global: Val) -> bool {
    MemRefType::try_from(global.melior_type())
        .is_ok_and(|memref| MemRefType::try_from(memref.element()).is_ok())
}

/// Whether `list` is a view of host stack memory or a global list
/// variable (which have no device mirror and need no sync).
fn is_host_only_memory(list: Val) -> bool {
    let mut current = list;
    while let Some(op) = current.defining_op() {
        match op.name().as_str() {
            "memref.alloca" => return true,
            "memref.get_global" => return is_descriptor_global(current),
            "memref.cast" | "memref.subview" | "memref.reinterpret_cast" | "memref.view" => {
                current = op.operand(0);
            }
            _ => return false,
        }
    }
    false
}

/// A host op whose list accesses need a sync: host code outside GPU
/// launches and outside the CPU branch of a dispatch (the bodies of task
/// groups and tasks are host code).
fn is_host_access_site(op: Op) -> bool {
    let mut current = op.parent();
    while let Some(parent) = current {
        let name = parent.name();
        if name == "func.func" {
            return true;
        }
        let pgpu_region = name.starts_with("pgpu.") && !is_task_region(&name);
        if name.starts_with("gpu.") || pgpu_region || parent.has_attribute(DISPATCH) {
            return false;
        }
        current = parent.parent();
    }
    false
}

/// The memrefs from outside `kernel` that it uses, and whether it may
/// store into each.
pub(crate) fn outside_lists(kernel: Op) -> Vec<(Val, bool)> {
    let mut lists: Vec<(Val, bool)> = vec![];
    for op in kernel.nested() {
        for (index, operand) in op.operands().into_iter().enumerate() {
            if operand.is_defined_within(kernel)
                || MemRefType::try_from(operand.melior_type()).is_err()
            {
                continue;
            }
            let stores = match op.name().as_str() {
                "memref.store" => index == 1,
                "memref.load" => false,
                _ => true,
            };
            match lists.iter_mut().find(|(list, _)| *list == operand) {
                Some((_, write)) => *write |= stores,
                None => lists.push((operand, stores)),
            }
        }
    }
    lists
}
