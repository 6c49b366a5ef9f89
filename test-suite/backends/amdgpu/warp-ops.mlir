// pgpu-amdgpu-warp-ops gives the NVVM warp ops of generated code their
// 32-lane meaning on AMDGPU: on a 64-lane wave a warp is one half of the
// wave, so the wave's ballot is shifted down by the lane's half (lane id
// from mbcnt, & 32); on a 32-lane wave it is the warp's. NVPTX's sync
// scopes become AMDGPU's.
// RUN: pgpu-opt %s --split-input-file --pgpu-amdgpu-warp-ops | FileCheck %s --implicit-check-not=nvvm.
// Running it again changes nothing.
// RUN: pgpu-opt %s --split-input-file --pgpu-amdgpu-warp-ops -o %t.once
// RUN: pgpu-opt %t.once --split-input-file --pgpu-amdgpu-warp-ops -o %t.twice
// RUN: diff %t.once %t.twice
// The code objects: wave64 shifts the 64-bit ballot (mask in an SGPR
// pair), wave32 uses it as it is; the match loop reads the first lane.
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(pgpu-amdgpu-warp-ops,gpu-module-to-binary{format=isa})' | FileCheck %s --check-prefix=ISA
// NVVM ops without a lowering, and modules for other targets:
// RUN: pgpu-opt %S/Inputs/warp-ops-errors.mlir --split-input-file --verify-diagnostics --pgpu-amdgpu-warp-ops

// CHECK-LABEL: gpu.module @wave64
// CHECK: llvm.func internal @__pgpu_amdgpu_ballot(%[[MASK:.+]]: i32, %[[P:.+]]: i1) -> i32 attributes {always_inline, convergent} {
// CHECK-NEXT: %[[WAVE:.+]] = rocdl.ballot %[[P]] : i64
// CHECK: %[[LOW:.+]] = rocdl.mbcnt.lo
// CHECK: %[[LANE:.+]] = rocdl.mbcnt.hi %{{.+}}, %[[LOW]]
// CHECK: %[[HALF:.+]] = llvm.and %[[LANE]], %{{.+}} : i32
// CHECK: %[[SHIFT:.+]] = llvm.zext %[[HALF]] : i32 to i64
// CHECK: %[[SHIFTED:.+]] = llvm.lshr %[[WAVE]], %[[SHIFT]] : i64
// CHECK: %[[WARP:.+]] = llvm.trunc %[[SHIFTED]] : i64 to i32
// CHECK: llvm.and %[[WARP]], %[[MASK]] : i32
// CHECK-LABEL: llvm.func internal @__pgpu_amdgpu_vote_any(
// CHECK: llvm.icmp "ne"
// CHECK-LABEL: llvm.func internal @__pgpu_amdgpu_vote_all(
// CHECK-LABEL: llvm.func internal @__pgpu_amdgpu_vote_uni(
// CHECK-LABEL: llvm.func internal @__pgpu_amdgpu_match_any_i32(
// CHECK: ^[[ROUND:bb[0-9]+]]:
// CHECK-NEXT: %[[FIRST:.+]] = rocdl.readfirstlane %[[VALUE:.+]] : i32
// CHECK-NEXT: %[[SAME:.+]] = llvm.icmp "eq" %[[VALUE]], %[[FIRST]] : i32
// CHECK-NEXT: %[[LANES:.+]] = llvm.call @__pgpu_amdgpu_ballot(%{{.+}}, %[[SAME]])
// CHECK-NEXT: llvm.cond_br %[[SAME]], ^{{.+}}, ^[[ROUND]]
// CHECK-LABEL: llvm.func internal @__pgpu_amdgpu_match_any_i64(
// CHECK: rocdl.readfirstlane %{{.+}} : i64
// CHECK-LABEL: llvm.func internal @__pgpu_amdgpu_warp_sync(
// CHECK-NEXT: llvm.fence syncscope("wavefront") release
// CHECK-NEXT: llvm.call_intrinsic "llvm.amdgcn.wave.barrier"() : () -> ()
// CHECK-NEXT: llvm.fence syncscope("wavefront") acquire
// CHECK-LABEL: llvm.func @warp_ops(
// CHECK: llvm.call @__pgpu_amdgpu_ballot(%[[M:.+]], %[[Q:.+]]) : (i32, i1) -> i32
// CHECK: llvm.call @__pgpu_amdgpu_vote_any(%[[M]], %[[Q]]) : (i32, i1) -> i1
// CHECK: llvm.call @__pgpu_amdgpu_vote_all(%[[M]], %[[Q]]) : (i32, i1) -> i1
// CHECK: llvm.call @__pgpu_amdgpu_vote_uni(%[[M]], %[[Q]]) : (i32, i1) -> i1
// CHECK: llvm.call @__pgpu_amdgpu_match_any_i32(%[[M]], %{{.+}}) : (i32, i32) -> i32
// CHECK: llvm.call @__pgpu_amdgpu_match_any_i64(%[[M]], %{{.+}}) : (i32, i64) -> i32
// CHECK: llvm.call @__pgpu_amdgpu_warp_sync(%[[M]]) : (i32) -> ()
// CHECK: llvm.atomicrmw add %{{.+}}, %{{.+}} syncscope("agent") monotonic
// CHECK: llvm.fence syncscope("workgroup") acq_rel
// CHECK: llvm.load %{{.+}} atomic syncscope("agent") acquire
// System scope (no syncscope) and AMDGPU's own names stay.
// CHECK: llvm.atomicrmw add %{{.+}}, %{{.+}} monotonic
// CHECK: llvm.fence syncscope("wavefront") release

// ISA-LABEL: warp_ops:
// ISA-SAME: v_readfirstlane_b32
// ISA-SAME: v_cmp_eq_u64
// ISA-SAME: v_mbcnt_hi_u32_b32
// ISA-SAME: v_lshrrev_b64
// The agent-scope atomic needs no sc1 bit; the system-scope one has it.
// ISA-SAME: global_atomic_add v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9:]+}}]\0A
// ISA-SAME: global_atomic_add v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9:]+}}] sc1

// The 32-lane wave: the ballot is the warp's; only the helpers used are
// inserted.
// CHECK-LABEL: gpu.module @wave32
// CHECK: llvm.func internal @__pgpu_amdgpu_ballot(%[[MASK32:.+]]: i32, %[[P32:.+]]: i1) -> i32 attributes {always_inline, convergent} {
// CHECK-NEXT: %[[WARP32:.+]] = rocdl.ballot %[[P32]] : i32
// CHECK-NEXT: llvm.and %[[WARP32]], %[[MASK32]] : i32
// CHECK-NOT: @__pgpu_amdgpu_match
// CHECK-LABEL: llvm.func @ballot(

// ISA-LABEL: ballot:
// ISA-SAME: v_cmp_ne_u32_e32 vcc_lo, 0,
// ISA-NOT: v_lshrrev_b64

module attributes {gpu.container_module} {
  gpu.module @wave64 [#rocdl.target<chip = "gfx942">] {
    llvm.func @warp_ops(%mask: i32, %out: !llvm.ptr<1>) attributes {rocdl.kernel} {
      %tid = rocdl.workitem.id.x : i32
      %one = llvm.mlir.constant(1 : i32) : i32
      %odd = llvm.and %tid, %one : i32
      %p = llvm.icmp "eq" %odd, %one : i32
      %v = llvm.lshr %tid, %one : i32
      %w = llvm.zext %v : i32 to i64
      %b = nvvm.vote.sync ballot %mask, %p -> i32
      %any = nvvm.vote.sync any %mask, %p -> i1
      %all = nvvm.vote.sync all %mask, %p -> i1
      %uni = nvvm.vote.sync uni %mask, %p -> i1
      %m = nvvm.match.sync any %mask, %v : i32 -> i32
      %n = nvvm.match.sync any %mask, %w : i64 -> i32
      nvvm.bar.warp.sync %mask : i32
      %x = llvm.atomicrmw add %out, %b syncscope("device") monotonic : !llvm.ptr<1>, i32
      llvm.fence syncscope("block") acq_rel
      %y = llvm.load %out atomic syncscope("device") acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
      %z = llvm.atomicrmw add %out, %m monotonic : !llvm.ptr<1>, i32
      llvm.fence syncscope("wavefront") release
      %anys = llvm.zext %any : i1 to i32
      %alls = llvm.zext %all : i1 to i32
      %unis = llvm.zext %uni : i1 to i32
      %s1 = llvm.add %anys, %alls : i32
      %s2 = llvm.add %s1, %unis : i32
      %s3 = llvm.add %s2, %n : i32
      %s4 = llvm.add %s3, %y : i32
      llvm.store %s4, %out : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @wave32 [#rocdl.target<chip = "gfx1100", flags = {no_wave64}>] {
    llvm.func @ballot(%mask: i32, %out: !llvm.ptr<1>) attributes {rocdl.kernel} {
      %tid = rocdl.workitem.id.x : i32
      %one = llvm.mlir.constant(1 : i32) : i32
      %odd = llvm.and %tid, %one : i32
      %p = llvm.icmp "eq" %odd, %one : i32
      %b = nvvm.vote.sync ballot %mask, %p -> i32
      llvm.store %b, %out : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}
