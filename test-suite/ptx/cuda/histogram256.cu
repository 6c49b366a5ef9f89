// histogram256.cu: 256-bin byte histogram, in the style of the old CUDA SDK
// histogram256 (before shared-memory atomics were fast). The input is packed
// 4 bytes per 32-bit word (byte k of a word is (word >> 8k) & 0xFF). Words
// are dealt out grid-stride: word p goes to block (p % (blockDim.x *
// gridDim.x)) / blockDim.x, and each block writes its own partial histogram
// partial[blockIdx.x * 256 + bin]. histogram256_merge then sums the partial
// histograms bin by bin. All outputs are counts, so they do not depend on
// scheduling.
//
// histogram256_partial keeps one sub-histogram per warp in shared memory and
// increments it with the tagged software atomic of the Caracal paper: each
// lane writes (laneid << 27) | (count + 1) into the bin and reads the bin
// back; when several lanes of the warp hit the same bin, exactly one write
// survives, its lane sees its own tag and is done, the others retry. The
// classic loop `do { c = (h[b] & 0x07FFFFFF) + 1 | tag; h[b] = c; } while
// (h[b] != c);` relies on the warp running in lockstep, which Volta's
// independent thread scheduling no longer guarantees. Here the same
// read / write / read-back steps are separated by __syncwarp() and the retry
// loop is controlled by a warp vote, so all lanes read before any writes and
// all writes land before the read-back, on sm_70+ as on older GPUs. The loop
// over words is warp-uniform (a lane past the end of the data takes part
// with nothing to add), so the full-warp __syncwarp() always sees all 32
// lanes. Block size: a multiple of 32, at most 192 (6 warps).
//
// histogram256_atomic is the same computation with one shared histogram per
// block and atomicAdd on shared memory (atom.shared.add.u32).
//
// histogram256_merge(partial, n_partials, hist): hist[bin] = sum over p of
// partial[p * 256 + bin]; grid 256 (one block per bin), blockDim a power of
// two <= 256; each thread sums a strided subset, then a shared-memory tree.
//
// PTX features: volatile shared loads/stores (ld.volatile.shared), bar.warp.sync,
// vote.sync.any, %laneid-style tags via shifts, grid-stride loops,
// atom.shared.add, shared-memory tree reduction with bar.sync.

#define BIN_COUNT 256U
#define LOG2_WARP_SIZE 5U
#define WARP_SIZE (1U << LOG2_WARP_SIZE)
#define MAX_WARPS 6U
#define TAG_MASK 0x07FFFFFFU
#define FULL_MASK 0xFFFFFFFFU
#define MERGE_MAX_THREADS 256U

// Adds one to warp_hist[bin] for every lane with valid set. Must be called by
// all 32 lanes of the warp together.
__device__ __forceinline__ void add_byte_tagged(volatile unsigned* warp_hist, unsigned bin,
                                                unsigned tag, bool valid)
{
    bool done = !valid;
    unsigned count = 0;
    while (__any_sync(FULL_MASK, !done)) {
        if (!done) {
            count = tag | ((warp_hist[bin] & TAG_MASK) + 1U);
        }
        __syncwarp();
        if (!done) {
            warp_hist[bin] = count;
        }
        __syncwarp();
        if (!done) {
            done = warp_hist[bin] == count;
        }
    }
}

__device__ __forceinline__ void add_word_tagged(volatile unsigned* warp_hist, unsigned word,
                                                unsigned tag, bool valid)
{
    add_byte_tagged(warp_hist, (word >> 0) & 0xFFU, tag, valid);
    __syncwarp();
    add_byte_tagged(warp_hist, (word >> 8) & 0xFFU, tag, valid);
    __syncwarp();
    add_byte_tagged(warp_hist, (word >> 16) & 0xFFU, tag, valid);
    __syncwarp();
    add_byte_tagged(warp_hist, (word >> 24) & 0xFFU, tag, valid);
    __syncwarp();
}

extern "C" __global__ void histogram256_partial(const unsigned* data, int n_words, unsigned* partial)
{
    __shared__ unsigned s_hist[MAX_WARPS * BIN_COUNT];

    const unsigned lane = threadIdx.x & (WARP_SIZE - 1U);
    const unsigned warp = threadIdx.x >> LOG2_WARP_SIZE;
    const unsigned n_warps = blockDim.x >> LOG2_WARP_SIZE;
    const unsigned tag = lane << (32U - LOG2_WARP_SIZE);
    volatile unsigned* warp_hist = s_hist + warp * BIN_COUNT;

    for (unsigned i = threadIdx.x; i < n_warps * BIN_COUNT; i += blockDim.x) {
        s_hist[i] = 0;
    }
    __syncthreads();

    // base is the same for the 32 lanes of a warp, so the loop is warp-uniform.
    const unsigned n = (unsigned)n_words;
    const unsigned stride = blockDim.x * gridDim.x;
    for (unsigned base = blockIdx.x * blockDim.x + warp * WARP_SIZE; base < n; base += stride) {
        const unsigned pos = base + lane;
        const bool valid = pos < n;
        const unsigned word = valid ? data[pos] : 0U;
        add_word_tagged(warp_hist, word, tag, valid);
    }
    __syncthreads();

    for (unsigned bin = threadIdx.x; bin < BIN_COUNT; bin += blockDim.x) {
        unsigned sum = 0;
        for (unsigned w = 0; w < n_warps; ++w) {
            sum += s_hist[w * BIN_COUNT + bin] & TAG_MASK;
        }
        partial[blockIdx.x * BIN_COUNT + bin] = sum;
    }
}

extern "C" __global__ void histogram256_atomic(const unsigned* data, int n_words, unsigned* partial)
{
    __shared__ unsigned s_hist[BIN_COUNT];

    for (unsigned i = threadIdx.x; i < BIN_COUNT; i += blockDim.x) {
        s_hist[i] = 0;
    }
    __syncthreads();

    const unsigned n = (unsigned)n_words;
    const unsigned stride = blockDim.x * gridDim.x;
    for (unsigned pos = blockIdx.x * blockDim.x + threadIdx.x; pos < n; pos += stride) {
        const unsigned word = data[pos];
        atomicAdd(&s_hist[(word >> 0) & 0xFFU], 1U);
        atomicAdd(&s_hist[(word >> 8) & 0xFFU], 1U);
        atomicAdd(&s_hist[(word >> 16) & 0xFFU], 1U);
        atomicAdd(&s_hist[(word >> 24) & 0xFFU], 1U);
    }
    __syncthreads();

    for (unsigned bin = threadIdx.x; bin < BIN_COUNT; bin += blockDim.x) {
        partial[blockIdx.x * BIN_COUNT + bin] = s_hist[bin];
    }
}

extern "C" __global__ void histogram256_merge(const unsigned* partial, int n_partials, unsigned* hist)
{
    __shared__ unsigned s_sum[MERGE_MAX_THREADS];

    const unsigned bin = blockIdx.x;
    const unsigned t = threadIdx.x;

    unsigned sum = 0;
    for (unsigned p = t; p < (unsigned)n_partials; p += blockDim.x) {
        sum += partial[p * BIN_COUNT + bin];
    }
    s_sum[t] = sum;

    for (unsigned stride = blockDim.x / 2U; stride > 0; stride >>= 1) {
        __syncthreads();
        if (t < stride) {
            s_sum[t] += s_sum[t + stride];
        }
    }
    if (t == 0) {
        hist[bin] = s_sum[0];
    }
}
