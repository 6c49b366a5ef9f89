// The <math.h> builtins of the shared C subset (docs/frontend-ir.md): each
// is one upstream `math` op on f64, or on f32 for the `f` forms; the
// arguments convert as in a call of a prototyped C function (int to
// double, float promoted to double, double narrowed for the `f` forms).
// No #include is needed; a prototype with the builtin's C signature (what
// <math.h> would say) is accepted.
// RUN: pgpu emit %s | FileCheck %s

double sqrt(double);
float powf(float, float);

double all(double x, double y) {
  return sqrt(x) + exp(x) + log(x) + fabs(x) + pow(x, y) + sin(x) + cos(x) + floor(x);
}

float all_float(float x, float y) {
  return sqrtf(x) + expf(x) + logf(x) + fabsf(x) + powf(x, y) + sinf(x) + cosf(x) + floorf(x);
}

double conversions(int n, float f, long l, unsigned u) {
  double a = sqrt(n);
  double b = exp(f);
  double c = pow(l, u);
  float d = sinf(a);
  int e = floor(b);
  return a + b + c + d + e;
}

int main() {
  printf("%f %f %f\n", all(2.0, 3.0), all_float(2.0f, 3.0f), conversions(4, 0.5f, 2, 3u));
  return 0;
}

// CHECK-LABEL: func.func @all(
// CHECK-SAME: %[[X:.*]]: f64, %[[Y:.*]]: f64) -> f64
// CHECK: %{{.*}} = math.sqrt %[[X]] : f64
// CHECK: %{{.*}} = math.exp %[[X]] : f64
// CHECK: %{{.*}} = math.log %[[X]] : f64
// CHECK: %{{.*}} = math.absf %[[X]] : f64
// CHECK: %{{.*}} = math.powf %[[X]], %[[Y]] : f64
// CHECK: %{{.*}} = math.sin %[[X]] : f64
// CHECK: %{{.*}} = math.cos %[[X]] : f64
// CHECK: %{{.*}} = math.floor %[[X]] : f64

// CHECK-LABEL: func.func @all_float(
// CHECK-SAME: %[[X:.*]]: f32, %[[Y:.*]]: f32) -> f32
// CHECK: %{{.*}} = math.sqrt %[[X]] : f32
// CHECK: %{{.*}} = math.exp %[[X]] : f32
// CHECK: %{{.*}} = math.log %[[X]] : f32
// CHECK: %{{.*}} = math.absf %[[X]] : f32
// CHECK: %{{.*}} = math.powf %[[X]], %[[Y]] : f32
// CHECK: %{{.*}} = math.sin %[[X]] : f32
// CHECK: %{{.*}} = math.cos %[[X]] : f32
// CHECK: %{{.*}} = math.floor %[[X]] : f32

// CHECK-LABEL: func.func @conversions(
// CHECK-SAME: %[[N:.*]]: i32, %[[F:.*]]: f32, %[[L:.*]]: i64, %[[U:.*]]: i32) -> f64
// CHECK: %[[ND:.*]] = arith.sitofp %[[N]] : i32 to f64
// CHECK-NEXT: %[[A:.*]] = math.sqrt %[[ND]] : f64
// CHECK-NEXT: %[[FD:.*]] = arith.extf %[[F]] : f32 to f64
// CHECK-NEXT: %[[B:.*]] = math.exp %[[FD]] : f64
// CHECK-NEXT: %[[LD:.*]] = arith.sitofp %[[L]] : i64 to f64
// CHECK-NEXT: %[[UD:.*]] = arith.uitofp %[[U]] : i32 to f64
// CHECK-NEXT: %{{.*}} = math.powf %[[LD]], %[[UD]] : f64
// CHECK-NEXT: %[[AF:.*]] = arith.truncf %[[A]] : f64 to f32
// CHECK-NEXT: %{{.*}} = math.sin %[[AF]] : f32
// CHECK-NEXT: %[[FL:.*]] = math.floor %[[B]] : f64
// CHECK-NEXT: %{{.*}} = arith.fptosi %[[FL]] : f64 to i32

// Each op carries the location of its call.
// RUN: pgpu emit --debug-info %s | FileCheck %s --check-prefix=LOC
// LOC-LABEL: func.func @all(
// LOC: math.sqrt %{{.*}} : f64 loc(#[[SQRT:loc[0-9]+]])
// LOC: math.powf %{{.*}}, %{{.*}} : f64 loc(#[[POW:loc[0-9]+]])
// LOC-DAG: #[[SQRT]] = loc("{{.*}}math.c":13:10)
// LOC-DAG: #[[POW]] = loc("{{.*}}math.c":13:48)

// The native path turns them into LLVM intrinsics (libm calls where the
// target has no instruction).
// RUN: pgpu emit --stage llvm %s | FileCheck %s --check-prefix=LLVM
// LLVM-LABEL: define {{.*}}double @all(
// LLVM: call double @llvm.sqrt.f64(
// LLVM: call double @llvm.exp.f64(
// LLVM: call double @llvm.log.f64(
// LLVM: call double @llvm.fabs.f64(
// LLVM: call double @llvm.pow.f64(
// LLVM: call double @llvm.sin.f64(
// LLVM: call double @llvm.cos.f64(
// LLVM: call double @llvm.floor.f64(
// LLVM-LABEL: define {{.*}}float @all_float(
// LLVM: call float @llvm.sqrt.f32(
// LLVM: call float @llvm.pow.f32(
// LLVM: call float @llvm.floor.f32(
