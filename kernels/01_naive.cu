// Chapter 01 -- naive SGEMM: one thread computes one element of C.
//
// C = alpha * A @ B + beta * C, all row-major (C[i][j] lives at C[i * ldc + j]).
// Each thread walks a whole row of A and a whole column of B straight from global memory:
// 2K loads for 2K flops, nothing reused on purpose. Consecutive threads (and so the 32 lanes
// of a warp) take consecutive ROWS of C, the order a textbook i-j-k loop nest suggests. That
// choice is the second problem of this kernel: the lanes of a warp read 32 different rows of
// A, 32 addresses K floats apart, and write 32 different rows of C. Chapter 03 fixes it.
//
// Tunables: the block owns a BLOCK_M x BLOCK_N patch of C (BLOCK_M * BLOCK_N threads).

#ifndef BLOCK_M
#define BLOCK_M 32
#endif
#ifndef BLOCK_N
#define BLOCK_N 4
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_M * BLOCK_N)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    // threadIdx.x runs fastest across a warp; here it picks the row.
    const int row = blockIdx.y * BLOCK_M + threadIdx.x % BLOCK_M;
    const int col = blockIdx.x * BLOCK_N + threadIdx.x / BLOCK_M;
    if (row >= M || col >= N) return;

    // exercise: begin
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[(size_t)row * lda + k] * B[(size_t)k * ldb + col];
    // exercise: end

    float* c = C + (size_t)row * ldc + col;
    // BLAS rule: with beta == 0, C is never read (so NaN or garbage in C cannot leak through).
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
}
