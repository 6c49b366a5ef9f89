// The MD loop of examples/speculate/md.c without speculation: one CUDA
// thread per atom, with partners that are never atoms of the loop (share
// 0), so that the iterations are independent and the plain kernel is
// correct. It bounds what any TLS scheme can reach with one thread per
// iteration on this GPU (bench/speculate/run.py's weight table).
// Arguments: atoms, partners per atom, weight, repetitions. Prints the
// median kernel time as `kernel-ms T`.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include "median_time.cuh"

__device__ double force(double a, double b, int weight) {
  double total = 0.0;
  for (int s = 0; s < weight; s++) {
    double d = (a - b) * (1.0 + s * 0.001);
    total += d / (0.1 + d * d * d * d);
  }
  return total / weight;
}

__global__ void md(const double* X, double* Y, const int* partners, int atoms, int per, int weight) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= atoms) return;
  for (int k = 0; k < per; k++) {
    int j = partners[i * per + k];
    double f = force(X[i], X[j], weight);
    Y[i] += f;
    Y[j] -= f;
  }
}

int main(int argc, char** argv) {
  int atoms = argc > 1 ? atoi(argv[1]) : 8192;
  int per = argc > 2 ? atoi(argv[2]) : 16;
  int weight = argc > 3 ? atoi(argv[3]) : 1;
  int repeat = argc > 4 ? atoi(argv[4]) : 5;
  int all = atoms * (per + 1);
  std::vector<double> x(all);
  std::vector<int> partners(atoms * per);
  srand(7);
  for (auto& value : x) value = (rand() % 1000) / 100.0;
  for (int a = 0; a < atoms; a++)
    for (int k = 0; k < per; k++) partners[a * per + k] = atoms + a * per + k;
  double *X, *Y;
  int* P;
  cudaMalloc(&X, all * sizeof(double));
  cudaMalloc(&Y, all * sizeof(double));
  cudaMalloc(&P, atoms * per * sizeof(int));
  cudaMemcpy(X, x.data(), all * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(P, partners.data(), atoms * per * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemset(Y, 0, all * sizeof(double));
  // Blocks of 64 threads spread 8192 atoms over every multiprocessor.
  int block = 64, blocks = (atoms + block - 1) / block;
  float ms = median_kernel_ms([&] { md<<<blocks, block>>>(X, Y, P, atoms, per, weight); }, repeat);
  if (cudaGetLastError() != cudaSuccess) return 1;
  printf("kernel-ms %.3f\n", ms);
  return 0;
}
