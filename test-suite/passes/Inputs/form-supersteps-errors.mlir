// Inline functions must be inlined first.
func.func @helper() attributes {pgpu.spmd_inline} {
  pgpu.barrier
  return
}
func.func @caller(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{calls an inline SPMD function: run pgpu-inline-spmd before pgpu-form-supersteps}}
    func.call @helper() : () -> ()
  }
  return
}

// -----

// Two branches of a par cannot both reassign ranks at aligned barriers.
func.func @two_reassignments(%n: index) {
  pgpu.spawn %n {
    %r = pgpu.rank : index
    pgpu.par {
      pgpu.barrier rank_reassigned
      pgpu.set_oldrank %r
      pgpu.yield
    }, {
      // expected-error @+1 {{two branches of a par reassign ranks at aligned barriers}}
      pgpu.barrier rank_reassigned
      pgpu.set_oldrank %r
      pgpu.yield
    }
  }
  return
}
