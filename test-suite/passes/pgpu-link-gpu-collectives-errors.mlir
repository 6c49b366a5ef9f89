// RUN: pgpu-opt %s --pgpu-link-gpu-collectives --verify-diagnostics

// A declaration of a collective that does not exist.
// expected-error @below {{no GPU implementation of the collective @pgpu_coll_reduce_add_f3}}
module {
  func.func private @pgpu_coll_reduce_add_f3(memref<?xf32>, index) -> f32
}
