// c[i] = a[i] + b[i] as one SPMD region of n logical threads: the example
// `make run` compiles to PTX for sm_90 through pgpu-spawn-to-parallel and
// the upstream GPU pipeline (pgpu-translate --pgpu-to-ptx --print-pipeline
// shows it).
func.func @vector_add(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %n: index) {
  pgpu.spawn %n {
    %i = pgpu.rank : index
    %x = memref.load %a[%i] : memref<?xf32>
    %y = memref.load %b[%i] : memref<?xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %c[%i] : memref<?xf32>
  }
  return
}
