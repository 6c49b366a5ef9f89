// Which first costs does a program's first timed kernel pay (PERF.md,
// "Validation on the H200", the launch floor)? Each timed
// kernel runs right behind a 50 us spin kernel (so the host's launch
// latency is hidden, as with pgpu's launch gate); events bracket it.
#include <cstdio>
#include <cuda_runtime.h>
__device__ int g_module_word[1024];
__global__ void spin(long long cycles) { long long t = clock64(); while (clock64() - t < cycles) {} }
__global__ void empty() {}
__global__ void touch_a(int *p) { if (threadIdx.x == 0) p[0] += 1; }
__global__ void touch_b(int *p) { if (threadIdx.x == 0) p[0] += 2; }
__global__ void touch_module() { if (threadIdx.x == 0) g_module_word[0] += 1; }
static float timed(void (*launch)(void *), void *arg) {
  cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
  spin<<<1, 32>>>(100000);
  cudaEventRecord(s); launch(arg); cudaEventRecord(e); cudaEventSynchronize(e);
  float ms; cudaEventElapsedTime(&ms, s, e); return ms * 1000.0f;
}
static void l_empty(void *) { empty<<<1, 32>>>(); }
static void l_a(void *p) { touch_a<<<1, 32>>>((int *)p); }
static void l_b(void *p) { touch_b<<<1, 32>>>((int *)p); }
static void l_mod(void *) { touch_module<<<1, 32>>>(); }
int main() {
  int *x, *y; cudaMalloc(&x, 1 << 20); cudaMalloc(&y, 64 << 20); cudaMemset(x, 0, 1 << 20); cudaMemset(y, 0, 64 << 20);
  spin<<<1, 32>>>(1000); cudaDeviceSynchronize();
  printf("empty(first) %.2f ", timed(l_empty, 0));
  printf("empty %.2f ", timed(l_empty, 0));
  printf("touch_a(x,first fn) %.2f ", timed(l_a, x));
  printf("touch_a(x) %.2f ", timed(l_a, x));
  printf("touch_b(x,first fn) %.2f ", timed(l_b, x));
  printf("touch_b(y+32MB,first page) %.2f ", timed(l_b, (char *)y + (32 << 20)));
  printf("touch_b(y+32MB) %.2f ", timed(l_b, (char *)y + (32 << 20)));
  printf("module(first) %.2f ", timed(l_mod, 0));
  printf("module %.2f\n", timed(l_mod, 0));
  return 0;
}
