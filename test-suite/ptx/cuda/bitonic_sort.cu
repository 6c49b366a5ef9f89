// bitonic_sort.cu: bitonic sort of key/value pairs in shared memory, in the
// style of the CUDA SDK's bitonicSortShared. Each block sorts its own segment
// of SORT_SIZE = 1024 pairs (keys[blockIdx.x * 1024 ...]) with 512 threads,
// each thread handling one compare-exchange per step. dir = 1 sorts
// ascending, dir = 0 descending (dir must be 0 or 1). The comparison network
// is fixed, so the result (including the order of values under equal keys)
// does not depend on scheduling.
//
// PTX features: two static .shared arrays, bar.sync between every network
// step, nested loops whose trip counts are uniform, selp/xor on predicates
// (the direction of each bitonic sub-sequence), data-dependent
// compare-and-swap on shared memory.

#define SORT_SIZE 1024U
#define SORT_THREADS (SORT_SIZE / 2U)

__device__ __forceinline__ void compare_exchange(unsigned& key_a, unsigned& val_a,
                                                 unsigned& key_b, unsigned& val_b, unsigned dir)
{
    if ((key_a > key_b) == (dir != 0U)) {
        const unsigned k = key_a;
        key_a = key_b;
        key_b = k;
        const unsigned v = val_a;
        val_a = val_b;
        val_b = v;
    }
}

extern "C" __global__ void bitonic_sort_shared(unsigned* keys, unsigned* values, unsigned dir)
{
    __shared__ unsigned s_key[SORT_SIZE];
    __shared__ unsigned s_val[SORT_SIZE];

    const unsigned t = threadIdx.x;
    const unsigned base = blockIdx.x * SORT_SIZE;

    s_key[t] = keys[base + t];
    s_val[t] = values[base + t];
    s_key[t + SORT_THREADS] = keys[base + t + SORT_THREADS];
    s_val[t + SORT_THREADS] = values[base + t + SORT_THREADS];

    // Build bitonic sequences of growing size; neighbouring sequences are
    // sorted in opposite directions so that each pair forms a bitonic run.
    for (unsigned size = 2; size < SORT_SIZE; size <<= 1) {
        const unsigned sub_dir = dir ^ ((t & (size / 2U)) != 0U ? 1U : 0U);
        for (unsigned stride = size / 2U; stride > 0; stride >>= 1) {
            __syncthreads();
            const unsigned pos = 2U * t - (t & (stride - 1U));
            compare_exchange(s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride], sub_dir);
        }
    }

    // Final bitonic merge of the whole segment in the requested direction.
    for (unsigned stride = SORT_SIZE / 2U; stride > 0; stride >>= 1) {
        __syncthreads();
        const unsigned pos = 2U * t - (t & (stride - 1U));
        compare_exchange(s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride], dir);
    }
    __syncthreads();

    keys[base + t] = s_key[t];
    values[base + t] = s_val[t];
    keys[base + t + SORT_THREADS] = s_key[t + SORT_THREADS];
    values[base + t + SORT_THREADS] = s_val[t + SORT_THREADS];
}
