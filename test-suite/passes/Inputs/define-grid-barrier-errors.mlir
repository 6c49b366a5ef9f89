// Errors of pgpu-define-grid-barrier (pgpu-define-grid-barrier.mlir).

// A declaration of another signature.
module attributes {gpu.container_module} {
  gpu.module @wrong_signature {
    // expected-error @+1 {{@pgpu_grid_barrier must be declared as a function of no arguments and no results}}
    llvm.func @pgpu_grid_barrier(i32)
  }
}

// -----

// The module already has a symbol named like the barrier's word.
module attributes {gpu.container_module} {
  // expected-error @+1 {{cannot define @pgpu_grid_barrier: the module already has a symbol @pgpu_grid_barrier_word}}
  gpu.module @taken {
    llvm.mlir.global internal @pgpu_grid_barrier_word(7 : i32) {addr_space = 1 : i32} : i32
    llvm.func @pgpu_grid_barrier()
  }
}
