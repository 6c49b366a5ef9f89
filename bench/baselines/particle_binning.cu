// Hand-written CUDA baseline of the particle binning module
// (examples/bsgp/particle_binning.bsgp; the sorting-based grid of the
// paper's fluid simulation, Section 6, which rewrote the CUDA SDK
// "particles" demo): sort the particles by grid cell and record each
// cell's [start, end) range.
//
// What it measures: binParticles only (not input generation, not the
// copies), on the same input as the .bsgp program (argi(0) particles,
// argi(1) x argi(1) cells, rand_seed(5), SplitMix64). The structure of the
// CUDA SDK demo:
//   1. hash kernel: cell[i] = cy * grid + cx, index[i] = i;
//   2. cub::DeviceRadixSort::SortPairs of (cell, index) on the bits the cell
//      ids need (ceil(log2 cells); argi(3) > 0 forces that many bits);
//   3. reorder kernel: sx/sy[rk] = px/py[sortedIndex[rk]], and cellStart /
//      cellEnd where the sorted cell id changes between neighbours.
// Buffers (CUB's temporary storage included) are allocated once, outside
// the timed region; cellStart/cellEnd are cleared once, as the .bsgp
// program's main does (a run rewrites the same entries).
// Prints the .bsgp program's result line, "verify ok" on stderr when the
// GPU result equals the CPU reference element by element (exit 1 if not),
// then the bench-* lines (common.h): median ms of argi(2) repetitions after
// 3 warm-ups, kernel launches and memsets of one run (graph capture), peak
// temporary device memory (cell, index, sorted cell, sorted index, CUB's
// temporary storage).
//
// Build and run (the GPU machine; bench/gpu/run.sh does this):
//   nvcc -O3 -arch=sm_90 -std=c++17 -o particle_binning bench/baselines/particle_binning.cu
//   ./particle_binning 1048576 512 100     # particles grid repetitions [bits]
//   ./particle_binning 500 8               # = pgpu run --interpret examples/bsgp/particle_binning.bsgp -- 500 8
#include "common.h"

#include <cub/device/device_radix_sort.cuh>

__global__ void hash_kernel(const float* __restrict__ px,
                            const float* __restrict__ py, int n, int grid,
                            unsigned* __restrict__ cell,
                            int* __restrict__ index) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // The same single-precision arithmetic as the BSGP program.
  int cx = (int)(__fmul_rn(px[i], (float)grid));
  int cy = (int)(__fmul_rn(py[i], (float)grid));
  cell[i] = (unsigned)(cy * grid + cx);
  index[i] = i;
}

__global__ void reorder_kernel(const unsigned* __restrict__ sortedCell,
                               const int* __restrict__ sortedIndex,
                               const float* __restrict__ px,
                               const float* __restrict__ py, int n,
                               float* __restrict__ sx, float* __restrict__ sy,
                               int* __restrict__ cellStart,
                               int* __restrict__ cellEnd) {
  int rk = blockIdx.x * blockDim.x + threadIdx.x;
  if (rk >= n) return;
  unsigned c = sortedCell[rk];
  int j = sortedIndex[rk];
  sx[rk] = px[j];
  sy[rk] = py[j];
  if (rk == 0 || sortedCell[rk - 1] != c) cellStart[c] = rk;
  if (rk == n - 1 || sortedCell[rk + 1] != c) cellEnd[c] = rk + 1;
}

int main(int argc, char** argv) {
  int n = bench::argi(argc, argv, 0, 500);
  int grid = bench::argi(argc, argv, 1, 8);
  int reps = bench::argi(argc, argv, 2, 100);
  int bitsArg = bench::argi(argc, argv, 3, 0);
  if (n < 1 || grid < 1 || reps < 1 || (long long)grid * grid > 0x7fffffffLL) {
    fprintf(stderr, "usage: particle_binning PARTICLES GRID [REPS] [BITS]\n");
    return 2;
  }
  const int cells = grid * grid;
  const int endBit = bitsArg > 0 ? std::min(bitsArg, 32) : bench::bits_for(cells);

  bench::ParticleInput in = bench::particle_input(n, grid);
  bench::print_device();

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Inputs and outputs of binParticles.
  float *dPx, *dPy, *dSx, *dSy;
  int *dCellStart, *dCellEnd;
  CUDA_CHECK(cudaMalloc(&dPx, sizeof(float) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dPy, sizeof(float) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dSx, sizeof(float) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dSy, sizeof(float) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dCellStart, sizeof(int) * (size_t)cells));
  CUDA_CHECK(cudaMalloc(&dCellEnd, sizeof(int) * (size_t)cells));
  CUDA_CHECK(cudaMemcpy(dPx, in.px.data(), sizeof(float) * (size_t)n,
                        cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dPy, in.py.data(), sizeof(float) * (size_t)n,
                        cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dCellStart, 0, sizeof(int) * (size_t)cells));
  CUDA_CHECK(cudaMemset(dCellEnd, 0, sizeof(int) * (size_t)cells));

  // Temporaries.
  unsigned *dCell, *dSortedCell;
  int *dIndex, *dSortedIndex;
  CUDA_CHECK(cudaMalloc(&dCell, sizeof(unsigned) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dSortedCell, sizeof(unsigned) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dIndex, sizeof(int) * (size_t)n));
  CUDA_CHECK(cudaMalloc(&dSortedIndex, sizeof(int) * (size_t)n));
  size_t cubBytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, cubBytes, dCell,
                                             dSortedCell, dIndex, dSortedIndex,
                                             n, 0, endBit, stream));
  void* dCub = nullptr;
  CUDA_CHECK(cudaMalloc(&dCub, cubBytes));
  const long long tempBytes = (long long)sizeof(int) * n * 4 + (long long)cubBytes;

  const int block = 256;
  const int blocks = (n + block - 1) / block;
  auto binParticles = [&]() {
    hash_kernel<<<blocks, block, 0, stream>>>(dPx, dPy, n, grid, dCell, dIndex);
    CUDA_CHECK(cudaGetLastError());
    size_t bytes = cubBytes;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(dCub, bytes, dCell, dSortedCell,
                                               dIndex, dSortedIndex, n, 0,
                                               endBit, stream));
    reorder_kernel<<<blocks, block, 0, stream>>>(dSortedCell, dSortedIndex, dPx,
                                                 dPy, n, dSx, dSy, dCellStart,
                                                 dCellEnd);
    CUDA_CHECK(cudaGetLastError());
  };

  binParticles();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> sx((size_t)n), sy((size_t)n);
  std::vector<int> cs((size_t)cells), ce((size_t)cells);
  CUDA_CHECK(cudaMemcpy(sx.data(), dSx, sizeof(float) * (size_t)n, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(sy.data(), dSy, sizeof(float) * (size_t)n, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(cs.data(), dCellStart, sizeof(int) * (size_t)cells,
                        cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(ce.data(), dCellEnd, sizeof(int) * (size_t)cells,
                        cudaMemcpyDeviceToHost));
  std::vector<float> refSx, refSy;
  std::vector<int> refCs, refCe;
  bench::particle_binning_cpu(in, refSx, refSy, refCs, refCe);
  long long bad = 0;
  for (int i = 0; i < n; i++)
    bad += (sx[(size_t)i] != refSx[(size_t)i]) + (sy[(size_t)i] != refSy[(size_t)i]);
  for (int c = 0; c < cells; c++)
    bad += (cs[(size_t)c] != refCs[(size_t)c]) + (ce[(size_t)c] != refCe[(size_t)c]);
  bench::print_particles(n, grid, sx, sy, cs, ce);
  if (bad) {
    fprintf(stderr, "verify FAILED: %lld elements differ from the CPU reference\n", bad);
    return 1;
  }
  fprintf(stderr, "verify ok (radix sort on bits [0, %d))\n", endBit);

  double wallMs = 0.0;
  double ms = bench::time_median_ms(stream, 3, reps, binParticles, &wallMs);
  bench::print_ms(ms, wallMs);
  bench::LaunchCount launches = bench::count_launches(stream, binParticles);
  bench::print_bench(launches, tempBytes, 0);

  CUDA_CHECK(cudaFree(dCub));
  CUDA_CHECK(cudaFree(dSortedIndex));
  CUDA_CHECK(cudaFree(dIndex));
  CUDA_CHECK(cudaFree(dSortedCell));
  CUDA_CHECK(cudaFree(dCell));
  CUDA_CHECK(cudaFree(dCellEnd));
  CUDA_CHECK(cudaFree(dCellStart));
  CUDA_CHECK(cudaFree(dSy));
  CUDA_CHECK(cudaFree(dSx));
  CUDA_CHECK(cudaFree(dPy));
  CUDA_CHECK(cudaFree(dPx));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
