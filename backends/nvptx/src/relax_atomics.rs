//! `pgpu-relax-atomics`: gives the kernels' memref atomics the meaning of
//! CUDA's `atomicCAS` and `atomicMin`: relaxed, at device scope.
//!
//! The memref dialect's atomics carry no ordering and no scope, and
//! upstream's lowering makes `memref.atomic_rmw` an `acq_rel` `atomicrmw`
//! and `memref.generic_atomic_rmw` a loop around an `acq_rel` `cmpxchg`,
//! both at system scope. LLVM 22's NVPTX backend emits the `atomicrmw`
//! without ordering (`atom.global.min`, device scope), but the `cmpxchg`
//! as `atom.acq_rel.sys.cas`, which `ptxas` brackets with a system-wide
//! memory barrier and an invalidation of the L1 cache: in the speculative
//! execution kernel of MD (`pgpu-lower-speculation`'s table probes), the
//! stalls on those were a fifth of all (ncu, PERF.md). Our kernels order
//! memory between threads with barriers, kernel boundaries and explicit
//! fences (the direct-update scheme's `llvm.fence` around its first-writer
//! atomic), never through an atomic's own ordering (which LLVM 22 drops
//! for `atomicrmw` anyway), and the host never touches device memory
//! while a kernel runs; so in every `gpu.module`, after
//! `convert-gpu-to-nvvm` and before the barriers are defined, each
//! `llvm.atomicrmw` and `llvm.cmpxchg` without a `syncscope` (the ones the
//! memref lowering made) and not already `monotonic` becomes `monotonic`
//! at `syncscope("device")`. Atomics that name a scope or are relaxed
//! already (the list collectives', whose look-back needs its acquires and
//! releases) and the barriers' own (defined later) are left alone.
//! Upstream has no pass that sets atomics' ordering, hence this one.
//!
//! The scope is an option (`scope=device`, NVPTX's name for the GPU; the
//! AMDGPU pipeline passes `scope=agent`, its name for the same scope).
//!
//! With `host=true` the pass relaxes the atomics of the module's own
//! functions instead (no `gpu.module`s: the CPU target's code and the
//! kernels the CPU device runs, after the host's memref lowering), to
//! `monotonic` at LLVM's default system scope, by the same argument: the
//! runtime's barriers and task joins order memory.
//!
//! In both modes an exchange whose old value nobody reads becomes a
//! `monotonic` atomic store (`llvm.store ... atomic`): Fork's common writes
//! (every member stores one value to elements that may coincide,
//! `pgpu-lower-synchronous`) are such exchanges, and an exchange is a
//! locked `xchg` on x86 (the CPU device's sieve ran 1.2-1.8 times slower
//! with them, PERF.md) and an `atom.exch` on NVPTX, where a relaxed store is a
//! plain `mov` or `st.relaxed`. LLVM 22's InstCombine does not make that
//! change itself.

use crate::nvvm_modules::{erase, gpu_modules, parse_attribute};
use melior::ir::{
    BlockLike, Identifier, OperationRef, ValueLike,
    operation::{
        OperationBuilder, OperationLike, OperationMutLike, OperationRefMut, WalkOrder, WalkResult,
    },
};
use pgpu_pass_infra::{Pass, PassFailure, PassOption, PassOptions, emit_error};

/// The pass; `scope` is the LLVM sync scope the kernels' atomics get;
/// `host` relaxes the host functions' atomics instead.
#[derive(Debug)]
pub struct RelaxAtomics {
    scope: String,
    host: bool,
}

impl Default for RelaxAtomics {
    fn default() -> Self {
        Self {
            scope: "device".to_string(),
            host: false,
        }
    }
}

/// LLVM's `monotonic` ordering, as the LLVM dialect stores it.
const MONOTONIC: &str = "2 : i64";

impl Pass for RelaxAtomics {
    const ARGUMENT: &'static str = "pgpu-relax-atomics";
    const SUMMARY: &'static str = "Make the kernels' unscoped atomics (from memref atomics) \
         relaxed at device scope, as CUDA's atomic functions are";
    const OPTIONS: &'static [PassOption] = &[
        PassOption {
            name: "scope",
            description: "the LLVM sync scope of the GPU (device on NVPTX, agent on AMDGPU)",
            default: "device",
        },
        PassOption {
            name: "host",
            description: "relax the atomics outside gpu.modules instead, at system scope",
            default: "false",
        },
    ];

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        let scope = options.string("scope")?.trim();
        if scope.is_empty() || !scope.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("option 'scope' has the invalid value '{scope}'"));
        }
        Ok(Self {
            scope: scope.to_string(),
            host: options.flag("host")?,
        })
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        let (roots, scope) = if self.host {
            (vec![operation], None)
        } else {
            (gpu_modules(operation), Some(self.scope.as_str()))
        };
        for root in roots {
            let mut atomics = Vec::new();
            root.walk(WalkOrder::PreOrder, |op| {
                let name = op.name();
                let name = name.as_string_ref().as_str();
                if name == Ok("gpu.module") && self.host {
                    return WalkResult::Skip;
                }
                if matches!(name, Ok("llvm.atomicrmw" | "llvm.cmpxchg"))
                    && !op.has_attribute("syncscope")
                    && !already_relaxed(op)
                {
                    atomics.push(op.to_raw());
                }
                WalkResult::Advance
            });
            for raw in atomics {
                // SAFETY: collected from the live module; attributes change,
                // or the op is replaced once.
                let atomic = unsafe { OperationRef::from_raw(raw) };
                if is_unread_exchange(atomic) {
                    store_instead(atomic, scope)?;
                } else {
                    relax(unsafe { OperationRefMut::from_raw(raw) }, scope)?;
                }
            }
        }
        Ok(())
    }
}

/// Whether `atomic` is an `llvm.atomicrmw xchg` whose result is unused.
fn is_unread_exchange(atomic: OperationRef) -> bool {
    // `xchg` is LLVM's AtomicBinOp 0.
    atomic.name().as_string_ref().as_str() == Ok("llvm.atomicrmw")
        && atomic
            .operand(1)
            .is_ok_and(|value| natural_alignment(&value.r#type().to_string()).is_some())
        && atomic
            .attribute("bin_op")
            .is_ok_and(|kind| kind.to_string() == "0 : i64")
        && atomic.result(0).is_ok_and(|result| {
            // SAFETY: a live value; its use list is only read.
            unsafe {
                mlir_sys::mlirOpOperandIsNull(mlir_sys::mlirValueGetFirstUse(result.to_raw()))
            }
        })
}

/// Replaces the unread exchange `atomic` by a monotonic atomic store of its
/// value (aligned as it was) at `scope`.
fn store_instead(atomic: OperationRef, scope: Option<&str>) -> Result<(), PassFailure> {
    let location = atomic.location();
    let context_ref = atomic.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    let parse = |text: &str| parse_attribute(context, location, text);
    let (Ok(pointer), Ok(value), Some(block)) =
        (atomic.operand(0), atomic.operand(1), atomic.block())
    else {
        return Err(emit_error(
            location,
            "internal error: an llvm.atomicrmw without operands",
        ));
    };
    let identifier = |name: &str| Identifier::new(context, name);
    // An atomic access needs an alignment; the exchange's own, else the
    // value's size (LLVM's default for `atomicrmw`).
    let alignment = match atomic.attribute("alignment") {
        Ok(alignment) => alignment,
        Err(_) => {
            let bytes = natural_alignment(&value.r#type().to_string()).ok_or_else(|| {
                emit_error(
                    location,
                    "internal error: an exchange of a type of unknown size",
                )
            })?;
            parse(&format!("{bytes} : i64"))?
        }
    };
    let mut attributes = vec![
        (identifier("ordering"), parse(MONOTONIC)?),
        (identifier("alignment"), alignment),
    ];
    if let Some(scope) = scope {
        attributes.push((identifier("syncscope"), parse(&format!("\"{scope}\""))?));
    }
    let store = OperationBuilder::new("llvm.store", location)
        .add_operands(&[value, pointer])
        .add_attributes(&attributes)
        .build()
        .map_err(|_| emit_error(location, "internal error: cannot build llvm.store"))?;
    block.insert_operation_before(atomic, store);
    erase(atomic);
    Ok(())
}

/// The size in bytes of the scalar type `ty` (`i32`, `f64`, ...).
fn natural_alignment(ty: &str) -> Option<u32> {
    let bits: u32 = match ty {
        "f16" | "bf16" => 16,
        "f32" => 32,
        "f64" => 64,
        _ => ty.strip_prefix('i')?.parse().ok()?,
    };
    (bits.is_multiple_of(8) && bits.is_power_of_two()).then_some(bits / 8)
}

/// Whether `atomic` is monotonic already (the collectives' shared-memory
/// atomics: no scope, as their space needs none).
fn already_relaxed(atomic: OperationRef) -> bool {
    ["ordering", "success_ordering"].iter().any(|name| {
        atomic
            .attribute(name)
            .is_ok_and(|ordering| ordering.to_string() == MONOTONIC)
    })
}

/// Sets `atomic`'s orderings to monotonic and its scope to `scope` (none:
/// system scope).
fn relax(mut atomic: OperationRefMut, scope: Option<&str>) -> Result<(), PassFailure> {
    let location = atomic.location();
    let context_ref = atomic.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    let parse = |text: &str| parse_attribute(context, location, text);
    let orderings: &[&str] = if atomic.name().as_string_ref().as_str() == Ok("llvm.cmpxchg") {
        &["success_ordering", "failure_ordering"]
    } else {
        &["ordering"]
    };
    for ordering in orderings {
        atomic.set_attribute(ordering, parse(MONOTONIC)?);
    }
    if let Some(scope) = scope {
        atomic.set_attribute("syncscope", parse(&format!("\"{scope}\""))?);
    }
    Ok(())
}
