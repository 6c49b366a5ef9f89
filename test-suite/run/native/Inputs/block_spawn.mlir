// A block spawn (`pgpu.spawn block`: one thread block whose threads
// synchronize in ranges) that calls a recursive block-group function,
// versioned on `pgpu.block_capacity` as pgpu-lower-groups versions Fork
// group calls: the block kernel where the threads fit one block (the cuda
// device, n <= 1024), else the same computation as ordinary spawns and a
// host loop (the cpu device, whose capacity is 0). Each of `rounds` rounds
// sets a[t] = bias[t % 4] + t % 3 + round, takes the inclusive prefix sum
// of a and stores it reversed into out; the host prints the total, both
// ends of out and a weighted checksum. run/native/block-spawn.test runs it
// on the CPU device, gpu/block-spawn.test on the GPU.
//
// @scan is the prefix sum of a[first .. first+count-1] by the threads of
// that range, split in halves at `split` = first + count/2: each half
// scans itself recursively (the left on slot 2*split, the right on
// 2*split+1, as pgpu-block-groups names the slots of a split), the range
// synchronizes, every thread reads the left half's total, the range
// synchronizes again (nobody writes before all have read) and the right
// half adds it. The two halves' barriers run at the same time on their
// own slots; the whole block's range uses slot 2*n.

memref.global "private" constant @bias : memref<4xi32> = dense<[1, 2, 3, 4]>

func.func private @scan(%t: index, %first: index, %count: index, %slot: index,
                        %a: memref<?xi32>) attributes {pgpu.block_group} {
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
      func.call @scan(%t, %first, %left, %even, %a)
          : (index, index, index, index, memref<?xi32>) -> ()
    } else {
      %odd = arith.addi %even, %c1 : index
      func.call @scan(%t, %split, %right, %odd, %a)
          : (index, index, index, index, memref<?xi32>) -> ()
    }
    pgpu.range_barrier %first, %count, %slot
    %last = arith.subi %split, %c1 : index
    %carry = memref.load %a[%last] : memref<?xi32>
    pgpu.range_barrier %first, %count, %slot
    %in_right = arith.cmpi uge, %t, %split : index
    scf.if %in_right {
      %x = memref.load %a[%t] : memref<?xi32>
      %y = arith.addi %x, %carry : i32
      memref.store %y, %a[%t] : memref<?xi32>
    }
  }
  return
}

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c1_i32 = arith.constant 1 : i32
  %c2_i32 = arith.constant 2 : i32
  %c200_i32 = arith.constant 200 : i32
  %c0_i32 = arith.constant 0 : i32
  %p = pgpu.argi %c0_i32 default %c200_i32 : i32, i32
  %q = pgpu.argi %c1_i32 default %c2_i32 : i32, i32
  %n = arith.index_cast %p : i32 to index
  %rounds = arith.index_cast %q : i32 to index
  %a = memref.alloc(%n) : memref<?xi32>
  %out = memref.alloc(%n) : memref<?xi32>
  %last = arith.subi %n, %c1 : index
  %max = pgpu.block_capacity : index
  %fits = arith.cmpi ule, %n, %max : index
  scf.for %round = %c0 to %rounds step %c1 {
    %r = arith.index_cast %round : index to i32
    scf.if %fits {
      pgpu.spawn block %n {
        %t = pgpu.rank : index
        %size = pgpu.size : index
        %bias = memref.get_global @bias : memref<4xi32>
        %k = arith.remui %t, %c4 : index
        %b = memref.load %bias[%k] : memref<4xi32>
        %m = arith.remui %t, %c3 : index
        %mi = arith.index_cast %m : index to i32
        %v0 = arith.addi %b, %mi : i32
        %v = arith.addi %v0, %r : i32
        memref.store %v, %a[%t] : memref<?xi32>
        %top = arith.muli %size, %c2 : index
        func.call @scan(%t, %c0, %size, %top, %a)
            : (index, index, index, index, memref<?xi32>) -> ()
        pgpu.range_barrier %c0, %size, %top
        %end = arith.subi %size, %c1 : index
        %mirror = arith.subi %end, %t : index
        %w = memref.load %a[%mirror] : memref<?xi32>
        memref.store %w, %out[%t] : memref<?xi32>
      }
    } else {
      pgpu.spawn %n {
        %t = pgpu.rank : index
        %bias = memref.get_global @bias : memref<4xi32>
        %k = arith.remui %t, %c4 : index
        %b = memref.load %bias[%k] : memref<4xi32>
        %m = arith.remui %t, %c3 : index
        %mi = arith.index_cast %m : index to i32
        %v0 = arith.addi %b, %mi : i32
        %v = arith.addi %v0, %r : i32
        memref.store %v, %a[%t] : memref<?xi32>
      }
      %first = memref.load %a[%c0] : memref<?xi32>
      %total = scf.for %i = %c1 to %n step %c1 iter_args(%sum = %first) -> (i32) {
        %x = memref.load %a[%i] : memref<?xi32>
        %y = arith.addi %sum, %x : i32
        memref.store %y, %a[%i] : memref<?xi32>
        scf.yield %y : i32
      }
      pgpu.spawn %n {
        %t = pgpu.rank : index
        %mirror = arith.subi %last, %t : index
        %w = memref.load %a[%mirror] : memref<?xi32>
        memref.store %w, %out[%t] : memref<?xi32>
      }
    }
    %total = memref.load %a[%last] : memref<?xi32>
    %head = memref.load %out[%c0] : memref<?xi32>
    %tail = memref.load %out[%last] : memref<?xi32>
    %check = scf.for %i = %c0 to %n step %c1 iter_args(%sum = %c0_i32) -> (i32) {
      %x = memref.load %out[%i] : memref<?xi32>
      %w = arith.remui %i, %c7 : index
      %wi = arith.index_cast %w : index to i32
      %weight = arith.addi %wi, %c1_i32 : i32
      %y = arith.muli %x, %weight : i32
      %z = arith.addi %sum, %y : i32
      scf.yield %z : i32
    }
    pgpu.printf "round %d: total %d, out %d .. %d, checksum %d\n"(%r, %total, %head, %tail, %check) : i32, i32, i32, i32, i32
  }
  memref.dealloc %a : memref<?xi32>
  memref.dealloc %out : memref<?xi32>
  return %c0_i32 : i32
}
