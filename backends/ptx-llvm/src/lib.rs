//! PTX to LLVM IR ([`pgpu_ptx`] in, inkwell out).
//!
//! * [`cpu`]: the host-CPU translation with wave32 or wave64 lockstep
//!   semantics, run by [`run`]: how translations are executed and checked
//!   without AMD hardware.
//! * [`semantics`]: one lane's arithmetic, logic and conversions, shared
//!   by the translations.
//! * [`warp`]: how 32-lane PTX warps map onto 32- or 64-lane waves.
//! * [`flat`] and [`layout`]: a kernel's blocks, reconvergence points and
//!   memory.
//! * [`half`]: half-precision and bfloat16 bits and rounding.

pub mod amdgpu;
pub mod codegen;
pub mod cpu;
pub mod flat;
pub mod half;
pub mod layout;
pub mod run;
pub mod semantics;
pub mod warp;

use pgpu_ptx::PtxError;

/// Why a translation failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum TranslateError {
    /// The PTX uses something the translation does not support (with its
    /// span).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Ptx(#[from] PtxError),
    /// The target machine or the linker is not available.
    #[error("{0}")]
    #[diagnostic(code(ptx_llvm::target))]
    Target(String),
    /// LLVM refused what we built: a bug.
    #[error("LLVM: {0}")]
    #[diagnostic(code(ptx_llvm::llvm), help("this is a bug in the PTX translation"))]
    Llvm(String),
}

pub(crate) fn llvm(error: inkwell::builder::BuilderError) -> TranslateError {
    TranslateError::Llvm(error.to_string())
}

/// The LLVM integer type of `bits` bits.
pub(crate) fn int_type(
    context: &inkwell::context::Context,
    bits: u32,
) -> inkwell::types::IntType<'_> {
    match bits {
        1 => context.bool_type(),
        8 => context.i8_type(),
        16 => context.i16_type(),
        32 => context.i32_type(),
        64 => context.i64_type(),
        128 => context.i128_type(),
        other => std::num::NonZeroU32::new(other)
            .and_then(|n| context.custom_width_int_type(n).ok())
            .unwrap_or_else(|| context.i64_type()),
    }
}
pub use inkwell;
