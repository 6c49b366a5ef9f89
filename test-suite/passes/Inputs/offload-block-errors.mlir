// Block spawns pgpu-offload-kernels cannot launch
// (pgpu-offload-kernels-block.mlir).

// Host code in the body (the block-group lowering never puts any there).
func.func @prints(%n: index) {
  pgpu.spawn block %n {
    %r = pgpu.rank : index
    %x = arith.index_cast %r : index to i32
    // expected-error @+1 {{'pgpu.printf' cannot run in a block kernel (the body of a `pgpu.spawn block`)}}
    pgpu.printf "%d\n"(%x) : i32
  }
  return
}

// -----

// A called function that has no body.
func.func private @elsewhere(index)

func.func @calls_a_declaration(%n: index) {
  pgpu.spawn block %n {
    %r = pgpu.rank : index
    // expected-error @+1 {{calls @elsewhere, which is not a function of the module with a body: a block kernel (`pgpu.spawn block`) calls device code only}}
    func.call @elsewhere(%r) : (index) -> ()
  }
  return
}

// -----

// A block-group function that reads a global itself instead of taking it
// as an argument: the device would read the kernel module's copy.
memref.global "private" @counts : memref<8xi32>

func.func private @reads_global(%t: index, %first: index, %count: index) attributes {pgpu.block_group} {
  // expected-error @+1 {{'memref.get_global' takes the address of a global: functions of block kernels get globals as arguments}}
  %counts = memref.get_global @counts : memref<8xi32>
  %x = memref.load %counts[%t] : memref<8xi32>
  pgpu.range_barrier %first, %count, %count
  return
}

func.func @global_in_group(%n: index) {
  %c0 = arith.constant 0 : index
  pgpu.spawn block %n {
    %r = pgpu.rank : index
    func.call @reads_global(%r, %c0, %n) : (index, index, index) -> ()
  }
  return
}

// -----

// Host code in a function the body calls.
func.func private @reports(%t: index) {
  %x = arith.index_cast %t : index to i32
  // expected-error @+1 {{'pgpu.printf' cannot run in a function of a block kernel (device code)}}
  pgpu.printf "%d\n"(%x) : i32
  return
}

func.func @prints_in_callee(%n: index) {
  pgpu.spawn block %n {
    %r = pgpu.rank : index
    func.call @reports(%r) : (index) -> ()
  }
  return
}

// -----

// A function of a block kernel that host code calls too.
func.func private @shared(%a: memref<?xi32>, %i: index) {
  %x = memref.load %a[%i] : memref<?xi32>
  memref.store %x, %a[%i] : memref<?xi32>
  return
}

func.func @host_and_device(%n: index, %a: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  pgpu.spawn block %n {
    %r = pgpu.rank : index
    func.call @shared(%a, %r) : (memref<?xi32>, index) -> ()
  }
  // expected-error @+1 {{calls @shared, which a block kernel (`pgpu.spawn block`) calls too: the functions of block kernels run on the device only (give block kernels a copy marked `pgpu.block_group`)}}
  func.call @shared(%a, %c0) : (memref<?xi32>, index) -> ()
  return
}
