//! `pgpu-report-run-time-errors`: turns the run-time checks of host code
//! and CPU kernels (`cf.assert`, as upstream's
//! `generate-runtime-verification` inserts them before out-of-bounds
//! accesses) into reports that name the kernel and the source line.
//!
//! Each `cf.assert %ok, "message"` becomes
//! `scf.if (not %ok) { pgpu_rt_kernel_error(kernel, file, line, col, what) }`
//! in a kernel outlined by `pgpu-outline-cpu-kernels` (a function named
//! `<function>_kernel<k>`), or `pgpu_rt_host_error(function, ...)` in host
//! code. `file:line:col` is the assert's location (the checked op's
//! source position); `what` is the reason in upstream's message (the text
//! after `^ `, e.g. `out-of-bounds access`) or the whole message. The
//! runtime prints `FILE:LINE:COL: error: in kernel K: WHAT` and exits with
//! status 1 (`backends/runtime`, `launch.rs`). Upstream's own lowering of
//! `cf.assert` prints the message and aborts (status 134), without the
//! kernel's name. GPU code keeps its asserts: `gpu.launch` bodies, and the
//! functions they call (those of block kernels, `pgpu.block_group` ones
//! included), which `gpu-kernel-outlining` copies into the kernels'
//! modules.

use crate::{
    build::{Builder, Built},
    inline_spmd::symbol_attribute,
    ir::Op,
    offload_block::{BLOCK_GROUP, module_functions},
    runtime_calls::{RuntimeCalls, source_name},
};
use melior::ir::{OperationRef, attribute::StringAttribute, operation::OperationLike};
use pgpu_pass_infra::{Pass, PassFailure};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct ReportRunTimeErrors;

impl Pass for ReportRunTimeErrors {
    const ARGUMENT: &'static str = "pgpu-report-run-time-errors";
    const SUMMARY: &'static str =
        "Report failed run-time checks (cf.assert) with the kernel and source position";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![
            DialectHandle::func(),
            DialectHandle::llvm(),
            DialectHandle::arith(),
            DialectHandle::scf(),
        ]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let mut runtime = RuntimeCalls::new(module);
        let device = device_functions(module);
        let asserts: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| {
                op.is("cf.assert")
                    && !within_gpu_module(*op)
                    && !op
                        .enclosing_function()
                        .is_some_and(|function| device.contains(&function))
            })
            .collect();
        for assert in asserts {
            report(&mut runtime, assert)?;
        }
        Ok(())
    }
}

/// GPU code keeps its `cf.assert`s: `convert-gpu-to-nvvm` makes them device
/// assertions, which the runtime reports at the launch site.
fn within_gpu_module(op: Op) -> bool {
    let mut current = op.parent();
    while let Some(parent) = current {
        if parent.is("gpu.module") || parent.is("gpu.launch") {
            return true;
        }
        current = parent.parent();
    }
    false
}

/// The functions that run on the GPU: those marked `pgpu.block_group` and
/// those `gpu.launch` bodies call, directly or not.
fn device_functions(module: Op) -> Vec<Op> {
    let functions = module_functions(module);
    let mut found: Vec<Op> = functions
        .values()
        .copied()
        .filter(|function| function.has_attribute(BLOCK_GROUP))
        .collect();
    let mut pending: Vec<Op> = found.clone();
    pending.extend(module.nested().into_iter().filter(|op| op.is("gpu.launch")));
    while let Some(code) = pending.pop() {
        for call in code.nested().into_iter().filter(|op| op.is("func.call")) {
            let callee = symbol_attribute(call, "callee").and_then(|name| functions.get(&name));
            if let Some(&callee) = callee
                && callee.entry_block(0).is_some()
                && !found.contains(&callee)
            {
                found.push(callee);
                pending.push(callee);
            }
        }
    }
    found
}

/// Whether `name` is a kernel that `pgpu-outline-cpu-kernels` outlined.
fn is_outlined_kernel(name: &str) -> bool {
    name.rsplit_once("_kernel")
        .is_some_and(|(_, number)| !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()))
}

/// The reason in upstream's message ("...\n^ reason\n...").
fn reason(message: &str) -> &str {
    message
        .lines()
        .find_map(|line| line.strip_prefix("^ "))
        .unwrap_or(message)
        .trim()
}

fn report(runtime: &mut RuntimeCalls, assert: Op) -> Built<()> {
    let at = Builder::before(assert);
    let message = assert
        .melior()
        .attribute("msg")
        .ok()
        .and_then(|attribute| StringAttribute::try_from(attribute).ok())
        .map(|message| message.value().to_string())
        .unwrap_or_default();
    let function = assert
        .enclosing_function()
        .ok_or_else(|| at.fail("cf.assert outside a function"))?;
    let name = source_name(function);
    let (file, line, column) = assert.file_line_column();
    let i1 = at.parse_type("i1")?;
    let i32_type = at.parse_type("i32")?;
    let all_ones = at.constant(i1, -1)?;
    let failed = at.value("arith.xori", &[assert.operand(0), all_ones], i1, &[])?;
    let (_, then_yield, _) = at.if_op(failed, &[], false)?;
    let inside = at.moved_to(then_yield);
    let arguments = [
        runtime.string_constant(&inside, &name)?,
        runtime.string_constant(&inside, &file)?,
        inside.constant(i32_type, i64::from(line))?,
        inside.constant(i32_type, i64::from(column))?,
        runtime.string_constant(&inside, reason(&message))?,
    ];
    let callee = if is_outlined_kernel(&name) {
        "pgpu_rt_kernel_error"
    } else {
        "pgpu_rt_host_error"
    };
    runtime.call(
        &inside,
        callee,
        &arguments,
        "(!llvm.ptr, !llvm.ptr, i32, i32, !llvm.ptr)",
    )?;
    assert.erase();
    Ok(())
}
