// RUN: pgpu-opt %s --split-input-file --pgpu-define-range-barrier | FileCheck %s --implicit-check-not=_mlir_ciface_pgpu
// RUN: pgpu-opt %S/Inputs/define-range-barrier-errors.mlir --split-input-file --verify-diagnostics --pgpu-define-range-barrier
// Running it twice changes nothing more.
// RUN: pgpu-opt %s --split-input-file --pgpu-define-range-barrier -o %t.once
// RUN: pgpu-opt %s --split-input-file --pgpu-define-range-barrier --pgpu-define-range-barrier -o %t.twice
// RUN: pgpu-opt %t.once --split-input-file --pgpu-define-range-barrier -o %t.again
// RUN: diff %t.once %t.twice
// RUN: diff %t.once %t.again
// RUN: FileCheck %s --check-prefix=TWICE < %t.twice
// A block kernel from a gpu.launch through the NVPTX backend's pipeline
// (outlining, convert-gpu-to-nvvm, this pass, LLVM's NVPTX backend), for
// sm_90 and for sm_70, the oldest chip with independent thread scheduling.
// RUN: pgpu-translate --pgpu-to-ptx %S/Inputs/range-barrier-launch.mlir | FileCheck %s --check-prefix=PTX
// RUN: pgpu-translate --pgpu-to-ptx --chip sm_70 %S/Inputs/range-barrier-launch.mlir | FileCheck %s --check-prefix=PTX70

// The module as convert-gpu-to-nvvm leaves it: both functions are
// C-interface wrappers of declarations. All four become our definitions;
// the module gets the shared-memory words and the marker of block kernels
// (the runtime raises the stack limit), the kernel that enters nvvm.maxntid
// = 1024. The host's copy of the block-group function goes (outlining
// copied it into the kernel module); a block-group function host code
// calls stays. So does a global in host memory, while a workgroup global
// (a block version's shared local) goes: outlining copied it too.
// CHECK-NOT: @__shared_scan_0
// CHECK: memref.global "private" @host_table : memref<8xi32>
// CHECK-NOT: @__shared_scan_0
// CHECK-LABEL: func.func @host_caller
// CHECK: call @still_called
// CHECK-LABEL: func.func private @still_called
// CHECK-SAME: pgpu.block_group
// CHECK-NOT: func.func private @scan
// CHECK-LABEL: gpu.module @block
// CHECK: llvm.mlir.global external constant @pgpu_block_kernels(1 : i32) {addr_space = 1 : i32} : i32
// CHECK-LABEL: llvm.func @block_kernel(
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 1024, 1, 1>
// CHECK: llvm.call @pgpu_block_enter() : () -> ()
// CHECK: llvm.call @scan(
// CHECK: llvm.call @pgpu_range_barrier(
// CHECK: llvm.mlir.global internal @pgpu_range_barrier_words() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<2049 x i32>
// CHECK-LABEL: llvm.func internal @pgpu_block_enter()
// CHECK-SAME: attributes {always_inline, convergent}
// CHECK-NEXT: %[[TID:.+]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK-NEXT: %[[THREADS:.+]] = nvvm.read.ptx.sreg.ntid.x : i32
// CHECK-NEXT: %[[SLOTS:.+]] = llvm.mlir.constant(2049 : i32) : i32
// CHECK-NEXT: %[[ZERO:.+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[WORDS:.+]] = llvm.mlir.addressof @pgpu_range_barrier_words : !llvm.ptr<3>
// CHECK-NEXT: llvm.br ^[[CHECK:bb[0-9]+]](%[[TID]] : i32)
// CHECK-NEXT: ^[[CHECK]](%[[SLOT:.+]]: i32):
// CHECK-NEXT: %[[MORE:.+]] = llvm.icmp "ult" %[[SLOT]], %[[SLOTS]] : i32
// CHECK-NEXT: llvm.cond_br %[[MORE]], ^[[CLEAR:bb[0-9]+]], ^[[DONE:bb[0-9]+]]
// CHECK-NEXT: ^[[CLEAR]]:
// CHECK-NEXT: %[[WORD:.+]] = llvm.getelementptr %[[WORDS]][0, %[[SLOT]]]
// CHECK-NEXT: llvm.store %[[ZERO]], %[[WORD]]
// CHECK-NEXT: %[[NEXT:.+]] = llvm.add %[[SLOT]], %[[THREADS]] : i32
// CHECK-NEXT: llvm.br ^[[CHECK]](%[[NEXT]] : i32)
// CHECK-NEXT: ^[[DONE]]:
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: llvm.return
// CHECK-LABEL: llvm.func internal @pgpu_range_barrier(
// CHECK-SAME: %[[FIRST64:[^:]+]]: i64, %[[COUNT64:[^:]+]]: i64, %[[SLOT64:[^:]+]]: i64) attributes {always_inline, convergent}
// CHECK-DAG: %[[FIRST:.+]] = llvm.trunc %[[FIRST64]] : i64 to i32
// CHECK-DAG: %[[COUNT:.+]] = llvm.trunc %[[COUNT64]] : i64 to i32
// CHECK-DAG: %[[BARRIER_TID:.+]] = nvvm.read.ptx.sreg.tid.x : i32
// The portion of the range in this thread's warp: [low, high), as a mask.
// CHECK: %[[LANE:.+]] = llvm.and %[[BARRIER_TID]], %{{.+}} : i32
// CHECK-NEXT: %[[WARP:.+]] = llvm.sub %[[BARRIER_TID]], %[[LANE]] : i32
// CHECK-NEXT: %[[WARP_END:.+]] = llvm.add %[[WARP]], %{{.+}} : i32
// CHECK-NEXT: %[[END:.+]] = llvm.add %[[FIRST]], %[[COUNT]] : i32
// CHECK-NEXT: %[[LATER:.+]] = llvm.icmp "ult" %[[WARP]], %[[FIRST]] : i32
// CHECK-NEXT: %[[LOW:.+]] = llvm.select %[[LATER]], %[[FIRST]], %[[WARP]] : i1, i32
// CHECK-NEXT: %[[SOONER:.+]] = llvm.icmp "ult" %[[END]], %[[WARP_END]] : i32
// CHECK-NEXT: %[[HIGH:.+]] = llvm.select %[[SOONER]], %[[END]], %[[WARP_END]] : i1, i32
// CHECK-NEXT: %[[LANES:.+]] = llvm.sub %[[HIGH]], %[[LOW]] : i32
// CHECK-NEXT: %[[OFFSET:.+]] = llvm.sub %[[LOW]], %[[WARP]] : i32
// CHECK: %[[MASK:.+]] = llvm.trunc %{{.+}} : i64 to i32
// CHECK-NEXT: nvvm.bar.warp.sync %[[MASK]] : i32
// CHECK-NEXT: %[[LEADER:.+]] = llvm.icmp "eq" %[[BARRIER_TID]], %[[LOW]] : i32
// CHECK-NEXT: llvm.cond_br %[[LEADER]], ^[[ARRIVE:bb[0-9]+]], ^[[LEAVE:bb[0-9]+]]
// The leader arrives for its lanes: 2^31 - (count - lanes) from the
// portion that holds `first`, `lanes` from the others.
// CHECK-NEXT: ^[[ARRIVE]]:
// CHECK-NEXT: %[[TOP:.+]] = llvm.mlir.constant(-2147483648 : i32) : i32
// CHECK-NEXT: %[[HOLDS:.+]] = llvm.icmp "eq" %[[LOW]], %[[FIRST]] : i32
// CHECK-NEXT: %[[OTHERS:.+]] = llvm.sub %[[COUNT]], %[[LANES]] : i32
// CHECK-NEXT: %[[FIRST_INC:.+]] = llvm.sub %[[TOP]], %[[OTHERS]] : i32
// CHECK-NEXT: %[[INC:.+]] = llvm.select %[[HOLDS]], %[[FIRST_INC]], %[[LANES]] : i1, i32
// CHECK-NEXT: %[[BARRIER_WORDS:.+]] = llvm.mlir.addressof @pgpu_range_barrier_words : !llvm.ptr<3>
// CHECK-NEXT: %[[BARRIER_WORD:.+]] = llvm.getelementptr %[[BARRIER_WORDS]][0, %[[SLOT64]]]
// CHECK-NEXT: llvm.fence syncscope("block") release
// CHECK-NEXT: %[[OLD:.+]] = llvm.atomicrmw add %[[BARRIER_WORD]], %[[INC]] syncscope("block") acq_rel : !llvm.ptr<3>, i32
// CHECK-NEXT: llvm.br ^[[SPIN:bb[0-9]+]]
// CHECK-NEXT: ^[[SPIN]]:
// CHECK-NEXT: %[[CUR:.+]] = llvm.load %[[BARRIER_WORD]] atomic syncscope("block") acquire {alignment = 4 : i64} : !llvm.ptr<3> -> i32
// CHECK-NEXT: %[[XOR:.+]] = llvm.xor %[[OLD]], %[[CUR]] : i32
// CHECK-NEXT: %[[BIT:.+]] = llvm.and %[[XOR]], %[[TOP]] : i32
// CHECK-NEXT: %[[FLIPPED:.+]] = llvm.icmp "ne" %[[BIT]], %{{.+}} : i32
// CHECK-NEXT: llvm.cond_br %[[FLIPPED]], ^[[ACQUIRE:bb[0-9]+]], ^[[PAUSE:bb[0-9]+]]
// CHECK-NEXT: ^[[PAUSE]]:
// CHECK-NEXT: %[[NS:.+]] = llvm.mlir.constant(32 : i32) : i32
// CHECK-NEXT: nvvm.nanosleep %[[NS]]
// CHECK-NEXT: llvm.br ^[[SPIN]]
// CHECK-NEXT: ^[[ACQUIRE]]:
// CHECK-NEXT: llvm.fence syncscope("block") acquire
// CHECK-NEXT: llvm.br ^[[LEAVE]]
// CHECK-NEXT: ^[[LEAVE]]:
// CHECK-NEXT: nvvm.bar.warp.sync %[[MASK]] : i32
// CHECK-NEXT: llvm.return

// TWICE-LABEL: gpu.module @block
// TWICE: @pgpu_block_kernels(
// TWICE-NOT: @pgpu_block_kernels(
// TWICE: @pgpu_range_barrier_words(
// TWICE-NOT: @pgpu_range_barrier_words(
// TWICE: llvm.func internal @pgpu_block_enter()
// TWICE-NOT: llvm.func internal @pgpu_block_enter()
// TWICE: llvm.func internal @pgpu_range_barrier(
// TWICE-NOT: llvm.func internal @pgpu_range_barrier(
// TWICE-LABEL: gpu.module @declared
// TWICE: @pgpu_block_kernels(
// TWICE-NOT: @pgpu_block_kernels(
// TWICE-LABEL: gpu.module @plain

module attributes {gpu.container_module} {
  memref.global "private" @__shared_scan_0 : memref<8xi32, #gpu.address_space<workgroup>> = uninitialized
  memref.global "private" @host_table : memref<8xi32> = uninitialized
  func.func @host_caller(%a: memref<?xi32>) {
    %c0 = arith.constant 0 : index
    call @still_called(%c0, %a) : (index, memref<?xi32>) -> ()
    return
  }
  func.func private @still_called(%t: index, %a: memref<?xi32>) attributes {pgpu.block_group} {
    return
  }
  func.func private @scan(%t: index, %a: memref<?xi32>) attributes {pgpu.block_group} {
    func.call @scan(%t, %a) : (index, memref<?xi32>) -> ()
    return
  }
  gpu.module @block [#nvvm.target<chip = "sm_90">] {
    llvm.func @block_kernel(%n: i64, %p: !llvm.ptr) attributes {gpu.kernel, gpu.known_grid_size = array<i32: 1, 1, 1>, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %t = llvm.sext %tid : i32 to i64
      %c0 = llvm.mlir.constant(0 : index) : i64
      llvm.call @pgpu_block_enter() : () -> ()
      llvm.call @scan(%t, %c0, %n, %n, %p) : (i64, i64, i64, i64, !llvm.ptr) -> ()
      llvm.call @pgpu_range_barrier(%c0, %n, %n) : (i64, i64, i64) -> ()
      llvm.return
    }
    llvm.func private @pgpu_block_enter() attributes {llvm.emit_c_interface, sym_visibility = "private"} {
      llvm.call @_mlir_ciface_pgpu_block_enter() : () -> ()
      llvm.return
    }
    llvm.func @_mlir_ciface_pgpu_block_enter() attributes {llvm.emit_c_interface, sym_visibility = "private"}
    llvm.func @scan(%t: i64, %first: i64, %count: i64, %slot: i64, %p: !llvm.ptr) attributes {pgpu.block_group, sym_visibility = "private"} {
      llvm.call @scan(%t, %first, %count, %slot, %p) : (i64, i64, i64, i64, !llvm.ptr) -> ()
      llvm.call @pgpu_range_barrier(%first, %count, %slot) : (i64, i64, i64) -> ()
      llvm.return
    }
    llvm.func private @pgpu_range_barrier(%first: i64, %count: i64, %slot: i64) attributes {llvm.emit_c_interface, sym_visibility = "private"} {
      llvm.call @_mlir_ciface_pgpu_range_barrier(%first, %count, %slot) : (i64, i64, i64) -> ()
      llvm.return
    }
    llvm.func @_mlir_ciface_pgpu_range_barrier(i64, i64, i64) attributes {llvm.emit_c_interface, sym_visibility = "private"}
  }
}

// -----

// Plain declarations are defined too; a kernel that does not enter (not a
// block kernel) and one with a block size keep their attributes.
// CHECK-LABEL: gpu.module @declared
// CHECK: @pgpu_block_kernels
// CHECK-LABEL: llvm.func @enters(
// CHECK-SAME: nvvm.maxntid = array<i32: 512, 1, 1>
// CHECK-LABEL: llvm.func @other(
// CHECK-NOT: nvvm.maxntid
// CHECK: llvm.mlir.global internal @pgpu_range_barrier_words
// CHECK: llvm.func internal @pgpu_block_enter() attributes {always_inline, convergent} {
// CHECK: llvm.func internal @pgpu_range_barrier(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64) attributes {always_inline, convergent} {
// CHECK: llvm.atomicrmw add

module attributes {gpu.container_module} {
  gpu.module @declared {
    llvm.func @enters(%n: i64) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 512, 1, 1>} {
      %c0 = llvm.mlir.constant(0 : i64) : i64
      llvm.call @pgpu_block_enter() : () -> ()
      llvm.call @pgpu_range_barrier(%c0, %n, %n) : (i64, i64, i64) -> ()
      llvm.return
    }
    llvm.func @other() attributes {nvvm.kernel} {
      llvm.return
    }
    llvm.func @pgpu_block_enter()
    llvm.func @pgpu_range_barrier(i64, i64, i64)
  }
}

// -----

// Modules without the declarations are left alone: no definitions, no
// words, no marker, no nvvm.maxntid.
// CHECK-LABEL: gpu.module @plain
// CHECK-NOT: pgpu_
// CHECK-NOT: nvvm.maxntid
// CHECK: llvm.func @plain_kernel() attributes {gpu.kernel, nvvm.kernel}
// CHECK-NOT: pgpu_
// CHECK-NOT: nvvm.maxntid

module attributes {gpu.container_module} {
  gpu.module @plain [#nvvm.target<chip = "sm_60">] {
    llvm.func @plain_kernel() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

// The words in shared memory, the module's marker, 1024 threads; the
// functions inlined: the entry's loop zeroing the 2049 words and bar.sync,
// the recursion's calls, and in it each range barrier's warp
// synchronization, fence, one atomic add, acquire loads with a pause.
// PTX: .target sm_90
// PTX-DAG: .visible .global .align 4 .u32 pgpu_block_kernels = 1;
// PTX-DAG: .shared .align 4 .b8 pgpu_range_barrier_words[8196];
// PTX-LABEL: .visible .entry prefix_sums_kernel(
// PTX: .maxntid 1024, 1, 1
// PTX-NOT: pgpu_range_barrier,
// PTX-NOT: pgpu_block_enter
// PTX: st.shared.b32 [%{{rd[0-9]+}}], 0;
// PTX: setp.lt.u32 %{{p[0-9]+}}, %{{r[0-9]+}}, 2049;
// PTX: bar.sync 0;
// PTX: call.uni scan,
// PTX: bar.warp.sync %[[MASK:r[0-9]+]];
// PTX: fence.acq_rel.cta;
// PTX-NEXT: atom.shared.add.u32 %[[OLD:r[0-9]+]], [%[[WORD:rd[0-9]+]]], %{{r[0-9]+}};
// PTX-NEXT: ld.acquire.cta.shared.b32 %{{r[0-9]+}}, [%[[WORD]]];
// PTX: nanosleep.u32 32;
// PTX-NEXT: ld.acquire.cta.shared.b32 %{{r[0-9]+}}, [%[[WORD]]];
// PTX: fence.acq_rel.cta;
// PTX: bar.warp.sync %[[MASK]];
// PTX-NEXT: ret;
// PTX-LABEL: .visible .func scan(
// PTX: call.uni scan,
// PTX: call.uni scan,
// PTX-COUNT-4: bar.warp.sync
// PTX-NOT: bar.sync
// PTX-NOT: call.uni pgpu
// PTX-NOT: _mlir_ciface_pgpu

// sm_70's PTX ISA (6.0 unless asked for more) has no nanosleep: the
// leader spins on its loads alone.
// PTX70: .version 6.0
// PTX70-NEXT: .target sm_70
// PTX70-NOT: nanosleep
// PTX70: .shared .align 4 .b8 pgpu_range_barrier_words[8196];
// PTX70-NOT: nanosleep
// PTX70: bar.warp.sync
// PTX70: atom.shared.add.u32
// PTX70: ld.acquire.cta.shared.b32
// PTX70-NOT: nanosleep
