// warp_vote.cu: warp-level votes, shuffles and 32-bit bit intrinsics.
//
// warp_vote(in, ballots, any, all, active, lane_ids, warp_ids, n): thread i
// (global index, 1D launch, blockDim.x a multiple of 32) reads v = in[i]
// (v = 0 for i >= n; those threads still vote) and, for i < n, writes
//   ballots[i]  = __ballot_sync(full, v odd)       (the warp's odd lanes)
//   any[i]      = __any_sync(full, v == 0)
//   all[i]      = __all_sync(full, v != 15)
//   active[i]   = __activemask() taken inside `if (v odd)` (the lanes that
//                 took the branch, i.e. the ballot; 0 for even v)
//   lane_ids[i] = %laneid, read with inline PTX
//   warp_ids[i] = threadIdx.x / 32
// Inputs are meant to be small (0..15) so that the votes come out mixed.
// The warp is re-converged with __syncwarp() before the divergent branch, so
// the active mask is exactly the lanes that take it.
//
// bit_ops(x, y, out, n): for i < n, with a = x[i], b = y[i], writes 8 words
// out[8*i + k]:
//   0 __popc(a)   1 __brev(a)   2 __clz(a)   3 __ffs(a)
//   4 __byte_perm(a, b, 0x3715)
//   5 __byte_perm(a, b, (b >> 16) & 0x7777)    (selector from data)
//   6 __funnelshift_l(a, b, b >> 24)           (shift taken mod 32)
//   7 __funnelshift_lc(a, b, b >> 26)          (shift clamped to 32)
//
// shfl_modes(in, out_idx, out_up, out_down, out_xor): one element per thread
// (buffers: in has gridDim.x * blockDim.x ints, the outputs twice that);
// thread i writes two results to each output, [2i] with width 32 and
// [2i + 1] with width 16 (sub-warp segments):
//   idx:  __shfl_sync(v, lane * 7 + 3)         / same with width 16
//         (source lane taken modulo the width)
//   up:   __shfl_up_sync(v, 3)                 / __shfl_up_sync(v, 5, 16)
//   down: __shfl_down_sync(v, 3)               / __shfl_down_sync(v, 5, 16)
//   xor:  __shfl_xor_sync(v, 6)                / __shfl_xor_sync(v, 17, 16)
// A lane whose source falls outside its segment keeps its own value; with
// xor 17 / width 16 the lower half-warp (reaching up) keeps its own value
// while the upper half-warp reads from the lower one.
//
// PTX features: vote.sync.ballot/any/all, activemask.b32 under divergence,
// bar.warp.sync, mov from %laneid in inline asm, popc, brev, clz, bfind or
// equivalent (ffs), prmt.b32, shf.l.wrap / shf.l.clamp, shfl.sync
// idx/up/down/bfly with the segment-mask (c) operand for width 16.

#define FULL_MASK 0xFFFFFFFFU

__device__ __forceinline__ unsigned lane_id()
{
    unsigned id;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
    return id;
}

extern "C" __global__ void warp_vote(const int* in, unsigned* ballots, int* any, int* all,
                                     unsigned* active, int* lane_ids, int* warp_ids, int n)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    const int v = i < n ? in[i] : 0;

    const unsigned ballot = __ballot_sync(FULL_MASK, v & 1);
    const int any_zero = __any_sync(FULL_MASK, v == 0);
    const int all_not_15 = __all_sync(FULL_MASK, v != 15);

    unsigned mask = 0;
    __syncwarp();
    if (v & 1) {
        mask = __activemask();
    }

    const unsigned lane = lane_id();
    if (i < n) {
        ballots[i] = ballot;
        any[i] = any_zero;
        all[i] = all_not_15;
        active[i] = mask;
        lane_ids[i] = (int)lane;
        warp_ids[i] = (int)(threadIdx.x / 32U);
    }
}

extern "C" __global__ void bit_ops(const unsigned* x, const unsigned* y, unsigned* out, int n)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) {
        return;
    }
    const unsigned a = x[i];
    const unsigned b = y[i];
    unsigned* o = out + 8 * i;
    o[0] = (unsigned)__popc(a);
    o[1] = __brev(a);
    o[2] = (unsigned)__clz((int)a);
    o[3] = (unsigned)__ffs((int)a);
    o[4] = __byte_perm(a, b, 0x3715U);
    o[5] = __byte_perm(a, b, (b >> 16) & 0x7777U);
    o[6] = __funnelshift_l(a, b, b >> 24);
    o[7] = __funnelshift_lc(a, b, b >> 26);
}

extern "C" __global__ void shfl_modes(const int* in, int* out_idx, int* out_up, int* out_down, int* out_xor)
{
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = (int)(threadIdx.x & 31U);
    const int v = in[i];
    const int src = lane * 7 + 3;

    out_idx[2 * i] = __shfl_sync(FULL_MASK, v, src);
    out_idx[2 * i + 1] = __shfl_sync(FULL_MASK, v, src, 16);
    out_up[2 * i] = __shfl_up_sync(FULL_MASK, v, 3);
    out_up[2 * i + 1] = __shfl_up_sync(FULL_MASK, v, 5, 16);
    out_down[2 * i] = __shfl_down_sync(FULL_MASK, v, 3);
    out_down[2 * i + 1] = __shfl_down_sync(FULL_MASK, v, 5, 16);
    out_xor[2 * i] = __shfl_xor_sync(FULL_MASK, v, 6);
    out_xor[2 * i + 1] = __shfl_xor_sync(FULL_MASK, v, 17, 16);
}
