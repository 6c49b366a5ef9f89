//! `pgpu-amdgpu-assert-to-trap`: the kernels' run-time checks trap on
//! AMDGPU.
//!
//! The run-time checks (`generate-runtime-verification`,
//! `pgpu-check-division`) leave `cf.assert` ops in the kernels. On NVPTX,
//! `convert-gpu-to-nvvm` makes them CUDA's `__assertfail`, which the
//! driver reports. `convert-gpu-to-rocdl` has no such lowering, and the
//! generic one (`convert-cf-to-llvm`) prints through `printf` and `abort`
//! with a message global it puts outside the `gpu.module`, which does not
//! verify; AMD kernels print only through a host-call buffer that needs
//! ROCm's runtime. So this pass, run on the `gpu.module`s for AMDGPU
//! before `convert-gpu-to-rocdl`, replaces each `cf.assert %holds` by a
//! call of an always-inline function of ours that executes `llvm.trap`
//! (`s_trap`, which ends the dispatch with an error the runtime reports)
//! when `%holds` is false. The message is lost: its kernel and source line
//! are still in the debug locations of the trap.

use crate::device::{insert_helpers, ops_named, replace_with_call, rocdl_modules};
use melior::dialect::DialectHandle;
use melior::ir::{OperationRef, Value, operation::OperationLike};
use pgpu_pass_infra::{Pass, PassFailure};
use std::collections::BTreeSet;

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct AssertToTrap;

const CHECK: &str = "__pgpu_amdgpu_check";

const LIBRARY: &str = r#"
llvm.func internal @__pgpu_amdgpu_check(%holds: i1) attributes {always_inline} {
  llvm.cond_br %holds, ^done, ^failed
^failed:
  llvm.call_intrinsic "llvm.trap"() : () -> ()
  llvm.unreachable
^done:
  llvm.return
}
"#;

impl Pass for AssertToTrap {
    const ARGUMENT: &'static str = "pgpu-amdgpu-assert-to-trap";
    const SUMMARY: &'static str =
        "Make the cf.assert ops of gpu.modules for AMDGPU trap when their condition is false";

    fn dependent_dialects() -> Vec<DialectHandle> {
        vec![DialectHandle::llvm()]
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for (module, _) in rocdl_modules(operation) {
            let asserts = ops_named(module, |name| name == "cf.assert");
            if asserts.is_empty() {
                continue;
            }
            insert_helpers(module, LIBRARY, &BTreeSet::from([CHECK]))?;
            for assert in asserts {
                let holds: Vec<Value> = assert.operands().collect();
                replace_with_call(assert, CHECK, &holds)?;
            }
        }
        Ok(())
    }
}
