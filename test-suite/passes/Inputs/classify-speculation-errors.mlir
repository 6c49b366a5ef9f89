// Loops that cannot be speculated: output, and calls of functions that
// touch memory. A call of a function that only computes is fine.
func.func @pure(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}
func.func @prints(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.spec.loop %i = %c0 to %n step %c1 {
    %one = arith.constant 1.0 : f64
    %y = func.call @pure(%one) : (f64) -> f64
    // expected-error @below {{cannot be speculated: it prints (output cannot be re-executed or reordered)}}
    pgpu.printf "%d\n"(%i) : index
  }
  return
}

// -----

memref.global "private" @G : memref<8xi32> = dense<0>
func.func @writes(%v: i32) {
  %g = memref.get_global @G : memref<8xi32>
  %c0 = arith.constant 0 : index
  memref.store %v, %g[%c0] : memref<8xi32>
  return
}
func.func @calls(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pgpu.spec.loop %i = %c0 to %n step %c1 {
    %v = arith.index_cast %i : index to i32
    // expected-error @below {{cannot be speculated: it calls `writes`, which reads or writes memory or has other effects}}
    func.call @writes(%v) : (i32) -> ()
  }
  return
}
