// scan.cu: prefix sums.
//
// scan_block: work-efficient (balanced tree, Blelloch) exclusive scan of
// SCAN_N = 1024 unsigned values per block, 512 threads per block, two
// elements per thread. out[b*1024 + k] = sum of in[b*1024 + 0 .. k-1]
// (mod 2^32) and block_sums[b] = sum of the whole segment. An up-sweep builds
// partial sums in place, the root is saved and cleared, a down-sweep turns
// the tree into the exclusive scan. Shared-memory indices are padded by one
// word every 32 (PAD) against bank conflicts, as in the SDK / GPU Gems scan.
//
// scan_add_offsets: second phase of a multi-block scan: adds offsets[b] to
// the 1024 elements of segment b (512 threads, two elements each).
//
// scan_warp_shfl: inclusive scan of each 32-element warp segment with
// __shfl_up_sync (log2(32) = 5 steps); out[i] = in[w*32] + ... + in[i]
// (wrapping, computed in unsigned), blockDim a multiple of 32, one element
// per thread and no bounds check (the buffers hold gridDim.x * blockDim.x).
//
// PTX features: loops with a shift-updated trip count, bar.sync inside loops,
// padded shared-memory indexing, shfl.sync.up.b32 with a predicate on the
// lane, %tid-based lane arithmetic.

#define SCAN_N 1024U
#define SCAN_THREADS (SCAN_N / 2U)
#define LOG_NUM_BANKS 5U
#define PAD(i) ((i) + ((i) >> LOG_NUM_BANKS))
#define FULL_MASK 0xFFFFFFFFU

extern "C" __global__ void scan_block(const unsigned* in, unsigned* out, unsigned* block_sums)
{
    __shared__ unsigned temp[SCAN_N + SCAN_N / 32U];

    const unsigned t = threadIdx.x;
    const unsigned base = blockIdx.x * SCAN_N;
    const unsigned ai = t;
    const unsigned bi = t + SCAN_THREADS;

    temp[PAD(ai)] = in[base + ai];
    temp[PAD(bi)] = in[base + bi];

    // Up-sweep (reduce): after it, temp[PAD(SCAN_N - 1)] holds the total.
    unsigned offset = 1;
    for (unsigned d = SCAN_N >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            const unsigned a = offset * (2U * t + 1U) - 1U;
            const unsigned b = offset * (2U * t + 2U) - 1U;
            temp[PAD(b)] += temp[PAD(a)];
        }
        offset <<= 1;
    }

    __syncthreads();
    if (t == 0) {
        block_sums[blockIdx.x] = temp[PAD(SCAN_N - 1U)];
        temp[PAD(SCAN_N - 1U)] = 0;
    }

    // Down-sweep: each node passes its value to the left child and the sum
    // of its value and the old left child to the right child.
    for (unsigned d = 1; d < SCAN_N; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            const unsigned a = offset * (2U * t + 1U) - 1U;
            const unsigned b = offset * (2U * t + 2U) - 1U;
            const unsigned left = temp[PAD(a)];
            temp[PAD(a)] = temp[PAD(b)];
            temp[PAD(b)] += left;
        }
    }
    __syncthreads();

    out[base + ai] = temp[PAD(ai)];
    out[base + bi] = temp[PAD(bi)];
}

extern "C" __global__ void scan_add_offsets(unsigned* data, const unsigned* offsets)
{
    const unsigned base = blockIdx.x * SCAN_N;
    const unsigned offset = offsets[blockIdx.x];
    data[base + threadIdx.x] += offset;
    data[base + threadIdx.x + SCAN_THREADS] += offset;
}

extern "C" __global__ void scan_warp_shfl(const int* in, int* out)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x & 31U;

    unsigned v = (unsigned)in[i];
#pragma unroll
    for (unsigned delta = 1; delta < 32U; delta <<= 1) {
        const unsigned up = __shfl_up_sync(FULL_MASK, v, delta);
        if (lane >= delta) {
            v += up;
        }
    }
    out[i] = (int)v;
}
