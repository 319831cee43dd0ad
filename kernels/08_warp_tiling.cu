// Chapter 08 -- warp tiling.
//
// What changed since 07: a level between the block tile and the thread tile. Each warp owns a
// WM x WN tile of the block's C tile, and walks it in WMITER x WNITER sub-tiles of
// (WM / WMITER) x (WN / WNITER); within a sub-tile each of the 32 lanes owns a TM x TN patch.
// So a thread computes WMITER * WNITER patches of TM x TN, spread out rather than contiguous.
// Why it pays:
//   * the warp is the unit that executes; giving it a compact tile of C means its 32 lanes
//     read a compact set of A and B values from shared memory, and with TN = 4 the lanes of a
//     sub-tile read consecutive 16-byte vectors of the B tile: 128-bit loads with no bank
//     conflicts (07's TN = 8 layout reads them 32 bytes apart, a 2-way conflict);
//   * per k, a thread loads WMITER*TM values of A and WNITER*TN of B and does all their
//     products: the register reuse of 05's outer product, with a better shared-memory pattern.
// Everything else (transposed padded A tile, float4 global access, double buffering) is 07's.
// UNROLL returns from 06: with 16 x 8 patches a fully unrolled BK=16 loop is some 2,500
// instructions (~40 KB). Code that size is a cost to watch (warps that wait for instructions show
// as "no instruction" stalls in Nsight Compute), so 4 or 8 steps at a time are offered too;
// chapter 08 measures which wins.
// Two more changes, each a tunable so the chapter can measure it:
//   * SNAKE: odd rows of the outer product walk their columns backwards. Consecutive FFMAs then
//     always share an operand, which the hardware serves from its operand reuse cache, so no FFMA
//     reads more than two registers from the register file, and fewer pairs of reads collide
//     in one register bank (Nsight Compute's "dispatch" stalls drop by about 40%).
//   * INTERIOR: blocks whose tiles lie inside A and B (all but the edge blocks) load them with
//     plain float4 loads and no bounds checks. The checked loads cost ~25 instructions each, with
//     fixed-latency waits between them ("wait" stalls), a cost paid again every tile.
// The rules in gemmlab's registry say which combinations tile exactly; others are refused.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef WNITER
#define WNITER 2
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#ifndef UNROLL
#define UNROLL 16          // k steps unrolled at a time (06's tunable, back: see below)
#endif
#ifndef SNAKE
#define SNAKE 1
#endif
#ifndef INTERIOR
#define INTERIOR 1
#endif
#define VECTORIZE 1        // chapter 06's choice, now fixed
#define PREFETCH 1         // chapter 07's double buffering, kept
#define STAGES (PREFETCH ? 2 : 1)
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
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
    // exercise: begin
    const int warp = tid / 32, lane = tid % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);          // the warp's tile in the block
    const int lr = lane / (WSUBN / TN), lc = lane % (WSUBN / TN);    // the lane's patch in a sub-tile
    // exercise: end
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;
    float a[WMITER * TM], b[WNITER * TN];
    float4 ra[A_LOADS], rb[B_LOADS];   // the next tile, on its way from global memory

    const bool inside_mn = INTERIOR && row0 + BM <= M && col0 + BN <= N;
    auto load_tiles = [&](int k0) {
        if (inside_mn && k0 + BK <= K) {   // the whole tile is inside A and B: no checks
#pragma unroll
            for (int i = 0; i < A_LOADS; ++i) {
                const int e = tid + i * THREADS;
                ra[i] = __ldg(reinterpret_cast<const float4*>(A + (size_t)(row0 + e / (BK / 4)) * lda + k0 + e % (BK / 4) * 4));
            }
#pragma unroll
            for (int i = 0; i < B_LOADS; ++i) {
                const int e = tid + i * THREADS;
                rb[i] = __ldg(reinterpret_cast<const float4*>(B + (size_t)(k0 + e / (BN / 4)) * ldb + col0 + e % (BN / 4) * 4));
            }
            return;
        }
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
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; ++i) a[wm * TM + i] = As[s][k][wr * WM + wm * WSUBM + lr * TM + i];
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; ++j) b[wn * TN + j] = Bs[s][k][wc * WN + wn * WSUBN + lc * TN + j];
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int jj = 0; jj < WNITER * TN; ++jj) {
                    const int j = SNAKE && i % 2 ? WNITER * TN - 1 - jj : jj;   // odd rows backwards
                    acc[i][j] += a[i] * b[j];
                }
        }
    };

#if PREFETCH
    load_tiles(0);
    store_tiles(0);
    __syncthreads();
    int s = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) load_tiles(k0 + BK);     // in flight while we compute
        compute(s);
        if (more) store_tiles(s ^ 1);      // stage s^1 was last read before the previous barrier
        __syncthreads();
        s ^= 1;
    }
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
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float* v = &acc[wm * TM + i][wn * TN + j];
                    store4(C, ldc, row0 + wr * WM + wm * WSUBM + lr * TM + i, col0 + wc * WN + wn * WSUBN + lc * TN + j,
                           M, N, make_float4(v[0], v[1], v[2], v[3]), alpha, beta);
                }
}
