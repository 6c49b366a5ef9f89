//! `pgpu-lower-to-runtime`: lowers the host ops of the kernel stage that
//! have no upstream lowering to calls of the `pgpu-runtime` C ABI
//! (`backends/runtime`, see its crate docs).
//!
//! * `pgpu.argi`, `pgpu.wtime`, `pgpu.rand_seed`, `pgpu.rand_u32` become
//!   calls of `pgpu_rt_argi`/`pgpu_rt_argi_width`, `pgpu_rt_wtime`,
//!   `pgpu_rt_rand_seed`, `pgpu_rt_rand_u32`; `pgpu.grid_capacity` and
//!   `pgpu.block_capacity` become `pgpu_rt_grid_capacity` and
//!   `pgpu_rt_block_capacity` (0 on the CPU device),
//!   `pgpu.multiprocessors` `pgpu_rt_multiprocessors`, and
//!   `pgpu.lockstep_width` `pgpu_rt_lockstep_width` (the warp size; 1 on
//!   the CPU device);
//! * a `pgpu.spawn block` left in host code (the CPU target's: the cuda
//!   target's `pgpu-offload-kernels` launches them) becomes
//!   `pgpu_rt_block_unavailable()`, which reports the misuse: code
//!   versioned on `pgpu.block_capacity`, 0 there, never runs it. The
//!   `pgpu.block_group` functions that no host code calls any more (they
//!   run only in block kernels) are erased with their range barriers;
//! * `pgpu.printf` becomes `pgpu_rt_printf_begin(format, length)`, one
//!   `pgpu_rt_printf_i64(value, bits)` (integers sign-extended, `bits` the
//!   operand's width) or `pgpu_rt_printf_f64(value)` per operand, and
//!   `pgpu_rt_printf_end()`; the format is an `llvm.mlir.global` constant;
//! * the `pgpu.list.*` collectives become `pgpu_rt_list_*` calls on the
//!   lists' element addresses (`memref.extract_aligned_pointer_as_index`
//!   plus the view's offset, as `!llvm.ptr`), with the runtime's element and
//!   kind codes; results come back as 64 bits and are narrowed or bitcast.
//!
//! * `pgpu.dnew` becomes `memref.alloc` (lists live as long as the
//!   program); `pgpu.dtempnew` becomes `memref.alloc` recorded with
//!   `pgpu_rt_dtemp_register`, and `pgpu.dtempfree` frees what the
//!   function recorded since its entry (`pgpu_rt_dtemp_mark` there). Run
//!   `finalize-memref-to-llvm{use-generic-functions=true}` afterwards, so
//!   that `memref.alloc` uses the runtime's allocator too;
//! * `pgpu.taskgroup { body }` becomes `pgpu_rt_tasks_begin()`, the body
//!   in place (its `pgpu.yield` dropped), `pgpu_rt_tasks_end()`; each
//!   `pgpu.task { body }` likewise between `pgpu_rt_task_begin()` and
//!   `pgpu_rt_task_end()` (outer ops first: the walk's list holds the
//!   nested ones, which only move). The runtime gives each task's device
//!   work its own stream on the cuda device; the host code stays
//!   sequential, in program order (in the cuda pipeline,
//!   `pgpu-outline-tasks` has already made the tasks that may run
//!   concurrently `pgpu_rt_task_spawn` calls);
//! * the program's `@main() -> i32` is renamed `@pgpu_main`, and a C entry
//!   `@main(argc, argv)` calls `pgpu_rt_init`, then it, then `pgpu_rt_fini`
//!   (errors of kernels still running are reported before the exit; the
//!   `PGPU_PROFILE` report).
//!
//! Kernels (`scf.parallel`) are the CPU and CUDA backends' business and
//! stay. We write this pass because the ops are ours: upstream has nothing
//! to lower them to; the pipeline after it is upstream's.

use crate::{
    build::{Builder, Built, memref_element_type},
    inline_spmd::symbol_attribute,
    ir::{Blk, Op, Val, element_bytes, static_shape, string_ref},
    offload_block::{BLOCK_GROUP, BLOCK_UNAVAILABLE},
    outline_cpu_kernels::is_task_region,
    runtime_calls::{PROGRAM_MAIN, RuntimeCalls, escape_bytes},
};
use melior::ir::{
    OperationRef, Type, TypeLike,
    attribute::TypeAttribute,
    operation::OperationLike,
    r#type::{MemRefType, ShapedTypeLike},
};
use mlir_sys::mlirOperationGetContext;
use pgpu_pass_infra::{Pass, PassFailure, emit_error};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct LowerToRuntime;

impl Pass for LowerToRuntime {
    const ARGUMENT: &'static str = "pgpu-lower-to-runtime";
    const SUMMARY: &'static str = "Lower host I/O (argi, wtime, rand, printf), pgpu.list collectives and task groups to pgpu-runtime calls";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::func(),
            DialectHandle::llvm(),
            DialectHandle::memref(),
            DialectHandle::arith(),
        ]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let mut lowering = Lowering {
            module,
            runtime: RuntimeCalls::new(module),
            formats: 0,
            marks: vec![],
        };
        for op in module.nested() {
            let name = op.name();
            if op.is_within_spmd() {
                continue;
            }
            match name.as_str() {
                "pgpu.argi" => lowering.argi(op)?,
                "pgpu.wtime" => lowering.replace_call(op, "pgpu_rt_wtime", &[], "() -> f64")?,
                "pgpu.grid_capacity" => {
                    lowering.replace_call(op, "pgpu_rt_grid_capacity", &[], "() -> index")?
                }
                "pgpu.block_capacity" => {
                    lowering.replace_call(op, "pgpu_rt_block_capacity", &[], "() -> index")?
                }
                "pgpu.multiprocessors" => {
                    lowering.replace_call(op, "pgpu_rt_multiprocessors", &[], "() -> index")?
                }
                "pgpu.lockstep_width" => {
                    lowering.replace_call(op, "pgpu_rt_lockstep_width", &[], "() -> index")?
                }
                "pgpu.rand_u32" => {
                    lowering.replace_call(op, "pgpu_rt_rand_u32", &[], "() -> i32")?
                }
                "pgpu.rand_seed" => lowering.rand_seed(op)?,
                "pgpu.printf" => lowering.printf(op)?,
                name if name.starts_with("pgpu.list.") => lowering.list(op)?,
                "pgpu.dnew" => lowering.allocate(op, false)?,
                "pgpu.dtempnew" => lowering.allocate(op, true)?,
                "pgpu.dtempfree" => lowering.dtempfree(op)?,
                _ => {}
            }
        }
        // Apart from the walk: lowering a task erases its terminator, so
        // the list holds the task ops only.
        let tasks: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| is_task_region(&op.name()))
            .collect();
        for op in tasks {
            if op.is("pgpu.taskgroup") {
                lowering.bracket(op, "pgpu_rt_tasks_begin", "pgpu_rt_tasks_end")?;
            } else {
                lowering.bracket(op, "pgpu_rt_task_begin", "pgpu_rt_task_end")?;
            }
        }
        // Apart from the walk too: the list holds their bodies' ops.
        let block_spawns: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.spawn") && op.has_attribute("block"))
            .collect();
        for spawn in block_spawns {
            lowering.replace_call(spawn, BLOCK_UNAVAILABLE, &[], "()")?;
        }
        erase_unused_block_groups(module);
        lowering.entry_point()
    }
}

/// Erases the `pgpu.block_group` functions that no code outside them calls
/// (directly or through one another): they run only in block kernels.
fn erase_unused_block_groups(module: Op) {
    let Some(body) = module.entry_block(0) else {
        return;
    };
    let groups: Vec<Op> = body
        .ops()
        .into_iter()
        .filter(|op| op.is("func.func") && op.has_attribute(BLOCK_GROUP))
        .collect();
    if groups.is_empty() {
        return;
    }
    let callees = |ops: Vec<Op>| -> Vec<String> {
        ops.into_iter()
            .filter(|op| op.is("func.call"))
            .filter_map(|call| symbol_attribute(call, "callee"))
            .collect()
    };
    let mut used: Vec<String> = callees(
        body.ops()
            .into_iter()
            .filter(|op| !groups.contains(op))
            .flat_map(|op| op.nested())
            .collect(),
    );
    let mut live: Vec<Op> = vec![];
    while let Some(name) = used.pop() {
        let Some(group) = groups.iter().copied().find(|group| {
            !live.contains(group) && symbol_attribute(*group, "sym_name").as_deref() == Some(&name)
        }) else {
            continue;
        };
        live.push(group);
        used.extend(callees(group.nested()));
    }
    for group in groups {
        if !live.contains(&group) {
            group.erase();
        }
    }
}

impl Op {
    /// Whether the op is per-thread code of an SPMD region.
    fn is_within_spmd(self) -> bool {
        let mut current = self.parent();
        while let Some(op) = current {
            if op.is("pgpu.require") {
                return false;
            }
            if op.is("pgpu.spawn") {
                return true;
            }
            current = op.parent();
        }
        false
    }
}

struct Lowering {
    module: Op,
    runtime: RuntimeCalls,
    formats: usize,
    /// The `pgpu_rt_dtemp_mark` result at the entry of each function.
    marks: Vec<(Op, Val)>,
}

/// Whether the `memref.global` is initialized to all-zero bits (a zero
/// splat: `dense<0>`, `dense<0.000000e+00>`, `dense<false>`).
fn has_zero_initializer(global: Op) -> bool {
    global
        .melior()
        .attribute("initial_value")
        .is_ok_and(|value| {
            let text = value.to_string();
            ["dense<0>", "dense<0.000000e+00>", "dense<false>"]
                .iter()
                .any(|zero| text.starts_with(zero))
        })
}

/// The runtime's element code of a scalar type (`elem.rs`).
fn element_code(ty: &str) -> Option<i64> {
    Some(match ty {
        "i1" => 0,
        "i8" => 1,
        "i16" => 2,
        "i32" => 3,
        "i64" | "index" => 4,
        "f32" => 5,
        "f64" => 6,
        _ => return None,
    })
}

impl Lowering {
    fn replace_call(
        &mut self,
        op: Op,
        name: &str,
        arguments: &[Val],
        signature: &str,
    ) -> Built<()> {
        let at = Builder::before(op);
        let results = self.runtime.call(&at, name, arguments, signature)?;
        for (old, new) in op.results().into_iter().zip(results) {
            old.replace_all_uses(new);
        }
        op.erase();
        Ok(())
    }

    fn argi(&mut self, op: Op) -> Built<()> {
        let at = Builder::before(op);
        let ty = op.result(0).melior_type().to_string();
        if ty == "i32" && op.operand(0).melior_type().to_string() == "i32" {
            let arguments = [op.operand(0), op.operand(1)];
            return self.replace_call(op, "pgpu_rt_argi", &arguments, "(i32, i32) -> i32");
        }
        let i64_type = at.parse_type("i64")?;
        let widen = |value: Val| -> Built<Val> {
            if value.melior_type().to_string() == "i64" {
                Ok(value)
            } else {
                at.value("arith.extsi", &[value], i64_type, &[])
            }
        };
        let position = widen(op.operand(0))?;
        let default = widen(op.operand(1))?;
        let width = ty
            .strip_prefix('i')
            .and_then(|width| width.parse::<i64>().ok());
        let width =
            width.ok_or_else(|| emit_error(op.melior_location(), "argi of an unsupported type"))?;
        let i32_type = at.parse_type("i32")?;
        let bits = at.constant(i32_type, width)?;
        let value = self.runtime.call(
            &at,
            "pgpu_rt_argi_width",
            &[position, default, bits],
            "(i64, i64, i32) -> i64",
        )?;
        let narrowed = if ty == "i64" {
            value[0]
        } else {
            at.value("arith.trunci", &[value[0]], op.result(0).melior_type(), &[])?
        };
        op.result(0).replace_all_uses(narrowed);
        op.erase();
        Ok(())
    }

    fn rand_seed(&mut self, op: Op) -> Built<()> {
        let at = Builder::before(op);
        let seed = op.operand(0);
        let seed = if seed.melior_type().to_string() == "i64" {
            seed
        } else {
            at.value("arith.extsi", &[seed], at.parse_type("i64")?, &[])?
        };
        self.replace_call(op, "pgpu_rt_rand_seed", &[seed], "(i64)")
    }

    fn printf(&mut self, op: Op) -> Built<()> {
        let at = Builder::before(op);
        let format = op
            .melior()
            .attribute("format")
            .ok()
            .and_then(|attribute| melior::ir::attribute::StringAttribute::try_from(attribute).ok())
            .map(|format| format.value().as_bytes().to_vec())
            .ok_or_else(|| emit_error(op.melior_location(), "pgpu.printf without a format"))?;
        let name = format!("pgpu_format_{}", self.formats);
        self.formats += 1;
        let mut terminated = format.clone();
        terminated.push(0);
        let escaped = escape_bytes(&terminated);
        self.runtime.parse_into_module(&format!(
            "llvm.mlir.global internal constant @{name}(\"{escaped}\") {{addr_space = 0 : i32}}"
        ))?;
        let pointer_type = at.parse_type("!llvm.ptr")?;
        let address = at.value(
            "llvm.mlir.addressof",
            &[],
            pointer_type,
            &[("global_name", at.parse_attribute(&format!("@{name}"))?)],
        )?;
        let i64_type = at.parse_type("i64")?;
        let i32_type = at.parse_type("i32")?;
        let length = at.constant(i64_type, format.len() as i64)?;
        self.runtime.call(
            &at,
            "pgpu_rt_printf_begin",
            &[address, length],
            "(!llvm.ptr, i64)",
        )?;
        for operand in op.operands() {
            let ty = operand.melior_type();
            let text = ty.to_string();
            if ty.is_float() {
                let value = if text == "f64" {
                    operand
                } else {
                    at.value("arith.extf", &[operand], at.parse_type("f64")?, &[])?
                };
                self.runtime
                    .call(&at, "pgpu_rt_printf_f64", &[value], "(f64)")?;
                continue;
            }
            let (value, width) = match text.as_str() {
                "index" => (at.value("arith.index_cast", &[operand], i64_type, &[])?, 64),
                "i64" => (operand, 64),
                other => {
                    let width = other.trim_start_matches('i').parse::<i64>().map_err(|_| {
                        emit_error(
                            op.melior_location(),
                            &format!("printf of an unsupported type {other}"),
                        )
                    })?;
                    (at.value("arith.extsi", &[operand], i64_type, &[])?, width)
                }
            };
            let bits = at.constant(i32_type, width)?;
            self.runtime
                .call(&at, "pgpu_rt_printf_i64", &[value, bits], "(i64, i32)")?;
        }
        self.runtime.call(&at, "pgpu_rt_printf_end", &[], "()")?;
        op.erase();
        Ok(())
    }

    /// The address of element 0 of a rank-1 memref view, as `!llvm.ptr`.
    fn address(&self, at: &Builder, memref: Val) -> Built<Val> {
        let element = memref_element_type(memref)?.to_string();
        let bytes = element_bytes(&element)
            .ok_or_else(|| at.fail(&format!("a list of {element} elements is not supported")))?
            as i64;
        let index = at.index_type();
        let aligned = at.aligned_index(memref)?;
        let base_type = at.parse_type(&format!("memref<{element}>"))?;
        let metadata = at.op(
            "memref.extract_strided_metadata",
            &[memref],
            &[base_type, index, index, index],
            &[],
        )?;
        let size = at.index(bytes)?;
        let offset = at.value("arith.muli", &[metadata.result(1), size], index, &[])?;
        let address = at.value("arith.addi", &[aligned, offset], index, &[])?;
        at.index_to_pointer(address)
    }

    /// The runtime's 64-bit result as the op's result type.
    fn narrow(&self, at: &Builder, bits: Val, ty: Type) -> Built<Val> {
        Ok(match ty.to_string().as_str() {
            "i64" => bits,
            "index" => at.value("arith.index_cast", &[bits], ty, &[])?,
            "f64" => at.value("arith.bitcast", &[bits], ty, &[])?,
            "f32" => {
                let low = at.value("arith.trunci", &[bits], at.parse_type("i32")?, &[])?;
                at.value("arith.bitcast", &[low], ty, &[])?
            }
            _ => at.value("arith.trunci", &[bits], ty, &[])?,
        })
    }

    fn list(&mut self, op: Op) -> Built<()> {
        let at = Builder::before(op);
        let i32_type = at.parse_type("i32")?;
        let i64_type = at.parse_type("i64")?;
        let code = |value: Val| -> Built<i64> {
            let element = memref_element_type(value)?.to_string();
            element_code(&element)
                .ok_or_else(|| at.fail(&format!("a list of {element} elements is not supported")))
        };
        let kind = || -> Built<Val> {
            let value = op
                .integer_attribute("kind")
                .ok_or_else(|| at.fail("list collective without an integer kind"))?;
            at.constant(i32_type, value)
        };
        let count = |value: Val| at.value("arith.index_cast", &[value], i64_type, &[]);
        let ptr = "!llvm.ptr";
        match op.name().as_str() {
            "pgpu.list.reduce" => {
                let arguments = [
                    kind()?,
                    at.constant(i32_type, code(op.operand(0))?)?,
                    self.address(&at, op.operand(0))?,
                    count(op.operand(1))?,
                ];
                let bits = self.runtime.call(
                    &at,
                    "pgpu_rt_list_reduce",
                    &arguments,
                    &format!("(i32, i32, {ptr}, i64) -> i64"),
                )?;
                let result = self.narrow(&at, bits[0], op.result(0).melior_type())?;
                op.result(0).replace_all_uses(result);
            }
            "pgpu.list.scan" => {
                let inclusive = at.constant(i32_type, i64::from(op.has_attribute("inclusive")))?;
                let arguments = [
                    kind()?,
                    at.constant(i32_type, code(op.operand(0))?)?,
                    inclusive,
                    self.address(&at, op.operand(0))?,
                    self.address(&at, op.operand(1))?,
                    count(op.operand(2))?,
                ];
                let bits = self.runtime.call(
                    &at,
                    "pgpu_rt_list_scan",
                    &arguments,
                    &format!("(i32, i32, i32, {ptr}, {ptr}, i64) -> i64"),
                )?;
                let result = self.narrow(&at, bits[0], op.result(0).melior_type())?;
                op.result(0).replace_all_uses(result);
            }
            "pgpu.list.sort_idx" => {
                let arguments = [
                    at.constant(i32_type, code(op.operand(0))?)?,
                    self.address(&at, op.operand(0))?,
                    self.address(&at, op.operand(1))?,
                    count(op.operand(2))?,
                ];
                self.runtime.call(
                    &at,
                    "pgpu_rt_list_sort_idx",
                    &arguments,
                    &format!("(i32, {ptr}, {ptr}, i64)"),
                )?;
                // The runtime returns the permutation; the sorted keys are a
                // gather through it (`pgpu-outline-cpu-kernels` runs it on
                // the thread pool).
                if op.num_operands() > 3 {
                    at.gather(op.operand(0), op.operand(1), op.operand(2), op.operand(3))?;
                }
            }
            name @ ("pgpu.list.compact" | "pgpu.list.split") => {
                let element = memref_element_type(op.operand(0))?.to_string();
                let bytes = element_bytes(&element)
                    .ok_or_else(|| at.fail("unsupported list element"))?
                    as i64;
                let arguments = [
                    at.constant(i64_type, bytes)?,
                    self.address(&at, op.operand(0))?,
                    self.address(&at, op.operand(1))?,
                    self.address(&at, op.operand(2))?,
                    count(op.operand(3))?,
                    count(op.operand(4))?,
                ];
                let function = format!("pgpu_rt_list_{}", &name["pgpu.list.".len()..]);
                let length = self.runtime.call(
                    &at,
                    &function,
                    &arguments,
                    &format!("(i64, {ptr}, {ptr}, {ptr}, i64, i64) -> i64"),
                )?;
                let result = at.value("arith.index_cast", &[length[0]], at.index_type(), &[])?;
                op.result(0).replace_all_uses(result);
            }
            "pgpu.list.expand" => {
                let arguments = [
                    at.constant(i32_type, code(op.operand(0))?)?,
                    self.address(&at, op.operand(0))?,
                    self.address(&at, op.operand(1))?,
                    self.address(&at, op.operand(2))?,
                    count(op.operand(3))?,
                ];
                let total = self.runtime.call(
                    &at,
                    "pgpu_rt_list_expand",
                    &arguments,
                    &format!("(i32, {ptr}, {ptr}, {ptr}, i64) -> i64"),
                )?;
                let result = at.value("arith.index_cast", &[total[0]], at.index_type(), &[])?;
                op.result(0).replace_all_uses(result);
            }
            other => return Err(at.fail(&format!("pgpu-lower-to-runtime cannot lower '{other}'"))),
        }
        op.erase();
        Ok(())
    }

    /// `pgpu.dnew`/`pgpu.dtempnew` as `memref.alloc`; a temporary list is
    /// recorded for the function's `pgpu.dtempfree`.
    fn allocate(&mut self, op: Op, temporary: bool) -> Built<()> {
        let at = Builder::before(op);
        let ty = op.result(0).melior_type();
        let segments = at.segment_sizes(&[i32::try_from(op.num_operands()).unwrap_or(0), 0])?;
        let list = at.value(
            "memref.alloc",
            &op.operands(),
            ty,
            &[("operandSegmentSizes", segments)],
        )?;
        if temporary {
            let address = self.address(&at, list)?;
            self.runtime
                .call(&at, "pgpu_rt_dtemp_register", &[address], "(!llvm.ptr)")?;
        }
        op.result(0).replace_all_uses(list);
        op.erase();
        Ok(())
    }

    /// Replaces the region op `op` (`pgpu.taskgroup`, `pgpu.task`) by a
    /// call of `begin`, its body without the terminator, and a call of
    /// `end`.
    fn bracket(&mut self, op: Op, begin: &str, end: &str) -> Built<()> {
        let at = Builder::before(op);
        self.runtime.call(&at, begin, &[], "()")?;
        op.move_body_before(op);
        self.runtime.call(&at, end, &[], "()")?;
        op.erase();
        Ok(())
    }

    /// The dtemp mark taken at the entry of the function holding `op`.
    fn mark(&mut self, op: Op) -> Built<Val> {
        let mut function = op;
        while !function.is("func.func") {
            function = function.parent().ok_or_else(|| {
                emit_error(op.melior_location(), "pgpu.dtempfree outside a function")
            })?;
        }
        if let Some((_, mark)) = self.marks.iter().find(|(owner, _)| *owner == function) {
            return Ok(*mark);
        }
        let first = function
            .entry_block(0)
            .and_then(|block| block.first())
            .ok_or_else(|| emit_error(op.melior_location(), "function without a body"))?;
        let at = Builder::before(first).at_location_of(function);
        let mark = self
            .runtime
            .call(&at, "pgpu_rt_dtemp_mark", &[], "() -> i64")?[0];
        self.marks.push((function, mark));
        Ok(mark)
    }

    fn dtempfree(&mut self, op: Op) -> Built<()> {
        let mark = self.mark(op)?;
        let at = Builder::before(op);
        self.runtime
            .call(&at, "pgpu_rt_dtempfree", &[mark], "(i64)")?;
        op.erase();
        Ok(())
    }

    /// Calls `pgpu_rt_register_global(address, bytes)` for every global
    /// array of the module (not the global list variables, which hold
    /// descriptors, nor workgroup globals), so that kernels on the cuda device can use it;
    /// `pgpu_rt_register_zero_global` for an array initialized to zeros
    /// (C's globals without initializer), whose device copy the runtime
    /// then makes by a memset instead of an upload.
    fn register_global_arrays(&mut self, at: &Builder, body: Blk) -> Built<()> {
        for global in body.ops() {
            if !global.is("memref.global") {
                continue;
            }
            let (Some(name), Some(memref)) = (
                crate::inline_spmd::symbol_attribute(global, "sym_name"),
                global
                    .melior()
                    .attribute("type")
                    .ok()
                    .and_then(|attribute| TypeAttribute::try_from(attribute).ok())
                    .and_then(|attribute| MemRefType::try_from(attribute.value()).ok()),
            ) else {
                continue;
            };
            // Block versions' shared locals live in each block's shared
            // memory (`pgpu-block-groups`): no host or device copy.
            if crate::block_groups::is_workgroup_memory(memref.into()) {
                continue;
            }
            let Some(element) = element_bytes(&memref.element().to_string()) else {
                continue;
            };
            let Some(shape) = static_shape(&memref) else {
                continue;
            };
            let count = shape
                .into_iter()
                .filter_map(|size| usize::try_from(size).ok())
                .fold(1usize, usize::saturating_mul);
            let address = at.value(
                "memref.get_global",
                &[],
                Type::from(memref),
                &[("name", at.parse_attribute(&format!("@{name}"))?)],
            )?;
            let pointer = at.index_to_pointer(at.aligned_index(address)?)?;
            let bytes = at.constant(
                at.parse_type("i64")?,
                i64::try_from(count.saturating_mul(element)).unwrap_or(i64::MAX),
            )?;
            let register = if has_zero_initializer(global) {
                "pgpu_rt_register_zero_global"
            } else {
                "pgpu_rt_register_global"
            };
            self.runtime
                .call(at, register, &[pointer, bytes], "(!llvm.ptr, i64)")?;
        }
        Ok(())
    }

    /// Renames `@main() -> i32` to `@pgpu_main` and adds the C entry.
    fn entry_point(&mut self) -> Built<()> {
        let Some(body) = self.module.entry_block(0) else {
            return Ok(());
        };
        let Some(main) = body.ops().into_iter().find(|op| {
            op.is("func.func")
                && crate::inline_spmd::symbol_attribute(*op, "sym_name").as_deref() == Some("main")
        }) else {
            return Ok(());
        };
        let signature = main
            .melior()
            .attribute("function_type")
            .map(|attribute| attribute.to_string())
            .unwrap_or_default();
        if signature != "() -> i32" {
            return Err(emit_error(
                main.melior_location(),
                &format!("the program's @main must be () -> i32 to get a C entry, not {signature}"),
            ));
        }
        // SAFETY: live module and function; symbol names are read only.
        unsafe {
            let name = mlir_sys::mlirStringAttrGet(
                mlirOperationGetContext(main.0),
                string_ref(PROGRAM_MAIN),
            );
            let status = mlir_sys::mlirSymbolTableReplaceAllSymbolUses(
                string_ref("main"),
                string_ref(PROGRAM_MAIN),
                self.module.0,
            );
            if status.value == 0 {
                return Err(emit_error(main.melior_location(), "cannot rename @main"));
            }
            mlir_sys::mlirOperationSetAttributeByName(main.0, string_ref("sym_name"), name);
        }
        self.runtime.declare("pgpu_rt_init", "(i32, !llvm.ptr)")?;
        // A body that verifies on its own, then the calls.
        self.runtime.parse_into_module(
            "func.func @main(%argc: i32, %argv: !llvm.ptr) -> i32 {\n\
               %status = arith.constant 0 : i32\n\
               func.return %status : i32\n\
             }",
        )?;
        let entry = body
            .first()
            .ok_or_else(|| emit_error(main.melior_location(), "internal error: no C entry"))?;
        let (Some(block), Some(placeholder)) = (
            entry.entry_block(0),
            entry.entry_block(0).and_then(|block| block.first()),
        ) else {
            return Err(emit_error(
                main.melior_location(),
                "internal error: C entry without a body",
            ));
        };
        let Some(terminator) = block.terminator() else {
            return Err(emit_error(
                main.melior_location(),
                "internal error: C entry without a return",
            ));
        };
        let at = Builder::before(placeholder).at_location_of(main);
        let arguments = block.arguments();
        self.runtime
            .call(&at, "pgpu_rt_init", &arguments, "(i32, !llvm.ptr)")?;
        self.register_global_arrays(&at, body)?;
        // The renamed program entry exists: no declaration for it.
        self.runtime.mark_declared(PROGRAM_MAIN);
        let status = self.runtime.call(&at, PROGRAM_MAIN, &[], "() -> i32")?;
        // Kernels still running on a GPU report their errors before exit.
        self.runtime.call(&at, "pgpu_rt_fini", &[], "()")?;
        terminator.set_operands(&status);
        placeholder.erase();
        Ok(())
    }
}
