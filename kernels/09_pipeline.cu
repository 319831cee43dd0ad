// Chapter 09 -- the copy pipeline: 08's warp tiling, fed by asynchronous copies through STAGES buffers.
//
// What changed since 08:
//   * cp.async (sm_80+): tiles go from global memory straight into shared memory without passing
//     through registers: no staged float4s to hold, no shared stores to issue.
//   * STAGES shared-memory buffers form a pipeline: while the block computes on tile t, tiles
//     t+1 .. t+STAGES-1 are already being copied. One barrier per tile (08's double buffer was
//     two stages, with the loads waited for in registers).
//   * cp.async cannot transpose, and a transposed A tile is what gives 128-bit reads of A along m
//     (chapter 06). So A is copied one float at a time into its transposed place; consecutive
//     lanes take consecutive k of a row, so the global reads stay coalesced. B is copied 16 bytes
//     at a time. (Copying A row-major in 16-byte pieces and reading it along k was slower: it needs
//     four k steps of A in registers at once; docs/final-kernel-search.md.)
//   * KUNROLL: the k loop over a tile is unrolled KUNROLL steps at a time, not always fully: a
//     fully unrolled 16-step loop of 128 FFMAs a step is ~38 KB of code. The chapter measures
//     whether that size costs anything.
//   * GROUP: blocks are numbered so that GROUP consecutive tile rows are walked column by column;
//     the blocks running together share A panels and B panels in L2.
//   * MINB: blocks per SM promised to the compiler (__launch_bounds__), which caps registers per
//     thread: registers traded for resident warps.
//   * Every M, N, K and every leading dimension: edges are zero-filled by the copy itself (the
//     source size of cp.async), and when B's rows are not 16-byte aligned its copies are made 4
//     bytes at a time (decided per block: the main loop is compiled for both cases).
// 08's FFMA order and unchecked interior blocks are left out here; chapter 10 brings them back in
// the form this pipeline needs.
// Kept from before: outer products from registers (05), 128-bit shared loads (06), a warp tile of
// WMITER x WNITER sub-tiles in which 4 x 8 lanes own 4 x 4 patches (08): the 8 lanes of a
// quarter-warp share their A address (a broadcast) and read 8 consecutive 16-byte pieces of B.

#include "ptx.cuh"   // copy_async, commit, wait_pending: cp.async in PTX (and its CPU twin)

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef KUNROLL
#define KUNROLL 16
#endif
#ifndef GROUP
#define GROUP 8
#endif
#ifndef MINB
#define MINB 1
#endif
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define WMITER (WM / 16)          // a sub-tile is 16 rows: 4 lane rows x 4
#define WNITER (WN / 32)          // and 32 columns: 8 lane columns x 4
#define TROWS (4 * WMITER)        // a thread's rows of C
#define TCOLS (4 * WNITER)        // and columns
#define AM (BM + 4)               // padded row of the transposed A tile [BK][AM]
#define A_STAGE (BK * AM)
#define B_STAGE (BK * BN)
#define A_FLOATS (BM * BK / THREADS)
#define B_CHUNKS (BK * BN / 4 / THREADS)
#define PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) PRAGMA(unroll n)

// Issue the copies of the K tile starting at k0: A transposed into as[BK][AM], B into bs[BK][BN].
template <bool VEC>
__device__ __forceinline__ void load_tile(float* as, float* bs, const float* __restrict__ A, int lda,
                                          const float* __restrict__ B, int ldb, int M, int N, int K,
                                          int row0, int col0, int k0, int tid)
{
#pragma unroll
    for (int i = 0; i < A_FLOATS; ++i) {
        const int e = tid + i * THREADS, r = e / BK, c = e % BK;
        const int gr = row0 + r, gc = k0 + c;
        const bool ok = gr < M && gc < K;
        copy_async<4>(as + c * AM + r, ok ? A + (size_t)gr * lda + gc : A, ok ? 4 : 0);
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i) {
        const int e = tid + i * THREADS, r = e / (BN / 4), c = e % (BN / 4) * 4;
        const int gr = k0 + r, gc = col0 + c;
        const int valid = gr < K ? max(0, min(4, N - gc)) : 0;   // floats of this piece inside B
        const float* src = valid ? B + (size_t)gr * ldb + gc : B;
        if (VEC) {
            copy_async<16>(bs + r * BN + c, src, valid * 4);
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q)
                copy_async<4>(bs + r * BN + c + q, q < valid ? src + q : B, q < valid ? 4 : 0);
        }
    }
}

// acc += the block's panel of A times its panel of B, through a STAGES-deep pipeline of tiles.
template <bool VEC>
__device__ __forceinline__ void accumulate(float (&acc)[TROWS][TCOLS], float* As, float* Bs,
                                           const float* __restrict__ A, int lda, const float* __restrict__ B,
                                           int ldb, int M, int N, int K, int row0, int col0)
{
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);
    const int lr = lane / 8, lc = lane % 8;
    const int tiles_k = (K + BK - 1) / BK;
    auto issue = [&](int t, int stage) {       // the copies of tile t into a stage
        load_tile<VEC>(As + stage * A_STAGE, Bs + stage * B_STAGE, A, lda, B, ldb, M, N, K, row0, col0, t * BK, tid);
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles_k) issue(s, s);
        commit();                              // an empty group keeps the counting uniform
    }

    for (int t = 0; t < tiles_k; ++t) {
        // exercise: begin
        wait_pending<STAGES - 2>();            // this thread's copies of tile t have landed
        __syncthreads();                       // everyone's have; and nobody still reads tile t-1's stage
        const int next = t + STAGES - 1;       // goes where tile t-1 was
        if (next < tiles_k) issue(next, next % STAGES);
        commit();
        // exercise: end

        const float* as = As + t % STAGES * A_STAGE + wr * WM + lr * 4;
        const float* bs = Bs + t % STAGES * B_STAGE + wc * WN + lc * 4;
        UNROLL_BY(KUNROLL)
        for (int k = 0; k < BK; ++k) {
            float a[TROWS], b[TCOLS];
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm) {
                const float4 v = *reinterpret_cast<const float4*>(as + k * AM + wm * 16);
                a[wm * 4 + 0] = v.x; a[wm * 4 + 1] = v.y; a[wm * 4 + 2] = v.z; a[wm * 4 + 3] = v.w;
            }
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const float4 v = *reinterpret_cast<const float4*>(bs + k * BN + wn * 32);
                b[wn * 4 + 0] = v.x; b[wn * 4 + 1] = v.y; b[wn * 4 + 2] = v.z; b[wn * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TROWS; ++i)
#pragma unroll
                for (int j = 0; j < TCOLS; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
    }
    wait_pending<0>();                         // nothing may still be writing shared memory at exit
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                          // [STAGES][BK][AM], A transposed
    float* Bs = smem + STAGES * A_STAGE;       // [STAGES][BK][BN]

    // Which tile. Grouped block order: GROUP tile rows at a time, walked column by column.
    const int tiles_n = gridDim.x, tiles_m = gridDim.y;
    const int bid = blockIdx.y * tiles_n + blockIdx.x;
    const int first_m = bid / (GROUP * tiles_n) * GROUP;
    const int group_rows = min(tiles_m - first_m, GROUP);
    const int in_group = bid % (GROUP * tiles_n);
    const int row0 = (first_m + in_group % group_rows) * BM;
    const int col0 = (in_group / group_rows) * BN;

    float acc[TROWS][TCOLS];
#pragma unroll
    for (int i = 0; i < TROWS; ++i)
#pragma unroll
        for (int j = 0; j < TCOLS; ++j) acc[i][j] = 0.0f;

    // 16-byte copies of B need each of its rows to start 16-byte aligned; otherwise the block
    // copies B 4 bytes at a time (the main loop is compiled for both cases).
    const bool b_aligned = ldb % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
    if (b_aligned)
        accumulate<true>(acc, As, Bs, A, lda, B, ldb, M, N, K, row0, col0);
    else
        accumulate<false>(acc, As, Bs, A, lda, B, ldb, M, N, K, row0, col0);

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);
    const int lr = lane / 8, lc = lane % 8;
    const bool c_aligned = ldc % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
#pragma unroll
    for (int i = 0; i < TROWS; ++i) {
        const int r = row0 + wr * WM + (i / 4) * 16 + lr * 4 + i % 4;
        if (r >= M) continue;
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn) {
            const int c = col0 + wc * WN + wn * 32 + lc * 4;
            float* p = C + (size_t)r * ldc + c;
            const float* v = &acc[i][wn * 4];
            if (c_aligned && c + 3 < N) {
                float4 out = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
                if (beta != 0.0f) {
                    const float4 old = *reinterpret_cast<const float4*>(p);
                    out.x += beta * old.x; out.y += beta * old.y; out.z += beta * old.z; out.w += beta * old.w;
                }
                *reinterpret_cast<float4*>(p) = out;
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (c + q < N) p[q] = beta == 0.0f ? alpha * v[q] : alpha * v[q] + beta * p[q];
            }
        }
    }
}
