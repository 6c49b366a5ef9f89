// Values that need no saving must be removed by pgpu-save-values first.
func.func @unsaved(%n: index) {
  pgpu.spawn %n {
    %s = pgpu.superstep -> (index) {
      // expected-error @+1 {{this value crosses supersteps but need not be saved: run pgpu-save-values first}}
      %r = pgpu.rank : index
      pgpu.yield %r : index
    }
    pgpu.superstep {
      %x = arith.addi %s, %s : index
    }
  }
  return
}

// -----

// Saved values are loaded only once the old rank is known.
func.func @early_use(%n: index, %a: memref<?xi32>) {
  pgpu.spawn %n {
    %s = pgpu.superstep -> (i32) {
      %r = pgpu.rank : index
      %x = memref.load %a[%r] : memref<?xi32>
      pgpu.yield %x : i32
    }
    pgpu.superstep rank_reassigned {
      %r = pgpu.rank : index
      // expected-error @+1 {{a value saved before barrier(RANK_REASSIGNED) is used before thread.oldrank is set}}
      %y = arith.addi %s, %s : i32
      pgpu.set_oldrank %r
      memref.store %y, %a[%r] : memref<?xi32>
    }
  }
  return
}
