// Chapter 04 -- shared-memory bank conflicts.
//
// What changed since 03: the B tile is kept TRANSPOSED in shared memory, Bt[n][k], the layout
// you would get by transposing B once (on the host, or while staging) so that a thread's
// operands run along a row. Now the inner loop reads Bt[f][k]: the 32 lanes of a warp read
// the same k of 32 different rows. Shared memory is 32 banks of 4-byte words (word w lives in
// bank w % 32) and serves one word per bank per cycle; with rows TILE = 32 words long, all 32
// lanes land in the same bank, and the read is replayed 32 times.
//
// LAYOUT picks the fix:
//   0  none: row stride TILE (a 32-way conflict when TILE is a multiple of 32)
//   1  padding: each row made a little longer than TILE words, so consecutive rows start in
//      different banks and the 32 lanes reading one column of Bt fall in 32 different banks
//      (at the cost of a few words of shared memory)
//   2  XOR swizzle: word k of row n is stored at column k ^ (n % TILE); no wasted memory
// The A tile and everything else is as in chapter 03.

#ifndef TILE
#define TILE 32
#endif
#ifndef OUTPUTS
#define OUTPUTS 4
#endif
#ifndef LAYOUT
#define LAYOUT 0
#endif
#define ROWS_OF_THREADS (TILE / OUTPUTS)
#define THREADS (TILE * ROWS_OF_THREADS)
// exercise: begin
#define BT_STRIDE (LAYOUT == 1 ? TILE + 1 : TILE)
// exercise: end

// Where element (n, k) of the transposed B tile lives.
__device__ __forceinline__ int bt(int n, int k)
{
#if LAYOUT == 2
    return n * BT_STRIDE + (k ^ (n % TILE));
#else
    return n * BT_STRIDE + k;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    __shared__ float As[TILE][TILE];          // As[m][k]
    __shared__ float Bt[TILE * BT_STRIDE];    // Bt[n][k], see bt()

    const int f = threadIdx.x % TILE;
    const int s = threadIdx.x / TILE;
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;

    float acc[OUTPUTS];
#pragma unroll
    for (int j = 0; j < OUTPUTS; ++j) acc[j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TILE) {
#pragma unroll
        for (int j = 0; j < OUTPUTS; ++j) {
            const int r = s + j * ROWS_OF_THREADS;
            const int ar = row0 + r, ak = k0 + f;
            As[r][f] = (ar < M && ak < K) ? A[(size_t)ar * lda + ak] : 0.0f;
            const int bk = k0 + r, bc = col0 + f;
            Bt[bt(f, r)] = (bk < K && bc < N) ? B[(size_t)bk * ldb + bc] : 0.0f;  // coalesced read, transposed write
        }
        __syncthreads();

#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            const float b = Bt[bt(f, k)];     // lanes f = 0..31: one word from each of 32 rows
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
