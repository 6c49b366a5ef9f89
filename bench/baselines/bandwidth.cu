// Memory-bandwidth references on argi(0) (default 256M) int32 elements:
//   copy         cudaMemcpyAsync device to device (the copy bandwidth the
//                issue's scan/reduce goal, >= 80%, is measured against)
//   copy_kernel  a 16-byte-vector copy kernel (what a kernel can stream)
//   scan         cub::DeviceScan::InclusiveSum, int32 in -> int32 out
//   reduce       cub::DeviceReduce::Sum, int32 in -> one int32
// The input is a[i] = i % 5 (bench/gpu/src/scan_reduce.bsgp uses the same),
// filled on the device outside the timed region.
//
// What it prints: the mode's result line (scan/reduce: the same line as
// scan_reduce.bsgp: the total and the exclusive prefix at n/2), "verify ok"
// on stderr when every output element is right (checked on the device by
// formula; exit 1 if not), then the bench-* lines (common.h): median ms of
// argi(1) repetitions after 3 warm-ups (CUDA events), launches of one run,
// CUB's temporary bytes, and bench-bytes, the bytes read + written by one
// run (copy and scan: 2 * 4n, reduce: 4n); GB/s = bytes / time.
//
// Build and run (the GPU machine; bench/gpu/run.sh does this):
//   nvcc -O3 -arch=sm_90 -std=c++17 -o bandwidth bench/baselines/bandwidth.cu
//   ./bandwidth copy 268435456 20          # MODE elements repetitions
//   ./bandwidth scan 268435456 20
#include "common.h"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <string>

__global__ void fill_kernel(int* __restrict__ a, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) a[i] = (int)(i % 5);
}

__global__ void copy_kernel(const int4* __restrict__ in, int4* __restrict__ out,
                            size_t n4, const int* __restrict__ inTail,
                            int* __restrict__ outTail, int tail) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n4) out[i] = in[i];
  if (i < (size_t)tail) outTail[i] = inTail[i];
}

__device__ long long prefix_mod5_dev(long long count) {
  long long q = count / 5, r = count % 5;
  return 10 * q + r * (r - 1) / 2;
}

// inclusive = 1: out[i] must be the inclusive prefix of i % 5;
// inclusive = 0: out[i] must be i % 5 (a copy).
__global__ void check_kernel(const int* __restrict__ out, size_t n, int inclusive,
                             unsigned long long* __restrict__ bad) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long expect = inclusive ? prefix_mod5_dev((long long)i + 1) : (long long)(i % 5);
  if ((long long)out[i] != expect) atomicAdd(bad, 1ull);
}

static unsigned long long check(const int* dOut, size_t n, int inclusive) {
  unsigned long long* dBad;
  CUDA_CHECK(cudaMalloc(&dBad, sizeof(unsigned long long)));
  CUDA_CHECK(cudaMemset(dBad, 0, sizeof(unsigned long long)));
  check_kernel<<<(unsigned)((n + 255) / 256), 256>>>(dOut, n, inclusive, dBad);
  CUDA_CHECK(cudaGetLastError());
  unsigned long long bad = 0;
  CUDA_CHECK(cudaMemcpy(&bad, dBad, sizeof(bad), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(dBad));
  return bad;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  int subArgc = argc - 1;
  char** subArgv = argv + 1;
  int n = bench::argi(subArgc, subArgv, 0, 268435456);
  int reps = bench::argi(subArgc, subArgv, 1, 20);
  if ((mode != "copy" && mode != "copy_kernel" && mode != "scan" && mode != "reduce") ||
      n < 2 || reps < 1) {
    fprintf(stderr, "usage: bandwidth copy|copy_kernel|scan|reduce [ELEMENTS] [REPS]\n");
    return 2;
  }
  bench::print_device();
  const size_t count = (size_t)n;

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int *dIn, *dOut, *dTotal;
  CUDA_CHECK(cudaMalloc(&dIn, sizeof(int) * count));
  CUDA_CHECK(cudaMalloc(&dOut, sizeof(int) * count));
  CUDA_CHECK(cudaMalloc(&dTotal, sizeof(int)));
  fill_kernel<<<(unsigned)((count + 255) / 256), 256>>>(dIn, count);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  size_t cubBytes = 0;
  if (mode == "scan")
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, cubBytes, dIn, dOut, n, stream));
  if (mode == "reduce")
    CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, cubBytes, dIn, dTotal, n, stream));
  void* dCub = nullptr;
  if (cubBytes) CUDA_CHECK(cudaMalloc(&dCub, cubBytes));

  const size_t n4 = count / 4;
  const int tail = (int)(count % 4);
  const unsigned copyBlocks = (unsigned)((std::max(n4, (size_t)tail) + 255) / 256);
  auto run = [&]() {
    size_t bytes = cubBytes;
    if (mode == "copy") {
      CUDA_CHECK(cudaMemcpyAsync(dOut, dIn, sizeof(int) * count,
                                 cudaMemcpyDeviceToDevice, stream));
    } else if (mode == "copy_kernel") {
      copy_kernel<<<copyBlocks, 256, 0, stream>>>(
          reinterpret_cast<const int4*>(dIn), reinterpret_cast<int4*>(dOut), n4,
          dIn + n4 * 4, dOut + n4 * 4, tail);
      CUDA_CHECK(cudaGetLastError());
    } else if (mode == "scan") {
      CUDA_CHECK(cub::DeviceScan::InclusiveSum(dCub, bytes, dIn, dOut, n, stream));
    } else {
      CUDA_CHECK(cub::DeviceReduce::Sum(dCub, bytes, dIn, dTotal, n, stream));
    }
  };

  run();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  unsigned long long bad = 0;
  long long bytesMoved = 2LL * (long long)sizeof(int) * n;
  if (mode == "copy" || mode == "copy_kernel") {
    bad = check(dOut, count, 0);
    printf("%s n %d\n", mode.c_str(), n);
  } else if (mode == "scan") {
    bad = check(dOut, count, 1);
    int total = 0, atHalf = 0;
    CUDA_CHECK(cudaMemcpy(&total, dOut + (count - 1), sizeof(int), cudaMemcpyDeviceToHost));
    if (n / 2 >= 1)
      CUDA_CHECK(cudaMemcpy(&atHalf, dOut + (n / 2 - 1), sizeof(int),
                            cudaMemcpyDeviceToHost));
    printf("scan n %d total %d at-half %d\n", n, total, atHalf);
  } else {
    bytesMoved = (long long)sizeof(int) * n;
    int total = 0;
    CUDA_CHECK(cudaMemcpy(&total, dTotal, sizeof(int), cudaMemcpyDeviceToHost));
    bad = (long long)total != bench::prefix_mod5(n);
    printf("reduce n %d total %d\n", n, total);
  }
  if (bad) {
    fprintf(stderr, "verify FAILED: %llu elements wrong\n", bad);
    return 1;
  }
  fprintf(stderr, "verify ok\n");

  double wallMs = 0.0;
  double ms = bench::time_median_ms(stream, 3, reps, run, &wallMs);
  bench::print_ms(ms, wallMs);
  bench::LaunchCount launches = bench::count_launches(stream, run);
  bench::print_bench(launches, (long long)cubBytes, bytesMoved);
  fprintf(stderr, "%s: %.1f GB/s\n", mode.c_str(), (double)bytesMoved / (ms * 1e6));

  if (dCub) CUDA_CHECK(cudaFree(dCub));
  CUDA_CHECK(cudaFree(dTotal));
  CUDA_CHECK(cudaFree(dOut));
  CUDA_CHECK(cudaFree(dIn));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
