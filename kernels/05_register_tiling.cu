// Chapter 05 -- outer products and register tiling.
//
// What changed since 03: each thread now computes a TM x TN tile of C held in registers, and the
// inner loop is an OUTER product. For each k the thread loads TM values of A (a column slice of
// the A tile) and TN values of B (a row slice of the B tile) from shared memory into registers,
// then does all TM * TN multiply-adds between them:
//     inner product (chapters 02-04): 2 shared loads per FMA (or 1 + 1/OUTPUTS)
//     outer product (this chapter):   TM + TN shared loads per TM * TN FMAs
// With TM = TN = 8 that is 16 loads for 64 FMAs; with TN = 1 it is the "1D" version (a thread
// owns TM rows of one column). The block owns a BM x BN tile of C and steps through K by BK;
// (BM / TM) * (BN / TN) threads cooperate to stage the A and B tiles (all loads coalesced).
// Edges: out-of-range elements stage as zero, out-of-range C is not stored.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#define THREADS ((BM / TM) * (BN / TN))

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    const int tid = threadIdx.x;
    const int tc = tid % (BN / TN);            // thread column: consecutive lanes, consecutive TN-wide slices
    const int tr = tid / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float a[TM], b[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < BM * BK / THREADS; ++i) {      // A tile: consecutive threads, consecutive k
            const int e = tid + i * THREADS, r = e / BK, c = e % BK;
            const int gr = row0 + r, gk = k0 + c;
            As[r][c] = (gr < M && gk < K) ? A[(size_t)gr * lda + gk] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < BK * BN / THREADS; ++i) {      // B tile: consecutive threads, consecutive n
            const int e = tid + i * THREADS, r = e / BN, c = e % BN;
            const int gk = k0 + r, gc = col0 + c;
            Bs[r][c] = (gk < K && gc < N) ? B[(size_t)gk * ldb + gc] : 0.0f;
        }
        __syncthreads();

        // exercise: begin
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[tr * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tc * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];   // the outer product
        }
        // exercise: end
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + tr * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + tc * TN + j;
            if (row < M && col < N) {
                float* c = C + (size_t)row * ldc + col;
                *c = (beta == 0.0f) ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *c;
            }
        }
    }
}
