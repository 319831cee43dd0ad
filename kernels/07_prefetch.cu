// Chapter 07 -- prefetching (double buffering).
//
// What changed since 06: with PREFETCH=1 the loads of the NEXT tile are issued before the math
// on the current one, so their latency hides behind it.
//   * Shared memory holds two stages of each tile. While the block computes from stage s, the
//     next tile's float4 loads are already in flight into registers; after the math they are
//     written to stage s^1, and ONE barrier per tile (instead of two) both publishes stage s^1
//     and guarantees nobody still reads stage s when it is overwritten next time.
//   * Global -> register -> shared: the loads are issued early, their results are needed only
//     after the FMAs, which is what lets the warp scheduler overlap them.
// It costs registers (the staged float4s) and twice the shared memory, so occupancy can drop;
// when enough warps are resident to hide latency anyway, the gain is small, or a loss where a
// block per SM is lost (chapter 07 measures both). PREFETCH=0 is chapter 06's loop, for comparison.

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
#define VECTORIZE 1        // chapter 06's choices, now fixed
#define UNROLL BK
#ifndef PREFETCH
#define PREFETCH 1
#endif
#define STAGES (PREFETCH ? 2 : 1)
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
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
    __shared__ __align__(16) float As[STAGES][BK][BM + APAD];   // transposed: As[s][k][m]
    __shared__ __align__(16) float Bs[STAGES][BK][BN];

    const int tid = threadIdx.x;
    const int tc = tid % (BN / TN), tr = tid / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float a[TM], b[TN];
    float4 ra[A_LOADS], rb[B_LOADS];   // the next tile, on its way from global memory

    auto load_tiles = [&](int k0) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int e = tid + i * THREADS;
            ra[i] = load4(A, lda, row0 + e / (BK / 4), k0 + e % (BK / 4) * 4, M, K);
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int e = tid + i * THREADS;
            rb[i] = load4(B, ldb, k0 + e / (BN / 4), col0 + e % (BN / 4) * 4, K, N);
        }
    };
    auto store_tiles = [&](int s) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int e = tid + i * THREADS, r = e / (BK / 4), c = e % (BK / 4) * 4;
            As[s][c + 0][r] = ra[i].x; As[s][c + 1][r] = ra[i].y; As[s][c + 2][r] = ra[i].z; As[s][c + 3][r] = ra[i].w;
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int e = tid + i * THREADS;
            *reinterpret_cast<float4*>(&Bs[s][e / (BN / 4)][e % (BN / 4) * 4]) = rb[i];
        }
    };
    auto compute = [&](int s) {
        UNROLL_BY(UNROLL)
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[s][k][tr * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[s][k][tc * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
    };

#if PREFETCH
    load_tiles(0);
    store_tiles(0);
    __syncthreads();
    int s = 0;
    // exercise: begin
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) load_tiles(k0 + BK);     // in flight while we compute
        compute(s);
        if (more) store_tiles(s ^ 1);      // stage s^1 was last read before the previous barrier
        __syncthreads();
        s ^= 1;
    }
    // exercise: end
#else
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tiles(k0);
        store_tiles(0);
        __syncthreads();
        compute(0);
        __syncthreads();
    }
#endif

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            store4(C, ldc, row0 + tr * TM + i, col0 + tc * TN + j, M, N,
                   make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), alpha, beta);
}
