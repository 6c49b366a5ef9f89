//! `pgpu-amdgpu-warp-ops`: the NVVM warp operations of our generated code
//! on AMDGPU, with their 32-lane meaning on 32- and 64-lane waves.
//!
//! The GPU collectives (`pgpu-link-gpu-collectives`) are written once,
//! against CUDA's 32-thread warps: `gpu.shuffle` with width 32 (which
//! `convert-gpu-to-rocdl` lowers for any wave size), and NVVM's
//! `vote.sync`, `match.sync` and `bar.warp.sync`, plus atomics and fences
//! at NVPTX's sync scopes. Upstream has no NVVM-to-ROCDL conversion, so
//! this pass, run after `convert-gpu-to-rocdl` on the `gpu.module`s for
//! AMDGPU, gives each its meaning there, as the PTX translator
//! (`pgpu-translate --ptx-to-amdgpu`) does for PTX: on a 64-lane wave a
//! warp is one half of the wave.
//!
//! * `nvvm.vote.sync ballot mask, p`: the wave's `rocdl.ballot`, shifted
//!   down by the lane's half (lane id from `mbcnt` & 32) on wave64, and
//!   masked; `any`, `all` and `uni` compare such ballots;
//! * `nvvm.match.sync any mask, v` (i32 or i64): a waterfall loop; each
//!   round reads the first active lane's value (`readfirstlane`), the lanes
//!   holding it take the ballot of their equality and leave; it ends after
//!   as many rounds as distinct values;
//! * `nvvm.bar.warp.sync`: a wave barrier between a wavefront-scope
//!   release and acquire fence (the lanes of a wave run in lockstep, so
//!   ordering their memory accesses is all that is left to do; this is
//!   HIP's `__syncwarp`);
//! * the sync scopes `device` and `block` of atomics, fences and atomic
//!   loads and stores become AMDGPU's `agent` and `workgroup`.
//!
//! Each op becomes a call of an always-inline, convergent function of
//! ours. Any other NVVM op left in such a module is an error at its
//! location, rather than a failure of LLVM's instruction selection.

use crate::device::{insert_helpers, ops_named, replace_with_call, rocdl_modules};
use melior::dialect::DialectHandle;
use melior::ir::{
    Attribute, OperationRef, Value, ValueLike,
    operation::{OperationLike, OperationMutLike, OperationRefMut},
};
use pgpu_pass_infra::{Pass, PassFailure, emit_error};
use std::collections::BTreeSet;

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct WarpOps;

/// NVPTX sync scopes and their AMDGPU names.
const SCOPES: &[(&str, &str)] = &[("device", "agent"), ("block", "workgroup")];

/// The ballot of a 32-lane warp on a wave of `wave` lanes.
fn ballot(wave: u32) -> String {
    let body = if wave == 64 {
        "%wave = rocdl.ballot %predicate : i64
  %all = llvm.mlir.constant(-1 : i32) : i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %low = rocdl.mbcnt.lo %all, %zero : (i32, i32) -> i32
  %lane = rocdl.mbcnt.hi %all, %low : (i32, i32) -> i32
  %half_bit = llvm.mlir.constant(32 : i32) : i32
  %half = llvm.and %lane, %half_bit : i32
  %shift = llvm.zext %half : i32 to i64
  %shifted = llvm.lshr %wave, %shift : i64
  %warp = llvm.trunc %shifted : i64 to i32"
    } else {
        "%warp = rocdl.ballot %predicate : i32"
    };
    format!(
        "
llvm.func internal @__pgpu_amdgpu_ballot(%mask: i32, %predicate: i1) -> i32 attributes {{always_inline, convergent}} {{
  {body}
  %result = llvm.and %warp, %mask : i32
  llvm.return %result : i32
}}"
    )
}

/// The helpers built on the ballot.
const LIBRARY: &str = r#"
llvm.func internal @__pgpu_amdgpu_vote_any(%mask: i32, %predicate: i1) -> i1 attributes {always_inline, convergent} {
  %lanes = llvm.call @__pgpu_amdgpu_ballot(%mask, %predicate) : (i32, i1) -> i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %any = llvm.icmp "ne" %lanes, %zero : i32
  llvm.return %any : i1
}
llvm.func internal @__pgpu_amdgpu_vote_all(%mask: i32, %predicate: i1) -> i1 attributes {always_inline, convergent} {
  %lanes = llvm.call @__pgpu_amdgpu_ballot(%mask, %predicate) : (i32, i1) -> i32
  %true = llvm.mlir.constant(true) : i1
  %active = llvm.call @__pgpu_amdgpu_ballot(%mask, %true) : (i32, i1) -> i32
  %all = llvm.icmp "eq" %lanes, %active : i32
  llvm.return %all : i1
}
llvm.func internal @__pgpu_amdgpu_vote_uni(%mask: i32, %predicate: i1) -> i1 attributes {always_inline, convergent} {
  %lanes = llvm.call @__pgpu_amdgpu_ballot(%mask, %predicate) : (i32, i1) -> i32
  %true = llvm.mlir.constant(true) : i1
  %active = llvm.call @__pgpu_amdgpu_ballot(%mask, %true) : (i32, i1) -> i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %none = llvm.icmp "eq" %lanes, %zero : i32
  %all = llvm.icmp "eq" %lanes, %active : i32
  %uniform = llvm.or %none, %all : i1
  llvm.return %uniform : i1
}
llvm.func internal @__pgpu_amdgpu_match_any_i32(%mask: i32, %value: i32) -> i32 attributes {always_inline, convergent} {
  llvm.br ^round
^round:
  %first = rocdl.readfirstlane %value : i32
  %same = llvm.icmp "eq" %value, %first : i32
  %lanes = llvm.call @__pgpu_amdgpu_ballot(%mask, %same) : (i32, i1) -> i32
  llvm.cond_br %same, ^matched, ^round
^matched:
  llvm.return %lanes : i32
}
llvm.func internal @__pgpu_amdgpu_match_any_i64(%mask: i32, %value: i64) -> i32 attributes {always_inline, convergent} {
  llvm.br ^round
^round:
  %first = rocdl.readfirstlane %value : i64
  %same = llvm.icmp "eq" %value, %first : i64
  %lanes = llvm.call @__pgpu_amdgpu_ballot(%mask, %same) : (i32, i1) -> i32
  llvm.cond_br %same, ^matched, ^round
^matched:
  llvm.return %lanes : i32
}
llvm.func internal @__pgpu_amdgpu_warp_sync(%mask: i32) attributes {always_inline, convergent} {
  llvm.fence syncscope("wavefront") release
  llvm.call_intrinsic "llvm.amdgcn.wave.barrier"() : () -> ()
  llvm.fence syncscope("wavefront") acquire
  llvm.return
}
"#;

/// The helper that replaces an NVVM op, or how to name the op in the
/// error when it has none.
fn helper_for(op: OperationRef) -> Result<&'static str, String> {
    let name = op.name();
    let name = name.as_string_ref().as_str().unwrap_or("");
    let kind = op
        .attribute("kind")
        .map(|kind| kind.to_string())
        .unwrap_or_default();
    let kind = kind
        .rsplit(' ')
        .next()
        .unwrap_or("")
        .trim_end_matches('>')
        .to_string();
    match (name, kind.as_str()) {
        ("nvvm.vote.sync", "ballot") => Ok("__pgpu_amdgpu_ballot"),
        ("nvvm.vote.sync", "any") => Ok("__pgpu_amdgpu_vote_any"),
        ("nvvm.vote.sync", "all") => Ok("__pgpu_amdgpu_vote_all"),
        ("nvvm.vote.sync", "uni") => Ok("__pgpu_amdgpu_vote_uni"),
        ("nvvm.match.sync", "any") => {
            let value = op.operand(1).map(|value| value.r#type().to_string());
            match value.as_deref() {
                Ok("i32") => Ok("__pgpu_amdgpu_match_any_i32"),
                Ok("i64") => Ok("__pgpu_amdgpu_match_any_i64"),
                _ => Err("nvvm.match.sync of a value that is not i32 or i64".to_string()),
            }
        }
        ("nvvm.bar.warp.sync", _) => Ok("__pgpu_amdgpu_warp_sync"),
        (name, "") => Err(format!("'{name}'")),
        (name, kind) => Err(format!("'{name}' {kind}")),
    }
}

impl Pass for WarpOps {
    const ARGUMENT: &'static str = "pgpu-amdgpu-warp-ops";
    const SUMMARY: &'static str = "Lower the NVVM warp ops of generated code (vote.sync, \
         match.sync any, bar.warp.sync) and NVPTX sync scopes to AMDGPU, with 32-lane warps \
         on 32- and 64-lane waves";

    fn dependent_dialects() -> Vec<DialectHandle> {
        // SAFETY: the handle of a dialect linked into the MLIR libraries.
        let rocdl = unsafe { DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__rocdl__()) };
        vec![DialectHandle::llvm(), rocdl]
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for (module, wave) in rocdl_modules(operation) {
            rename_scopes(module)?;
            let ops = ops_named(module, |name| name.starts_with("nvvm."));
            let mut replacements = Vec::new();
            let mut failed = false;
            for op in ops {
                match helper_for(op) {
                    Ok(helper) => replacements.push((op, helper)),
                    Err(what) => {
                        emit_error(op.location(), &format!("{what} has no lowering to AMDGPU"));
                        failed = true;
                    }
                }
            }
            if failed {
                return Err(PassFailure);
            }
            if replacements.is_empty() {
                continue;
            }
            let library = format!("{}{LIBRARY}", ballot(wave));
            let mut needed: BTreeSet<&str> =
                replacements.iter().map(|(_, helper)| *helper).collect();
            if needed
                .iter()
                .any(|helper| *helper != "__pgpu_amdgpu_warp_sync")
            {
                needed.insert("__pgpu_amdgpu_ballot");
            }
            insert_helpers(module, &library, &needed)?;
            for (op, helper) in replacements {
                let operands: Vec<Value> = op.operands().collect();
                replace_with_call(op, helper, &operands)?;
            }
        }
        Ok(())
    }
}

/// Renames NVPTX's sync scopes in `module` to AMDGPU's.
fn rename_scopes(module: OperationRef) -> Result<(), PassFailure> {
    let scoped = ops_named(module, |name| name.starts_with("llvm."));
    for op in scoped {
        let Ok(scope) = op.attribute("syncscope") else {
            continue;
        };
        let scope = scope.to_string();
        let Some((_, amdgpu)) = SCOPES
            .iter()
            .find(|(nvptx, _)| scope.trim_matches('"') == *nvptx)
        else {
            continue;
        };
        let context_ref = op.context();
        // SAFETY: the context outlives the pass run.
        let context = unsafe { context_ref.to_ref() };
        let Some(renamed) = Attribute::parse(context, &format!("\"{amdgpu}\"")) else {
            return Err(emit_error(op.location(), "cannot build a sync scope"));
        };
        // SAFETY: a live op of the module; only its attribute changes.
        unsafe { OperationRefMut::from_raw(op.to_raw()) }.set_attribute("syncscope", renamed);
    }
    Ok(())
}
