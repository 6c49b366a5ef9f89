; Kernels of the CUDA runtime test (mirror_test.c), compiled to PTX with
;   llc -march=nvptx64 -mcpu=sm_90 kernels.ll -o kernels.ptx
; Parameters are generic pointers, as MLIR's NVVM lowering passes memrefs.

target datalayout = "e-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier0()
declare void @llvm.trap()

@dynamic = external addrspace(3) global [0 x i32], align 4

; out[i] = 2 * in[i] + 1 for i < n
define ptx_kernel void @scale(ptr %in, ptr %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %body, label %done
body:
  %i64 = sext i32 %i to i64
  %src = getelementptr i32, ptr %in, i64 %i64
  %v = load i32, ptr %src
  %twice = shl i32 %v, 1
  %r = add i32 %twice, 1
  %dst = getelementptr i32, ptr %out, i64 %i64
  store i32 %r, ptr %dst
  br label %done
done:
  ret void
}

; One block reverses data[0 .. n) through n words of dynamic shared memory.
define ptx_kernel void @reverse(ptr %data, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  br label %load
load:
  %i = phi i32 [ %tid, %entry ], [ %i.next, %load.body ]
  %more = icmp slt i32 %i, %n
  br i1 %more, label %load.body, label %sync
load.body:
  %i64 = sext i32 %i to i64
  %src = getelementptr i32, ptr %data, i64 %i64
  %v = load i32, ptr %src
  %slot = getelementptr i32, ptr addrspace(3) @dynamic, i64 %i64
  store i32 %v, ptr addrspace(3) %slot
  %i.next = add i32 %i, %ntid
  br label %load
sync:
  call void @llvm.nvvm.barrier0()
  br label %store
store:
  %j = phi i32 [ %tid, %sync ], [ %j.next, %store.body ]
  %more2 = icmp slt i32 %j, %n
  br i1 %more2, label %store.body, label %done
store.body:
  %j64 = sext i32 %j to i64
  %last = sub i32 %n, 1
  %k = sub i32 %last, %j
  %k64 = sext i32 %k to i64
  %from = getelementptr i32, ptr addrspace(3) @dynamic, i64 %k64
  %w = load i32, ptr addrspace(3) %from
  %dst = getelementptr i32, ptr %data, i64 %j64
  store i32 %w, ptr %dst
  %j.next = add i32 %j, %ntid
  br label %store
done:
  ret void
}

; Traps (a failed run-time check in a kernel).
define ptx_kernel void @boom(ptr %p) {
entry:
  call void @llvm.trap()
  unreachable
}

; Reads far outside any allocation (an illegal address).
define ptx_kernel void @wild(ptr %p) {
entry:
  %far = getelementptr i8, ptr %p, i64 1099511627776
  store volatile i32 7, ptr %far
  ret void
}
