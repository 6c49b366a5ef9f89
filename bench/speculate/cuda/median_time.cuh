// The median time of `repeat` launches of a kernel (after one warm-up
// launch), timed with CUDA events, for bench/speculate/cuda's programs.
#pragma once
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

template <typename Launch>
float median_kernel_ms(Launch launch, int repeat) {
  launch();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int r = 0; r < std::max(repeat, 1); r++) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}
