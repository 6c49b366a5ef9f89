// Every math op that convert-gpu-to-nvvm sends to libdevice and pgpu
// defines, in f64 and f32, in one SPMD region (device-math-ptx.test).
func.func @math(%a: memref<?xf64>, %b: memref<?xf32>, %n: index) {
  pgpu.spawn %n {
    %i = pgpu.rank : index
    %x = memref.load %a[%i] : memref<?xf64>
    %s = math.sqrt %x : f64
    %ab = math.absf %s : f64
    %fl = math.floor %ab : f64
    %ce = math.ceil %fl : f64
    %fm = math.fma %ce, %x, %x : f64
    %ex = math.exp %fm : f64
    %lg = math.log %ex : f64
    %si = math.sin %lg : f64
    %co = math.cos %si : f64
    %pw = math.powf %co, %x : f64
    %rm = arith.remf %pw, %x : f64
    %cs = math.copysign %rm, %x : f64
    %ro = math.round %cs : f64
    %re = math.roundeven %ro : f64
    %mx = arith.maxnumf %re, %x : f64
    %mn = arith.minnumf %mx, %x : f64
    memref.store %mn, %a[%i] : memref<?xf64>
    %y = memref.load %b[%i] : memref<?xf32>
    %sf = math.sqrt %y : f32
    %abf = math.absf %sf : f32
    %flf = math.floor %abf : f32
    %cef = math.ceil %flf : f32
    %fmf = math.fma %cef, %y, %y : f32
    %exf = math.exp %fmf : f32
    %lgf = math.log %exf : f32
    %sif = math.sin %lgf : f32
    %cof = math.cos %sif : f32
    %pwf = math.powf %cof, %y : f32
    %rmf = arith.remf %pwf, %y : f32
    %csf = math.copysign %rmf, %y : f32
    %rof = math.round %csf : f32
    %ref = math.roundeven %rof : f32
    %mxf = arith.maxnumf %ref, %y : f32
    %mnf = arith.minnumf %mxf, %y : f32
    memref.store %mnf, %b[%i] : memref<?xf32>
  }
  return
}
