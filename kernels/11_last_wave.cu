// Chapter 11 -- the last wave: 10's kernel, with the tiles of a last partial wave split along K.
//
// What changed since 10:
//   * SPLIT (wave quantization): tiles run in waves, one block per SM slot, and a last partial
//     wave leaves SMs idle: at 6144 x 6144 the 1,152 tiles of 128 x 256 make 8.73 waves on 132 SMs.
//     With SPLIT > 1 the launcher may hand out the last R tiles as SPLIT pieces each, every piece a
//     block of its own computing 1/SPLIT of the tile's K range: a 1-D grid of the (tiles - R)
//     whole tiles, then R x SPLIT pieces. The pieces of a tile add into C in turn, piece p waiting
//     for a flag raised by piece p-1. That relies on blocks starting in grid order (p-1 has started
//     when p waits). The CUDA programming model does not guarantee that order; on the H100 the wait
//     worked in every test and timed run, and CUTLASS's serial split-K relies on the same behaviour.
//     The flags belong to the module, so two launches of one compiled kernel must not run at once.
//   * Each block still runs one main loop, unchanged: a loop around it (stream-K's persistent
//     blocks) was slower, because ptxas then computes the copy addresses per thread. Where the
//     pieces are long they pay; where they are short, their own costs (filling the pipeline,
//     reading and writing C) eat the gain, which is what the launcher's plan weighs
//     (spec.split_tiles; docs/final-kernel-search.md).

#include "ptx.cuh"   // cp.async, acquire and release, the block's coordinates: PTX (and its CPU twin)

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
#ifndef SNAKE
#define SNAKE 1
#endif
#ifndef INTERIOR
#define INTERIOR 1
#endif
#ifndef SPREAD
#define SPREAD 4
#endif
#ifndef SPLIT
#define SPLIT 1
#endif
#define SPLIT_FLAGS 4096          // most tiles one launch may split (gemmlab/specs/ch11_last_wave.py agrees)
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
#define COPIES (A_FLOATS + B_CHUNKS)  // a thread's copies per tile
#define SPREAD_BY (SPREAD > 0 ? SPREAD : 1)
#define COPY_GROUPS ((COPIES + SPREAD_BY - 1) / SPREAD_BY)   // with SPREAD, groups of copies per tile
static_assert(THREADS % BK == 0 && THREADS % (BN / 4) == 0, "a thread's copies sit a whole number of rows apart");
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

// The copies of a tile that lies inside A and B: no checks. A thread's copies of A are
// THREADS / BK rows apart, its copies of B THREADS / (BN / 4) rows apart (int offsets: the caller
// checks that lda and ldb keep them below 2^31).
__device__ __forceinline__ void load_inside(float* as, float* bs, const float* a_src, const float* b_src,
                                            int lda, int ldb, int tid)
{
#pragma unroll
    for (int i = 0; i < A_FLOATS; ++i)
        copy_async<4>(as + (tid % BK) * AM + tid / BK + i * (THREADS / BK), a_src + i * (THREADS / BK) * lda, 4);
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i)
        copy_async<16>(bs + (tid / (BN / 4) + i * (THREADS / (BN / 4))) * BN + tid % (BN / 4) * 4,
                       b_src + i * (THREADS / (BN / 4)) * ldb, 16);
}

// acc += the block's panel of A times its panel of B, through a STAGES-deep pipeline of tiles.
template <bool VEC, bool INSIDE>
__device__ __forceinline__ void accumulate(float (&acc)[TROWS][TCOLS], float* As, float* Bs,
                                           const float* __restrict__ A, int lda, const float* __restrict__ B,
                                           int ldb, int M, int N, int K, int row0, int col0)
{
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);
    const int lr = lane / 8, lc = lane % 8;
    const int tiles_k = (K + BK - 1) / BK;
    const float* a_src = A + (size_t)(row0 + tid / BK) * lda + tid % BK;                  // + k0
    const float* b_src = B + (size_t)(tid / (BN / 4)) * ldb + col0 + tid % (BN / 4) * 4;  // + k0 rows
    auto issue = [&](int t, int stage) {       // the copies of tile t into a stage
        if (INSIDE)
            load_inside(As + stage * A_STAGE, Bs + stage * B_STAGE, a_src + t * BK, b_src + (size_t)t * BK * ldb,
                        lda, ldb, tid);
        else
            load_tile<VEC>(As + stage * A_STAGE, Bs + stage * B_STAGE, A, lda, B, ldb, M, N, K, row0, col0,
                           t * BK, tid);
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles_k) issue(s, s);
        commit();                              // an empty group keeps the counting uniform
    }

    constexpr bool spread = INSIDE && SPREAD > 0;
    for (int t = 0; t < tiles_k; ++t) {
        wait_pending<STAGES - 2>();            // this thread's copies of tile t have landed
        __syncthreads();                       // everyone's have; and nobody still reads tile t-1's stage
        const int next = t + STAGES - 1;       // goes where tile t-1 was
        // Spread, past the last tile the copies repeat it into a stage nobody reads: no branch
        // around them, which would keep ptxas from placing them among the FFMAs.
        const int src_t = min(next, tiles_k - 1);
        if (!spread) {                         // all of the next tile's copies, before the math
            if (next < tiles_k) issue(next, next % STAGES);
            commit();
        }

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
            if (spread) {                      // group g of SPREAD copies goes out at step 1 + g (BK-1) / groups
                float* as_next = As + next % STAGES * A_STAGE;
                float* bs_next = Bs + next % STAGES * B_STAGE;
                const float* a_next = a_src + src_t * BK;
                const float* b_next = b_src + (size_t)src_t * BK * ldb;
                // load_inside's copy c, written out here: through a helper, ptxas allocated the
                // registers of the whole loop differently (and this is the build that was timed)
#pragma unroll
                for (int c = 0; c < COPIES; ++c)
                    if (1 + c / SPREAD_BY * (BK - 1) / COPY_GROUPS == k) {
                        if (c < A_FLOATS)
                            copy_async<4>(as_next + (tid % BK) * AM + tid / BK + c * (THREADS / BK),
                                          a_next + c * (THREADS / BK) * lda, 4);
                        else
                            copy_async<16>(bs_next + (tid / (BN / 4) + (c - A_FLOATS) * (THREADS / (BN / 4))) * BN
                                           + tid % (BN / 4) * 4, b_next + (c - A_FLOATS) * (THREADS / (BN / 4)) * ldb, 16);
                    }
                if (k == BK - 1) commit();
            }
#pragma unroll
            for (int i = 0; i < TROWS; ++i)
#pragma unroll
                for (int jj = 0; jj < TCOLS; ++jj) {
                    const int j = SNAKE && i % 2 ? TCOLS - 1 - jj : jj;   // odd rows backwards
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
                }
        }
    }
    wait_pending<0>();                         // nothing may still be writing shared memory at exit
}

#if SPLIT > 1
// Per split tile: how many of its pieces have added into C (reset to 0 by the last piece).
__device__ unsigned split_flags[SPLIT_FLAGS];

// This block's work: a whole tile, or piece `piece` of split tile `flag` (tile `bid`). The grid
// is the (tiles - R) whole tiles, then piece 0 of the R split tiles, piece 1, ... so that the
// pieces of a tile come in grid order, R blocks apart. It is worked out twice, before the main loop
// and after it: read through ptx.cuh's volatile reads, none of it is kept in registers during the loop
// (kept, it cost the FFMAs registers: at MINB=2, 563 of 1,024 had two reads in one bank, not 115).
struct Work { int bid, piece, flag; bool split; };

__device__ __forceinline__ Work work_of(int M, int N)
{
    const unsigned block = ctaid_x(), blocks = nctaid_x();
    const int tiles = ((N + BN - 1) / BN) * ((M + BM - 1) / BM);
    const int split_tiles = ((int)blocks - tiles) / (SPLIT - 1);      // the launcher's R
    const int whole = tiles - split_tiles;
    Work w;
    w.split = (int)block >= whole;
    w.piece = w.split ? ((int)block - whole) / split_tiles : 0;
    w.flag = w.split ? ((int)block - whole) % split_tiles : 0;
    w.bid = w.split ? whole + w.flag : (int)block;
    return w;
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                          // [STAGES][BK][AM], A transposed
    float* Bs = smem + STAGES * A_STAGE;       // [STAGES][BK][BN]

    // Which tile, and which part of its K range. Grouped block order: GROUP tile rows at a time,
    // walked column by column.
#if SPLIT > 1
    const int tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
    const Work work = work_of(M, N);
    const int bid = work.bid;
    const int tiles_k = (K + BK - 1) / BK;
    const int t0 = work.piece * tiles_k / SPLIT, t1 = work.split ? (work.piece + 1) * tiles_k / SPLIT : tiles_k;
    const float* a_run = A + t0 * BK;                      // this block's run of K
    const float* b_run = B + (size_t)t0 * BK * ldb;
    const int k_run = min(K, t1 * BK) - t0 * BK;
#else
    const int tiles_n = gridDim.x, tiles_m = gridDim.y;
    const int bid = blockIdx.y * tiles_n + blockIdx.x;
    const float* a_run = A;
    const float* b_run = B;
    const int k_run = K;
#endif
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

    // 16-byte copies of B need each of its rows to start 16-byte aligned. With INTERIOR, only
    // blocks whose every tile lies inside the matrices (K a multiple of BK) take them, unchecked;
    // every other block takes the fully checked 4-byte path. Each extra copy of the main loop
    // costs registers and instruction cache: with a third one (aligned edge blocks) ptxas spills
    // on sm_80, and keeping the checked path inside the interior loop for a last partial K tile
    // was slower (docs/final-kernel-search.md, search 6).
    const bool b_aligned = ldb % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
    const bool inside = b_aligned && row0 + BM <= M && col0 + BN <= N && K % BK == 0
                        && lda < (1 << 23) && ldb < (1 << 23);
    if (INTERIOR ? inside : b_aligned)
        accumulate<true, INTERIOR>(acc, As, Bs, a_run, lda, b_run, ldb, M, N, k_run, row0, col0);
    else
        accumulate<false, false>(acc, As, Bs, a_run, lda, b_run, ldb, M, N, k_run, row0, col0);

#if SPLIT > 1
    // A piece after the first adds to what the pieces before it left in C, once they have. (Thread
    // 0's acquire and the barrier order every thread's reads of C after the earlier piece's writes.)
    const Work done = work_of(M, N);
    // exercise: begin
    if (done.piece > 0) {
        if (threadIdx.x == 0) {
            unsigned seen;
            do {
                seen = load_acquire(split_flags + done.flag);
            } while (seen != done.piece);
        }
        __syncthreads();
        beta = 1.0f;
    }
    // exercise: end
#endif

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
#if SPLIT > 1
    // The next piece may go on; the last one leaves the flag at 0 for the next launch.
    if (done.split) {
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) {
            const unsigned next = done.piece + 1 == SPLIT ? 0u : done.piece + 1u;
            store_release(split_flags + done.flag, next);
        }
    }
#endif
}
