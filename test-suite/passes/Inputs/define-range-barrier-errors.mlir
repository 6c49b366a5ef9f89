// Errors of pgpu-define-range-barrier (pgpu-define-range-barrier.mlir).

// A chip without independent thread scheduling: lanes of one warp in
// different ranges could not wait apart.
module attributes {gpu.container_module} {
  // expected-error @+1 {{block kernels need sm_70 or newer (their range barriers rely on independent thread scheduling), but gpu.module @old targets sm_60}}
  gpu.module @old [#nvvm.target<chip = "sm_60">] {
    llvm.func @pgpu_block_enter()
  }
}

// -----

// No chip named: #nvvm.target's default, sm_50.
module attributes {gpu.container_module} {
  // expected-error @+1 {{block kernels need sm_70 or newer (their range barriers rely on independent thread scheduling), but gpu.module @default targets sm_50}}
  gpu.module @default [#nvvm.target] {
    llvm.func @pgpu_range_barrier(i64, i64, i64)
  }
}

// -----

// Declarations of other signatures (e.g. a 32-bit index).
module attributes {gpu.container_module} {
  gpu.module @narrow_index {
    // expected-error @+1 {{@pgpu_range_barrier must be declared as a function of three i64 (index) arguments and no results}}
    llvm.func @pgpu_range_barrier(i32, i32, i32)
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @entered_with_arguments {
    // expected-error @+1 {{@pgpu_block_enter must be declared as a function of no arguments and no results}}
    llvm.func @pgpu_block_enter(i32)
  }
}

// -----

// The module already has a symbol named like the barrier's words.
module attributes {gpu.container_module} {
  // expected-error @+1 {{cannot define @pgpu_range_barrier: the module already has a symbol @pgpu_range_barrier_words}}
  gpu.module @taken {
    llvm.mlir.global internal @pgpu_range_barrier_words(7 : i32) {addr_space = 3 : i32} : i32
    llvm.func @pgpu_block_enter()
    llvm.func @pgpu_range_barrier(i64, i64, i64)
  }
}
