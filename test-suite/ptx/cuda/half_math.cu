// Half precision: __half arithmetic (add, mul, fma, comparisons) and
// conversions between float and __half or __nv_bfloat16 with
// round-to-nearest, which nvcc compiles to .f16/.bf16 PTX instructions on
// 16-bit registers (cvt.rn.f16.f32, fma.rn.f16, setp.lt.f16,
// cvt.rn.bf16.f32, cvt.f32.bf16, ...). bfloat16 arithmetic is left out: it
// has no sm_75 form. Each thread converts two floats, combines them, and
// writes the results back as floats and as raw 16-bit patterns.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void half_math(const float* a, const float* b, float* f16_out, float* bf16_out,
                                     unsigned short* bits, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = __float2half_rn(a[i]);
  __half y = __float2half_rn(b[i]);
  __half s = __hadd(x, y);
  __half p = __hmul(x, y);
  __half f = __hfma(x, y, s);
  __half m = __hlt(x, y) ? x : y;
  f16_out[4 * i + 0] = __half2float(s);
  f16_out[4 * i + 1] = __half2float(p);
  f16_out[4 * i + 2] = __half2float(f);
  f16_out[4 * i + 3] = __half2float(m);
  __nv_bfloat16 u = __float2bfloat16_rn(a[i] * 300.0f);
  __nv_bfloat16 w = __float2bfloat16_rn(__half2float(f) - __bfloat162float(u));
  bf16_out[2 * i + 0] = __bfloat162float(u);
  bf16_out[2 * i + 1] = __bfloat162float(w);
  bits[2 * i + 0] = __half_as_ushort(f);
  bits[2 * i + 1] = __bfloat16_as_ushort(w);
}
