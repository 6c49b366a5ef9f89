// `#pragma pgpu speculate` on a counted `for` loop: a pgpu.spec.loop over
// the index range with the clauses as attributes; a scalar declared before
// the loop and assigned in it lives in a cell during the loop (speculative
// accesses after pgpu-classify-speculation), and its value after the loop
// is the cell's; a local array of the body is allocated in the body.
// RUN: pgpu emit --stage pgpu %s | FileCheck %s
// RUN: pgpu run --interpret %s | FileCheck %s --check-prefix=OUT
// RUN: sed 's/^#pragma pgpu speculate.*$//' %s > %t.seq.c
// RUN: pgpu run --interpret %t.seq.c | FileCheck %s --check-prefix=OUT
// RUN: pgpu run --interpret --pgpu-remark-speculation %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// CHECK-LABEL: func.func @main
// CHECK: %[[LAST:.*]] = memref.alloca() : memref<i32>
// CHECK: %[[ERRORS:.*]] = memref.alloca() : memref<i32>
// CHECK: memref.store %{{.*}}, %[[ERRORS]][] : memref<i32>
// CHECK: memref.store %{{.*}}, %[[LAST]][] : memref<i32>
// CHECK: pgpu.spec.loop %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} window(256) warp(32) {
// CHECK: memref.alloca() : memref<2xi32>
// CHECK: pgpu.spec.load %[[ERRORS]][] : memref<i32>
// CHECK: pgpu.spec.store %{{.*}}, %[[ERRORS]][] : memref<i32>
// CHECK: pgpu.spec.store %{{.*}}, %[[LAST]][] : memref<i32>
// CHECK: }
// CHECK: memref.load %[[ERRORS]][] : memref<i32>
// CHECK: memref.load %[[LAST]][] : memref<i32>
// OUT: errors 3 last 98 total 4950
int values[100];
int flags[100];

int main() {
  int errors = 0;
  int last = -1;
  for (int i = 0; i < 100; i++) flags[i] = i % 33 == 32;
#pragma pgpu speculate window(256) warp(32)
  for (int i = 0; i < 100; i++) {
    int pair[2];
    pair[0] = i;
    pair[1] = i * 2;
    values[i] = pair[0] + pair[1] - i * 2;
    if (flags[i]) {
      errors = errors + 1;
      last = i;
    }
  }
  int total = 0;
  for (int i = 0; i < 100; i++) total += values[i];
  printf("errors %d last %d total %d\n", errors, last, total);
  return 0;
}
// The remarks (kept after the code, so that their line numbers hold):
// REMARK-DAG: pragma.c:35:5: remark: direct access: memory of the iteration
// REMARK-DAG: pragma.c:36:5: remark: direct access: memory of the iteration
// REMARK-DAG: pragma.c:37:17: remark: direct access: memory of the iteration
// REMARK-DAG: pragma.c:37:27: remark: direct access: memory of the iteration
// REMARK-DAG: pragma.c:37:5: remark: direct access: subscript a * i + c: one element per iteration, no overlap
// REMARK-DAG: pragma.c:38:9: remark: direct access: read-only in the loop
// REMARK-DAG: pragma.c:39:16: remark: speculative access: a scalar the loop assigns (one cell for all iterations)
// REMARK-DAG: pragma.c:39:7: remark: speculative access: a scalar the loop assigns (one cell for all iterations)
// REMARK-DAG: pragma.c:40:7: remark: speculative access: a scalar the loop assigns (one cell for all iterations)
