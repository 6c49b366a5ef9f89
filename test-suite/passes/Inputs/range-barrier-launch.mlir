// A block kernel as pgpu-offload-kernels leaves it: one block of %n
// threads that first calls @pgpu_block_enter and then a recursive
// block-group function whose range barriers call @pgpu_range_barrier
// (pgpu-define-range-barrier.mlir compiles it to PTX).
module attributes {gpu.container_module} {
  func.func private @pgpu_block_enter()
  func.func private @pgpu_range_barrier(index, index, index)
  // The threads of [first, first + count) halve their range down to single
  // threads, then each level's range synchronizes and its right half adds
  // the left half's last element: an inclusive prefix sum.
  func.func private @scan(%t: index, %first: index, %count: index, %slot: index, %a: memref<?xi32>) attributes {pgpu.block_group} {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %more = arith.cmpi ugt, %count, %c1 : index
    scf.if %more {
      %left = arith.divui %count, %c2 : index
      %right = arith.subi %count, %left : index
      %split = arith.addi %first, %left : index
      %even = arith.muli %split, %c2 : index
      %in_left = arith.cmpi ult, %t, %split : index
      scf.if %in_left {
        func.call @scan(%t, %first, %left, %even, %a) : (index, index, index, index, memref<?xi32>) -> ()
      } else {
        %odd = arith.addi %even, %c1 : index
        func.call @scan(%t, %split, %right, %odd, %a) : (index, index, index, index, memref<?xi32>) -> ()
      }
      func.call @pgpu_range_barrier(%first, %count, %slot) : (index, index, index) -> ()
      %last = arith.subi %split, %c1 : index
      %carry = memref.load %a[%last] : memref<?xi32>
      func.call @pgpu_range_barrier(%first, %count, %slot) : (index, index, index) -> ()
      %in_right = arith.cmpi uge, %t, %split : index
      scf.if %in_right {
        %x = memref.load %a[%t] : memref<?xi32>
        %y = arith.addi %x, %carry : i32
        memref.store %y, %a[%t] : memref<?xi32>
      }
    }
    return
  }
  func.func @prefix_sums(%a: memref<?xi32>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
      func.call @pgpu_block_enter() : () -> ()
      %top = arith.muli %n, %c2 : index
      func.call @scan(%tx, %c0, %n, %top, %a) : (index, index, index, index, memref<?xi32>) -> ()
      func.call @pgpu_range_barrier(%c0, %n, %top) : (index, index, index) -> ()
      gpu.terminator
    }
    return
  }
}
