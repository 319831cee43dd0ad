// Chapter 06 -- loop unrolling and vectorized (128-bit) memory access.
//
// What changed since 05:
//   * float4 global loads (LDG.128): a thread stages 4 consecutive floats of A or B with one
//     instruction instead of four. That needs 16-byte alignment, so this kernel requires the
//     leading dimensions to be multiples of 4 (gemmlab refuses other shapes, naming the rule);
//     a vector that would cross the matrix edge is loaded element by element, zero-filled.
//   * the A tile is stored TRANSPOSED, As[k][m], so a thread's TM values of A for one k are
//     contiguous: one or two 128-bit shared loads (LDS.128) instead of TM 32-bit ones. Its rows
//     are padded by 4 floats, which keeps the rows 16-byte aligned and shifts each row 4 banks:
//     the transposing stores are then free of bank conflicts at BK=8, a 2-way conflict at BK=16.
//   * float4 stores of C.
//   * UNROLL: how far the k loop over the tile is unrolled (#pragma unroll UNROLL). Unrolled,
//     the indices become constants folded into the instructions and the loads of step k+1 can
//     be issued while step k computes; too far, and code size and registers grow.
// VECTORIZE=0 keeps everything else but uses 32-bit global accesses, for comparison.

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
#ifndef VECTORIZE
#define VECTORIZE 1
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
#define THREADS ((BM / TM) * (BN / TN))
#define APAD 4
#define PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) PRAGMA(unroll n)

// 4 consecutive floats of row r starting at column c of a rows x cols matrix; zero outside.
__device__ __forceinline__ float4 load4(const float* __restrict__ m, int ld, int r, int c, int rows, int cols)
{
    const float* p = m + (size_t)r * ld + c;
    if (VECTORIZE && r < rows && c + 3 < cols)
        return __ldg(reinterpret_cast<const float4*>(p));
    const bool ok = r < rows;
    return make_float4(ok && c < cols ? p[0] : 0.0f, ok && c + 1 < cols ? p[1] : 0.0f,
                       ok && c + 2 < cols ? p[2] : 0.0f, ok && c + 3 < cols ? p[3] : 0.0f);
}

// C[r][c..c+3] = alpha * v + beta * C, for the columns inside the matrix.
__device__ __forceinline__ void store4(float* __restrict__ C, int ldc, int r, int c, int M, int N,
                                       float4 v, float alpha, float beta)
{
    if (r >= M) return;
    float* p = C + (size_t)r * ldc + c;
    if (VECTORIZE && c + 3 < N) {
        float4 out = make_float4(alpha * v.x, alpha * v.y, alpha * v.z, alpha * v.w);
        if (beta != 0.0f) {
            const float4 old = *reinterpret_cast<float4*>(p);
            out.x += beta * old.x; out.y += beta * old.y; out.z += beta * old.z; out.w += beta * old.w;
        }
        *reinterpret_cast<float4*>(p) = out;
        return;
    }
    const float vals[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; ++q)
        if (c + q < N) p[q] = (beta == 0.0f) ? alpha * vals[q] : alpha * vals[q] + beta * p[q];
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    __shared__ __align__(16) float As[BK][BM + APAD];   // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];

    const int tid = threadIdx.x;
    const int tc = tid % (BN / TN), tr = tid / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float a[TM], b[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        // exercise: begin
#pragma unroll
        for (int i = 0; i < BM * BK / 4 / THREADS; ++i) {
            const int e = tid + i * THREADS, r = e / (BK / 4), c = e % (BK / 4) * 4;
            const float4 v = load4(A, lda, row0 + r, k0 + c, M, K);
            As[c + 0][r] = v.x; As[c + 1][r] = v.y; As[c + 2][r] = v.z; As[c + 3][r] = v.w;
        }
#pragma unroll
        for (int i = 0; i < BK * BN / 4 / THREADS; ++i) {
            const int e = tid + i * THREADS, r = e / (BN / 4), c = e % (BN / 4) * 4;
            *reinterpret_cast<float4*>(&Bs[r][c]) = load4(B, ldb, k0 + r, col0 + c, K, N);
        }
        // exercise: end
        __syncthreads();

        UNROLL_BY(UNROLL)
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][tr * TM + i];    // contiguous: LDS.128
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tc * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            store4(C, ldc, row0 + tr * TM + i, col0 + tc * TN + j, M, N,
                   make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), alpha, beta);
}
