// pgpu-define-device-math replaces the libdevice functions that
// convert-gpu-to-nvvm declares for math ops by pgpu's own definitions.
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm),pgpu-define-device-math)' | FileCheck %s --implicit-check-not=__nv_
// Running it again changes nothing.
// RUN: pgpu-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm),pgpu-define-device-math)' -o %t.once
// RUN: pgpu-opt %t.once --split-input-file --pgpu-define-device-math -o %t.twice
// RUN: diff %t.once %t.twice
// Libdevice functions without a definition of ours, and declarations of
// the wrong type, are errors at the op that needed them.
// RUN: pgpu-opt %S/Inputs/define-device-math-errors.mlir --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm),pgpu-define-device-math)'

// Every f64 op kind: the exact ones become one-intrinsic functions, the
// others functions of the library (exp and pow share @__pgpu_math_exp_dd,
// log and pow @__pgpu_math_log_dd; sin and cos @__pgpu_math_sin_cos,
// which reads the bits of 2/pi from a global).
// CHECK-LABEL: gpu.module @f64_ops
// CHECK-LABEL: llvm.func internal @__pgpu_math_exp_dd(%{{.*}}: f64, %{{.*}}: f64) -> f64 {
// CHECK: llvm.intr.roundeven
// CHECK-LABEL: llvm.func internal @__pgpu_math_exp(%{{.*}}: f64) -> f64 {
// CHECK: llvm.call @__pgpu_math_exp_dd(
// CHECK-LABEL: llvm.func internal @__pgpu_math_log_dd(%{{.*}}: f64) -> !llvm.struct<(f64, f64)> {
// CHECK-LABEL: llvm.func internal @__pgpu_math_log(%{{.*}}: f64) -> f64 {
// CHECK: llvm.call @__pgpu_math_log_dd(
// CHECK-LABEL: llvm.func internal @__pgpu_math_pow(%{{.*}}: f64, %{{.*}}: f64) -> f64 {
// CHECK-DAG: llvm.call @__pgpu_math_log_dd(
// CHECK-DAG: llvm.call @__pgpu_math_exp_dd(
// CHECK: llvm.mlir.global internal constant @__pgpu_math_two_over_pi(dense<[0, -6703182060581546711, {{.*}}]> : tensor<20xi64>) {addr_space = 0 : i32} : !llvm.array<20 x i64>
// CHECK-LABEL: llvm.func internal @__pgpu_math_sin_cos(%{{.*}}: f64, %{{.*}}: i64) -> f64 {
// CHECK: llvm.mlir.addressof @__pgpu_math_two_over_pi
// CHECK-LABEL: llvm.func internal @__pgpu_math_sin(%{{.*}}: f64) -> f64 {
// CHECK: llvm.call @__pgpu_math_sin_cos(
// CHECK-LABEL: llvm.func internal @__pgpu_math_cos(%{{.*}}: f64) -> f64 {
// CHECK: llvm.call @__pgpu_math_sin_cos(
// CHECK-LABEL: llvm.func internal @__pgpu_math_fmod(%{{.*}}: f64, %{{.*}}: f64) -> f64 {
// CHECK: llvm.urem
// CHECK-LABEL: llvm.func internal @__pgpu_math_sqrt(%{{.*}}: f64) -> f64 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.sqrt(%{{.*}}) : (f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_fabs(%{{.*}}: f64) -> f64 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.fabs(%{{.*}}) : (f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_floor(%{{.*}}: f64) -> f64 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.floor(%{{.*}}) : (f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_ceil(%{{.*}}: f64) -> f64 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.ceil(%{{.*}}) : (f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_fma(%{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64) -> f64 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.fma(%{{.*}}, %{{.*}}, %{{.*}}) : (f64, f64, f64) -> f64
// CHECK-LABEL: llvm.func @f64_ops(
// CHECK: %[[SQRT:.+]] = llvm.call @__pgpu_math_sqrt(%[[X:.+]]) : (f64) -> f64
// CHECK-NEXT: %[[ABS:.+]] = llvm.call @__pgpu_math_fabs(%[[SQRT]]) : (f64) -> f64
// CHECK-NEXT: %[[FLOOR:.+]] = llvm.call @__pgpu_math_floor(%[[ABS]]) : (f64) -> f64
// CHECK-NEXT: %[[CEIL:.+]] = llvm.call @__pgpu_math_ceil(%[[FLOOR]]) : (f64) -> f64
// CHECK-NEXT: %[[FMA:.+]] = llvm.call @__pgpu_math_fma(%[[CEIL]], %[[X]], %[[X]]) : (f64, f64, f64) -> f64
// CHECK-NEXT: %[[EXP:.+]] = llvm.call @__pgpu_math_exp(%[[FMA]]) : (f64) -> f64
// CHECK-NEXT: %[[LOG:.+]] = llvm.call @__pgpu_math_log(%[[EXP]]) : (f64) -> f64
// CHECK-NEXT: %[[SIN:.+]] = llvm.call @__pgpu_math_sin(%[[LOG]]) : (f64) -> f64
// CHECK-NEXT: %[[COS:.+]] = llvm.call @__pgpu_math_cos(%[[SIN]]) : (f64) -> f64
// CHECK-NEXT: %[[POW:.+]] = llvm.call @__pgpu_math_pow(%[[COS]], %[[X]]) : (f64, f64) -> f64
// CHECK-NEXT: %{{.+}} = llvm.call @__pgpu_math_fmod(%[[POW]], %[[X]]) : (f64, f64) -> f64
module attributes {gpu.container_module} {
  gpu.module @f64_ops [#nvvm.target<chip = "sm_90">] {
    gpu.func @f64_ops(%p: memref<16xf64>) kernel {
      %i0 = arith.constant 0 : index
      %x = memref.load %p[%i0] : memref<16xf64>
      %sqrt = math.sqrt %x : f64
      %abs = math.absf %sqrt : f64
      %floor = math.floor %abs : f64
      %ceil = math.ceil %floor : f64
      %fma = math.fma %ceil, %x, %x : f64
      %exp = math.exp %fma : f64
      %log = math.log %exp : f64
      %sin = math.sin %log : f64
      %cos = math.cos %sin : f64
      %pow = math.powf %cos, %x : f64
      %rem = arith.remf %pow, %x : f64
      memref.store %rem, %p[%i0] : memref<16xf64>
      gpu.return
    }
  }
}

// -----

// Every f32 op kind: the exact ones in f32, the others computed in f64
// and rounded once.
// CHECK-LABEL: gpu.module @f32_ops
// CHECK-LABEL: llvm.func internal @__pgpu_math_exp(%{{.*}}: f64) -> f64 {
// CHECK-LABEL: llvm.func internal @__pgpu_math_sqrtf(%{{.*}}: f32) -> f32 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.sqrt(%{{.*}}) : (f32) -> f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_fabsf(%{{.*}}: f32) -> f32 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.fabs(%{{.*}}) : (f32) -> f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_floorf(%{{.*}}: f32) -> f32 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.floor(%{{.*}}) : (f32) -> f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_ceilf(%{{.*}}: f32) -> f32 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.ceil(%{{.*}}) : (f32) -> f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_fmaf(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32) -> f32 attributes {always_inline} {
// CHECK-NEXT: llvm.intr.fma(%{{.*}}, %{{.*}}, %{{.*}}) : (f32, f32, f32) -> f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_expf(%{{.*}}: f32) -> f32 attributes {always_inline} {
// CHECK-NEXT: %[[W:.+]] = llvm.fpext %{{.*}} : f32 to f64
// CHECK-NEXT: %[[R:.+]] = llvm.call @__pgpu_math_exp(%[[W]]) : (f64) -> f64
// CHECK-NEXT: %[[N:.+]] = llvm.fptrunc %[[R]] : f64 to f32
// CHECK-NEXT: llvm.return %[[N]] : f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_logf(
// CHECK: llvm.call @__pgpu_math_log(
// CHECK-LABEL: llvm.func internal @__pgpu_math_sinf(
// CHECK: llvm.call @__pgpu_math_sin(
// CHECK-LABEL: llvm.func internal @__pgpu_math_cosf(
// CHECK: llvm.call @__pgpu_math_cos(
// CHECK-LABEL: llvm.func internal @__pgpu_math_powf(%{{.*}}: f32, %{{.*}}: f32) -> f32 attributes {always_inline} {
// CHECK-NEXT: %[[WX:.+]] = llvm.fpext %{{.*}} : f32 to f64
// CHECK-NEXT: %[[WY:.+]] = llvm.fpext %{{.*}} : f32 to f64
// CHECK-NEXT: llvm.call @__pgpu_math_pow(%[[WX]], %[[WY]]) : (f64, f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_fmodf(
// CHECK: llvm.call @__pgpu_math_fmod(
// CHECK-LABEL: llvm.func @f32_ops(
// CHECK: %[[SQRT:.+]] = llvm.call @__pgpu_math_sqrtf(%[[X:.+]]) : (f32) -> f32
// CHECK-NEXT: %[[ABS:.+]] = llvm.call @__pgpu_math_fabsf(%[[SQRT]]) : (f32) -> f32
// CHECK-NEXT: %[[FLOOR:.+]] = llvm.call @__pgpu_math_floorf(%[[ABS]]) : (f32) -> f32
// CHECK-NEXT: %[[CEIL:.+]] = llvm.call @__pgpu_math_ceilf(%[[FLOOR]]) : (f32) -> f32
// CHECK-NEXT: %[[FMA:.+]] = llvm.call @__pgpu_math_fmaf(%[[CEIL]], %[[X]], %[[X]]) : (f32, f32, f32) -> f32
// CHECK-NEXT: %[[EXP:.+]] = llvm.call @__pgpu_math_expf(%[[FMA]]) : (f32) -> f32
// CHECK-NEXT: %[[LOG:.+]] = llvm.call @__pgpu_math_logf(%[[EXP]]) : (f32) -> f32
// CHECK-NEXT: %[[SIN:.+]] = llvm.call @__pgpu_math_sinf(%[[LOG]]) : (f32) -> f32
// CHECK-NEXT: %[[COS:.+]] = llvm.call @__pgpu_math_cosf(%[[SIN]]) : (f32) -> f32
// CHECK-NEXT: %[[POW:.+]] = llvm.call @__pgpu_math_powf(%[[COS]], %[[X]]) : (f32, f32) -> f32
// CHECK-NEXT: %{{.+}} = llvm.call @__pgpu_math_fmodf(%[[POW]], %[[X]]) : (f32, f32) -> f32
module attributes {gpu.container_module} {
  gpu.module @f32_ops [#nvvm.target<chip = "sm_90">] {
    gpu.func @f32_ops(%p: memref<16xf32>) kernel {
      %i0 = arith.constant 0 : index
      %x = memref.load %p[%i0] : memref<16xf32>
      %sqrt = math.sqrt %x : f32
      %abs = math.absf %sqrt : f32
      %floor = math.floor %abs : f32
      %ceil = math.ceil %floor : f32
      %fma = math.fma %ceil, %x, %x : f32
      %exp = math.exp %fma : f32
      %log = math.log %exp : f32
      %sin = math.sin %log : f32
      %cos = math.cos %sin : f32
      %pow = math.powf %cos, %x : f32
      %rem = arith.remf %pow, %x : f32
      memref.store %rem, %p[%i0] : memref<16xf32>
      gpu.return
    }
  }
}

// -----

// The other exact operations that convert-gpu-to-nvvm sends to libdevice.
// CHECK-LABEL: gpu.module @exact
// CHECK-LABEL: llvm.func internal @__pgpu_math_rint(
// CHECK-NEXT: llvm.intr.roundeven(%{{.*}}) : (f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_rintf(
// CHECK-NEXT: llvm.intr.roundeven(%{{.*}}) : (f32) -> f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_round(
// CHECK-NEXT: llvm.intr.round(%{{.*}}) : (f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_roundf(
// CHECK-NEXT: llvm.intr.round(%{{.*}}) : (f32) -> f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_copysign(
// CHECK-NEXT: llvm.intr.copysign(%{{.*}}, %{{.*}}) : (f64, f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_copysignf(
// CHECK-NEXT: llvm.intr.copysign(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_fmax(
// CHECK-NEXT: llvm.intr.maxnum(%{{.*}}, %{{.*}}) : (f64, f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_fmaxf(
// CHECK-NEXT: llvm.intr.maxnum(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK-LABEL: llvm.func internal @__pgpu_math_fmin(
// CHECK-NEXT: llvm.intr.minnum(%{{.*}}, %{{.*}}) : (f64, f64) -> f64
// CHECK-LABEL: llvm.func internal @__pgpu_math_fminf(
// CHECK-NEXT: llvm.intr.minnum(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK-LABEL: llvm.func @exact(
// CHECK: llvm.call @__pgpu_math_copysign(
// CHECK-NEXT: llvm.call @__pgpu_math_round(
// CHECK-NEXT: llvm.call @__pgpu_math_rint(
// CHECK-NEXT: llvm.call @__pgpu_math_fmax(
// CHECK-NEXT: llvm.call @__pgpu_math_fmin(
// CHECK: llvm.call @__pgpu_math_copysignf(
// CHECK-NEXT: llvm.call @__pgpu_math_roundf(
// CHECK-NEXT: llvm.call @__pgpu_math_rintf(
// CHECK-NEXT: llvm.call @__pgpu_math_fmaxf(
// CHECK-NEXT: llvm.call @__pgpu_math_fminf(
module attributes {gpu.container_module} {
  gpu.module @exact [#nvvm.target<chip = "sm_90">] {
    gpu.func @exact(%x: f64, %y: f32, %p: memref<2xf64>, %q: memref<2xf32>) kernel {
      %a = math.copysign %x, %x : f64
      %b = math.round %a : f64
      %c = math.roundeven %b : f64
      %d = arith.maxnumf %c, %x : f64
      %e = arith.minnumf %d, %x : f64
      %a2 = math.copysign %y, %y : f32
      %b2 = math.round %a2 : f32
      %c2 = math.roundeven %b2 : f32
      %d2 = arith.maxnumf %c2, %y : f32
      %e2 = arith.minnumf %d2, %y : f32
      %i0 = arith.constant 0 : index
      memref.store %e, %p[%i0] : memref<2xf64>
      memref.store %e2, %q[%i0] : memref<2xf32>
      gpu.return
    }
  }
}

// -----

// Only what the module needs is inserted: exp needs exp_dd, not the
// logarithm or the 2/pi table.
// CHECK-LABEL: gpu.module @only_exp
// CHECK-NOT: @__pgpu_math_log
// CHECK-NOT: @__pgpu_math_two_over_pi
// CHECK-LABEL: llvm.func internal @__pgpu_math_exp_dd(
// CHECK-NOT: @__pgpu_math_log
// CHECK-LABEL: llvm.func internal @__pgpu_math_exp(
// CHECK-NOT: @__pgpu_math_log
// CHECK-NOT: @__pgpu_math_two_over_pi
// CHECK-LABEL: llvm.func @only_exp(
// CHECK: llvm.call @__pgpu_math_exp(
module attributes {gpu.container_module} {
  gpu.module @only_exp [#nvvm.target<chip = "sm_90">] {
    gpu.func @only_exp(%x: f64, %p: memref<1xf64>) kernel {
      %e = math.exp %x : f64
      %i0 = arith.constant 0 : index
      memref.store %e, %p[%i0] : memref<1xf64>
      gpu.return
    }
  }
}

// -----

// A module without math is left alone.
// CHECK-LABEL: gpu.module @no_math
// CHECK-NOT: __pgpu_math
// CHECK-LABEL: llvm.func @no_math(
module attributes {gpu.container_module} {
  gpu.module @no_math [#nvvm.target<chip = "sm_90">] {
    gpu.func @no_math(%x: f64, %p: memref<1xf64>) kernel {
      %e = arith.addf %x, %x : f64
      %i0 = arith.constant 0 : index
      memref.store %e, %p[%i0] : memref<1xf64>
      gpu.return
    }
  }
}
