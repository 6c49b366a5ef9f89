// Shared helpers of the hand-written GPU baselines in bench/baselines/.
//
// What it provides:
//   - the random numbers of BSGP's rand_seed/rand_u32 (the runtime's
//     SplitMix64, backends/runtime/src/io.rs), so that a baseline builds
//     exactly the input its .bsgp program builds;
//   - argi(): program arguments read as the BSGP builtin reads them
//     (argv[1 + k] as a decimal integer, or the default);
//   - CPU reference implementations of findFaces and particle binning
//     (stable counting sorts), used to check the GPU results element by
//     element and, by reference_check.cpp, to check this file's generator
//     and checksums against the reference interpreter without a GPU;
//   - with nvcc (__CUDACC__): CUDA_CHECK, a median-of-N timer on CUDA
//     events, and a kernel counter that captures one run into a CUDA graph
//     and counts its kernel and memset nodes.
//
// Output protocol shared by every baseline and every pgpu bench program
// (bench/gpu/run.sh parses it): the program's own result lines, exactly as
// the .bsgp program prints them, then
//   bench-ms X          median time of one run in milliseconds (pgpu bench
//                       programs print one line per timed repetition; the
//                       script takes the median of all such lines)
//   bench-wall-ms X     median host wall time of one run including the
//                       wait for its completion (CUDA baselines)
//   bench-kernels K     kernel launches of one run
//   bench-memsets K     memset operations of one run (CUDA baselines)
//   bench-temp-bytes B  peak temporary device memory of one run
//   bench-bytes B       bytes read + written by one run (bandwidth rows)
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace bench {

// ---------------------------------------------------------------------------
// BSGP's rand_seed / rand_u32: SplitMix64. The state is advanced by the
// golden-ratio increment before every number; the number is the high 32
// bits of the mixed state.
struct SplitMix64 {
  uint64_t state = 0;
  void seed(int64_t s) { state = (uint64_t)s; }
  uint32_t next_u32() {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (uint32_t)(z >> 32);
  }
};

// ---------------------------------------------------------------------------
// argi(k, default): the k-th program argument (from 0, after the program
// name) as an i32, as the BSGP builtin reads it; exits on a non-integer.
inline int argi(int argc, char** argv, int k, int fallback) {
  if (k < 0 || 1 + k >= argc) return fallback;
  const char* text = argv[1 + k];
  char* end = nullptr;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  while (end && (*end == ' ' || *end == '\t' || *end == '\n')) end++;
  if (errno != 0 || end == text || *end != '\0' || v < -2147483648LL ||
      v > 4294967295LL) {
    fprintf(stderr, "program argument %d ('%s') is not an i32 integer\n", k,
            text);
    exit(2);
  }
  return (int)(uint32_t)(uint64_t)v;
}

// Bits needed for the values 0 .. count-1 (at least 1): the end_bit a radix
// sort of keys known to lie in [0, count) needs.
inline int bits_for(long long count) {
  int bits = 1;
  while (bits < 32 && (1LL << bits) < count) bits++;
  return bits;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// ---------------------------------------------------------------------------
// findFaces (examples/bsgp/listing1_find_faces.bsgp, listing9_...): input
// and checksums of main(), and a CPU reference.
struct FindFacesInput {
  int n = 0;  // triangles
  int m = 0;  // vertices
  std::vector<int> ib;  // 3n vertex ids
};

inline FindFacesInput find_faces_input(int n, int m) {
  FindFacesInput in;
  in.n = n;
  in.m = m;
  SplitMix64 rng;
  rng.seed(1);
  in.ib.resize((size_t)n * 3);
  for (size_t i = 0; i < in.ib.size(); i++)
    in.ib[i] = (int)(rng.next_u32() % (uint32_t)m);
  return in;
}

// Stable counting sort by vertex: pf[rank] = face of the rank-th (vertex,
// original position) pair; hd[v] = first rank of v, -1 when v is unused.
inline void find_faces_cpu(const FindFacesInput& in, std::vector<int>& pf,
                           std::vector<int>& hd) {
  size_t count = in.ib.size();
  std::vector<long long> start((size_t)in.m + 1, 0);
  for (size_t i = 0; i < count; i++) start[(size_t)in.ib[i] + 1]++;
  for (int v = 0; v < in.m; v++) start[(size_t)v + 1] += start[v];
  hd.assign((size_t)in.m, -1);
  for (int v = 0; v < in.m; v++)
    if (start[(size_t)v + 1] > start[v]) hd[v] = (int)start[v];
  pf.assign(count, 0);
  std::vector<long long> next(start.begin(), start.end() - 1);
  for (size_t i = 0; i < count; i++) pf[(size_t)next[in.ib[i]]++] = (int)(i / 3);
}

inline void print_find_faces(int n, int m, const std::vector<int>& pf,
                             const std::vector<int>& hd) {
  long long sum = 0;
  for (size_t i = 0; i < pf.size(); i++)
    sum += (long long)pf[i] * (long long)(i % 13 + 1);
  long long heads = 0;
  for (size_t i = 0; i < hd.size(); i++)
    heads += (long long)hd[i] * (long long)(i + 1);
  printf("faces %d vertices %d pf-checksum %lld hd-checksum %lld\n", n, m, sum,
         heads);
}

// ---------------------------------------------------------------------------
// Particle binning (examples/bsgp/particle_binning.bsgp).
struct ParticleInput {
  int n = 0;
  int grid = 0;
  std::vector<float> px, py;
};

inline ParticleInput particle_input(int n, int grid) {
  ParticleInput in;
  in.n = n;
  in.grid = grid;
  SplitMix64 rng;
  rng.seed(5);
  in.px.resize((size_t)n);
  in.py.resize((size_t)n);
  for (int i = 0; i < n; i++) {
    // Two separate statements: x's number is drawn before y's.
    float x = (float)(rng.next_u32() % 10000u) / 10000.0f;
    float y = (float)(rng.next_u32() % 10000u) / 10000.0f;
    in.px[(size_t)i] = x;
    in.py[(size_t)i] = y;
  }
  return in;
}

// The cell of a particle, as the BSGP program and the CUDA kernel compute
// it (single-precision multiply, truncation toward zero).
inline int particle_cell(float x, float y, int grid) {
  int cx = (int)(x * (float)grid);
  int cy = (int)(y * (float)grid);
  return cy * grid + cx;
}

inline void particle_binning_cpu(const ParticleInput& in, std::vector<float>& sx,
                                 std::vector<float>& sy,
                                 std::vector<int>& cellStart,
                                 std::vector<int>& cellEnd) {
  int cells = in.grid * in.grid;
  std::vector<int> cell((size_t)in.n);
  std::vector<long long> start((size_t)cells + 1, 0);
  for (int i = 0; i < in.n; i++) {
    cell[(size_t)i] = particle_cell(in.px[(size_t)i], in.py[(size_t)i], in.grid);
    start[(size_t)cell[(size_t)i] + 1]++;
  }
  for (int c = 0; c < cells; c++) start[(size_t)c + 1] += start[c];
  cellStart.assign((size_t)cells, 0);
  cellEnd.assign((size_t)cells, 0);
  for (int c = 0; c < cells; c++)
    if (start[(size_t)c + 1] > start[c]) {
      cellStart[c] = (int)start[c];
      cellEnd[c] = (int)start[(size_t)c + 1];
    }
  sx.assign((size_t)in.n, 0.0f);
  sy.assign((size_t)in.n, 0.0f);
  std::vector<long long> next(start.begin(), start.end() - 1);
  for (int i = 0; i < in.n; i++) {
    long long r = next[(size_t)cell[(size_t)i]]++;
    sx[(size_t)r] = in.px[(size_t)i];
    sy[(size_t)r] = in.py[(size_t)i];
  }
}

inline void print_particles(int n, int grid, const std::vector<float>& sx,
                            const std::vector<float>& sy,
                            const std::vector<int>& cellStart,
                            const std::vector<int>& cellEnd) {
  int cells = grid * grid;
  long long ranges = 0;
  int occupied = 0;
  for (int c = 0; c < cells; c++) {
    ranges = ranges + (long long)cellStart[c] * (long long)(c + 1) +
             (long long)cellEnd[c];
    if (cellEnd[c] > cellStart[c]) occupied++;
  }
  double order = 0.0;
  for (int i = 0; i < n; i++) {
    // (order + sx*w) + sy, in this order, as the BSGP program adds.
    double t = (double)sx[(size_t)i] * (double)(i % 5 + 1);
    order = order + t;
    order = order + (double)sy[(size_t)i];
  }
  printf("cells %d occupied %d ranges %lld order %.4f\n", cells, occupied,
         ranges, order);
}

// ---------------------------------------------------------------------------
// Sorting 32-bit keys (bench/gpu/src/sort.bsgp, sort_torch.py, sort_cub.cu):
// keys[i] = (int)rand_u32() after rand_seed(7); the checksums of the sorted
// keys and of the sort_idx permutation.
inline std::vector<int> sort_keys(int n) {
  SplitMix64 rng;
  rng.seed(7);
  std::vector<int> keys((size_t)n);
  for (int i = 0; i < n; i++) keys[(size_t)i] = (int)rng.next_u32();
  return keys;
}

inline void print_sort(int n, const std::vector<int>& sortedKeys,
                       const std::vector<int>& sortedIdx) {
  long long k = 0, x = 0;
  for (int i = 0; i < n; i++) {
    k += (long long)sortedKeys[(size_t)i] * (long long)(i % 13 + 1);
    x += (long long)sortedIdx[(size_t)i] * (long long)(i % 7 + 1);
  }
  printf("sort n %d keys-checksum %lld idx-checksum %lld\n", n, k, x);
}

// ---------------------------------------------------------------------------
// Scan and reduce (bench/gpu/src/scan_reduce.bsgp, bandwidth.cu): input
// a[i] = i % 5. The total and the exclusive prefix at n/2 by formula.
inline long long prefix_mod5(long long count) {  // sum of i % 5, i < count
  long long q = count / 5, r = count % 5;
  return 10 * q + r * (r - 1) / 2;
}

}  // namespace bench

// ---------------------------------------------------------------------------
#ifdef __CUDACC__
#include <cuda_runtime.h>

namespace bench {
// While count_launches captures a run, a failing CUDA call only marks the
// capture as failed (the count is then unknown) instead of exiting.
inline bool g_capturing = false;
inline bool g_capture_failed = false;
}  // namespace bench

#define CUDA_CHECK(call)                                                     \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) {                                               \
      fprintf(stderr, "%s:%d: CUDA error %s: %s\n", __FILE__, __LINE__,      \
              cudaGetErrorName(err_), cudaGetErrorString(err_));             \
      if (!bench::g_capturing) exit(1);                                      \
      bench::g_capture_failed = true;                                        \
    }                                                                        \
  } while (0)

namespace bench {

// Runs `work` (which must put all its work on `stream`) `warmup` times,
// then `reps` times between two CUDA events each; returns the median of
// the repetitions in milliseconds. The median host wall time of a
// repetition (from before the start event to the return of the stop
// event's synchronize: what a wtime() pair around a synchronizing call
// sees) goes to *wallMs.
template <class Work>
double time_median_ms(cudaStream_t stream, int warmup, int reps, Work&& work,
                      double* wallMs = nullptr) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int w = 0; w < warmup; w++) work();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> times, walls;
  for (int r = 0; r < reps; r++) {
    auto t0 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaEventRecord(start, stream));
    work();
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    auto t1 = std::chrono::steady_clock::now();
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back((double)ms);
    walls.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  if (wallMs) *wallMs = median(walls);
  return median(times);
}

struct LaunchCount {
  int kernels = -1;  // -1: the capture failed, count unknown
  int memsets = -1;
  int memcpys = -1;
};

// Captures one run of `work` on `stream` into a CUDA graph (nothing
// executes) and counts its kernel, memset and memcpy nodes: the launches
// one run makes, CUB's internal kernels included.
template <class Work>
LaunchCount count_launches(cudaStream_t stream, Work&& work) {
  LaunchCount count;
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return count;
  }
  g_capturing = true;
  g_capture_failed = false;
  work();
  g_capturing = false;
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (ended != cudaSuccess || graph == nullptr || g_capture_failed) {
    fprintf(stderr, "launch count unavailable: the run could not be captured\n");
    if (graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return count;
  }
  size_t numNodes = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &numNodes));
  std::vector<cudaGraphNode_t> nodes(numNodes);
  if (numNodes > 0) CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &numNodes));
  count.kernels = count.memsets = count.memcpys = 0;
  for (size_t i = 0; i < numNodes; i++) {
    cudaGraphNodeType type;
    CUDA_CHECK(cudaGraphNodeGetType(nodes[i], &type));
    if (type == cudaGraphNodeTypeKernel) count.kernels++;
    if (type == cudaGraphNodeTypeMemset) count.memsets++;
    if (type == cudaGraphNodeTypeMemcpy) count.memcpys++;
  }
  CUDA_CHECK(cudaGraphDestroy(graph));
  return count;
}

// Printed as soon as it is measured, before the launch count.
inline void print_ms(double ms, double wallMs) {
  printf("bench-ms %.4f\n", ms);
  printf("bench-wall-ms %.4f\n", wallMs);
  fflush(stdout);
}

inline void print_bench(const LaunchCount& launches, long long tempBytes,
                        long long bytesMoved) {
  printf("bench-kernels %d\n", launches.kernels);
  printf("bench-memsets %d\n", launches.memsets);
  if (launches.memcpys > 0) printf("bench-memcpys %d\n", launches.memcpys);
  printf("bench-temp-bytes %lld\n", tempBytes);
  if (bytesMoved > 0) printf("bench-bytes %lld\n", bytesMoved);
}

inline void print_device() {
  int dev = 0;
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  fprintf(stderr, "device: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major,
          prop.minor, prop.multiProcessorCount);
}

}  // namespace bench
#endif  // __CUDACC__
