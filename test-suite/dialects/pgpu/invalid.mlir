// One case per verifier rule and per parent or type constraint of the pgpu
// ops.
// RUN: pgpu-opt %s --split-input-file --verify-diagnostics
// RUN: mlir-opt --load-dialect-plugin=%pgpu_dialect_plugin %s --split-input-file --verify-diagnostics

//===----------------------------------------------------------------------===//
// Function attributes
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'pgpu.spmd_inline' must be a unit attribute}}
func.func @spmd_inline_not_unit() attributes {pgpu.spmd_inline = 1 : i32} {
  return
}

// -----

func.func @synchronous_not_on_function() {
  // expected-error @+1 {{'pgpu.synchronous' may only mark a function}}
  %c0 = arith.constant {pgpu.synchronous} 0 : index
  return
}

//===----------------------------------------------------------------------===//
// pgpu.yield
//===----------------------------------------------------------------------===//

// -----

func.func @yield_outside_region() {
  // expected-error @+1 {{'pgpu.yield' op expects parent op to be one of 'pgpu.spawn, pgpu.superstep, pgpu.par, pgpu.seq, pgpu.farm, pgpu.require, pgpu.taskgroup, pgpu.task'}}
  pgpu.yield
}

// -----

func.func @yield_in_spawn_with_operands(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.yield' op yields (index) but the enclosing 'pgpu.spawn' has results ()}}
    pgpu.yield %n : index
  }
  return
}

// -----

func.func @yield_type_mismatch(%n: index) {
  pgpu.spawn %n {
    %v = pgpu.superstep -> (i32) {
      // expected-error @+1 {{'pgpu.yield' op yields (index) but the enclosing 'pgpu.superstep' has results (i32)}}
      pgpu.yield %n : index
    }
  }
  return
}

//===----------------------------------------------------------------------===//
// pgpu.spawn
//===----------------------------------------------------------------------===//

// -----

func.func @nested_spawn(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.spawn' op cannot be nested in another SPMD region}}
    pgpu.spawn %n {
    }
  }
  return
}

// -----

func.func @spawn_in_spmd_function(%n: index) attributes {pgpu.spmd_inline} {
  // expected-error @+1 {{'pgpu.spawn' op cannot be nested in another SPMD region}}
  pgpu.spawn %n {
  }
  return
}

// -----

func.func @spawn_mixes_supersteps(%n: index) {
  // expected-error @+1 {{'pgpu.spawn' op body must be all 'pgpu.superstep' regions or none}}
  pgpu.spawn %n {
    pgpu.superstep {
    }
    // expected-note @+1 {{this op is not in a superstep}}
    %r = pgpu.rank : index
  }
  return
}

// -----

func.func @spawn_count_not_index(%n: i32) {
  // expected-error @+1 {{'pgpu.spawn' op operand #0 must be index, but got 'i32'}}
  "pgpu.spawn"(%n) ({
    pgpu.yield
  }) : (i32) -> ()
  return
}

//===----------------------------------------------------------------------===//
// pgpu.barrier
//===----------------------------------------------------------------------===//

// -----

func.func @barrier_outside_spmd() {
  // expected-error @+1 {{'pgpu.barrier' op must be nested in an SPMD region ('pgpu.spawn', or a function marked 'pgpu.spmd_inline' or 'pgpu.synchronous')}}
  pgpu.barrier
  return
}

// -----

func.func @barrier_under_control_flow(%n: index, %c: i1) {
  pgpu.spawn %n {
    scf.if %c {
      // expected-error @+1 {{'pgpu.barrier' op must appear directly in a 'pgpu.spawn' body, a 'pgpu.par' branch, a group region ('pgpu.group.split', 'pgpu.group.fork', 'pgpu.farm') or a function marked 'pgpu.spmd_inline' or 'pgpu.synchronous'}}
      pgpu.barrier
    }
  }
  return
}

// -----

func.func @barrier_in_superstep(%n: index) {
  pgpu.spawn %n {
    pgpu.superstep {
      // expected-error @+1 {{'pgpu.barrier' op must appear directly in a 'pgpu.spawn' body}}
      pgpu.barrier
    }
  }
  return
}

// -----

func.func @barrier_in_host_code(%n: index) {
  pgpu.spawn %n {
    pgpu.require {
      // expected-error @+1 {{'pgpu.barrier' op cannot be used in host code ('pgpu.require')}}
      pgpu.barrier
    }
  }
  return
}

// -----

func.func @barrier_in_plain_function() {
  // expected-error @+1 {{'pgpu.barrier' op must be nested in an SPMD region}}
  pgpu.barrier
  return
}

// -----

func.func @rank_reassigned_without_oldrank(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.barrier' op with 'rank_reassigned' must be followed by 'pgpu.set_oldrank' before the next barrier}}
    pgpu.barrier rank_reassigned
    %r = pgpu.rank : index
    pgpu.barrier
    pgpu.set_oldrank %r
  }
  return
}

//===----------------------------------------------------------------------===//
// pgpu.superstep
//===----------------------------------------------------------------------===//

// -----

func.func @superstep_outside_spawn() {
  // expected-error @+1 {{'pgpu.superstep' op expects parent op 'pgpu.spawn'}}
  pgpu.superstep {
  }
  return
}

// -----

func.func @first_superstep_rank_reassigned(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.superstep' op the first superstep of a spawn cannot be 'rank_reassigned'}}
    pgpu.superstep rank_reassigned {
      %r = pgpu.rank : index
      pgpu.set_oldrank %r
    }
  }
  return
}

// -----

func.func @rank_reassigned_superstep_without_oldrank(%n: index) {
  pgpu.spawn %n {
    pgpu.superstep {
    }
    // expected-error @+1 {{'pgpu.superstep' op with 'rank_reassigned' must set the old rank with 'pgpu.set_oldrank'}}
    pgpu.superstep rank_reassigned {
    }
  }
  return
}

//===----------------------------------------------------------------------===//
// pgpu.par
//===----------------------------------------------------------------------===//

// -----

func.func @par_outside_spmd() {
  // expected-error @+1 {{'pgpu.par' op must be nested in an SPMD region}}
  pgpu.par {
  }
  return
}

// -----

func.func @par_under_control_flow(%n: index, %c: i1) {
  pgpu.spawn %n {
    scf.if %c {
      // expected-error @+1 {{'pgpu.par' op must appear directly in a 'pgpu.spawn' body}}
      pgpu.par {
      }
    }
  }
  return
}

// -----

func.func @par_without_branches(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.par' op needs at least one branch}}
    "pgpu.par"() : () -> ()
  }
  return
}

// -----

func.func @par_results_mismatch(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.par' op branches yield (index) in all, but the results are (index, index)}}
    %a:2 = pgpu.par -> (index, index) {
      pgpu.yield %n : index
    }, {
    }
  }
  return
}

//===----------------------------------------------------------------------===//
// Ranks and sizes
//===----------------------------------------------------------------------===//

// -----

func.func @rank_outside_spmd() {
  // expected-error @+1 {{'pgpu.rank' op must be nested in an SPMD region}}
  %r = pgpu.rank : index
  return
}

// -----

func.func @rank_in_host_code(%n: index) {
  pgpu.spawn %n {
    pgpu.require {
      // expected-error @+1 {{'pgpu.rank' op cannot be used in host code ('pgpu.require')}}
      %r = pgpu.rank : index
    }
  }
  return
}

// -----

func.func @rank_not_index(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.rank' op result #0 must be index, but got 'i32'}}
    %r = "pgpu.rank"() : () -> i32
  }
  return
}

// -----

func.func @size_outside_spmd() {
  // expected-error @+1 {{'pgpu.size' op must be nested in an SPMD region}}
  %s = pgpu.size : index
  return
}

// -----

func.func @oldrank_without_reassignment(%n: index) {
  pgpu.spawn %n {
    pgpu.barrier
    // expected-error @+1 {{'pgpu.oldrank' op is only defined after a rank reassignment ('pgpu.barrier rank_reassigned', 'pgpu.set_oldrank' or a 'pgpu.thread' primitive)}}
    %o = pgpu.oldrank : index
  }
  return
}

// -----

func.func @oldrank_before_reassignment(%n: index, %k: i32) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.oldrank' op is only defined after a rank reassignment}}
    %o = pgpu.oldrank : index
    pgpu.thread.sortby %k : i32
  }
  return
}

// -----

// An inline function that does not reassign ranks does not define oldrank
// for its caller (one that does: oldrank-after-inline-reassign.mlir).
func.func private @plain_barrier() attributes {pgpu.spmd_inline} {
  pgpu.barrier
  return
}

func.func @oldrank_after_inline_without_reassignment(%n: index) {
  pgpu.spawn %n {
    func.call @plain_barrier() : () -> ()
    // expected-error @+1 {{'pgpu.oldrank' op is only defined after a rank reassignment}}
    %o = pgpu.oldrank : index
  }
  return
}

// -----

func.func @oldrank_in_host_code(%n: index, %k: i32) {
  pgpu.spawn %n {
    pgpu.thread.sortby %k : i32
    pgpu.require {
      // expected-error @+1 {{'pgpu.oldrank' op cannot be used in host code ('pgpu.require')}}
      %o = pgpu.oldrank : index
    }
  }
  return
}

// -----

func.func @oldrank_outside_spmd() {
  // expected-error @+1 {{'pgpu.oldrank' op must be nested in an SPMD region}}
  %o = pgpu.oldrank : index
  return
}

// -----

func.func @set_oldrank_without_barrier(%n: index) {
  pgpu.spawn %n {
    %r = pgpu.rank : index
    // expected-error @+1 {{'pgpu.set_oldrank' op must follow a 'pgpu.barrier rank_reassigned' with no other barrier in between}}
    pgpu.set_oldrank %r
  }
  return
}

// -----

func.func @set_oldrank_after_plain_barrier(%n: index) {
  pgpu.spawn %n {
    pgpu.barrier rank_reassigned
    %r = pgpu.rank : index
    pgpu.set_oldrank %r
    pgpu.barrier
    // expected-error @+1 {{'pgpu.set_oldrank' op must follow a 'pgpu.barrier rank_reassigned' with no other barrier in between}}
    pgpu.set_oldrank %r
  }
  return
}

// -----

func.func @set_oldrank_outside_spmd(%r: index) {
  // expected-error @+1 {{'pgpu.set_oldrank' op must be nested in an SPMD region}}
  pgpu.set_oldrank %r
  return
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

// -----

func.func @group_rank_in_bsgp_spawn(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.group.rank' op must be nested in synchronous code ('pgpu.spawn synchronous' or a function marked 'pgpu.synchronous')}}
    %g = pgpu.group.rank : index
  }
  return
}

// -----

// Fork's async functions (`pgpu.spmd_inline`) may read the group structure
// (ops.mlir) but not change it.
func.func @group_split_in_spmd_inline_function(%c: i1) attributes {pgpu.spmd_inline} {
  // expected-error @+1 {{'pgpu.group.split' op must be nested in synchronous code}}
  pgpu.group.split %c {
    pgpu.group.merge
  }
  return
}

// -----

func.func @group_id_outside_spmd() {
  // expected-error @+1 {{'pgpu.group.id' op must be nested in an SPMD region}}
  %g = pgpu.group.id : index
  return
}

// -----

func.func @group_size_in_host_code(%p: index) {
  pgpu.spawn synchronous %p {
    pgpu.require {
      // expected-error @+1 {{'pgpu.group.size' op cannot be used in host code ('pgpu.require')}}
      %s = pgpu.group.size : index
    }
  }
  return
}

// -----

func.func @group_merge_outside_split(%p: index) {
  pgpu.spawn synchronous %p {
    pgpu.seq {
      // expected-error @+1 {{'pgpu.group.merge' op expects parent op to be one of 'pgpu.group.split, pgpu.group.fork'}}
      pgpu.group.merge
    }
  }
  return
}

// -----

func.func @group_merge_type_mismatch(%p: index, %c: i1) {
  pgpu.spawn synchronous %p {
    %v = pgpu.group.split %c -> (i32) {
      // expected-error @+1 {{'pgpu.group.merge' op yields (index) but the enclosing 'pgpu.group.split' has results (i32)}}
      pgpu.group.merge %p : index
    } else {
      %z = arith.constant 0 : i32
      pgpu.group.merge %z : i32
    }
  }
  return
}

// -----

func.func @yield_in_group_split(%p: index, %c: i1) {
  pgpu.spawn synchronous %p {
    pgpu.group.split %c {
      // expected-error @+1 {{'pgpu.yield' op expects parent op to be one of}}
      pgpu.yield
    }
  }
  return
}

// -----

func.func @group_split_results_without_else(%p: index, %c: i1) {
  pgpu.spawn synchronous %p {
    // expected-error @+1 {{'pgpu.group.split' op needs an 'else' region to produce results}}
    %v = pgpu.group.split %c -> (index) {
      pgpu.group.merge %p : index
    }
  }
  return
}

// -----

func.func @group_split_in_bsgp_spawn(%n: index, %c: i1) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.group.split' op must be nested in synchronous code}}
    pgpu.group.split %c {
    }
  }
  return
}

// -----

func.func @group_split_in_farm(%p: index, %c: i1) {
  pgpu.spawn synchronous %p {
    pgpu.farm {
      // expected-error @+1 {{'pgpu.group.split' op cannot be nested in 'pgpu.farm': the group structure is fixed there}}
      pgpu.group.split %c {
      }
    }
  }
  return
}

// -----

func.func @group_split_condition_not_i1(%p: index) {
  pgpu.spawn synchronous %p {
    // expected-error @+1 {{'pgpu.group.split' op operand #0 must be 1-bit signless integer, but got 'index'}}
    "pgpu.group.split"(%p) ({
      pgpu.group.merge
    }, {
    }) : (index) -> ()
  }
  return
}

// -----

func.func @group_fork_zero_subgroups(%p: index) {
  pgpu.spawn synchronous %p {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'pgpu.group.fork' op needs a positive subgroup count, but got 0}}
    pgpu.group.fork %c0 id %p {
    }
  }
  return
}

// -----

func.func @group_fork_in_seq(%p: index, %k: index) {
  pgpu.spawn synchronous %p {
    pgpu.seq {
      // expected-error @+1 {{'pgpu.group.fork' op cannot be nested in 'pgpu.seq': the group structure is fixed there}}
      pgpu.group.fork %k id %p {
      }
    }
  }
  return
}

// -----

func.func @group_fork_outside_spmd(%k: index) {
  // expected-error @+1 {{'pgpu.group.fork' op must be nested in an SPMD region}}
  pgpu.group.fork %k id %k {
  }
  return
}

// -----

func.func @seq_in_farm(%p: index) {
  pgpu.spawn synchronous %p {
    pgpu.farm {
      // expected-error @+1 {{'pgpu.seq' op cannot be nested in 'pgpu.farm'}}
      pgpu.seq {
      }
    }
  }
  return
}

// -----

func.func @seq_in_bsgp_spawn(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.seq' op must be nested in synchronous code}}
    pgpu.seq {
    }
  }
  return
}

// -----

func.func @farm_in_bsgp_spawn(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.farm' op must be nested in synchronous code}}
    pgpu.farm {
    }
  }
  return
}

// -----

func.func @farm_in_farm(%p: index) {
  pgpu.spawn synchronous %p {
    pgpu.farm {
      // expected-error @+1 {{'pgpu.farm' op cannot be nested in 'pgpu.farm'}}
      pgpu.farm {
      }
    }
  }
  return
}

// -----

func.func @farm_yield_mismatch(%p: index) {
  pgpu.spawn synchronous %p {
    %v = pgpu.farm -> (i32) {
      // expected-error @+1 {{'pgpu.yield' op yields () but the enclosing 'pgpu.farm' has results (i32)}}
      pgpu.yield
    }
  }
  return
}

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

// -----

func.func @thread_fork_under_control_flow(%n: index, %c: i1) {
  pgpu.spawn %n {
    scf.if %c {
      // expected-error @+1 {{'pgpu.thread.fork' op must appear directly in a 'pgpu.spawn' body}}
      %id = pgpu.thread.fork %n : index
    }
  }
  return
}

// -----

func.func @thread_fork_result_type(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.thread.fork' op failed to verify that all of {count, child} have same type}}
    %id = "pgpu.thread.fork"(%n) : (index) -> i32
  }
  return
}

// -----

func.func @thread_kill_outside_spmd(%c: i1) {
  // expected-error @+1 {{'pgpu.thread.kill' op must be nested in an SPMD region}}
  pgpu.thread.kill %c
  return
}

// -----

func.func @thread_sortby_in_host_code(%n: index, %k: i32) {
  pgpu.spawn %n {
    pgpu.require {
      // expected-error @+1 {{'pgpu.thread.sortby' op cannot be used in host code ('pgpu.require')}}
      pgpu.thread.sortby %k : i32
    }
  }
  return
}

// -----

func.func @thread_sortby_bad_key(%n: index, %m: memref<?xi32>) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.thread.sortby' op operand #0 must be signless integer or index or floating-point, but got 'memref<?xi32>'}}
    pgpu.thread.sortby %m : memref<?xi32>
  }
  return
}

// -----

func.func @thread_split_in_superstep(%n: index, %c: i1) {
  pgpu.spawn %n {
    pgpu.superstep {
      // expected-error @+1 {{'pgpu.thread.split' op ends its superstep: only collectives and thread primitives may follow it in a 'pgpu.superstep'}}
      pgpu.thread.split %c
      // expected-note @+1 {{this op follows it}}
      %r = pgpu.rank : index
    }
  }
  return
}

// -----

func.func @thread_get_outside_spmd(%r: index, %v: i32) {
  // expected-error @+1 {{'pgpu.thread.get' op must be nested in an SPMD region}}
  %x = pgpu.thread.get %r, %v : i32
  return
}

// -----

func.func @thread_get_result_type(%n: index, %v: i32) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.thread.get' op failed to verify that all of {value, result} have same type}}
    %x = "pgpu.thread.get"(%n, %v) : (index, i32) -> f32
  }
  return
}

// -----

func.func @thread_put_in_host_code(%n: index, %v: i32) {
  pgpu.spawn %n {
    pgpu.require {
      // expected-error @+1 {{'pgpu.thread.put' op cannot be used in host code ('pgpu.require')}}
      %p = pgpu.thread.put %n, %v, %v : i32
    }
  }
  return
}

// -----

func.func @thread_put_type_mismatch(%n: index, %p: i32, %v: f32) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.thread.put' op failed to verify that all of {target, value, updated} have same type}}
    %x = "pgpu.thread.put"(%n, %p, %v) : (index, i32, f32) -> f32
  }
  return
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_bitwise_on_float(%n: index, %x: f32) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.reduce' op 'and' needs an integer or index operand, but got 'f32'}}
    %r = pgpu.reduce and %x : f32
  }
  return
}

// -----

func.func @reduce_unsigned_on_float(%n: index, %x: f32) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.reduce' op 'umax' needs an integer or index operand, but got 'f32'}}
    %r = pgpu.reduce umax %x : f32
  }
  return
}

// -----

func.func @reduce_result_type(%n: index, %x: i32) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.reduce' op failed to verify that all of {value, result} have same type}}
    %r = "pgpu.reduce"(%x) <{kind = 0 : i32}> : (i32) -> i64
  }
  return
}

// -----

func.func @reduce_unknown_kind(%n: index, %x: i32) {
  pgpu.spawn %n {
    // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [add, mul, min, max, umin, umax, and, or, xor]}}
    %r = pgpu.reduce sub %x : i32
  }
  return
}

// -----

func.func @reduce_under_control_flow(%n: index, %x: i32, %c: i1) {
  pgpu.spawn %n {
    scf.if %c {
      // expected-error @+1 {{'pgpu.reduce' op must appear directly in a 'pgpu.spawn' body}}
      %r = pgpu.reduce add %x : i32
    }
  }
  return
}

// -----

func.func @reduce_outside_spmd(%x: i32) {
  // expected-error @+1 {{'pgpu.reduce' op must be nested in an SPMD region}}
  %r = pgpu.reduce add %x : i32
  return
}

// -----

func.func @scan_bitwise_on_float(%n: index, %x: f64) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.scan' op 'xor' needs an integer or index operand, but got 'f64'}}
    %s, %t = pgpu.scan xor %x : f64
  }
  return
}

// -----

func.func @scan_in_host_code(%n: index) {
  pgpu.spawn %n {
    pgpu.require {
      // expected-error @+1 {{'pgpu.scan' op cannot be used in host code ('pgpu.require')}}
      %s, %t = pgpu.scan add %n : index
    }
  }
  return
}

// -----

func.func @compact_element_type(%n: index, %x: i32, %keep: i1, %list: memref<?xf32>) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.compact' op failed to verify that source type matches the list's element type}}
    %l = "pgpu.compact"(%x, %keep, %list, %n) : (i32, i1, memref<?xf32>, index) -> index
  }
  return
}

// -----

func.func @compact_list_not_1d(%n: index, %keep: i1, %list: memref<?x?xf32>) {
  pgpu.spawn %n {
    %x = arith.constant 0.0 : f32
    // expected-error @+1 {{'list' must be 1D memref of any type values, but got 'memref<?x?xf32>'}}
    %l = pgpu.compact %x if %keep into %list at %n : memref<?x?xf32>
  }
  return
}

// -----

func.func @compact_under_control_flow(%n: index, %x: f32, %keep: i1, %list: memref<?xf32>) {
  pgpu.spawn %n {
    scf.if %keep {
      // expected-error @+1 {{'pgpu.compact' op must appear directly in a 'pgpu.spawn' body}}
      %l = pgpu.compact %x if %keep into %list at %n : memref<?xf32>
    }
  }
  return
}

// -----

func.func @split_outside_spmd(%n: index, %x: f32, %side: i1, %list: memref<?xf32>) {
  // expected-error @+1 {{'pgpu.split' op must be nested in an SPMD region}}
  %l = pgpu.split %x by %side into %list at %n : memref<?xf32>
  return
}

// -----

func.func @split_side_not_i1(%n: index, %x: f32, %list: memref<?xf32>) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.split' op operand #1 must be 1-bit signless integer, but got 'index'}}
    %l = "pgpu.split"(%x, %n, %list, %n) : (f32, index, memref<?xf32>, index) -> index
  }
  return
}

// -----

func.func @sort_idx_in_loop(%n: index, %k: i32) {
  pgpu.spawn %n {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      // expected-error @+1 {{'pgpu.sort_idx' op must appear directly in a 'pgpu.spawn' body}}
      %r = pgpu.sort_idx %k : i32
    }
  }
  return
}

// -----

func.func @multiprefix_index_count(%n: index, %v: i32, %m: memref<?xi32>) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.multiprefix' op needs 1 indices for the memref, but got 2}}
    %old = pgpu.multiprefix add %v to %m[%n, %n] : memref<?xi32>
  }
  return
}

// -----

func.func @multiprefix_or_on_float(%n: index, %v: f32, %m: memref<f32>) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.multiprefix' op 'or' needs an integer or index operand, but got 'f32'}}
    %old = pgpu.multiprefix or %v to %m[] : memref<f32>
  }
  return
}

// -----

func.func @multiprefix_element_type(%n: index, %v: i64, %m: memref<i32>) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.multiprefix' op failed to verify that value type matches the memref's element type}}
    %old = "pgpu.multiprefix"(%v, %m) <{kind = 0 : i32}> : (i64, memref<i32>) -> i32
  }
  return
}

// -----

func.func @multiprefix_outside_spmd(%v: i32, %m: memref<i32>) {
  // expected-error @+1 {{'pgpu.multiprefix' op must be nested in an SPMD region}}
  %old = pgpu.multiprefix add %v to %m[] : memref<i32>
  return
}

// -----

func.func @multiprefix_in_host_code(%n: index, %v: i32, %m: memref<i32>) {
  pgpu.spawn %n {
    pgpu.require {
      // expected-error @+1 {{'pgpu.multiprefix' op cannot be used in host code ('pgpu.require')}}
      %old = pgpu.multiprefix add %v to %m[] : memref<i32>
    }
  }
  return
}

// -----

//===----------------------------------------------------------------------===//
// List operations (host level)
//===----------------------------------------------------------------------===//

func.func @list_reduce_in_spawn(%n: index, %v: memref<?xi32>) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.list.reduce' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
    %t = pgpu.list.reduce add %v[%n] : memref<?xi32> -> i32
  }
  return
}

// -----

func.func @list_scan_in_spmd_function(%n: index, %v: memref<?xi32>) attributes {pgpu.spmd_inline} {
  // expected-error @+1 {{'pgpu.list.scan' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
  %t = pgpu.list.scan add %v, %v[%n] : memref<?xi32>, memref<?xi32> -> i32
  return
}

// -----

func.func @list_split_in_group(%p: index, %v: memref<?xi32>, %f: memref<?xi1>) {
  pgpu.spawn synchronous %p {
    pgpu.seq {
      // expected-error @+1 {{'pgpu.list.split' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
      %l = pgpu.list.split %v, %f, %v[%p] base %p : memref<?xi32>, memref<?xi1>, memref<?xi32>
    }
  }
  return
}

// -----

func.func @list_reduce_kind(%n: index, %v: memref<?xf32>) {
  // expected-error @+1 {{'pgpu.list.reduce' op 'xor' needs an integer or index operand, but got 'f32'}}
  %t = pgpu.list.reduce xor %v[%n] : memref<?xf32> -> f32
  return
}

// -----

func.func @list_scan_kind(%n: index, %v: memref<?xf64>) {
  // expected-error @+1 {{'pgpu.list.scan' op 'umax' needs an integer or index operand, but got 'f64'}}
  %t = pgpu.list.scan umax %v, %v[%n] inclusive : memref<?xf64>, memref<?xf64> -> f64
  return
}

// -----

func.func @list_reduce_result_type(%n: index, %v: memref<?xi32>) {
  // expected-error @+1 {{'pgpu.list.reduce' op result type 'i64' must be the element type of the values ('i32')}}
  %t = pgpu.list.reduce add %v[%n] : memref<?xi32> -> i64
  return
}

// -----

func.func @list_reduce_not_scalar(%n: index, %v: memref<?xvector<4xf32>>) {
  // expected-error @+1 {{'pgpu.list.reduce' op operand #0 must be 1D memref of signless integer or index or floating-point values, but got 'memref<?xvector<4xf32>>'}}
  %t = "pgpu.list.reduce"(%v, %n) <{kind = 0 : i32}> : (memref<?xvector<4xf32>>, index) -> vector<4xf32>
  return
}

// -----

func.func @list_reduce_rank(%n: index, %v: memref<4x?xi32>) {
  // expected-error @+1 {{'pgpu.list.reduce' op operand #0 must be 1D memref of signless integer or index or floating-point values, but got 'memref<4x?xi32>'}}
  %t = pgpu.list.reduce add %v[%n] : memref<4x?xi32> -> i32
  return
}

// -----

func.func @list_scan_element_types(%n: index, %v: memref<?xi32>, %s: memref<?xi64>) {
  // expected-error @+1 {{'pgpu.list.scan' op element type of the scanned list ('i64') must be the element type of the values ('i32')}}
  %t = pgpu.list.scan add %v, %s[%n] : memref<?xi32>, memref<?xi64> -> i32
  return
}

// -----

func.func @list_sort_idx_indices(%n: index, %k: memref<?xf32>, %i: memref<?xi32>) {
  // expected-error @+1 {{'pgpu.list.sort_idx' op operand #1 must be 1D memref of index values, but got 'memref<?xi32>'}}
  pgpu.list.sort_idx %k, %i[%n] : memref<?xf32>, memref<?xi32>
  return
}

// -----

func.func @list_sort_idx_in_spawn(%n: index, %k: memref<?xf32>, %i: memref<?xindex>) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.list.sort_idx' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
    pgpu.list.sort_idx %k, %i[%n] : memref<?xf32>, memref<?xindex>
  }
  return
}

// -----

func.func @list_compact_flags(%n: index, %v: memref<?xi32>, %f: memref<?xi32>) {
  // expected-error @+1 {{'pgpu.list.compact' op operand #1 must be 1D memref of 1-bit signless integer values, but got 'memref<?xi32>'}}
  %l = pgpu.list.compact %v, %f, %v[%n] base %n : memref<?xi32>, memref<?xi32>, memref<?xi32>
  return
}

// -----

func.func @list_compact_list_type(%n: index, %v: memref<?xi32>, %f: memref<?xi1>, %l: memref<?xf32>) {
  // expected-error @+1 {{'pgpu.list.compact' op element type of the list ('f32') must be the element type of the values ('i32')}}
  %len = pgpu.list.compact %v, %f, %l[%n] base %n : memref<?xi32>, memref<?xi1>, memref<?xf32>
  return
}

// -----

func.func @list_split_list_type(%n: index, %v: memref<?xi32>, %f: memref<?xi1>, %l: memref<?xi64>) {
  // expected-error @+1 {{'pgpu.list.split' op element type of the list ('i64') must be the element type of the values ('i32')}}
  %len = pgpu.list.split %v, %f, %l[%n] base %n : memref<?xi32>, memref<?xi1>, memref<?xi64>
  return
}

// -----

func.func @list_expand_parents(%n: index, %c: memref<?xi32>, %p: memref<?xi32>) {
  // expected-error @+1 {{'pgpu.list.expand' op operand #1 must be 1D memref of index values, but got 'memref<?xi32>'}}
  %m = pgpu.list.expand %c, %p, %c[%n] : memref<?xi32>, memref<?xi32>, memref<?xi32> -> index
  return
}

// -----

func.func @list_expand_float_counts(%n: index, %c: memref<?xf32>, %p: memref<?xindex>) {
  // expected-error @+1 {{'pgpu.list.expand' op operand #0 must be 1D memref of signless integer or index values, but got 'memref<?xf32>'}}
  %m = pgpu.list.expand %c, %p, %c[%n] : memref<?xf32>, memref<?xindex>, memref<?xf32> -> index
  return
}

// -----

func.func @list_expand_children_type(%n: index, %c: memref<?xi32>, %p: memref<?xindex>) {
  // expected-error @+1 {{'pgpu.list.expand' op element type of the children ('index') must be the element type of the counts ('i32')}}
  %m = pgpu.list.expand %c, %p, %p[%n] : memref<?xi32>, memref<?xindex>, memref<?xindex> -> index
  return
}

//===----------------------------------------------------------------------===//
// Host interaction
//===----------------------------------------------------------------------===//

// -----

func.func @require_outside_spmd() {
  // expected-error @+1 {{'pgpu.require' op must appear directly in a 'pgpu.spawn' body, a 'pgpu.superstep', a 'pgpu.par' branch, a group region or an SPMD function}}
  pgpu.require {
  }
  return
}

// -----

func.func @require_under_control_flow(%n: index, %c: i1) {
  pgpu.spawn %n {
    scf.if %c {
      // expected-error @+1 {{'pgpu.require' op must appear directly in a 'pgpu.spawn' body, a 'pgpu.superstep'}}
      pgpu.require {
      }
    }
  }
  return
}

// -----

func.func @require_yield_mismatch(%n: index) {
  pgpu.spawn %n {
    %l = pgpu.require -> (memref<?xi32>) {
      // expected-error @+1 {{'pgpu.yield' op yields (index) but the enclosing 'pgpu.require' has results (memref<?xi32>)}}
      pgpu.yield %n : index
    }
  }
  return
}

// -----

func.func @dnew_in_gpu_code(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.dnew' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
    %l = pgpu.dnew [%n] : memref<?xf32>
  }
  return
}

// -----

func.func @dnew_size_count(%n: index) {
  // expected-error @+1 {{'pgpu.dnew' op needs one size per dynamic dimension of 'memref<?x?xf32>' (2), but got 1}}
  %l = pgpu.dnew [%n] : memref<?x?xf32>
  return
}

// -----

func.func @dnew_not_memref(%n: index) {
  // expected-error @+1 {{'pgpu.dnew' op result #0 must be memref of any type values, but got 'tensor<?xf32>'}}
  %l = "pgpu.dnew"(%n) : (index) -> tensor<?xf32>
  return
}

// -----

func.func @dtempnew_in_gpu_code(%n: index) attributes {pgpu.spmd_inline} {
  // expected-error @+1 {{'pgpu.dtempnew' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
  %l = pgpu.dtempnew [%n] : memref<?xi32>
  return
}

// -----

func.func @dtempnew_size_count(%n: index) {
  // expected-error @+1 {{'pgpu.dtempnew' op needs one size per dynamic dimension of 'memref<4xi32>' (0), but got 1}}
  %l = pgpu.dtempnew [%n] : memref<4xi32>
  return
}

// -----

func.func @dtempfree_in_gpu_code(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.dtempfree' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
    pgpu.dtempfree
  }
  return
}

// -----

func.func @task_without_taskgroup() {
  // expected-error @+1 {{'pgpu.task' op must be nested in a 'pgpu.taskgroup'}}
  pgpu.task {
  }
  return
}

// -----

// The group of a task is a taskgroup of its own function.
func.func @task_in_function_in_taskgroup(%c: i1) {
  pgpu.taskgroup {
    builtin.module {
      func.func @inner(%d: i1) {
        scf.if %d {
          // expected-error @+1 {{'pgpu.task' op must be nested in a 'pgpu.taskgroup'}}
          pgpu.task {
          }
        }
        return
      }
    }
  }
  return
}

// -----

func.func @task_in_task() {
  pgpu.taskgroup {
    // expected-note @+1 {{the enclosing task}}
    pgpu.task {
      // expected-error @+1 {{'pgpu.task' op cannot be nested in another 'pgpu.task' of the same 'pgpu.taskgroup'}}
      pgpu.task {
      }
    }
  }
  return
}

// -----

func.func @taskgroup_in_gpu_code(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.taskgroup' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
    pgpu.taskgroup {
    }
  }
  return
}

// -----

func.func @task_in_gpu_code(%n: index) {
  pgpu.taskgroup {
    pgpu.spawn %n {
      // expected-error @+1 {{'pgpu.task' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
      pgpu.task {
      }
    }
  }
  return
}

// -----

func.func @taskgroup_with_results() {
  pgpu.taskgroup {
    %c = arith.constant 0 : i32
    // expected-error @+1 {{'pgpu.yield' op yields (i32) but the enclosing 'pgpu.taskgroup' has results ()}}
    pgpu.yield %c : i32
  }
  return
}

//===----------------------------------------------------------------------===//
// Speculation
//===----------------------------------------------------------------------===//

// -----

func.func @spec_loop_in_spawn(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.spec.loop' op cannot be nested in an SPMD region}}
    pgpu.spec.loop %i = %n to %n step %n {
    }
  }
  return
}

// -----

func.func @nested_spec_loop(%n: index) {
  pgpu.spec.loop %i = %n to %n step %n {
    // expected-error @+1 {{'pgpu.spec.loop' op cannot be nested in another 'pgpu.spec.loop'}}
    pgpu.spec.loop %j = %n to %n step %n {
    }
  }
  return
}

// -----

func.func @spec_loop_zero_step(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'pgpu.spec.loop' op needs a positive step, but got 0}}
  pgpu.spec.loop %i = %c0 to %n step %c0 {
  }
  return
}

// -----

func.func @spec_loop_zero_window(%n: index) {
  // expected-error @+1 {{'pgpu.spec.loop' op window must be positive, but got 0}}
  pgpu.spec.loop %i = %n to %n step %n window(0) {
  }
  return
}

// -----

func.func @spec_loop_negative_warp(%n: index) {
  // expected-error @+1 {{'pgpu.spec.loop' op warp must be positive, but got -32}}
  pgpu.spec.loop %i = %n to %n step %n warp(-32) {
  }
  return
}

// -----

func.func @spec_loop_partial_warp(%n: index) {
  // expected-error @+1 {{'pgpu.spec.loop' op window (100) must be a multiple of warp (32)}}
  pgpu.spec.loop %i = %n to %n step %n window(100) warp(32) {
  }
  return
}

// -----

func.func @spec_loop_two_arguments(%n: index) {
  // expected-error @+1 {{'pgpu.spec.loop' op body needs exactly one argument, the 'index' induction variable}}
  "pgpu.spec.loop"(%n, %n, %n) ({
  ^bb0(%i: index, %j: index):
    pgpu.spec.commit
  }) : (index, index, index) -> ()
  return
}

// -----

func.func @spec_commit_outside_loop() {
  // expected-error @+1 {{'pgpu.spec.commit' op expects parent op 'pgpu.spec.loop'}}
  pgpu.spec.commit
}

// -----

func.func @spec_load_outside_loop(%m: memref<?xf64>, %i: index) {
  // expected-error @+1 {{'pgpu.spec.load' op must be nested in a 'pgpu.spec.loop'}}
  %v = pgpu.spec.load %m[%i] : memref<?xf64>
  return
}

// -----

func.func @spec_store_outside_loop(%m: memref<?xf64>, %i: index, %v: f64) {
  // expected-error @+1 {{'pgpu.spec.store' op must be nested in a 'pgpu.spec.loop'}}
  pgpu.spec.store %v, %m[%i] : memref<?xf64>
  return
}

// -----

func.func @spec_load_private_memory(%n: index) {
  pgpu.spec.loop %i = %n to %n step %n {
    %m = memref.alloca() : memref<4xf64>
    // expected-error @+1 {{'pgpu.spec.load' op accesses memory defined inside the speculative loop: it is private to the iteration, use 'memref.load'/'memref.store'}}
    %v = pgpu.spec.load %m[%i] : memref<4xf64>
  }
  return
}

// -----

func.func @spec_store_index_count(%n: index, %m: memref<?x?xf64>, %v: f64) {
  pgpu.spec.loop %i = %n to %n step %n {
    // expected-error @+1 {{'pgpu.spec.store' op needs 2 indices for the memref, but got 1}}
    pgpu.spec.store %v, %m[%i] : memref<?x?xf64>
  }
  return
}

// -----

func.func @spec_store_value_type(%n: index, %m: memref<?xf64>, %v: f32) {
  pgpu.spec.loop %i = %n to %n step %n {
    // expected-error @+1 {{'pgpu.spec.store' op failed to verify that value type matches the memref's element type}}
    "pgpu.spec.store"(%v, %m, %i) : (f32, memref<?xf64>, index) -> ()
  }
  return
}

//===----------------------------------------------------------------------===//
// Host I/O
//===----------------------------------------------------------------------===//

// -----

func.func @printf_missing_operand(%x: i32) {
  // expected-error @+1 {{'pgpu.printf' op conversion at offset 3 has no operand (1 given)}}
  pgpu.printf "%d %d\n"(%x) : i32
  return
}

// -----

func.func @printf_extra_operand(%x: i32) {
  // expected-error @+1 {{'pgpu.printf' op format has 0 conversions but 1 operands are given}}
  pgpu.printf "100%%\n"(%x) : i32
  return
}

// -----

func.func @printf_float_for_int(%x: f32) {
  // expected-error @+1 {{'pgpu.printf' op conversion '%d' at offset 0 does not match operand #0 of type 'f32'}}
  pgpu.printf "%d"(%x) : f32
  return
}

// -----

func.func @printf_int_for_float(%x: i64) {
  // expected-error @+1 {{'pgpu.printf' op conversion '%f' at offset 2 does not match operand #0 of type 'i64'}}
  pgpu.printf "x=%f"(%x) : i64
  return
}

// -----

func.func @printf_unsupported_conversion(%x: i64) {
  // expected-error @+1 {{'pgpu.printf' op unsupported conversion '%s' at offset 0}}
  pgpu.printf "%s"(%x) : i64
  return
}

// -----

func.func @printf_star_width(%x: i64) {
  // expected-error @+1 {{'pgpu.printf' op '*' widths are not supported (offset 0)}}
  pgpu.printf "%*d"(%x, %x) : i64, i64
  return
}

// -----

func.func @printf_truncated_conversion(%x: i64) {
  // expected-error @+1 {{'pgpu.printf' op format ends inside the conversion at offset 2}}
  pgpu.printf "x=%5"(%x) : i64
  return
}

// -----

func.func @printf_vector_operand(%x: vector<2xi32>) {
  // expected-error @+1 {{operand #0 must be variadic of signless integer or index or 32-bit float or 64-bit float}}
  pgpu.printf "%d"(%x) : vector<2xi32>
  return
}

// -----

func.func @argi_in_spmd(%n: index, %k: i32) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.argi' op is host code: it must be outside SPMD regions or inside 'pgpu.require'}}
    %v = pgpu.argi %k default %k : i32, i32
  }
  return
}

// -----

func.func @argi_fallback_type(%k: i32, %d: i64) {
  // expected-error @+1 {{'pgpu.argi' op failed to verify that all of {fallback, value} have same type}}
  %v = "pgpu.argi"(%k, %d) : (i32, i64) -> i32
  return
}

// -----

func.func @wtime_in_spmd(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.wtime' op is host code}}
    %t = pgpu.wtime : f64
  }
  return
}

// -----

func.func @wtime_type() {
  // expected-error @+1 {{'pgpu.wtime' op result #0 must be 64-bit float}}
  %t = "pgpu.wtime"() : () -> f32
  return
}

// -----

func.func @rand_seed_in_spmd(%n: index, %s: i32) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.rand_seed' op is host code}}
    pgpu.rand_seed %s : i32
  }
  return
}

// -----

func.func @rand_u32_in_spmd(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.rand_u32' op is host code}}
    %r = pgpu.rand_u32 : i32
  }
  return
}

// -----

func.func @rand_u32_type() {
  // expected-error @+1 {{'pgpu.rand_u32' op result #0 must be 32-bit signless integer}}
  %r = "pgpu.rand_u32"() : () -> i64
  return
}

// -----

func.func @grid_with_collective(%n: index, %x: i32) {
  pgpu.spawn grid %n {
    pgpu.barrier
    // expected-error @+1 {{'pgpu.reduce' op cannot be in a 'grid' spawn (one kernel with grid-wide barriers)}}
    %s = pgpu.reduce add %x : i32
  }
  return
}

// -----

func.func @grid_require_after_barrier(%n: index) {
  pgpu.spawn grid %n {
    pgpu.barrier
    // expected-error @+1 {{'pgpu.require' op cannot follow a barrier in a 'grid' spawn: host code runs before its one launch}}
    pgpu.require {
      pgpu.yield
    }
  }
  return
}

// -----

func.func @grid_synchronous(%n: index) {
  // expected-error @+1 {{'pgpu.spawn' op cannot be both 'synchronous' and 'grid'}}
  pgpu.spawn synchronous grid %n {
  }
  return
}

// -----

func.func @group_alloc_in_farm(%p: index) {
  pgpu.spawn synchronous %p {
    pgpu.farm {
      // expected-error @+1 {{'pgpu.group.alloc' op cannot be nested in 'pgpu.farm': the group structure is fixed there}}
      %cell = pgpu.group.alloc : memref<i32>
    }
  }
  return
}

// -----

func.func @group_alloc_in_bsgp(%n: index) {
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.group.alloc' op must be nested in synchronous code}}
    %cell = pgpu.group.alloc : memref<i32>
  }
  return
}

// -----

func.func @group_alloc_dynamic(%p: index) {
  pgpu.spawn synchronous %p {
    // expected-error @+1 {{'pgpu.group.alloc' op result #0 must be statically shaped memref of any type values}}
    %cell = pgpu.group.alloc : memref<?xi32>
  }
  return
}

// -----

func.func @sorted_keys_of_another_type(%k: memref<?xi32>, %i: memref<?xindex>, %s: memref<?xi64>, %n: index) {
  // expected-error @+1 {{element type of the sorted keys ('i64') must be the element type of the keys ('i32')}}
  pgpu.list.sort_idx %k, %i[%n] sorted %s : memref<?xi32>, memref<?xindex>, memref<?xi64>
  return
}

// -----

func.func @block_with_barrier(%n: index) {
  pgpu.spawn block %n {
    // expected-error @+1 {{'pgpu.barrier' op cannot be in a 'block' spawn (one thread block synchronizing with 'pgpu.range_barrier')}}
    pgpu.barrier
  }
  return
}

// -----

func.func @block_and_grid(%n: index) {
  // expected-error @+1 {{'pgpu.spawn' op cannot be 'block' and 'synchronous' or 'grid' at once}}
  pgpu.spawn grid block %n {
  }
  return
}

// -----

func.func @range_barrier_in_plain_spawn(%n: index) {
  %c0 = arith.constant 0 : index
  pgpu.spawn %n {
    // expected-error @+1 {{'pgpu.range_barrier' op must be nested in a 'pgpu.spawn block' or a function marked 'pgpu.block_group'}}
    pgpu.range_barrier %c0, %n, %c0
  }
  return
}

// -----

func.func @range_barrier_in_plain_function(%n: index) {
  // expected-error @+1 {{'pgpu.range_barrier' op must be nested in a 'pgpu.spawn block' or a function marked 'pgpu.block_group'}}
  pgpu.range_barrier %n, %n, %n
  return
}

// -----

// expected-error @+1 {{'pgpu.block_group' must be a unit attribute}}
func.func @block_group_not_unit() attributes {pgpu.block_group = 1 : i32} {
  return
}

// -----

// The fork's `$ = e2` is a value of the frontend, not an operand: the
// subgroups' ranks are renumbered in the parent's order (Fork's `$$`).
func.func @group_fork_rank_operand(%p: index, %k: index) {
  pgpu.spawn synchronous %p {
    // expected-error @+1 {{expected '{' to begin a region}}
    pgpu.group.fork %k id %p rank %p {
    }
  }
  return
}
