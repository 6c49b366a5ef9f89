//! `pgpu-define-grid-barrier`: defines the grid-wide barrier that grid
//! kernels call, and marks their modules for a cooperative launch.
//!
//! `pgpu-offload-kernels` lowers a grid-wide barrier to
//! `func.call @pgpu_grid_barrier()` inside the `gpu.launch` body, declared
//! by the host module; `gpu-kernel-outlining` copies the declaration into
//! the kernel's `gpu.module` and `convert-gpu-to-nvvm` turns it into
//! `llvm.func @pgpu_grid_barrier` (with the C-interface wrapper it requests
//! for every function of a `gpu.module`: a private `@pgpu_grid_barrier`
//! whose body calls the declaration `@_mlir_ciface_pgpu_grid_barrier`).
//! Upstream MLIR has neither a grid barrier op nor a lowering for one
//! (CUDA's `cooperative_groups::grid_group::sync` is a header-only library
//! function), so this pass, run right after `convert-gpu-to-nvvm`, replaces
//! that declaration (or wrapper and declaration) in every `gpu.module` by
//! our own always-inline definition in the LLVM and NVVM dialects, the
//! algorithm of cooperative groups' grid sync:
//!
//! 1. a block barrier (`nvvm.barrier0`), so that the writes of every thread
//!    of the block happen before thread 0's arrival;
//! 2. thread 0 of each block (the kernels are 1-D: `tid.x == 0`) arrives:
//!    with `nb` blocks (`nctaid.x`), block 0 adds `0x80000000 - (nb - 1)`
//!    and every other block adds 1 to the 32-bit word
//!    `@pgpu_grid_barrier_word`, so the nb additions sum to exactly
//!    `0x80000000`. The low 31 bits count arrivals up from 0 (block 0's
//!    addend is `2^31 - (nb - 1)` in them): they carry into the top bit
//!    exactly when the last of the nb blocks arrives, whatever the order,
//!    and are then 0 again. So the barrier is done when the top bit differs
//!    from the one its own `atomicrmw add` saw, the word needs no reset
//!    (it starts at 0, zeroed at module load, and every completed barrier
//!    and launch leaves its low bits at 0), and a block that already
//!    arrives at the next barrier only changes the low bits: the top bit
//!    cannot flip again before every block has left the current one;
//! 3. thread 0 spins on an acquire load of the word until the top bit
//!    flipped;
//! 4. a block barrier again, so no thread of the block goes on before
//!    every block has arrived.
//!
//! Memory ordering: the first block barrier makes the block's writes
//! visible to its thread 0; the device-scope release fence before the
//! device-scope `atomicrmw` publishes them (cumulatively) to the whole
//! device; the device-scope acquire load that sees the flip, the acquire
//! fence after it and the second block barrier make every block's writes
//! visible to every thread of the block. The explicit release fence is not
//! redundant with the `acq_rel` of the `atomicrmw`: LLVM 22's NVPTX backend
//! emits a relaxed `atom.global.add` for it and only the fences for our
//! fences (`fence.acq_rel.gpu`).
//!
//! The function is `convergent`, like the block barriers in it: LLVM's
//! optimizer then never makes a call to it depend on more conditions (a
//! kernel whose threads past the end skip the code between barriers had
//! its barrier call threaded into the two paths before inlining, i.e. the
//! active and the idle threads of the last block waiting at different
//! `bar.sync` instructions, undefined for PTX's aligned barriers).
//!
//! Every thread of every block must call the barrier equally often, and all
//! blocks must be co-resident: each module that gets the definition also
//! gets the constant global `@pgpu_cooperative_launch` (1 : i32), by which
//! the runtime launches its kernels cooperatively, and each of its kernels
//! gets `nvvm.minctasm` = [`GRID_THREADS_PER_SM`] / its block size (from
//! `nvvm.maxntid`, else `gpu.known_block_size`), so that ptxas limits the
//! registers such that that many threads fit on a multiprocessor, the grid
//! capacity the runtime reports. A kernel of unknown block size gets a
//! warning and no `nvvm.minctasm`.
//!
//! Modules without the declaration are left alone, and a module whose
//! `@pgpu_grid_barrier` is already defined has none: the pass is
//! idempotent.

use crate::nvvm_modules::{
    block_ops, erase, gpu_modules, insert_definition, is_c_interface_wrapper, is_declaration,
    is_global_named, is_kernel, is_named, marker_global, module_body, symbol,
};
use melior::Context;
use melior::dialect::DialectHandle;
use melior::ir::{
    Attribute, BlockLike, OperationRef,
    attribute::{DenseI32ArrayAttribute, IntegerAttribute},
    operation::{OperationLike, OperationMutLike, OperationRefMut},
    r#type::IntegerType,
};
use pgpu_pass_infra::{Pass, PassFailure, Severity, emit_diagnostic, emit_error};
pub use pgpu_runtime::mgpu::GRID_THREADS_PER_SM;

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct DefineGridBarrier;

/// The marker the runtime looks up in a loaded module.
pub use pgpu_runtime::mgpu::COOPERATIVE_LAUNCH_MARKER as MARKER;

/// The barrier function grid kernels call.
pub const FUNCTION: &str = "pgpu_grid_barrier";

/// The C-interface declaration `convert-gpu-to-nvvm` makes the wrapper of
/// [`FUNCTION`] call.
const C_INTERFACE: &str = "_mlir_ciface_pgpu_grid_barrier";

/// The barrier's arrival word.
pub const WORD: &str = "pgpu_grid_barrier_word";

/// The definition: the word and the barrier function (see the module
/// documentation for the algorithm).
const DEFINITION: &str = r#"
llvm.mlir.global internal @pgpu_grid_barrier_word(0 : i32) {addr_space = 1 : i32} : i32
llvm.func internal @pgpu_grid_barrier() attributes {always_inline, convergent} {
  nvvm.barrier0
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %is_leader = llvm.icmp "eq" %tid, %zero : i32
  llvm.cond_br %is_leader, ^arrive, ^leave
^arrive:
  %blocks = nvvm.read.ptx.sreg.nctaid.x : i32
  %block = nvvm.read.ptx.sreg.ctaid.x : i32
  %one = llvm.mlir.constant(1 : i32) : i32
  %top_bit = llvm.mlir.constant(-2147483648 : i32) : i32
  %is_first = llvm.icmp "eq" %block, %zero : i32
  %others = llvm.sub %blocks, %one : i32
  %first_increment = llvm.sub %top_bit, %others : i32
  %increment = llvm.select %is_first, %first_increment, %one : i1, i32
  %word = llvm.mlir.addressof @pgpu_grid_barrier_word : !llvm.ptr<1>
  llvm.fence syncscope("device") release
  %old = llvm.atomicrmw add %word, %increment syncscope("device") acq_rel : !llvm.ptr<1>, i32
  llvm.br ^spin
^spin:
  %current = llvm.load %word atomic syncscope("device") acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
  %changed = llvm.xor %old, %current : i32
  %top_changed = llvm.and %changed, %top_bit : i32
  %flipped = llvm.icmp "ne" %top_changed, %zero : i32
  llvm.cond_br %flipped, ^acquire, ^spin
^acquire:
  llvm.fence syncscope("device") acquire
  llvm.br ^leave
^leave:
  nvvm.barrier0
  llvm.return
}
"#;

impl Pass for DefineGridBarrier {
    const ARGUMENT: &'static str = "pgpu-define-grid-barrier";
    const SUMMARY: &'static str = "Define the declared @pgpu_grid_barrier of every NVVM gpu.module (a \
         self-resetting grid-wide barrier), mark the module for a cooperative launch and size its \
         kernels' registers for co-residency";

    fn dependent_dialects() -> Vec<DialectHandle> {
        crate::nvvm_modules::llvm_and_nvvm()
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for module in gpu_modules(operation) {
            define_in_module(module)?;
        }
        Ok(())
    }
}

/// The threads per block of `kernel`: the product of `nvvm.maxntid`, else
/// of `gpu.known_block_size`.
fn block_size(kernel: OperationRef) -> Option<u32> {
    ["nvvm.maxntid", "gpu.known_block_size"]
        .iter()
        .find_map(|name| {
            let dims = DenseI32ArrayAttribute::try_from(kernel.attribute(name).ok()?).ok()?;
            (0..dims.len()).try_fold(1u32, |size, index| {
                let dim = u32::try_from(dims.element(index).ok()?).ok()?;
                size.checked_mul(dim)
            })
        })
        .filter(|size| *size > 0)
}

/// The ops of `body` that this pass looks at.
#[derive(Default)]
struct ModuleOps<'c, 'a> {
    barrier: Option<OperationRef<'c, 'a>>,
    c_interface: Option<OperationRef<'c, 'a>>,
    kernels: Vec<OperationRef<'c, 'a>>,
    has_word: bool,
    has_marker: bool,
}

fn define_in_module(module: OperationRef) -> Result<(), PassFailure> {
    let location = module.location();
    let context_ref = module.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    let Some(body) = module_body(module) else {
        return Ok(());
    };
    let mut found = ModuleOps::default();
    for current in block_ops(body) {
        let name = symbol(current);
        if is_kernel(current) {
            found.kernels.push(current);
        } else if is_named(current, "llvm.func") && name.as_deref() == Some(FUNCTION) {
            found.barrier = Some(current);
        } else if is_named(current, "llvm.func") && name.as_deref() == Some(C_INTERFACE) {
            found.c_interface = Some(current);
        }
        found.has_word |= name.as_deref() == Some(WORD);
        found.has_marker |= is_global_named(current, MARKER);
    }
    let Some(barrier) = found.barrier else {
        return Ok(());
    };
    let wrapper = is_c_interface_wrapper(barrier, C_INTERFACE)
        && found
            .c_interface
            .is_some_and(|declaration| is_declaration(declaration));
    if !is_declaration(barrier) && !wrapper {
        return Ok(()); // already defined
    }
    let barrier_location = barrier.location();
    let void_function = Attribute::parse(context, "!llvm.func<void ()>");
    if barrier.attribute("function_type").ok() != void_function {
        return Err(emit_error(
            barrier_location,
            &format!("@{FUNCTION} must be declared as a function of no arguments and no results"),
        ));
    }
    if found.has_word {
        return Err(emit_error(
            location,
            &format!("cannot define @{FUNCTION}: the module already has a symbol @{WORD}"),
        ));
    }
    insert_definition(
        context,
        DEFINITION,
        &format!("@{FUNCTION}"),
        |_| true,
        barrier,
        barrier_location,
    )?;
    erase(barrier);
    if wrapper && let Some(declaration) = found.c_interface {
        erase(declaration);
    }
    if !found.has_marker {
        body.insert_operation(0, marker_global(context, MARKER, location)?);
    }
    for kernel in found.kernels {
        limit_registers(context, kernel);
    }
    Ok(())
}

/// Sets `nvvm.minctasm` of `kernel` so that [`GRID_THREADS_PER_SM`] of its
/// threads fit on a multiprocessor (a larger one already there stays).
fn limit_registers(context: &Context, kernel: OperationRef) {
    let Some(blocks) = block_size(kernel)
        .map(|size| GRID_THREADS_PER_SM / size)
        .filter(|blocks| *blocks > 0)
    else {
        emit_diagnostic(
            kernel.location(),
            Severity::Warning,
            &format!(
                "grid kernel @{} has no known block size (nvvm.maxntid) of at most \
                 {GRID_THREADS_PER_SM}: its registers are not limited for a cooperative launch",
                symbol(kernel).unwrap_or_default()
            ),
        );
        return;
    };
    let existing = kernel
        .attribute("nvvm.minctasm")
        .ok()
        .and_then(|attribute| IntegerAttribute::try_from(attribute).ok())
        .map(|attribute| attribute.value());
    if existing.is_some_and(|existing| existing >= i64::from(blocks)) {
        return;
    }
    let value = IntegerAttribute::new(IntegerType::new(context, 32).into(), i64::from(blocks));
    // SAFETY: a live kernel of the module; setting an attribute changes
    // nothing else.
    unsafe { OperationRefMut::from_raw(kernel.to_raw()) }
        .set_attribute("nvvm.minctasm", value.into());
}
