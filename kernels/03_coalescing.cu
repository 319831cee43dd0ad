// Chapter 03 -- global-memory coalescing (on top of the shared-memory tiles of 02).
//
// What changed since 02: only which thread does what. The fast thread index `f` (consecutive
// lanes of a warp) now runs along the COLUMNS of the tile instead of its rows. So:
//   * staging A and B: 32 lanes read 32 consecutive floats of one row, which the memory system
//     merges into a few 32-byte sectors (one request) instead of 32 separate ones;
//   * storing C: 32 lanes write 32 consecutive floats;
//   * the shared-memory tiles go back to their natural layouts, As[m][k] and Bs[k][n], which this
//     mapping reads without bank conflicts: per k a warp reads OUTPUTS As values, each a broadcast,
//     and 32 consecutive Bs values.
// Each thread still computes OUTPUTS elements of C, now one short column: rows
// s, s + TILE/OUTPUTS, ... of the tile, column f.

#ifndef TILE
#define TILE 32
#endif
#ifndef OUTPUTS
#define OUTPUTS 4
#endif
#define ROWS_OF_THREADS (TILE / OUTPUTS)
#define THREADS (TILE * ROWS_OF_THREADS)

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    __shared__ float As[TILE][TILE];   // As[m][k]
    __shared__ float Bs[TILE][TILE];   // Bs[k][n]

    const int f = threadIdx.x % TILE;  // fast index: consecutive lanes -> consecutive columns
    const int s = threadIdx.x / TILE;
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;

    float acc[OUTPUTS];
#pragma unroll
    for (int j = 0; j < OUTPUTS; ++j) acc[j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TILE) {
#pragma unroll
        for (int j = 0; j < OUTPUTS; ++j) {
            const int r = s + j * ROWS_OF_THREADS;        // row within the tile
            // exercise: begin
            const int ar = row0 + r, ak = k0 + f;
            As[r][f] = (ar < M && ak < K) ? A[(size_t)ar * lda + ak] : 0.0f;
            const int bk = k0 + r, bc = col0 + f;
            Bs[r][f] = (bk < K && bc < N) ? B[(size_t)bk * ldb + bc] : 0.0f;
            // exercise: end
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            const float b = Bs[k][f];
#pragma unroll
            for (int j = 0; j < OUTPUTS; ++j)
                acc[j] += As[s + j * ROWS_OF_THREADS][k] * b;
        }
        __syncthreads();
    }

    const int col = col0 + f;
#pragma unroll
    for (int j = 0; j < OUTPUTS; ++j) {
        const int row = row0 + s + j * ROWS_OF_THREADS;
        if (row < M && col < N) {
            float* c = C + (size_t)row * ldc + col;
            *c = (beta == 0.0f) ? alpha * acc[j] : alpha * acc[j] + beta * *c;
        }
    }
}
