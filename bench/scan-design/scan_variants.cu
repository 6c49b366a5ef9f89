// Design experiments behind the look-back scan's tile layout (issue 5's
// "scan >= 80% of copy bandwidth"): hand-written CUDA variants of the
// single-pass decoupled look-back scan of 256M int32 (exclusive sum), timed
// against a 16-byte copy kernel and CUB's ExclusiveSum in one process, each
// output checked on the device. Not built by `make`; PERF.md quotes it.
//
// What it prints (one line per variant, median of 20 timed runs, the
// status initialization included): milliseconds, % of the copy kernel's
// bandwidth, registers, blocks per SM, wrong outputs ("bad"; the variants
// without look-back are wrong on purpose). Groups:
//   layout    rows of one 16-byte vector per thread ("rows") against pgpu's
//             former rows of two ("rows2"), tile and block sizes, cache hints
//             (hint 1: ld/st .cs, 2: ld.global.nc, 3: tile = blockIdx.x)
//   lookback  the same kernels with the look-back skipped (prefix 0), wider
//             look-back windows (each lane reading W predecessors), a
//             __nanosleep between spin rounds, status words 32 or 128 bytes
//             apart
//   staging   the tile staged in shared memory with cp.async; persistent
//             blocks that prefetch the next tile (shared memory or registers)
//   timeline  per-tile %globaltimer stamps of the 256x8 kernel: load,
//             look-back and store phases, look-back windows and spin rounds
//
// Build and run (the GPU machine):
//   nvcc -O3 -arch=sm_90 -std=c++17 -o scan_variants bench/scan-design/scan_variants.cu
//   ./scan_variants [layout|lookback|staging|timeline|all]
#include <cub/device/device_scan.cuh>
#include <cstdio>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cstdint>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("err %s line %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}


__device__ unsigned long long* g_stats;  // per tile: start, loaded, agg, prefix found, end, windows, spins
__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
// Warp-wide look-back; each lane reads W consecutive predecessors per round.
// SLEEP: nanoseconds of __nanosleep between spin rounds (0: none); STRIDE:
// status words per tile (4: a 32-byte sector each, 16: a 128-byte line).
template <int W, bool STATS = false, int SLEEP = 0, int STRIDE = 1>
__device__ __forceinline__ int lookback(unsigned long long* status, int tile, int agg, int lane) {
  if (tile == 0) {
    if (lane == 0) st_relaxed(&status[0], (2ull << 32) | (unsigned)agg);
    return 0;
  }
  if (lane == 0) st_relaxed(&status[tile * STRIDE], (1ull << 32) | (unsigned)agg);
  int prefix = 0;
  int base = tile - 1;
  unsigned long long windows = 0, spins = 0;
  while (true) {
    windows++;
    unsigned long long w[W];
    bool pending = false;
#pragma unroll
    for (int i = 0; i < W; i++) {
      int pred = base - lane * W - i;
      w[i] = pred >= 0 ? ld_relaxed(&status[pred * STRIDE]) : (2ull << 32);
      pending |= (w[i] >> 32) == 0;
    }
    while (__any_sync(~0u, pending)) {
      spins++;
      if (SLEEP) __nanosleep(SLEEP);
      pending = false;
#pragma unroll
      for (int i = 0; i < W; i++) {
        int pred = base - lane * W - i;
        if ((w[i] >> 32) == 0) w[i] = ld_relaxed(&status[pred * STRIDE]);
        pending |= (w[i] >> 32) == 0;
      }
    }
    int first = W;  // first word (nearest) with an inclusive prefix
#pragma unroll
    for (int i = W - 1; i >= 0; i--)
      if ((w[i] >> 32) == 2) first = i;
    unsigned mask = __ballot_sync(~0u, first < W);
    int nearest = mask ? __ffs(mask) - 1 : 32;
    int val = 0;
#pragma unroll
    for (int i = 0; i < W; i++) {
      int pred = base - lane * W - i;
      bool take = pred >= 0 && (lane < nearest || (lane == nearest && i <= first));
      if (take) val += (int)(unsigned)w[i];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) val += __shfl_down_sync(~0u, val, o);
    prefix += __shfl_sync(~0u, val, 0);
    if (mask) break;
    base -= 32 * W;
  }
  if (lane == 0) st_relaxed(&status[tile * STRIDE], (2ull << 32) | (unsigned)(prefix + agg));
  if (STATS && lane == 0) {
    g_stats[tile * 8 + 3] = gtime();
    g_stats[tile * 8 + 5] = windows;
    g_stats[tile * 8 + 6] = spins;
  }
  return prefix;
}

__device__ __forceinline__ int warp_inclusive_sum(int x, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    int y = __shfl_up_sync(~0u, x, o);
    if (lane >= o) x += y;
  }
  return x;
}

// Row j's sum `s`: returns the row's exclusive prefix within the warp; lane
// 31 leaves the warp's row total in s_wr[j * WARPS + warp] (tile order).
template <int WARPS>
__device__ __forceinline__ int warp_row(int s, int j, int lane, int warp, int* s_wr) {
  int x = warp_inclusive_sum(s, lane);
  if (lane == 31) s_wr[j * WARPS + warp] = x;
  return x - s;
}

// Warp 0: scans the NV warp-row totals in s_wr (NV / 32 per lane), gets
// the tile's exclusive prefix from prefix_of(tile aggregate), and replaces
// every total by its exclusive prefix.
template <int NV, typename Prefix>
__device__ __forceinline__ void tile_prefixes(int* s_wr, int lane, Prefix prefix_of) {
  constexpr int PER = NV / 32;
  static_assert(NV % 32 == 0, "rows");
  int x[PER];
  int tot = 0;
#pragma unroll
  for (int k = 0; k < PER; k++) { x[k] = s_wr[lane * PER + k]; tot += x[k]; }
  int inc = warp_inclusive_sum(tot, lane);
  int agg = __shfl_sync(~0u, inc, 31);
  int e = prefix_of(agg) + inc - tot;
#pragma unroll
  for (int k = 0; k < PER; k++) { s_wr[lane * PER + k] = e; e += x[k]; }
}

// The exclusive prefixes of v's four items after `b`.
__device__ __forceinline__ int4 exclusive4(int4 v, int b) {
  int4 r;
  r.x = b; b += v.x;
  r.y = b; b += v.y;
  r.z = b; b += v.z;
  r.w = b;
  return r;
}

template <int HINT>
__device__ __forceinline__ int4 ld4(const int4* p) {
  if (HINT == 1 || HINT == 6) return __ldcs(p);
  if (HINT == 2) return __ldg(p);
  return *p;
}
template <int HINT>
__device__ __forceinline__ void st4(int4* p, int4 v) {
  if (HINT == 1 || HINT == 6) __stcs(p, v); else *p = v;
}

// Tile: ROWS rows of one int4 per thread; row j of thread t at (j*BLOCK+t)*4.
// Exclusive scan. Status word per tile: flag<<32 | value.
template <int BLOCK, int ROWS, int HINT, int MINB, int WIN = 1>
__global__ void __launch_bounds__(BLOCK, MINB)
scan_rows(const int* __restrict__ in, int* __restrict__ out, unsigned long long* status,
          unsigned* counter) {
  constexpr int WARPS = BLOCK / 32;
  constexpr int NV = WARPS * ROWS;
  static_assert(NV % 32 == 0, "rows");
  __shared__ int s_tile;
  __shared__ int s_wr[NV];
  int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int tile;
  if (HINT == 3 || HINT == 5 || HINT == 6) {
    tile = blockIdx.x;
  } else {
    if (tid == 0) s_tile = atomicAdd(counter, 1);
    __syncthreads();
    tile = s_tile;
  }
  long start = (long)tile * (BLOCK * ROWS * 4);
  if (HINT == 7 && tid == 0) g_stats[tile * 8 + 0] = gtime();
  const int4* p = reinterpret_cast<const int4*>(in + start);
  int4 v[ROWS];
#pragma unroll
  for (int j = 0; j < ROWS; j++) v[j] = ld4<HINT>(p + j * BLOCK + tid);
  int winc[ROWS];
#pragma unroll
  for (int j = 0; j < ROWS; j++) {
    winc[j] = warp_row<WARPS>(v[j].x + v[j].y + v[j].z + v[j].w, j, lane, warp, s_wr);
  }
  __syncthreads();
  if (warp == 0) {
    tile_prefixes<NV>(s_wr, lane, [&](int agg) {
      if (HINT == 7 && lane == 0) g_stats[tile * 8 + 2] = gtime();
      constexpr int SLEEP = HINT == 8 ? 64 : HINT == 11 ? 200 : 0;
      constexpr int STRIDE = HINT == 9 ? 4 : HINT == 10 ? 16 : 1;
      return (HINT == 4 || HINT == 5) ? 0 : lookback<WIN, HINT == 7, SLEEP, STRIDE>(status, tile, agg, lane);
    });
  }
  __syncthreads();
  int4* q = reinterpret_cast<int4*>(out + start);
#pragma unroll
  for (int j = 0; j < ROWS; j++) {
    int b = s_wr[j * WARPS + warp] + winc[j];
    st4<HINT>(q + j * BLOCK + tid, exclusive4(v[j], b));
  }
  if (HINT == 7) { __syncthreads(); if (tid == 0) g_stats[tile * 8 + 4] = gtime(); }
}

__global__ void init(unsigned long long* status, int tiles, unsigned* counter) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < tiles) status[i] = 0;
  if (i == 0) *counter = 0;
}

__global__ void fill(int* a, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) a[i] = (int)(i % 5);
}

__global__ void check(const int* out, long n, unsigned long long* bad) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long q = i / 5, r = i % 5;
  long long e = 10 * q + r * (r - 1) / 2;
  if ((int)e != out[i]) atomicAdd(bad, 1ull);
}

__global__ void copyk(const int4* in, int4* out, long n4) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n4) out[i] = in[i];
}

static float median(std::vector<float> v);

// Median ms of 20 timed runs (after 3 warm-ups) of `init` of `words` status
// words plus `launch()`; stores the number of wrong outputs in *wrong and
// clears the output.
template <typename Launch>
static float time_and_check(Launch launch, unsigned long long* status, int words, unsigned* counter,
                            int* o, long n, unsigned long long* bad, unsigned long long* wrong) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> t;
  for (int r = 0; r < 23; r++) {
    cudaEventRecord(e0);
    init<<<(words + 255) / 256, 256>>>(status, words, counter);
    launch();
    cudaEventRecord(e1);
    CK(cudaEventSynchronize(e1));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 3) t.push_back(ms);
  }
  CK(cudaGetLastError());
  CK(cudaMemset(bad, 0, 8));
  check<<<(n + 255) / 256, 256>>>(o, n, bad);
  CK(cudaMemcpy(wrong, bad, 8, cudaMemcpyDeviceToHost));
  CK(cudaMemset(o, 0, n * 4));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return median(t);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// Persistent blocks; the next tile's loads are issued right after the
// first barrier of the current tile (into shared memory with cp.async, or
// into registers), so they overlap the look-back and the stores.
template <int BLOCK, int ROWS, bool SMEM, int WIN = 1>
__global__ void __launch_bounds__(BLOCK)
scan_pipe(const int* __restrict__ in, int* __restrict__ out, unsigned long long* status,
          unsigned* counter, int tiles) {
  constexpr int WARPS = BLOCK / 32;
  constexpr int NV = WARPS * ROWS;
  constexpr int TILE = BLOCK * ROWS * 4;
  extern __shared__ int4 dyn[];
  __shared__ int s_tile[2];
  __shared__ int s_wr[NV];
  int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) s_tile[0] = atomicAdd(counter, 1);
  __syncthreads();
  int tile = s_tile[0];
  int4 v[ROWS], vn[ROWS];
  auto issue = [&](int t, int stage) {
    const int4* p = reinterpret_cast<const int4*>(in + (long)t * TILE);
    if (SMEM) {
#pragma unroll
      for (int j = 0; j < ROWS; j++) cp_async16(&dyn[stage * ROWS * BLOCK + j * BLOCK + tid], p + j * BLOCK + tid);
      cp_commit();
    } else {
#pragma unroll
      for (int j = 0; j < ROWS; j++) vn[j] = p[j * BLOCK + tid];
    }
  };
  if (tile < tiles) issue(tile, 0);
  int k = 0;
  while (tile < tiles) {
    if (tid == 0) s_tile[(k + 1) & 1] = atomicAdd(counter, 1);
    if (SMEM) {
      cp_wait_all();
#pragma unroll
      for (int j = 0; j < ROWS; j++) v[j] = dyn[(k & 1) * ROWS * BLOCK + j * BLOCK + tid];
    } else {
#pragma unroll
      for (int j = 0; j < ROWS; j++) v[j] = vn[j];
    }
    int winc[ROWS];
#pragma unroll
    for (int j = 0; j < ROWS; j++) {
      winc[j] = warp_row<WARPS>(v[j].x + v[j].y + v[j].z + v[j].w, j, lane, warp, s_wr);
    }
    __syncthreads();
    int next = s_tile[(k + 1) & 1];
    if (next < tiles) issue(next, (k + 1) & 1);
    if (warp == 0) {
      tile_prefixes<NV>(s_wr, lane, [&](int agg) {
        return lookback<WIN>(status, tile, agg, lane);
      });
    }
    __syncthreads();
    int4* qo = reinterpret_cast<int4*>(out + (long)tile * TILE);
#pragma unroll
    for (int j = 0; j < ROWS; j++) {
      qo[j * BLOCK + tid] = exclusive4(v[j], s_wr[j * WARPS + warp] + winc[j]);
    }
    tile = next;
    k++;
  }
}

template <int BLOCK, int ROWS, bool SMEM, int WIN = 1>
void run_pipe(const char* name, const int* a, int* o, long n, unsigned long long* status,
              unsigned* counter, float copy_ms, unsigned long long* bad, int per_block) {
  long tile = (long)BLOCK * ROWS * 4;
  int tiles = (int)(n / tile);
  auto k = scan_pipe<BLOCK, ROWS, SMEM, WIN>;
  int smem = SMEM ? 2 * ROWS * BLOCK * 16 : 0;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, k));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, BLOCK, smem));
  int grid = per_block > 0 ? (tiles + per_block - 1) / per_block : occ * 132;
  unsigned long long nb;
  float m = time_and_check([&] { k<<<grid, BLOCK, smem>>>(a, o, status, counter, tiles); }, status, tiles, counter, o, n, bad, &nb);
  printf("%-20s win %d block %4d rows %2d items %3d grid %6d regs %3d occ %d  %.3f ms  %3.0f%% of copy  bad %llu\n",
         name, WIN, BLOCK, ROWS, ROWS * 4, grid, at.numRegs, occ, m, 100.0 * copy_ms / m, nb);
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

template <int BLOCK, int ROWS, int HINT, int MINB, int WIN = 1>
void run_variant(const char* name, const int* a, int* o, long n, unsigned long long* status,
                 unsigned* counter, float copy_ms, unsigned long long* bad) {
  long tile = (long)BLOCK * ROWS * 4;
  int tiles = (int)(n / tile);
  auto k = scan_rows<BLOCK, ROWS, HINT, MINB, WIN>;
  int words = tiles * (HINT == 9 ? 4 : HINT == 10 ? 16 : 1);
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, k));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, BLOCK, 0));
  unsigned long long nb;
  float m = time_and_check([&] { k<<<tiles, BLOCK>>>(a, o, status, counter); }, status, words, counter, o, n, bad, &nb);
  printf("%-28s win %d block %4d rows %2d items %3d hint %d regs %3d occ %d  %.3f ms  %3.0f%% of copy  bad %llu\n",
         name, WIN, BLOCK, ROWS, ROWS * 4, HINT, at.numRegs, occ, m, 100.0 * copy_ms / m, nb);
}

// The current pgpu layout: ROWS rows of two int4 (8 items) per thread.
template <int BLOCK, int ROWS>
__global__ void __launch_bounds__(BLOCK)
scan_rows2(const int* __restrict__ in, int* __restrict__ out, unsigned long long* status,
           unsigned* counter) {
  constexpr int WARPS = BLOCK / 32;
  constexpr int NV = WARPS * ROWS;
  __shared__ int s_tile;
  __shared__ int s_wr[NV];
  int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) s_tile = atomicAdd(counter, 1);
  __syncthreads();
  int tile = s_tile;
  long start = (long)tile * (BLOCK * ROWS * 8);
  const int4* p = reinterpret_cast<const int4*>(in + start);
  int4 v[ROWS][2];
#pragma unroll
  for (int j = 0; j < ROWS; j++) {
    v[j][0] = p[(j * BLOCK + tid) * 2];
    v[j][1] = p[(j * BLOCK + tid) * 2 + 1];
  }
  int winc[ROWS];
#pragma unroll
  for (int j = 0; j < ROWS; j++) {
    winc[j] = warp_row<WARPS>(v[j][0].x + v[j][0].y + v[j][0].z + v[j][0].w + v[j][1].x + v[j][1].y + v[j][1].z + v[j][1].w, j, lane, warp, s_wr);
  }
  __syncthreads();
  if (warp == 0) {
    tile_prefixes<NV>(s_wr, lane, [&](int agg) {
      return lookback<1>(status, tile, agg, lane);
    });
  }
  __syncthreads();
  int4* q = reinterpret_cast<int4*>(out + start);
#pragma unroll
  for (int j = 0; j < ROWS; j++) {
    int b = s_wr[j * WARPS + warp] + winc[j];
    for (int h = 0; h < 2; h++) {
      q[(j * BLOCK + tid) * 2 + h] = exclusive4(v[j][h], b);
      b += v[j][h].x + v[j][h].y + v[j][h].z + v[j][h].w;
    }
  }
}

template <int BLOCK, int ROWS>
void run_variant2(const char* name, const int* a, int* o, long n, unsigned long long* status,
                  unsigned* counter, float copy_ms, unsigned long long* bad) {
  long tile = (long)BLOCK * ROWS * 8;
  int tiles = (int)(n / tile);
  auto k = scan_rows2<BLOCK, ROWS>;
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, k));
  unsigned long long nb;
  float m = time_and_check([&] { k<<<tiles, BLOCK>>>(a, o, status, counter); }, status, tiles, counter, o, n, bad, &nb);
  printf("%-28s block %4d rows %2d regs %3d  %.3f ms  %3.0f%% of copy  bad %llu\n", name, BLOCK, ROWS,
         at.numRegs, m, 100.0 * copy_ms / m, nb);
}

// The tile staged in shared memory with cp.async (no registers held for
// the data while the block waits on its look-back), so that more tiles fit
// on an SM.
template <int BLOCK, int ROWS, int HINT>
__global__ void __launch_bounds__(BLOCK)
scan_smem(const int* __restrict__ in, int* __restrict__ out, unsigned long long* status,
          unsigned* counter) {
  constexpr int WARPS = BLOCK / 32;
  constexpr int NV = WARPS * ROWS;
  extern __shared__ int4 buf[];
  __shared__ int s_tile;
  __shared__ int s_wr[NV];
  int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) s_tile = atomicAdd(counter, 1);
  __syncthreads();
  int tile = s_tile;
  long start = (long)tile * (BLOCK * ROWS * 4);
  const int4* p = reinterpret_cast<const int4*>(in + start);
#pragma unroll
  for (int j = 0; j < ROWS; j++) cp_async16(&buf[j * BLOCK + tid], p + j * BLOCK + tid);
  cp_commit();
  cp_wait_all();
  int winc[ROWS];
#pragma unroll
  for (int j = 0; j < ROWS; j++) {
    int4 v = buf[j * BLOCK + tid];
    winc[j] = warp_row<WARPS>(v.x + v.y + v.z + v.w, j, lane, warp, s_wr);
  }
  __syncthreads();
  if (warp == 0) {
    tile_prefixes<NV>(s_wr, lane, [&](int agg) {
      return lookback<1>(status, tile, agg, lane);
    });
  }
  __syncthreads();
  int4* q = reinterpret_cast<int4*>(out + start);
#pragma unroll
  for (int j = 0; j < ROWS; j++) {
    int4 v = buf[j * BLOCK + tid];
    int b = s_wr[j * WARPS + warp] + winc[j];
    st4<HINT>(q + j * BLOCK + tid, exclusive4(v, b));
  }
}

template <int BLOCK, int ROWS, int HINT>
void run_smem(const char* name, const int* a, int* o, long n, unsigned long long* status,
              unsigned* counter, float copy_ms, unsigned long long* bad) {
  long tile = (long)BLOCK * ROWS * 4;
  int tiles = (int)(n / tile);
  auto k = scan_smem<BLOCK, ROWS, HINT>;
  int smem = ROWS * BLOCK * 16;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaFuncAttributes at;
  CK(cudaFuncGetAttributes(&at, k));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, BLOCK, smem));
  unsigned long long nb;
  float m = time_and_check([&] { k<<<tiles, BLOCK, smem>>>(a, o, status, counter); }, status, tiles, counter, o, n, bad, &nb);
  printf("%-20s block %4d rows %2d items %3d hint %d regs %3d occ %d  %.3f ms  %3.0f%% of copy  bad %llu\n",
         name, BLOCK, ROWS, ROWS * 4, HINT, at.numRegs, occ, m, 100.0 * copy_ms / m, nb);
}

static void stats_run(const int* a, int* o, long n, unsigned long long* status, unsigned* counter) {
  constexpr int BLOCK = 256, ROWS = 8;
  long tile = (long)BLOCK * ROWS * 4;
  int tiles = (int)(n / tile);
  unsigned long long* st;
  CK(cudaMalloc(&st, (size_t)tiles * 64));
  CK(cudaMemset(st, 0, (size_t)tiles * 64));
  CK(cudaMemcpyToSymbol(g_stats, &st, sizeof(st)));
  for (int r = 0; r < 3; r++) {
    init<<<(tiles + 255) / 256, 256>>>(status, tiles, counter);
    scan_rows<BLOCK, ROWS, 7, 1, 1><<<tiles, BLOCK>>>(a, o, status, counter);
    CK(cudaDeviceSynchronize());
  }
  std::vector<unsigned long long> h((size_t)tiles * 8);
  CK(cudaMemcpy(h.data(), st, (size_t)tiles * 64, cudaMemcpyDeviceToHost));
  unsigned long long* z = nullptr;
  CK(cudaMemcpyToSymbol(g_stats, &z, sizeof(z)));
  std::vector<double> load, look, store, life, win, spin;
  unsigned long long t0 = ~0ull, t1 = 0;
  for (int t = 1; t < tiles; t++) {
    unsigned long long* x = &h[(size_t)t * 8];
    load.push_back((x[2] - x[0]) / 1000.0);
    look.push_back((x[3] - x[2]) / 1000.0);
    store.push_back((x[4] - x[3]) / 1000.0);
    life.push_back((x[4] - x[0]) / 1000.0);
    win.push_back(x[5]);
    spin.push_back(x[6]);
    t0 = std::min(t0, x[0]); t1 = std::max(t1, x[4]);
  }
  auto pr = [](const char* name, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    double sum = 0; for (double d : v) sum += d;
    printf("  %-28s mean %7.3f  p10 %7.3f  p50 %7.3f  p90 %7.3f  p99 %7.3f  max %7.3f\n", name, sum / v.size(),
           v[v.size() / 10], v[v.size() / 2], v[v.size() * 9 / 10], v[v.size() * 99 / 100], v.back());
  };
  printf("stats 256x8, %d tiles, span %.3f ms (us unless noted)\n", tiles, (t1 - t0) / 1e6);
  pr("start->aggregate (load)", load);
  pr("aggregate->prefix (lookback)", look);
  pr("prefix->stored", store);
  pr("life", life);
  pr("windows", win);
  pr("spin rounds", spin);
  // how far back the nearest inclusive typically is: not recorded
  cudaFree(st);
}

int main(int argc, char** argv) {
  long n = 268435456;
  int *a, *o;
  CK(cudaMalloc(&a, n * 4)); CK(cudaMalloc(&o, n * 4));
  unsigned long long *status, *bad; unsigned* counter;
  CK(cudaMalloc(&status, (n / 1024 + 1) * 8 * 16)); CK(cudaMalloc(&counter, 4)); CK(cudaMalloc(&bad, 8));
  fill<<<(n + 255) / 256, 256>>>(a, n);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> t;
  for (int r = 0; r < 23; r++) {
    cudaEventRecord(e0);
    copyk<<<(n / 4 + 255) / 256, 256>>>((const int4*)a, (int4*)o, n / 4);
    cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) t.push_back(ms);
  }
  float copy_ms = median(t);
  printf("copy kernel %.3f ms\n", copy_ms);
  // CUB exclusive sum
  size_t tb = 0; void* tmp = nullptr;
  cub::DeviceScan::ExclusiveSum(tmp, tb, a, o, (int)n);
  CK(cudaMalloc(&tmp, tb));
  t.clear();
  for (int r = 0; r < 23; r++) {
    cudaEventRecord(e0);
    cub::DeviceScan::ExclusiveSum(tmp, tb, a, o, (int)n);
    cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 3) t.push_back(ms);
  }
  CK(cudaMemset(bad, 0, 8));
  check<<<(n + 255) / 256, 256>>>(o, n, bad);
  unsigned long long nb; CK(cudaMemcpy(&nb, bad, 8, cudaMemcpyDeviceToHost));
  printf("cub ExclusiveSum %.3f ms %3.0f%% of copy bad %llu\n", median(t), 100.0 * copy_ms / median(t), nb);
  const char* group = argc > 1 ? argv[1] : "all";
  auto want = [&](const char* g) { return !strcmp(group, "all") || !strcmp(group, g); };
  if (want("layout")) {
    printf("-- layout\n");
    run_variant2<256, 4>("rows2 (two vectors per row)", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 4, 0, 1>("rows", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 0, 1>("rows", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 1, 1>("rows cs", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 2, 1>("rows ldg", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 3, 1>("rows blockIdx", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 16, 0, 1>("rows", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 16, 1, 1>("rows cs", a, o, n, status, counter, copy_ms, bad);
    run_variant<128, 8, 0, 1>("rows", a, o, n, status, counter, copy_ms, bad);
    run_variant<512, 8, 0, 1>("rows", a, o, n, status, counter, copy_ms, bad);
    run_variant<512, 16, 1, 1>("rows cs", a, o, n, status, counter, copy_ms, bad);
    run_variant<1024, 8, 0, 1>("rows", a, o, n, status, counter, copy_ms, bad);
    run_variant<1024, 8, 1, 1>("rows cs", a, o, n, status, counter, copy_ms, bad);
  }
  if (want("lookback")) {
    printf("-- lookback\n");
    run_variant<256, 8, 4, 1>("rows NO LOOKBACK", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 5, 1>("rows NO LOOKBACK blockIdx", a, o, n, status, counter, copy_ms, bad);
    run_variant<1024, 8, 4, 1>("rows NO LOOKBACK", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 0, 1, 2>("rows", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 0, 1, 4>("rows", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 8, 1>("rows, nanosleep 64 per spin", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 11, 1>("rows, nanosleep 200 per spin", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 9, 1>("rows, status 32 B apart", a, o, n, status, counter, copy_ms, bad);
    run_variant<256, 8, 10, 1>("rows, status 128 B apart", a, o, n, status, counter, copy_ms, bad);
  }
  if (want("staging")) {
    printf("-- staging\n");
    run_smem<256, 8, 0>("smem", a, o, n, status, counter, copy_ms, bad);
    run_smem<256, 16, 0>("smem", a, o, n, status, counter, copy_ms, bad);
    run_smem<128, 16, 0>("smem", a, o, n, status, counter, copy_ms, bad);
    run_pipe<256, 8, true>("pipe smem", a, o, n, status, counter, copy_ms, bad, 0);
    run_pipe<256, 8, true, 4>("pipe smem", a, o, n, status, counter, copy_ms, bad, 0);
    run_pipe<512, 8, false>("pipe regs", a, o, n, status, counter, copy_ms, bad, 0);
    run_pipe<512, 8, false, 4>("pipe regs", a, o, n, status, counter, copy_ms, bad, 0);
  }
  if (want("timeline")) {
    printf("-- timeline\n");
    stats_run(a, o, n, status, counter);
  }
  return 0;
}
