// The CFD loop of examples/speculate/cfd.c without speculation: one CUDA
// thread per edge, with no repeated edges (share 0), so that the edges
// touch distinct nodes (while there are at least twice as many nodes as
// edges) and the plain kernel is correct. It bounds what any TLS scheme can
// reach with one thread per iteration on this GPU (bench/speculate/run.py's
// weight table). Arguments: nodes, edges, weight, repetitions. Prints the
// median kernel time as `kernel-ms T`.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include "median_time.cuh"

__device__ double flux(double a, double b, int weight) {
  double total = 0.0;
  for (int s = 0; s < weight; s++) {
    double d = (a - b) * (1.0 + s * 0.001);
    total += 0.5 * d / (1.0 + d * d);
  }
  return total / weight;
}

__device__ double relax(double a, double b, int weight) {
  double total = 0.0;
  for (int s = 0; s < weight; s++) {
    double c = b * (1.0 + s * 0.001);
    total += 0.25 * (a + c) / (1.0 + a * a + c * c);
  }
  return total / weight;
}

__global__ void cfd(const double* X, double* Y, const int* left, const int* right, int edges, int weight) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= edges) return;
  int n1 = left[i], n2 = right[i];
  Y[n1] += flux(X[n1], X[n2], weight);
  Y[n2] += relax(X[n1], X[n2], weight);
}

int main(int argc, char** argv) {
  int nodes = argc > 1 ? atoi(argv[1]) : 16384;
  int edges = argc > 2 ? atoi(argv[2]) : 8192;
  int weight = argc > 3 ? atoi(argv[3]) : 1;
  int repeat = argc > 4 ? atoi(argv[4]) : 5;
  std::vector<double> x(nodes);
  std::vector<int> left(edges), right(edges);
  srand(7);
  for (auto& value : x) value = (rand() % 1000) / 100.0;
  for (int e = 0; e < edges; e++) {
    left[e] = (int)((long long)(2 * e % nodes) * 7919 % nodes);
    right[e] = (int)((long long)((2 * e + 1) % nodes) * 7919 % nodes);
  }
  double *X, *Y;
  int *L, *R;
  cudaMalloc(&X, nodes * sizeof(double));
  cudaMalloc(&Y, nodes * sizeof(double));
  cudaMalloc(&L, edges * sizeof(int));
  cudaMalloc(&R, edges * sizeof(int));
  cudaMemcpy(X, x.data(), nodes * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(L, left.data(), edges * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemcpy(R, right.data(), edges * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemset(Y, 0, nodes * sizeof(double));
  int block = 64, blocks = (edges + block - 1) / block;
  float ms = median_kernel_ms([&] { cfd<<<blocks, block>>>(X, Y, L, R, edges, weight); }, repeat);
  if (cudaGetLastError() != cudaSuccess) return 1;
  printf("kernel-ms %.3f\n", ms);
  return 0;
}
