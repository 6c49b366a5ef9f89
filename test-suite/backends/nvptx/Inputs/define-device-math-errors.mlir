// Errors of pgpu-define-device-math (define-device-math.mlir runs it).

// A libdevice function that the library does not define.
module attributes {gpu.container_module} {
  gpu.module @tanh [#nvvm.target<chip = "sm_90">] {
    gpu.func @tanh(%x: f64, %p: memref<1xf64>) kernel {
      // expected-error @+1 {{@__nv_tanh (libdevice) has no definition in pgpu's device math library; the cuda target does not link libdevice, so this operation cannot run on the GPU}}
      %t = math.tanh %x : f64
      %i0 = arith.constant 0 : index
      memref.store %t, %p[%i0] : memref<1xf64>
      gpu.return
    }
  }
}

// -----

// A declaration whose type is not libdevice's.
module attributes {gpu.container_module} {
  gpu.module @wrong_type [#nvvm.target<chip = "sm_90">] {
    llvm.func @__nv_exp(f32) -> f32
    llvm.func @wrong_type(%x: f32) -> f32 {
      // expected-error @+1 {{@__nv_exp is declared as !llvm.func<f32 (f32)>, but pgpu's @__pgpu_math_exp is !llvm.func<f64 (f64)>}}
      %e = llvm.call @__nv_exp(%x) : (f32) -> f32
      llvm.return %e : f32
    }
  }
}
