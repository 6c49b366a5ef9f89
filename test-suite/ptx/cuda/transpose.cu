// transpose.cu: matrix transpose of a row-major float matrix `in` of
// `height` rows and `width` columns into `out` (width rows, height columns):
// out[c * height + r] = in[r * width + c].
//
// transpose: tiled, as in the CUDA SDK transpose sample. A block of
// (TILE_DIM, BLOCK_ROWS) = (32, 8) threads moves one 32x32 tile; each thread
// copies TILE_DIM / BLOCK_ROWS = 4 elements. The tile is staged in a 32x33
// shared array (one float of padding per row so a column read hits 32
// different banks); reads and writes of global memory are both coalesced.
// transpose_naive: the same launch shape, straight from global to global
// (uncoalesced writes). Launch both with block (32, 8, 1) and grid
// (ceil(width / 32), ceil(height / 32), 1); ragged edges are bounds-checked.
//
// PTX features: 2D %tid / %ctaid, a 2D static .shared array with padding,
// bar.sync, loop unrolled by 4 with per-element predicates, index swaps
// between the load and store phases.

#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose(float* out, const float* in, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];

    int x = (int)blockIdx.x * TILE_DIM + (int)threadIdx.x;
    int y = (int)blockIdx.y * TILE_DIM + (int)threadIdx.y;

#pragma unroll
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (x < width && y + j < height) {
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
        }
    }
    __syncthreads();

    // Swap the block coordinates: this block writes tile (blockIdx.y, blockIdx.x) of out.
    x = (int)blockIdx.y * TILE_DIM + (int)threadIdx.x;
    y = (int)blockIdx.x * TILE_DIM + (int)threadIdx.y;

#pragma unroll
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (x < height && y + j < width) {
            out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
        }
    }
}

extern "C" __global__ void transpose_naive(float* out, const float* in, int width, int height)
{
    const int x = (int)blockIdx.x * TILE_DIM + (int)threadIdx.x;
    const int y = (int)blockIdx.y * TILE_DIM + (int)threadIdx.y;

#pragma unroll
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (x < width && y + j < height) {
            out[x * height + (y + j)] = in[(y + j) * width + x];
        }
    }
}
