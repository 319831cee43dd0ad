// NOT A COURSE KERNEL: an earlier version of kernels/10_final.cu, kept because docs/final-kernel-search.md
// quotes measurements of it. ALAYOUT=0 (row-major A, 16-byte copies) and FRAGBUF=1 (register fragments
// double-buffered) lost on the H100 and were removed from the course kernel.
//
// Chapter 10 -- the final kernel: every technique of the course, fed by asynchronous copies.
//
// What changed since 08:
//   * cp.async (sm_80+): tiles go from global memory straight into shared memory, without
//     passing through registers. No staged float4s to hold, no shared stores to issue, and the
//     copy engine does the waiting.
//   * STAGES shared-memory buffers form a pipeline: while the block computes on tile t, tiles
//     t+1 .. t+STAGES-1 are already being copied. One barrier per tile.
//   * A stays row-major in shared memory (cp.async cannot transpose). A 128-bit load of A then
//     brings FOUR k steps of one row, so per 4 k a thread issues the same number of A loads as
//     08 did with its transposed tile, just over 4 steps at once.
//   * Lanes sit 4 (rows) x 8 (columns) in a warp sub-tile: the 8 lanes of a quarter-warp share
//     their A address (a broadcast) and read 8 consecutive 16-byte vectors of B: no conflicts.
//   * GROUP: blocks are numbered so that GROUP consecutive tile rows are walked column by column;
//     the blocks running together then share A panels and B panels in L2.
//   * Every M, N, K and every leading dimension: edges are zero-filled by the copy itself
//     (cp.async's source size), and when a row is not 16-byte aligned the same copies are
//     made 4 bytes at a time (the choice is made once per launch, so it costs no branch per element).
// Kept from before: outer products from registers (05), full unrolling and 128-bit shared loads
// (06), a warp tile made of WMITER x WNITER sub-tiles of 4 x 4 patches (08).

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
#define WN 64
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP
#define GROUP 8
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef ALAYOUT
#define ALAYOUT 1
#endif
#ifndef FRAGBUF
#define FRAGBUF 1
#endif
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define WMITER (WM / 16)          // a sub-tile is 16 rows: 4 lane rows x 4
#define WNITER (WN / 32)          // and 32 columns: 8 lane columns x 4
#define TROWS (4 * WMITER)        // a thread's rows of C
#define TCOLS (4 * WNITER)        // and columns
#define AK (BK + 4)               // ALAYOUT 0: padded row of the A tile [BM][AK]
#define AM (BM + 4)               // ALAYOUT 1: padded row of the transposed A tile [BK][AM]
#define A_STAGE (ALAYOUT ? BK * AM : BM * AK)
#define A_CHUNKS (BM * BK / 4 / THREADS)
#define A_FLOATS (BM * BK / THREADS)
#define B_CHUNKS (BK * BN / 4 / THREADS)

__device__ __forceinline__ unsigned smem_address(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copy 4 floats, of which `valid` (0..4) are inside the matrix; the rest of the 16 bytes are zero-filled.
// VEC: src is 16-byte aligned, so one 16-byte copy; otherwise four 4-byte copies.
template <bool VEC>
__device__ __forceinline__ void copy4(float* dst, const float* src, int valid)
{
    if (VEC) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                     :: "r"(smem_address(dst)), "l"(src), "r"(valid * 4) : "memory");
    } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                         :: "r"(smem_address(dst + q)), "l"(q < valid ? src + q : src), "r"(q < valid ? 4 : 0)
                         : "memory");
    }
}

__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

// Issue the copies of the K tile starting at k0 into one stage (as: A_STAGE floats, bs: [BK][BN]).
template <bool VEC>
__device__ __forceinline__ void load_tile(float* as, float* bs, const float* __restrict__ A, int lda,
                                          const float* __restrict__ B, int ldb, int M, int N, int K,
                                          int row0, int col0, int k0, int tid)
{
#if ALAYOUT
    // Transposed on the way: one float per copy. Consecutive lanes take consecutive k of a row
    // (coalesced reads); their shared stores land 4 banks apart (at most 2-way conflicts).
#pragma unroll
    for (int i = 0; i < A_FLOATS; ++i) {
        const int e = tid + i * THREADS, r = e / BK, c = e % BK;
        const int gr = row0 + r, gc = k0 + c;
        const bool ok = gr < M && gc < K;
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                     :: "r"(smem_address(as + c * AM + r)), "l"(ok ? A + (size_t)gr * lda + gc : A), "r"(ok ? 4 : 0)
                     : "memory");
    }
#else
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
        const int e = tid + i * THREADS, r = e / (BK / 4), c = e % (BK / 4) * 4;
        const int gr = row0 + r, gc = k0 + c;
        const int valid = gr < M ? max(0, min(4, K - gc)) : 0;
        copy4<VEC>(as + r * AK + c, valid ? A + (size_t)gr * lda + gc : A, valid);
    }
#endif
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i) {
        const int e = tid + i * THREADS, r = e / (BN / 4), c = e % (BN / 4) * 4;
        const int gr = k0 + r, gc = col0 + c;
        const int valid = gr < K ? max(0, min(4, N - gc)) : 0;
        copy4<VEC>(bs + r * BN + c, valid ? B + (size_t)gr * ldb + gc : B, valid);
    }
}

// acc += the block's A panel times its B panel, through a STAGES-deep pipeline of tiles.
template <bool VEC>
__device__ __forceinline__ void accumulate(float (&acc)[TROWS][TCOLS], float* As, float* Bs,
                                           const float* __restrict__ A, int lda, const float* __restrict__ B,
                                           int ldb, int M, int N, int K, int row0, int col0)
{
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);
    const int lr = lane / 8, lc = lane % 8;
    const int tiles_k = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles_k)
            load_tile<VEC>(As + s * A_STAGE, Bs + s * BK * BN, A, lda, B, ldb, M, N, K, row0, col0, s * BK, tid);
        commit();                              // an empty group keeps the counting uniform
    }

    for (int t = 0; t < tiles_k; ++t) {
        wait_pending<STAGES - 2>();            // this thread's copies of tile t have landed
        __syncthreads();                       // everyone's have; and stage (t-1) % STAGES is free
        const int next = t + STAGES - 1;
        if (next < tiles_k)
            load_tile<VEC>(As + next % STAGES * A_STAGE, Bs + next % STAGES * BK * BN, A, lda, B, ldb, M, N, K,
                           row0, col0, next * BK, tid);
        commit();

        const float* bs = Bs + (t % STAGES) * BK * BN + wc * WN + lc * 4;
#if ALAYOUT
        const float* as = As + (t % STAGES) * A_STAGE + wr * WM + lr * 4;
#pragma unroll
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
                for (int j = 0; j < TCOLS; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
#else
        const float* as = As + (t % STAGES) * A_STAGE + (wr * WM + lr * 4) * AK;
#pragma unroll
        for (int k4 = 0; k4 < BK; k4 += 4) {
            float4 a[TROWS];                    // four k steps of each of this thread's rows
#pragma unroll
            for (int i = 0; i < TROWS; ++i)
                a[i] = *reinterpret_cast<const float4*>(as + ((i / 4) * 16 + i % 4) * AK + k4);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                float b[TCOLS];
#pragma unroll
                for (int wn = 0; wn < WNITER; ++wn) {
                    const float4 v = *reinterpret_cast<const float4*>(bs + (k4 + kk) * BN + wn * 32);
                    b[wn * 4 + 0] = v.x; b[wn * 4 + 1] = v.y; b[wn * 4 + 2] = v.z; b[wn * 4 + 3] = v.w;
                }
#pragma unroll
                for (int i = 0; i < TROWS; ++i) {
                    const float ak = kk == 0 ? a[i].x : kk == 1 ? a[i].y : kk == 2 ? a[i].z : a[i].w;
#pragma unroll
                    for (int j = 0; j < TCOLS; ++j) acc[i][j] = fmaf(ak, b[j], acc[i][j]);
                }
            }
        }
#endif
    }
    wait_pending<0>();                         // nothing may still be writing shared memory at exit
}

#if ALAYOUT && FRAGBUF
// The same pipeline, with the register fragments double-buffered as well: while the FFMAs of step
// k run, the fragments of step k+1 are already on their way from shared memory. The barrier moves
// to just before the LAST step of a tile, so the next tile's first fragments load during that step's
// FFMAs instead of after the barrier (where every warp would wait for them at once).
__device__ __forceinline__ void load_fragments(float (&a)[TROWS], float (&b)[TCOLS], const float* as,
                                               const float* bs, int k)
{
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
}

template <bool VEC>
__device__ __forceinline__ void accumulate_fragbuf(float (&acc)[TROWS][TCOLS], float* As, float* Bs,
                                                   const float* __restrict__ A, int lda,
                                                   const float* __restrict__ B, int ldb, int M, int N, int K,
                                                   int row0, int col0)
{
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);
    const int lr = lane / 8, lc = lane % 8;
    const int tiles_k = (K + BK - 1) / BK;
    const int a_off = wr * WM + lr * 4, b_off = wc * WN + lc * 4;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles_k)
            load_tile<VEC>(As + s * A_STAGE, Bs + s * BK * BN, A, lda, B, ldb, M, N, K, row0, col0, s * BK, tid);
        commit();
    }
    wait_pending<STAGES - 2>();
    __syncthreads();

    float a[2][TROWS], b[2][TCOLS];
    int read = 0, write = STAGES - 1;          // stages of tile t, and of tile t + STAGES - 1
    load_fragments(a[0], b[0], As + a_off, Bs + b_off, 0);
    for (int t = 0; t < tiles_k; ++t) {
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k == BK - 1) {                 // tile t+1 must be in, and every warp done with tile t-1's stage
                wait_pending<STAGES - 2>();
                __syncthreads();
                read = read == STAGES - 1 ? 0 : read + 1;
            }
            if (k < BK - 1 || t + 1 < tiles_k)
                load_fragments(a[(k + 1) % 2], b[(k + 1) % 2], As + read * A_STAGE + a_off,
                               Bs + read * BK * BN + b_off, (k + 1) % BK);
            if (k == 0) {                      // the stage of tile t-1: nobody reads it since the last barrier
                const int next = t + STAGES - 1;
                if (next < tiles_k)
                    load_tile<VEC>(As + write * A_STAGE, Bs + write * BK * BN, A, lda, B, ldb, M, N, K,
                                   row0, col0, next * BK, tid);
                commit();
                write = write == STAGES - 1 ? 0 : write + 1;
            }
#pragma unroll
            for (int i = 0; i < TROWS; ++i)
#pragma unroll
                for (int j = 0; j < TCOLS; ++j) acc[i][j] = fmaf(a[k % 2][i], b[k % 2][j], acc[i][j]);
        }
    }
    wait_pending<0>();
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                          // [STAGES][A_STAGE]: [BM][AK] or transposed [BK][AM]
    float* Bs = smem + STAGES * A_STAGE;       // [STAGES][BK][BN]

    // Grouped block order: GROUP tile rows at a time, walked column by column.
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

    // 16-byte copies need every row of A and B to start 16-byte aligned; decided once per launch.
    const bool vec = lda % 4 == 0 && ldb % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0
                     && reinterpret_cast<size_t>(B) % 16 == 0;
#if ALAYOUT && FRAGBUF
    if (vec)
        accumulate_fragbuf<true>(acc, As, Bs, A, lda, B, ldb, M, N, K, row0, col0);
    else
        accumulate_fragbuf<false>(acc, As, Bs, A, lda, B, ldb, M, N, K, row0, col0);
#else
    if (vec)
        accumulate<true>(acc, As, Bs, A, lda, B, ldb, M, N, K, row0, col0);
    else
        accumulate<false>(acc, As, Bs, A, lda, B, ldb, M, N, K, row0, col0);
#endif

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);
    const int lr = lane / 8, lc = lane % 8;
    const bool c_aligned = (ldc % 4 == 0) && (reinterpret_cast<size_t>(C) % 16 == 0);
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
