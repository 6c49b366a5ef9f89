// CUB reference for sort_idx / sortby on 32-bit keys: a stable sort of
// argi(0) (default 16M) signed int32 keys returning the sorted keys and the
// sorting permutation (sort_idx semantics: idx[i] = position of the i-th
// smallest key, equal keys in position order), with 32-bit indices.
//
// What it measures: an iota kernel (idx = 0, 1, ...) plus
// cub::DeviceRadixSort::SortPairs(keys, idx) on all 32 bits; the keys are
// those of bench/gpu/src/sort.bsgp and sort_torch.py (rand_seed(7), keys[i]
// = (int)rand_u32()). torch.sort (sort_torch.py) is the issue's reference;
// this is CUB without torch's 64-bit indices. Prints the same result line
// as sort.bsgp and sort_torch.py, "verify ok" on stderr when the output is
// the stable sort of the input (checked on the host: ordered keys,
// keys[idx[i]] = sorted[i], idx a permutation, increasing within equal
// keys), then the bench-* lines (common.h): median ms of argi(1)
// repetitions after 3 warm-ups, launches of one run, temporary bytes.
//
// Build and run (the GPU machine; bench/gpu/run.sh does this):
//   nvcc -O3 -arch=sm_90 -std=c++17 -o sort_cub bench/baselines/sort_cub.cu
//   ./sort_cub 16777216 50                 # keys repetitions
#include "common.h"

#include <cub/device/device_radix_sort.cuh>

__global__ void iota_kernel(int* __restrict__ idx, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) idx[i] = i;
}

int main(int argc, char** argv) {
  int n = bench::argi(argc, argv, 0, 16777216);
  int reps = bench::argi(argc, argv, 1, 50);
  if (n < 1 || reps < 1) {
    fprintf(stderr, "usage: sort_cub KEYS [REPS]\n");
    return 2;
  }
  std::vector<int> keys = bench::sort_keys(n);
  bench::print_device();

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int *dKeys, *dSortedKeys, *dSortedIdx, *dIdx;
  CUDA_CHECK(cudaMalloc(&dKeys, sizeof(int) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dSortedKeys, sizeof(int) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dSortedIdx, sizeof(int) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dIdx, sizeof(int) * (size_t)n));  // temporary
  CUDA_CHECK(cudaMemcpy(dKeys, keys.data(), sizeof(int) * (size_t)n,
                        cudaMemcpyHostToDevice));
  size_t cubBytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, cubBytes, dKeys,
                                             dSortedKeys, dIdx, dSortedIdx, n,
                                             0, 32, stream));
  void* dCub = nullptr;
  CUDA_CHECK(cudaMalloc(&dCub, cubBytes));
  const long long tempBytes = (long long)sizeof(int) * n + (long long)cubBytes;

  const int block = 256;
  const int blocks = (n + block - 1) / block;
  auto sortIdx = [&]() {
    iota_kernel<<<blocks, block, 0, stream>>>(dIdx, n);
    CUDA_CHECK(cudaGetLastError());
    size_t bytes = cubBytes;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(dCub, bytes, dKeys, dSortedKeys,
                                               dIdx, dSortedIdx, n, 0, 32,
                                               stream));
  };

  sortIdx();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<int> sorted((size_t)n), idx((size_t)n);
  CUDA_CHECK(cudaMemcpy(sorted.data(), dSortedKeys, sizeof(int) * (size_t)n,
                        cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(idx.data(), dSortedIdx, sizeof(int) * (size_t)n,
                        cudaMemcpyDeviceToHost));
  long long bad = 0;
  std::vector<char> seen((size_t)n, 0);
  for (int i = 0; i < n; i++) {
    int j = idx[(size_t)i];
    if (j < 0 || j >= n || seen[(size_t)j]) { bad++; continue; }
    seen[(size_t)j] = 1;
    if (keys[(size_t)j] != sorted[(size_t)i]) bad++;
    if (i > 0 && (sorted[(size_t)i - 1] > sorted[(size_t)i] ||
                  (sorted[(size_t)i - 1] == sorted[(size_t)i] && idx[(size_t)i - 1] > j)))
      bad++;
  }
  bench::print_sort(n, sorted, idx);
  if (bad) {
    fprintf(stderr, "verify FAILED: %lld positions wrong\n", bad);
    return 1;
  }
  fprintf(stderr, "verify ok\n");

  double wallMs = 0.0;
  double ms = bench::time_median_ms(stream, 3, reps, sortIdx, &wallMs);
  bench::print_ms(ms, wallMs);
  bench::LaunchCount launches = bench::count_launches(stream, sortIdx);
  bench::print_bench(launches, tempBytes, 0);

  CUDA_CHECK(cudaFree(dCub));
  CUDA_CHECK(cudaFree(dIdx));
  CUDA_CHECK(cudaFree(dSortedIdx));
  CUDA_CHECK(cudaFree(dSortedKeys));
  CUDA_CHECK(cudaFree(dKeys));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
