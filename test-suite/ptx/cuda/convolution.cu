// convolution.cu: separable convolution of a float image with a 17-tap filter
// (radius 8), in the style of the CUDA SDK's convolutionSeparable: one kernel
// filters along rows, the other along columns. The image is `height` rows of
// `width` floats, row r starting at element r * pitch (pitch >= width); the
// columns from width to pitch are neither read nor written. Pixels outside
// the image count as 0. Both kernels compute a true convolution:
//   rows:    dst[y][x] = sum_{j=-8..8} c_kernel[8 - j] * src[y][x + j]
//   columns: dst[y][x] = sum_{j=-8..8} c_kernel[8 - j] * src[y + j][x]
// c_kernel[k] = (k - 6) / 64, deliberately not symmetric so that a flipped
// filter is caught. The sum is accumulated in the order j = -8 .. 8 (nvcc
// contracts it into fma.rn.f32).
//
// Launch: convolution_rows with block (16, 4) and grid
// (ceil(width / 128), ceil(height / 4)); convolution_columns with block
// (16, 8) and grid (ceil(width / 16), ceil(height / 64)).
//
// PTX features: a .const array with an initializer read with ld.const, 2D
// blocks and grids (%tid.y, %ctaid.y), 2D static .shared tiles (the column
// tile padded by one float), halo loads with bounds checks (negative
// coordinates), bar.sync, a fully unrolled filter loop (fma.rn.f32), an exit
// after the only barrier.

#define KERNEL_RADIUS 8
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)

__constant__ float c_kernel[KERNEL_LENGTH] = {
    -0.09375f, -0.078125f, -0.0625f, -0.046875f, -0.03125f, -0.015625f, 0.0f, 0.015625f,
    0.03125f, 0.046875f, 0.0625f, 0.078125f, 0.09375f, 0.109375f, 0.125f, 0.140625f,
    0.15625f,
};

#define ROWS_BLOCKDIM_X 16
#define ROWS_BLOCKDIM_Y 4
#define ROWS_RESULT_STEPS 8
#define ROWS_HALO_STEPS 1
#define ROWS_TILE_W ((ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X)

extern "C" __global__ void convolution_rows(float* dst, const float* src, int width, int height, int pitch)
{
    __shared__ float tile[ROWS_BLOCKDIM_Y][ROWS_TILE_W];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    // First column this thread loads: one halo step left of the block's outputs.
    const int x0 = ((int)blockIdx.x * ROWS_RESULT_STEPS - ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X + tx;
    const int y = (int)blockIdx.y * ROWS_BLOCKDIM_Y + ty;
    const bool row_ok = y < height;

#pragma unroll
    for (int s = 0; s < ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS; ++s) {
        const int x = x0 + s * ROWS_BLOCKDIM_X;
        tile[ty][tx + s * ROWS_BLOCKDIM_X] = (row_ok && x >= 0 && x < width) ? src[y * pitch + x] : 0.0f;
    }
    __syncthreads();

    if (!row_ok) {
        return;
    }

#pragma unroll
    for (int s = ROWS_HALO_STEPS; s < ROWS_HALO_STEPS + ROWS_RESULT_STEPS; ++s) {
        const int x = x0 + s * ROWS_BLOCKDIM_X;
        float sum = 0.0f;
#pragma unroll
        for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; ++j) {
            sum += c_kernel[KERNEL_RADIUS - j] * tile[ty][tx + s * ROWS_BLOCKDIM_X + j];
        }
        if (x < width) {
            dst[y * pitch + x] = sum;
        }
    }
}

#define COLUMNS_BLOCKDIM_X 16
#define COLUMNS_BLOCKDIM_Y 8
#define COLUMNS_RESULT_STEPS 8
#define COLUMNS_HALO_STEPS 1
#define COLUMNS_TILE_H ((COLUMNS_RESULT_STEPS + 2 * COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y)

extern "C" __global__ void convolution_columns(float* dst, const float* src, int width, int height, int pitch)
{
    // One column of the tile per thread column; +1 keeps the columns in
    // different shared-memory banks.
    __shared__ float tile[COLUMNS_BLOCKDIM_X][COLUMNS_TILE_H + 1];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int x = (int)blockIdx.x * COLUMNS_BLOCKDIM_X + tx;
    // First row this thread loads: one halo step above the block's outputs.
    const int y0 = ((int)blockIdx.y * COLUMNS_RESULT_STEPS - COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y + ty;
    const bool col_ok = x < width;

#pragma unroll
    for (int s = 0; s < COLUMNS_RESULT_STEPS + 2 * COLUMNS_HALO_STEPS; ++s) {
        const int y = y0 + s * COLUMNS_BLOCKDIM_Y;
        tile[tx][ty + s * COLUMNS_BLOCKDIM_Y] = (col_ok && y >= 0 && y < height) ? src[y * pitch + x] : 0.0f;
    }
    __syncthreads();

    if (!col_ok) {
        return;
    }

#pragma unroll
    for (int s = COLUMNS_HALO_STEPS; s < COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS; ++s) {
        const int y = y0 + s * COLUMNS_BLOCKDIM_Y;
        float sum = 0.0f;
#pragma unroll
        for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; ++j) {
            sum += c_kernel[KERNEL_RADIUS - j] * tile[tx][ty + s * COLUMNS_BLOCKDIM_Y + j];
        }
        if (y < height) {
            dst[y * pitch + x] = sum;
        }
    }
}
