//! `pgpu-wait-grid-dependencies`: makes every NVVM kernel safe to start
//! before the kernel launched ahead of it on the stream has finished
//! (programmatic dependent launch, sm_90 and later).
//!
//! A kernel launched with CUDA's programmatic stream serialization may be
//! scheduled while its predecessor still runs; `griddepcontrol.wait` then
//! blocks until the predecessor has completed and its memory operations are
//! visible. This pass puts `nvvm.griddepcontrol wait` first in the entry
//! block of every kernel (`llvm.func` with `gpu.kernel` or `nvvm.kernel`,
//! after `convert-gpu-to-nvvm`) of every `gpu.module`, so no memory access
//! of a kernel can precede its predecessor's completion: what overlaps is
//! the launch itself and the scheduling of the blocks (about 1 us per kernel
//! boundary on the H200, bench/gpu/compare.sh). Each module that has kernels
//! also gets the constant global `@pgpu_waits_for_grid_dependencies` (1 :
//! i32): the runtime launches a kernel with programmatic serialization only
//! when its module defines that symbol, so modules compiled without this
//! pass (or for older chips) keep full serialization.
//!
//! A kernel that carries the unit attribute `pgpu.launch_dependents` (the
//! generated collectives' kernels) also gets `nvvm.griddepcontrol
//! launch_dependents` before each of its returns: the next kernel may then
//! be scheduled once every block of this one has reached its end, ahead of
//! the grid's completion and memory flush (the next kernel's own wait still
//! orders its memory accesses, so this only moves scheduling). Measured side
//! by side on the H200 (PERF.md): sorts 1-2% faster with it on the
//! collectives' kernels; on every kernel, findFaces got 7% slower, so the
//! program kernels are not marked. Upstream MLIR has no pass that emits
//! grid-dependency control, hence this one.

use crate::nvvm_modules::{
    block_ops, entry_block, gpu_modules, is_global_named, is_kernel, marker_global, module_body,
    parse_attribute, returns_of,
};
use melior::Context;
use melior::ir::{
    Attribute, BlockLike, Identifier, Location, Operation, OperationRef,
    operation::{OperationBuilder, OperationLike},
};
use pgpu_pass_infra::{Pass, PassFailure, emit_error};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct WaitGridDependencies;

/// The unit attribute of kernels that let their dependents launch as each
/// block ends.
pub const LAUNCH_DEPENDENTS: &str = "pgpu.launch_dependents";

/// The marker the runtime looks up in a loaded module.
pub use pgpu_runtime::mgpu::GRID_DEPENDENCY_MARKER as MARKER;

impl Pass for WaitGridDependencies {
    const ARGUMENT: &'static str = "pgpu-wait-grid-dependencies";
    const SUMMARY: &'static str = "Start every NVVM kernel with griddepcontrol.wait and mark its module, \
         so the runtime may launch it as a programmatic dependent launch (sm_90+)";

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for module in gpu_modules(operation) {
            mark_module(module)?;
        }
        Ok(())
    }
}

/// `nvvm.griddepcontrol` of `kind` (wait or launch_dependents).
fn control<'c>(
    context: &'c Context,
    kind: Attribute<'c>,
    location: Location<'c>,
) -> Result<Operation<'c>, PassFailure> {
    OperationBuilder::new("nvvm.griddepcontrol", location)
        .add_attributes(&[(Identifier::new(context, "kind"), kind)])
        .build()
        .map_err(|_| emit_error(location, "cannot build nvvm.griddepcontrol"))
}

fn mark_module(module: OperationRef) -> Result<(), PassFailure> {
    let location = module.location();
    let context_ref = module.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    let parse = |text: &str| parse_attribute(context, location, text);
    let Some(body) = module_body(module) else {
        return Ok(());
    };
    let mut kernels = Vec::new();
    let mut marked = false;
    for current in block_ops(body) {
        if is_kernel(current) {
            kernels.push(current);
        }
        marked |= is_global_named(current, MARKER);
    }
    if kernels.is_empty() {
        return Ok(());
    }
    let wait_kind = parse("#nvvm<grid_dep_action wait>")?;
    let trigger_kind = parse("#nvvm<grid_dep_action launch_dependents>")?;
    for kernel in kernels {
        let Some(entry) = entry_block(kernel) else {
            continue; // a declaration
        };
        let already = entry.first_operation().is_some_and(|first| {
            first.name().as_string_ref().as_str() == Ok("nvvm.griddepcontrol")
                && first.attribute("kind").is_ok_and(|kind| kind == wait_kind)
        });
        if already {
            continue;
        }
        entry.insert_operation(0, control(context, wait_kind, kernel.location())?);
        if kernel.has_attribute(LAUNCH_DEPENDENTS) {
            for ret in returns_of(kernel) {
                if let Some(block) = ret.block() {
                    block.insert_operation_before(
                        ret,
                        control(context, trigger_kind, ret.location())?,
                    );
                }
            }
        }
    }
    if !marked {
        let marker = marker_global(context, MARKER, Location::unknown(context))?;
        body.insert_operation(0, marker);
    }
    Ok(())
}
