// pgpu-define-device-math{library=ocml} defines the OCML functions that
// convert-gpu-to-rocdl declares with pgpu's device math library
// (__ocml_<name>_f64 is our <name>, __ocml_<name>_f32 our <name>f), so no
// ROCm device library is linked; one it lacks is an error at its use.
// RUN: pgpu-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-rocdl{chipset=gfx942}),pgpu-define-device-math{library=ocml})' | FileCheck %s --implicit-check-not=__ocml_
// The code object links nothing: every call is defined.
// RUN: pgpu-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-rocdl{chipset=gfx942}),pgpu-define-device-math{library=ocml},gpu-module-to-binary{format=isa})' | FileCheck %s --check-prefix=ISA
// An unknown library is an error.
// RUN: %expect-exit 1 pgpu-opt %s --pass-pipeline='builtin.module(pgpu-define-device-math{library=rocm})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: option 'library' expects libdevice or ocml, not 'rocm'

// CHECK-LABEL: gpu.module @math
// CHECK-DAG: llvm.func internal @__pgpu_math_fmod(
// CHECK-DAG: llvm.func internal @__pgpu_math_fmodf(
// CHECK-DAG: llvm.func internal @__pgpu_math_pow(
// CHECK-LABEL: llvm.func @math(
// CHECK: llvm.call @__pgpu_math_fmod(%{{.+}}, %{{.+}}) : (f64, f64) -> f64
// CHECK: llvm.call @__pgpu_math_fmodf(%{{.+}}, %{{.+}}) : (f32, f32) -> f32
// CHECK: llvm.call @__pgpu_math_pow(%{{.+}}, %{{.+}}) : (f64, f64) -> f64

// ISA-LABEL: math:
// ISA-NOT: __ocml

module attributes {gpu.container_module} {
  gpu.module @math [#rocdl.target<chip = "gfx942">] {
    gpu.func @math(%out: memref<?xf64>, %outf: memref<?xf32>, %x: f64, %y: f64, %a: f32, %b: f32) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %r = arith.remf %x, %y : f64
      %rf = arith.remf %a, %b : f32
      %p = math.powf %r, %y : f64
      memref.store %p, %out[%c0] : memref<?xf64>
      memref.store %rf, %outf[%c1] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @missing [#rocdl.target<chip = "gfx942">] {
    gpu.func @tanh(%out: memref<?xf32>, %a: f32) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @+1 {{@__ocml_tanh_f32 (OCML) has no definition in pgpu's device math library; the amdgpu target does not link ROCm's device libraries, so this operation cannot run on the GPU}}
      %t = math.tanh %a : f32
      memref.store %t, %out[%c0] : memref<?xf32>
      gpu.return
    }
  }
}
