// reduction_shfl.cu: block-level reductions with warp shuffles; one partial
// result per block, partial[blockIdx.x].
//
// reduce_sum: float sum. Each thread first adds its elements in[i],
// in[i + S], in[i + 2S], ... (S = blockDim.x * gridDim.x, grid-stride) in
// that order, starting from 0.0f. Each warp then folds its 32 sums with
// __shfl_down_sync (offsets 16, 8, 4, 2, 1; lane 0 ends with the warp's
// sum), lane 0 stores it in dynamic shared memory (blockDim.x / 32 floats:
// launch with that many * 4 bytes of dynamic shared memory), and warp 0
// folds the warp sums the same way (lanes past the last warp contribute
// 0.0f). The order of the additions is fixed by the code, so the result is
// deterministic. blockDim.x: a multiple of 32, at most 1024.
//
// reduce_max_int: int maximum, the same structure but with a butterfly
// (__shfl_xor_sync, masks 16 .. 1; every lane ends with the maximum), a
// static shared array for the warp results, and INT_MIN as the identity (a
// block that gets no element writes INT_MIN).
//
// PTX features: shfl.sync.down.b32 / shfl.sync.bfly.b32 on f32 and s32,
// an .extern .shared array (dynamic shared memory), grid-stride loops,
// bar.sync, max.s32, work restricted to warp 0.

#define FULL_MASK 0xFFFFFFFFU
#define INT_MIN_VALUE (-2147483647 - 1)

extern "C" __global__ void reduce_sum(const float* in, float* partial, int n)
{
    extern __shared__ float s_warp_sums[];

    const unsigned lane = threadIdx.x & 31U;
    const unsigned warp = threadIdx.x >> 5;
    const unsigned n_warps = blockDim.x >> 5;
    const int stride = (int)(blockDim.x * gridDim.x);

    float sum = 0.0f;
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {
        sum += in[i];
    }

#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_down_sync(FULL_MASK, sum, offset);
    }
    if (lane == 0) {
        s_warp_sums[warp] = sum;
    }
    __syncthreads();

    if (warp == 0) {
        sum = lane < n_warps ? s_warp_sums[lane] : 0.0f;
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            sum += __shfl_down_sync(FULL_MASK, sum, offset);
        }
        if (lane == 0) {
            partial[blockIdx.x] = sum;
        }
    }
}

extern "C" __global__ void reduce_max_int(const int* in, int* partial, int n)
{
    __shared__ int s_warp_max[32];

    const unsigned lane = threadIdx.x & 31U;
    const unsigned warp = threadIdx.x >> 5;
    const unsigned n_warps = blockDim.x >> 5;
    const int stride = (int)(blockDim.x * gridDim.x);

    int m = INT_MIN_VALUE;
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {
        const int v = in[i];
        m = v > m ? v : m;
    }

#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1) {
        const int other = __shfl_xor_sync(FULL_MASK, m, mask);
        m = other > m ? other : m;
    }
    if (lane == 0) {
        s_warp_max[warp] = m;
    }
    __syncthreads();

    if (warp == 0) {
        m = lane < n_warps ? s_warp_max[lane] : INT_MIN_VALUE;
#pragma unroll
        for (int mask = 16; mask > 0; mask >>= 1) {
            const int other = __shfl_xor_sync(FULL_MASK, m, mask);
            m = other > m ? other : m;
        }
        if (lane == 0) {
            partial[blockIdx.x] = m;
        }
    }
}
