// Block-wide votes: __syncthreads_count, __syncthreads_and and
// __syncthreads_or, which nvcc compiles to the reduction barriers
// bar.red.popc.u32, bar.red.and.pred and bar.red.or.pred. Each block writes
// how many of its threads hold a value above 50, whether all of them are
// inside the array (false only in a ragged last block) and whether any holds
// a value above 95. Launch: one thread per element, any block size.
extern "C" __global__ void block_vote(const int* in, int* count, int* all, int* any, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  int c = __syncthreads_count(v > 50);
  int a = __syncthreads_and(i < n);
  int o = __syncthreads_or(v > 95);
  if (threadIdx.x == 0) {
    count[blockIdx.x] = c;
    all[blockIdx.x] = a;
    any[blockIdx.x] = o;
  }
}
