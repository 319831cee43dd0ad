// Chapter 02 -- shared-memory tiling.
//
// What changed since 01: a block owns a TILE x TILE tile of C and walks K in steps of TILE.
// At each step its threads copy one TILE x TILE tile of A and one of B into shared memory,
// wait (__syncthreads), and then every thread reads its operands from there. Each element of
// A and B fetched from global memory now serves TILE multiply-adds instead of one, so the
// global traffic drops by a factor of TILE. Each thread also computes OUTPUTS elements of C
// (in one row, TILE / OUTPUTS columns apart), so one value of A read from shared memory feeds
// OUTPUTS FMAs.
//
// What did NOT change: threads still map to C the naive way. The fast thread index `f`
// (consecutive lanes of a warp) runs down the ROWS of the tile, so the copies from global
// memory are strided by a whole row (lda or ldb floats): one warp load touches 32 rows.
// The shared-memory layouts are chosen so that this mapping still reads and writes shared
// memory without bank conflicts (chapter 04 explains banks): A is kept k-major (transposed),
// B is kept n-major (transposed).
//
// Edges: out-of-range elements of A and B load as zero and out-of-range C is not stored,
// so every M, N, K >= 1 works.

#ifndef TILE
#define TILE 32
#endif
#ifndef OUTPUTS
#define OUTPUTS 4
#endif
#define ROWS_OF_THREADS (TILE / OUTPUTS)          // thread "slow" index range
#define THREADS (TILE * ROWS_OF_THREADS)

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    __shared__ float At[TILE][TILE];   // At[k][m]: A tile, transposed
    __shared__ float Bt[TILE][TILE];   // Bt[n][k]: B tile, transposed

    const int f = threadIdx.x % TILE;  // fast index: consecutive lanes
    const int s = threadIdx.x / TILE;  // slow index
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;

    float acc[OUTPUTS];
#pragma unroll
    for (int j = 0; j < OUTPUTS; ++j) acc[j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TILE) {
        // exercise: begin
        // Stage the tiles. Lane f takes row f of the A tile and row f of the B tile:
        // neighbouring lanes are lda (or ldb) floats apart in global memory.
#pragma unroll
        for (int j = 0; j < OUTPUTS; ++j) {
            const int c = s + j * ROWS_OF_THREADS;        // column within the tile
            const int ar = row0 + f, ak = k0 + c;
            At[c][f] = (ar < M && ak < K) ? A[(size_t)ar * lda + ak] : 0.0f;
            const int bk = k0 + f, bc = col0 + c;
            Bt[c][f] = (bk < K && bc < N) ? B[(size_t)bk * ldb + bc] : 0.0f;
        }
        __syncthreads();
        // exercise: end

        // Thread (f, s) computes C[row0 + f][col0 + s + j * ROWS_OF_THREADS], j < OUTPUTS.
#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            const float a = At[k][f];
#pragma unroll
            for (int j = 0; j < OUTPUTS; ++j)
                acc[j] += a * Bt[s + j * ROWS_OF_THREADS][k];
        }
        __syncthreads();  // nobody overwrites a tile another thread is still reading
    }

    const int row = row0 + f;
#pragma unroll
    for (int j = 0; j < OUTPUTS; ++j) {
        const int col = col0 + s + j * ROWS_OF_THREADS;
        if (row < M && col < N) {
            float* c = C + (size_t)row * ldc + col;
            *c = (beta == 0.0f) ? alpha * acc[j] : alpha * acc[j] + beta * *c;
        }
    }
}
