// pgpu IR to PTX through the NVPTX backend's pipeline.
// RUN: pgpu-translate --pgpu-to-ptx %s | FileCheck %s
// RUN: pgpu-translate --pgpu-to-ptx --chip=sm_80 --block-size=128 %s | FileCheck %s --check-prefix=SM80
// RUN: pgpu-translate --pgpu-to-ptx %s -o %t.ptx && FileCheck %s < %t.ptx

// One thread per rank, blocks of 256, a guard for the ragged last block.
// CHECK: .target sm_90
// CHECK: .visible .entry vector_add_kernel(
// CHECK: .maxntid 256, 1, 1
// CHECK-DAG: mov.u32 {{.*}}%ctaid.x
// CHECK-DAG: mov.u32 {{.*}}%tid.x
// CHECK: setp.{{.*}}
// CHECK-DAG: ld.global.{{[bf]}}32
// CHECK-DAG: ld.global.{{[bf]}}32
// CHECK: add.{{(rn.)?}}f32
// CHECK: st.global.{{[bf]}}32
// CHECK: ret;
// SM80: .target sm_80
// SM80: .maxntid 128, 1, 1
func.func @vector_add(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %n: index) {
  pgpu.spawn %n {
    %i = pgpu.rank : index
    %x = memref.load %a[%i] : memref<?xf32>
    %y = memref.load %b[%i] : memref<?xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %c[%i] : memref<?xf32>
  }
  return
}
