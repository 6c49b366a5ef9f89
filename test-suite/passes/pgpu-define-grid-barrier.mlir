// RUN: pgpu-opt %s --split-input-file --verify-diagnostics --pgpu-define-grid-barrier | FileCheck %s --implicit-check-not=_mlir_ciface
// RUN: pgpu-opt %S/Inputs/define-grid-barrier-errors.mlir --split-input-file --verify-diagnostics --pgpu-define-grid-barrier
// Running it twice changes nothing more.
// RUN: pgpu-opt %s --split-input-file --pgpu-define-grid-barrier -o %t.once 2> /dev/null
// RUN: pgpu-opt %s --split-input-file --pgpu-define-grid-barrier --pgpu-define-grid-barrier -o %t.twice 2> /dev/null
// RUN: pgpu-opt %t.once --split-input-file --pgpu-define-grid-barrier -o %t.again 2> /dev/null
// RUN: diff %t.once %t.twice
// RUN: diff %t.once %t.again
// RUN: FileCheck %s --check-prefix=TWICE < %t.twice
// A grid kernel from a gpu.launch through the NVPTX backend's pipeline
// (outlining, convert-gpu-to-nvvm, this pass, LLVM's NVPTX backend).
// RUN: pgpu-translate --pgpu-to-ptx %S/Inputs/grid-barrier-launch.mlir | FileCheck %s --check-prefix=PTX

// The module as convert-gpu-to-nvvm leaves it: @pgpu_grid_barrier is the
// C-interface wrapper of the declaration @_mlir_ciface_pgpu_grid_barrier.
// Both become our definition; the module gets the word and the
// cooperative-launch marker, the kernel nvvm.minctasm = 1024 / 256.
// CHECK-LABEL: gpu.module @grid
// CHECK: llvm.mlir.global external constant @pgpu_cooperative_launch(1 : i32) {addr_space = 1 : i32} : i32
// CHECK-LABEL: llvm.func @grid_kernel(
// CHECK-SAME: nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 4 : i32
// CHECK: llvm.call @pgpu_grid_barrier() : () -> ()
// CHECK-LABEL: llvm.func @helper(
// CHECK-NOT: nvvm.minctasm
// CHECK: llvm.mlir.global internal @pgpu_grid_barrier_word(0 : i32) {addr_space = 1 : i32} : i32
// CHECK-LABEL: llvm.func internal @pgpu_grid_barrier()
// CHECK-SAME: attributes {always_inline, convergent}
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[ZERO:.+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[LEADER:.+]] = llvm.icmp "eq" %[[TID]], %[[ZERO]] : i32
// CHECK-NEXT: llvm.cond_br %[[LEADER]], ^[[ARRIVE:bb[0-9]+]], ^[[LEAVE:bb[0-9]+]]
// CHECK-NEXT: ^[[ARRIVE]]:
// CHECK-DAG: %[[NB:.+]] = nvvm.read.ptx.sreg.nctaid.x : i32
// CHECK-DAG: %[[BID:.+]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK-DAG: %[[ONE:.+]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG: %[[TOP:.+]] = llvm.mlir.constant(-2147483648 : i32) : i32
// CHECK-DAG: %[[FIRST:.+]] = llvm.icmp "eq" %[[BID]], %[[ZERO]] : i32
// CHECK-DAG: %[[OTHERS:.+]] = llvm.sub %[[NB]], %[[ONE]] : i32
// CHECK-DAG: %[[FIRST_INC:.+]] = llvm.sub %[[TOP]], %[[OTHERS]] : i32
// CHECK-DAG: %[[INC:.+]] = llvm.select %[[FIRST]], %[[FIRST_INC]], %[[ONE]] : i1, i32
// CHECK-DAG: %[[WORD:.+]] = llvm.mlir.addressof @pgpu_grid_barrier_word : !llvm.ptr<1>
// CHECK: llvm.fence syncscope("device") release
// CHECK-NEXT: %[[OLD:.+]] = llvm.atomicrmw add %[[WORD]], %[[INC]] syncscope("device") acq_rel : !llvm.ptr<1>, i32
// CHECK-NEXT: llvm.br ^[[SPIN:bb[0-9]+]]
// CHECK-NEXT: ^[[SPIN]]:
// CHECK-NEXT: %[[CUR:.+]] = llvm.load %[[WORD]] atomic syncscope("device") acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK-NEXT: %[[XOR:.+]] = llvm.xor %[[OLD]], %[[CUR]] : i32
// CHECK-NEXT: %[[BIT:.+]] = llvm.and %[[XOR]], %[[TOP]] : i32
// CHECK-NEXT: %[[FLIPPED:.+]] = llvm.icmp "ne" %[[BIT]], %[[ZERO]] : i32
// CHECK-NEXT: llvm.cond_br %[[FLIPPED]], ^[[ACQUIRE:bb[0-9]+]], ^[[SPIN]]
// CHECK-NEXT: ^[[ACQUIRE]]:
// CHECK-NEXT: llvm.fence syncscope("device") acquire
// CHECK-NEXT: llvm.br ^[[LEAVE]]
// CHECK-NEXT: ^[[LEAVE]]:
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: llvm.return

// TWICE-LABEL: gpu.module @grid
// TWICE: @pgpu_cooperative_launch(
// TWICE-NOT: @pgpu_cooperative_launch(
// TWICE: @pgpu_grid_barrier_word(
// TWICE-NOT: @pgpu_grid_barrier_word(
// TWICE: llvm.func internal @pgpu_grid_barrier()
// TWICE-NOT: llvm.func internal @pgpu_grid_barrier()
// TWICE-LABEL: gpu.module @declared
// TWICE: @pgpu_cooperative_launch(
// TWICE-NOT: @pgpu_cooperative_launch(
// TWICE: @pgpu_grid_barrier_word(
// TWICE-NOT: @pgpu_grid_barrier_word(
// TWICE: llvm.func internal @pgpu_grid_barrier()
// TWICE-NOT: llvm.func internal @pgpu_grid_barrier()
// TWICE-LABEL: gpu.module @plain

module attributes {gpu.container_module} {
  gpu.module @grid [#nvvm.target<chip = "sm_90">] {
    llvm.func @grid_kernel(%p: !llvm.ptr<1>) attributes {gpu.kernel, gpu.known_block_size = array<i32: 256, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>} {
      %one = llvm.mlir.constant(1.0 : f32) : f32
      llvm.store %one, %p : f32, !llvm.ptr<1>
      llvm.call @pgpu_grid_barrier() : () -> ()
      %x = llvm.load %p : !llvm.ptr<1> -> f32
      llvm.store %x, %p : f32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func @helper() {
      llvm.return
    }
    llvm.func private @pgpu_grid_barrier() attributes {llvm.emit_c_interface, sym_visibility = "private"} {
      llvm.call @_mlir_ciface_pgpu_grid_barrier() : () -> ()
      llvm.return
    }
    llvm.func @_mlir_ciface_pgpu_grid_barrier() attributes {llvm.emit_c_interface, sym_visibility = "private"}
  }
}

// -----

// A plain declaration is defined too. The block size comes from
// gpu.known_block_size when nvvm.maxntid is missing; a kernel with neither
// keeps its registers unlimited, with a warning.
// CHECK-LABEL: gpu.module @declared
// CHECK: @pgpu_cooperative_launch
// CHECK-LABEL: llvm.func @known(
// CHECK-SAME: nvvm.minctasm = 8 : i32
// CHECK-LABEL: llvm.func @unknown(
// CHECK-NOT: nvvm.minctasm
// CHECK: llvm.mlir.global internal @pgpu_grid_barrier_word
// CHECK: llvm.func internal @pgpu_grid_barrier() attributes {always_inline, convergent} {
// CHECK: llvm.atomicrmw add

module attributes {gpu.container_module} {
  gpu.module @declared {
    llvm.func @known() attributes {gpu.kernel, gpu.known_block_size = array<i32: 64, 2, 1>, nvvm.kernel} {
      llvm.call @pgpu_grid_barrier() : () -> ()
      llvm.return
    }
    // expected-warning @+1 {{grid kernel @unknown has no known block size (nvvm.maxntid) of at most 1024: its registers are not limited for a cooperative launch}}
    llvm.func @unknown() attributes {nvvm.kernel} {
      llvm.call @pgpu_grid_barrier() : () -> ()
      llvm.return
    }
    llvm.func @pgpu_grid_barrier()
  }
}

// -----

// Modules without the declaration are left alone: no definition, no word,
// no marker, no nvvm.minctasm.
// CHECK-LABEL: gpu.module @plain
// CHECK-NOT: pgpu_
// CHECK-NOT: nvvm.minctasm
// CHECK: llvm.func @plain_kernel() attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
// CHECK-NOT: pgpu_
// CHECK-NOT: nvvm.minctasm

module attributes {gpu.container_module} {
  gpu.module @plain {
    llvm.func @plain_kernel() attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>} {
      llvm.return
    }
  }
}

// PTX: .target sm_90
// PTX-DAG: .visible .global .align 4 .u32 pgpu_cooperative_launch = 1;
// PTX-DAG: .global .align 4 .u32 pgpu_grid_barrier_word;
// PTX-LABEL: .visible .entry phases_kernel(
// PTX: .maxntid 256, 1, 1
// PTX-NEXT: .minnctapersm 4
// Two grid barriers, inlined (no call, no external function left), each
// two bar.sync that the idle threads past %n wait at too: the barrier is
// convergent, so LLVM does not thread the guard's branch through it.
// PTX-NOT: call
// PTX-NOT: bar.sync
// PTX: bar.sync 0;
// PTX-NEXT: setp.ne.b32 %[[NOT_LEADER:p[0-9]+]], %{{r[0-9]+}}, 0;
// PTX-NEXT: @%[[NOT_LEADER]] bra $[[LEAVE:L__BB0_[0-9]+]];
// PTX-NEXT: mov.u32 %[[NB:r[0-9]+]], %nctaid.x;
// PTX: sub.s32 %{{r[0-9]+}}, -2147483647, %[[NB]];
// LLVM 22 emits the atomicrmw's acq_rel as a relaxed atom: our fences order it.
// PTX: fence.acq_rel.gpu;
// PTX-NEXT: atom.global.add.u32 %[[OLD:r[0-9]+]], [pgpu_grid_barrier_word], %{{r[0-9]+}};
// PTX-NEXT: $[[SPIN:L__BB0_[0-9]+]]:
// PTX-NEXT: ld.acquire.gpu.global.b32 %[[CUR:r[0-9]+]], [pgpu_grid_barrier_word];
// PTX-NEXT: xor.b32 %[[XOR:r[0-9]+]], %[[CUR]], %[[OLD]];
// PTX-NEXT: setp.gt.s32 %[[SAME:p[0-9]+]], %[[XOR]], -1;
// PTX-NEXT: @%[[SAME]] bra $[[SPIN]];
// PTX-NEXT: fence.acq_rel.gpu;
// PTX-NEXT: $[[LEAVE]]:
// PTX-NEXT: bar.sync 0;
// PTX-NOT: bar.sync
// PTX: bar.sync 0;
// PTX-NOT: bar.sync
// PTX: atom.global.add.u32
// PTX-NOT: bar.sync
// PTX: ld.acquire.gpu.global.b32
// PTX-NOT: bar.sync
// PTX: bar.sync 0;
// PTX-NEXT: ret;
// PTX-NOT: bar.sync
// PTX-NOT: call
// PTX-NOT: _mlir_ciface
