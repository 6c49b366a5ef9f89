// vector_add.cu: element-wise sum of two float vectors, c[i] = a[i] + b[i] for
// every i < n, one element per thread.
//
// PTX features: kernel parameters (three pointers and an s32), the special
// registers %ctaid.x, %ntid.x and %tid.x, a bounds check that leaves the tail
// of the last block idle (setp + predicated branch), 64-bit addresses built
// from a 32-bit index (mul.wide.s32 / cvta.to.global), read-only global loads
// (ld.global.nc, from const __restrict__), add.f32 and st.global.f32.

extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
