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

use crate::nvvm_modules::{gpu_modules, parse_attribute};
use melior::ir::{
    OperationRef,
    operation::{OperationLike, OperationMutLike, OperationRefMut, WalkOrder, WalkResult},
};
use pgpu_pass_infra::{Pass, PassFailure, PassOption, PassOptions};

/// The pass; `scope` is the LLVM sync scope the atomics get.
#[derive(Debug)]
pub struct RelaxAtomics {
    scope: String,
}

impl Default for RelaxAtomics {
    fn default() -> Self {
        Self {
            scope: "device".to_string(),
        }
    }
}

/// LLVM's `monotonic` ordering, as the LLVM dialect stores it.
const MONOTONIC: &str = "2 : i64";

impl Pass for RelaxAtomics {
    const ARGUMENT: &'static str = "pgpu-relax-atomics";
    const SUMMARY: &'static str = "Make the kernels' unscoped atomics (from memref atomics) \
         relaxed at device scope, as CUDA's atomic functions are";
    const OPTIONS: &'static [PassOption] = &[PassOption {
        name: "scope",
        description: "the LLVM sync scope of the GPU (device on NVPTX, agent on AMDGPU)",
        default: "device",
    }];

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        let scope = options.string("scope")?.trim();
        if scope.is_empty() || !scope.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("option 'scope' has the invalid value '{scope}'"));
        }
        Ok(Self {
            scope: scope.to_string(),
        })
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for module in gpu_modules(operation) {
            let mut atomics = Vec::new();
            module.walk(WalkOrder::PreOrder, |op| {
                let name = op.name();
                let name = name.as_string_ref().as_str();
                if matches!(name, Ok("llvm.atomicrmw" | "llvm.cmpxchg"))
                    && !op.has_attribute("syncscope")
                    && !already_relaxed(op)
                {
                    atomics.push(op.to_raw());
                }
                WalkResult::Advance
            });
            for raw in atomics {
                // SAFETY: collected from the live module; only attributes
                // change.
                relax(unsafe { OperationRefMut::from_raw(raw) }, &self.scope)?;
            }
        }
        Ok(())
    }
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

/// Sets `atomic`'s orderings to monotonic and its scope to `scope`.
fn relax(mut atomic: OperationRefMut, scope: &str) -> Result<(), PassFailure> {
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
    atomic.set_attribute("syncscope", parse(&format!("\"{scope}\""))?);
    Ok(())
}
