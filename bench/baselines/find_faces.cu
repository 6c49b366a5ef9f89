// Hand-written CUDA baseline of the paper's findFaces (seeds/bsgp.txt,
// Listings 1 and 9; examples/bsgp/listing1_find_faces.bsgp and
// listing9_find_faces_get.bsgp): for every vertex of a triangle mesh, the
// triangles around it, sorted by vertex.
//
// What it measures: the findFaces part only (not input generation, not the
// copies to and from the device), on the same input as the .bsgp program
// (argi(0) triangles over argi(1) vertices, rand_seed(1), SplitMix64):
//   1. face_ids kernel: faceOf[i] = i / 3;
//   2. cub::DeviceRadixSort::SortPairs of (ib[i], faceOf[i]) on the bits the
//      vertex ids need (ceil(log2 m); argi(3) > 0 forces that many bits),
//      the sorted faces landing directly in pf;
//   3. heads kernel: hd[v] = rk where rank rk starts the run of vertex v.
// All buffers (including CUB's temporary storage) are allocated once,
// outside the timed region, as a CUDA programmer would between frames. A
// run leaves the same pf and hd, so repetitions need no reset.
// Prints the .bsgp program's checksum line, "verify ok" on stderr when the
// GPU result equals the CPU reference element by element (exit 1 if not),
// then the bench-* lines (common.h): median ms of argi(2) repetitions after
// 3 warm-ups (CUDA events), kernel launches and memsets of one run (counted
// by capturing one run into a CUDA graph), and the peak temporary device
// memory (faceOf, the sorted keys, CUB's temporary storage).
//
// Build and run (the GPU machine; bench/gpu/run.sh does this):
//   nvcc -O3 -arch=sm_90 -std=c++17 -o find_faces bench/baselines/find_faces.cu
//   ./find_faces 1000000 500000 100        # triangles vertices repetitions [bits]
//   ./find_faces 200 97                    # = pgpu run --interpret examples/bsgp/listing1_find_faces.bsgp -- 200 97
#include "common.h"

#include <cub/device/device_radix_sort.cuh>

__global__ void face_ids_kernel(int* __restrict__ faceOf, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) faceOf[i] = i / 3;
}

__global__ void heads_kernel(const unsigned* __restrict__ sortedV,
                             int* __restrict__ hd, int count) {
  int rk = blockIdx.x * blockDim.x + threadIdx.x;
  if (rk >= count) return;
  unsigned v = sortedV[rk];
  if (rk == 0 || sortedV[rk - 1] != v) hd[v] = rk;
}

int main(int argc, char** argv) {
  int n = bench::argi(argc, argv, 0, 200);
  int m = bench::argi(argc, argv, 1, 97);
  int reps = bench::argi(argc, argv, 2, 100);
  int bitsArg = bench::argi(argc, argv, 3, 0);
  if (n < 1 || m < 1 || reps < 1 || (long long)n * 3 > 0x7fffffffLL) {
    fprintf(stderr, "usage: find_faces TRIANGLES VERTICES [REPS] [BITS]\n");
    return 2;
  }
  const int count = n * 3;
  const int endBit = bitsArg > 0 ? std::min(bitsArg, 32) : bench::bits_for(m);

  bench::FindFacesInput in = bench::find_faces_input(n, m);
  bench::print_device();

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Inputs and outputs of findFaces (not temporary).
  unsigned* dIb = nullptr;  // vertex ids are in [0, m): sort them unsigned
  int* dPf = nullptr;
  int* dHd = nullptr;
  CUDA_CHECK(cudaMalloc(&dIb, sizeof(int) * (size_t)count));
  CUDA_CHECK(cudaMalloc(&dPf, sizeof(int) * (size_t)count));
  CUDA_CHECK(cudaMalloc(&dHd, sizeof(int) * (size_t)m));
  CUDA_CHECK(cudaMemcpy(dIb, in.ib.data(), sizeof(int) * (size_t)count,
                        cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dHd, 0xff, sizeof(int) * (size_t)m));  // hd[i] = -1

  // Temporaries of findFaces.
  int* dFaceOf = nullptr;
  unsigned* dSortedV = nullptr;
  CUDA_CHECK(cudaMalloc(&dFaceOf, sizeof(int) * (size_t)count));
  CUDA_CHECK(cudaMalloc(&dSortedV, sizeof(unsigned) * (size_t)count));
  size_t cubBytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, cubBytes, dIb, dSortedV, dFaceOf, dPf, count, 0, endBit, stream));
  void* dCub = nullptr;
  CUDA_CHECK(cudaMalloc(&dCub, cubBytes));
  const long long tempBytes =
      (long long)sizeof(int) * count * 2 + (long long)cubBytes;

  const int block = 256;
  const int blocks = (count + block - 1) / block;
  auto findFaces = [&]() {
    face_ids_kernel<<<blocks, block, 0, stream>>>(dFaceOf, count);
    CUDA_CHECK(cudaGetLastError());
    size_t bytes = cubBytes;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(dCub, bytes, dIb, dSortedV,
                                               dFaceOf, dPf, count, 0, endBit,
                                               stream));
    heads_kernel<<<blocks, block, 0, stream>>>(dSortedV, dHd, count);
    CUDA_CHECK(cudaGetLastError());
  };

  // One run, checked against the CPU reference.
  findFaces();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<int> pf((size_t)count), hd((size_t)m);
  CUDA_CHECK(cudaMemcpy(pf.data(), dPf, sizeof(int) * (size_t)count,
                        cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hd.data(), dHd, sizeof(int) * (size_t)m,
                        cudaMemcpyDeviceToHost));
  std::vector<int> refPf, refHd;
  bench::find_faces_cpu(in, refPf, refHd);
  long long bad = 0;
  for (int i = 0; i < count; i++) bad += pf[(size_t)i] != refPf[(size_t)i];
  for (int v = 0; v < m; v++) bad += hd[(size_t)v] != refHd[(size_t)v];
  bench::print_find_faces(n, m, pf, hd);
  if (bad) {
    fprintf(stderr, "verify FAILED: %lld elements differ from the CPU reference\n", bad);
    return 1;
  }
  fprintf(stderr, "verify ok (radix sort on bits [0, %d))\n", endBit);

  double wallMs = 0.0;
  double ms = bench::time_median_ms(stream, 3, reps, findFaces, &wallMs);
  bench::print_ms(ms, wallMs);
  bench::LaunchCount launches = bench::count_launches(stream, findFaces);
  bench::print_bench(launches, tempBytes, 0);

  CUDA_CHECK(cudaFree(dCub));
  CUDA_CHECK(cudaFree(dSortedV));
  CUDA_CHECK(cudaFree(dFaceOf));
  CUDA_CHECK(cudaFree(dHd));
  CUDA_CHECK(cudaFree(dPf));
  CUDA_CHECK(cudaFree(dIb));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
