//! PTX to LLVM IR for the host CPU, with the lockstep semantics of a GPU
//! wave of 32 or 64 lanes: how we execute PTX (and check the warp-size
//! translation of [`crate::warp`]) without AMD hardware.
//!
//! Each kernel becomes `void @name(ptr params, ptr context)`, which runs
//! one wave of a block (the context says which; [`crate::run`] runs a
//! block's waves on threads of their own and meets them at barriers).
//! Every register is an array of one value per lane. Instructions run
//! lane by lane under the wave's active mask, each memory or warp-wide
//! instruction for all lanes before the next one (consecutive register
//! computations share one loop over the lanes), so that lanes observe
//! each other exactly as on a SIMT machine: stores of one instruction
//! land in lane order, and a load after them sees them all.
//!
//! Divergence follows the classic reconvergence stack (as GPGPU-Sim
//! models NVIDIA GPUs before Volta and as AMD's structurized control flow
//! behaves): entries (pc, reconvergence pc, mask); a divergent branch in
//! block B sets the top entry's pc to B's immediate post-dominator R and
//! pushes the not-taken and the taken side, each to reconverge at R; an
//! entry that reaches its reconvergence pc is popped, so its lanes
//! continue together with the entry below. Lanes that exit are masked out
//! of every entry. The code generator itself is shared with the AMDGPU
//! translation ([`crate::codegen`]).

use crate::TranslateError;
use crate::codegen::{Target, generate_kernels};
use crate::layout::{Images, Layout, images};
use inkwell::context::Context;
use inkwell::module::Module;

type Result<T> = std::result::Result<T, TranslateError>;

/// Fields of the wave context, each 8 bytes (`crate::run::WaveContext`).
pub mod field {
    /// `%ctaid.x`; `.y` and `.z` follow.
    pub const CTAID: u32 = 0;
    /// `%nctaid.x`; `.y` and `.z` follow.
    pub const NCTAID: u32 = 3;
    /// `%ntid.x`; `.y` and `.z` follow.
    pub const NTID: u32 = 6;
    /// The wave's index in its block.
    pub const WAVE: u32 = 9;
    /// Threads in the block.
    pub const THREADS: u32 = 10;
    /// The block's shared memory.
    pub const SHARED: u32 = 11;
    /// The wave's local memory (lane l at `l * LOCAL_BYTES`).
    pub const LOCAL: u32 = 12;
    /// The module's `.global` image.
    pub const GLOBAL: u32 = 13;
    /// The module's `.const` image.
    pub const CONST: u32 = 14;
    /// Local bytes per lane.
    pub const LOCAL_BYTES: u32 = 15;
    /// Dynamic shared bytes.
    pub const DYNAMIC_SHARED: u32 = 16;
    /// The block's barrier state (`crate::run::BlockSync`).
    pub const BLOCK: u32 = 17;
    /// The number of fields.
    pub const COUNT: u32 = 18;
}

/// Runtime functions the emulated code calls.
pub mod runtime {
    /// `void (ptr context)`: the block's barrier.
    pub const BARRIER: &str = "pgpu_ptx_barrier";
    /// `i64 (ptr context, i64 op, i64 value)`: the block's barrier with a
    /// reduction (`bar.red`; `crate::run::reduction`), returning it.
    pub const BARRIER_REDUCE: &str = "pgpu_ptx_barrier_reduce";
    /// `void (ptr context)`: `trap`.
    pub const TRAP: &str = "pgpu_ptx_trap";
    /// `i64 ()`: `%clock64`.
    pub const CLOCK: &str = "pgpu_ptx_clock";
    /// `i64 (i32 op, i32 kind, ptr, i64 b, i64 c)`: an atomic operation.
    pub const ATOMIC: &str = "pgpu_ptx_atomic";
    /// `i64 (ptr context, i64 address, i64 bytes, i64 instruction, i32
    /// lane)`: whether the access lies in memory of the launch (nonzero);
    /// the instruction is the byte offset of its text.
    pub const CHECK: &str = "pgpu_ptx_check";
}

/// Atomic operations of [`runtime::ATOMIC`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum AtomicOp {
    /// `.add`.
    Add = 0,
    /// `.min`.
    Min,
    /// `.max`.
    Max,
    /// `.inc` (wrapping at b).
    Inc,
    /// `.dec` (wrapping at b).
    Dec,
    /// `.and`.
    And,
    /// `.or`.
    Or,
    /// `.xor`.
    Xor,
    /// `.exch`.
    Exch,
    /// `.cas`.
    Cas,
}

/// Operand kinds of [`runtime::ATOMIC`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum AtomicKind {
    /// 32-bit unsigned (and `.b32`).
    U32 = 0,
    /// 32-bit signed.
    S32,
    /// 64-bit unsigned (and `.b64`).
    U64,
    /// 64-bit signed.
    S64,
    /// f32.
    F32,
    /// f64.
    F64,
}

/// What the runner needs to know about a translated kernel.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    /// Its name (the LLVM function's).
    pub name: String,
    /// Its memory layout.
    pub layout: Layout,
}

/// The translation of a module for the CPU.
pub struct CpuModule<'ctx> {
    /// The LLVM module.
    pub module: Module<'ctx>,
    /// Its kernels.
    pub kernels: Vec<KernelInfo>,
    /// The `.global` and `.const` images.
    pub images: Images,
    /// Lanes per wave.
    pub wave: u32,
}

/// Translates every kernel of `ptx` for waves of `wave` lanes (32 or 64).
pub fn translate<'ctx>(
    context: &'ctx Context,
    ptx: &pgpu_ptx::ir::Module,
    wave: u32,
) -> Result<CpuModule<'ctx>> {
    let module = context.create_module("ptx");
    let images = images(ptx)?;
    let kernels = generate_kernels(context, &module, ptx, &images, wave, Target::Cpu, |_| true)?;
    Ok(CpuModule {
        module,
        kernels,
        images,
        wave,
    })
}
