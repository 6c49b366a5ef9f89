// memref.extract_aligned_pointer_as_index: every allocation has a synthetic,
// 64-byte-aligned base address, the same for every view of it, and the
// byte ranges of two allocations never overlap; base + (offset + linear
// index) * element bytes (the offset from memref.extract_strided_metadata)
// is one integer per element, whichever view reaches it.
// RUN: pgpu run --interpret %s | FileCheck %s

// The address of element [%i, %j] of a rank-2 view of f32.
func.func @address2(%m: memref<?x?xf32, strided<[?, ?], offset: ?>>, %i: index, %j: index) -> index {
  %c4 = arith.constant 4 : index
  %aligned = memref.extract_aligned_pointer_as_index %m : memref<?x?xf32, strided<[?, ?], offset: ?>> -> index
  %base, %offset, %sizes:2, %strides:2 = memref.extract_strided_metadata %m : memref<?x?xf32, strided<[?, ?], offset: ?>> -> memref<f32>, index, index, index, index, index
  %di = arith.muli %i, %strides#0 : index
  %dj = arith.muli %j, %strides#1 : index
  %linear = arith.addi %di, %dj : index
  %element = arith.addi %offset, %linear : index
  %bytes = arith.muli %element, %c4 : index
  %address = arith.addi %aligned, %bytes : index
  return %address : index
}

// CHECK-LABEL: views
// CHECK-NEXT: same base 1 1 1 1
// CHECK-NEXT: aligned 1 1
// CHECK-NEXT: other allocation 0
// CHECK-NEXT: disjoint 1
// CHECK-NEXT: same element 1 1 1
// CHECK-NEXT: next element 4
func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %a = memref.alloc() : memref<4x8xf32>
  %b = memref.alloc() : memref<16xi64>
  // Views of %a: a subview (offset 1 * 8 + 2 = 10), a subview of it (offset
  // 10 + 8 + 1 = 19), a reinterpret_cast (offset 3), a cast.
  %v = memref.subview %a[1, 2] [2, 4] [1, 1] : memref<4x8xf32> to memref<2x4xf32, strided<[8, 1], offset: 10>>
  %w = memref.subview %v[1, 1] [1, 3] [1, 1] : memref<2x4xf32, strided<[8, 1], offset: 10>> to memref<1x3xf32, strided<[8, 1], offset: 19>>
  %r = memref.reinterpret_cast %a to offset: [3], sizes: [29], strides: [1] : memref<4x8xf32> to memref<29xf32, strided<[1], offset: 3>>
  %d = memref.cast %a : memref<4x8xf32> to memref<?x?xf32>
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4x8xf32> -> index
  %pv = memref.extract_aligned_pointer_as_index %v : memref<2x4xf32, strided<[8, 1], offset: 10>> -> index
  %pw = memref.extract_aligned_pointer_as_index %w : memref<1x3xf32, strided<[8, 1], offset: 19>> -> index
  %pr = memref.extract_aligned_pointer_as_index %r : memref<29xf32, strided<[1], offset: 3>> -> index
  %pd = memref.extract_aligned_pointer_as_index %d : memref<?x?xf32> -> index
  %pb = memref.extract_aligned_pointer_as_index %b : memref<16xi64> -> index
  pgpu.printf "views\n"
  %same_v = arith.cmpi eq, %pa, %pv : index
  %same_w = arith.cmpi eq, %pa, %pw : index
  %same_r = arith.cmpi eq, %pa, %pr : index
  %same_d = arith.cmpi eq, %pa, %pd : index
  %same_v_i32 = arith.extui %same_v : i1 to i32
  %same_w_i32 = arith.extui %same_w : i1 to i32
  %same_r_i32 = arith.extui %same_r : i1 to i32
  %same_d_i32 = arith.extui %same_d : i1 to i32
  pgpu.printf "same base %d %d %d %d\n"(%same_v_i32, %same_w_i32, %same_r_i32, %same_d_i32) : i32, i32, i32, i32
  %rem_a = arith.remui %pa, %c64 : index
  %rem_b = arith.remui %pb, %c64 : index
  %aligned_a = arith.cmpi eq, %rem_a, %c0 : index
  %aligned_b = arith.cmpi eq, %rem_b, %c0 : index
  %aligned_a_i32 = arith.extui %aligned_a : i1 to i32
  %aligned_b_i32 = arith.extui %aligned_b : i1 to i32
  pgpu.printf "aligned %d %d\n"(%aligned_a_i32, %aligned_b_i32) : i32, i32
  %same_b = arith.cmpi eq, %pa, %pb : index
  %same_b_i32 = arith.extui %same_b : i1 to i32
  pgpu.printf "other allocation %d\n"(%same_b_i32) : i32
  // %a's 128 bytes end before %b starts or %b's 128 bytes before %a.
  %c128 = arith.constant 128 : index
  %end_a = arith.addi %pa, %c128 : index
  %end_b = arith.addi %pb, %c128 : index
  %a_first = arith.cmpi ule, %end_a, %pb : index
  %b_first = arith.cmpi ule, %end_b, %pa : index
  %disjoint = arith.ori %a_first, %b_first : i1
  %disjoint_i32 = arith.extui %disjoint : i1 to i32
  pgpu.printf "disjoint %d\n"(%disjoint_i32) : i32
  // Element a[2][4]: v[1][2], w[0][1], r[17] (3 + 17 = 20 = 2 * 8 + 4).
  %av = memref.cast %a : memref<4x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %vv = memref.cast %v : memref<2x4xf32, strided<[8, 1], offset: 10>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %wv = memref.cast %w : memref<1x3xf32, strided<[8, 1], offset: 19>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %c4 = arith.constant 4 : index
  %at_a = func.call @address2(%av, %c2, %c4) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, index, index) -> index
  %at_v = func.call @address2(%vv, %c1, %c2) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, index, index) -> index
  %at_w = func.call @address2(%wv, %c0, %c1) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, index, index) -> index
  %rbase, %roffset, %rsize, %rstride = memref.extract_strided_metadata %r : memref<29xf32, strided<[1], offset: 3>> -> memref<f32>, index, index, index
  %c17 = arith.constant 17 : index
  %r_element = arith.addi %roffset, %c17 : index
  %r_bytes = arith.muli %r_element, %c4 : index
  %at_r = arith.addi %pr, %r_bytes : index
  %eq_v = arith.cmpi eq, %at_a, %at_v : index
  %eq_w = arith.cmpi eq, %at_a, %at_w : index
  %eq_r = arith.cmpi eq, %at_a, %at_r : index
  %eq_v_i32 = arith.extui %eq_v : i1 to i32
  %eq_w_i32 = arith.extui %eq_w : i1 to i32
  %eq_r_i32 = arith.extui %eq_r : i1 to i32
  pgpu.printf "same element %d %d %d\n"(%eq_v_i32, %eq_w_i32, %eq_r_i32) : i32, i32, i32
  // The next element of w's row is the next f32 of a's row.
  %at_w2 = func.call @address2(%wv, %c0, %c2) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, index, index) -> index
  %step = arith.subi %at_w2, %at_a : index
  pgpu.printf "next element %d\n"(%step) : index
  memref.dealloc %a : memref<4x8xf32>
  memref.dealloc %b : memref<16xi64>
  %z = arith.constant 0 : i32
  return %z : i32
}
