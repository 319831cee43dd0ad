// NOT A COURSE KERNEL: the stream-K version of kernels/10_final.cu (STREAMK=1: a persistent grid that
// splits the tiles of the last, partial wave along K), kept because docs/final-kernel-search.md
// (search 7) quotes measurements of it. It was correct (the GPU tests of 10 and compute-sanitizer
// memcheck and racecheck passed) but slower on the H100 than the course kernel, at every size:
// the loop over pieces of work around the main loop cost 3% by itself, and adding the pieces of a
// split tile cost more. The course kernel is one block per tile.
//
// Chapter 10 -- the final kernel: 08's warp tiling, fed by asynchronous copies through a pipeline.
//
// What changed since 08:
//   * cp.async (sm_80+): tiles go from global memory straight into shared memory without passing
//     through registers: no staged float4s to hold, no shared stores to issue.
//   * STAGES shared-memory buffers form a pipeline: while the block computes on tile t, tiles
//     t+1 .. t+STAGES-1 are already being copied. One barrier per tile.
//   * cp.async cannot transpose, and a transposed A tile is what gives 128-bit reads of A along m
//     (chapter 06). So A is copied one float at a time into its transposed place; consecutive
//     lanes take consecutive k of a row, so the global reads stay coalesced. B is copied 16 bytes
//     at a time. (Copying A row-major in 16-byte pieces and reading it along k was slower on the
//     H100: it needs four k steps of A in registers at once.)
//   * KUNROLL: the k loop over a tile is unrolled KUNROLL steps at a time, not always fully. A fully
//     unrolled 16-step loop of 128 FFMAs a step is ~40 KB of code; warps then wait for
//     instructions ("no instruction" stalls in Nsight Compute).
//   * GROUP: blocks are numbered so that GROUP consecutive tile rows are walked column by column;
//     the blocks running together share A panels and B panels in L2.
//   * MINB: blocks per SM promised to the compiler, which caps registers per thread.
//   * SNAKE and INTERIOR, as in 08 (FFMA order for the operand reuse cache; edge checks only in
//     edge blocks). Here the interior blocks' copies come from two pointers that advance one
//     tile at a time: some hundred instructions of address and predicate arithmetic per tile
//     fewer, in a loop whose speed is the rate at which instructions issue.
//   * STREAMK: the grid is persistent, one block per SM slot, and the tiles that would form a
//     last, partial wave are split along K so that every block gets the same number of k-steps
//     (stream-K). 4096 x 4096 makes 512 tiles of 128 x 256 for 132 SMs: 3.88 waves, so a quarter of
//     the time 16 SMs would sit idle. A block that computes the start of a split tile's K range
//     adds the other pieces, which their blocks left in a workspace, before it writes C.
//   * Every M, N, K and every leading dimension: edges are zero-filled by the copy itself (the
//     source size of cp.async), and when B's rows are not 16-byte aligned its copies are made 4
//     bytes at a time (decided per block: the main loop is compiled for both cases; with INTERIOR
//     the edge blocks, and every block when K is not a multiple of BK, take the 4-byte path too:
//     correct, and some 10% slower on the H100 at 4096 x 4096 x 4095).
// Kept from before: outer products from registers (05), 128-bit shared loads (06), a warp tile of
// WMITER x WNITER sub-tiles in which 4 x 8 lanes own 4 x 4 patches (08): the 8 lanes of a
// quarter-warp share their A address (a broadcast) and read 8 consecutive 16-byte pieces of B.

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
#define STAGES 3
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
#ifndef STREAMK
#define STREAMK 1
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
static_assert(THREADS % BK == 0 && THREADS % (BN / 4) == 0, "a thread's copies sit a whole number of rows apart");
#define SK_SLOTS 296               // blocks a stream-K grid may have (2 per SM up to 148 SMs); more wait out
#define SK_MIN_STEPS 8            // a piece of a split tile is at least this many K tiles (when there is work)
#define PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) PRAGMA(unroll n)

__device__ __forceinline__ unsigned smem_address(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copy `bytes` (4 or 16) from global to shared memory; of them only `valid` bytes are read, the
// rest are zero-filled (that is how the edges of A and B are padded with zeros).
template <int bytes>
__device__ __forceinline__ void copy_async(float* dst, const float* src, int valid)
{
    if (bytes == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                     :: "r"(smem_address(dst)), "l"(src), "r"(valid) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                     :: "r"(smem_address(dst)), "l"(src), "r"(valid) : "memory");
}

__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

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

// acc += K tiles [kb, ke) of the block's panel of A times its panel of B, through a STAGES-deep
// pipeline of tiles.
template <bool VEC, bool INSIDE>
__device__ __forceinline__ void accumulate(float (&acc)[TROWS][TCOLS], float* As, float* Bs,
                                           const float* __restrict__ A, int lda, const float* __restrict__ B,
                                           int ldb, int M, int N, int K, int row0, int col0, int kb, int ke)
{
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);
    const int lr = lane / 8, lc = lane % 8;
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
        if (kb + s < ke) issue(kb + s, s);
        commit();                              // an empty group keeps the counting uniform
    }

    for (int t = kb; t < ke; ++t) {
        wait_pending<STAGES - 2>();            // this thread's copies of tile t have landed
        __syncthreads();                       // everyone's have; and nobody still reads tile t-1's stage
        const int next = t + STAGES - 1;       // goes where tile t-1 was
        if (next < ke) issue(next, (next - kb) % STAGES);
        commit();

        const int stage = (t - kb) % STAGES;
        const float* as = As + stage * A_STAGE + wr * WM + lr * 4;
        const float* bs = Bs + stage * B_STAGE + wc * WN + lc * 4;
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
                for (int jj = 0; jj < TCOLS; ++jj) {
                    const int j = SNAKE && i % 2 ? TCOLS - 1 - jj : jj;   // odd rows backwards
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
                }
        }
    }
    wait_pending<0>();                         // nothing may still be writing shared memory at exit
}

#if STREAMK
// The stream-K workspace: a piece of a split tile that does not start its K range leaves its
// accumulators in its block's slot and raises the block's flag; the block that computes the
// start of the range waits for the flag, adds the piece and lowers the flag for the next launch.
// (One workspace per loaded module: launches of one kernel must not overlap.)
__device__ float4 sk_partial[SK_SLOTS][BM * BN / 4];
__device__ int sk_flag[SK_SLOTS];

__device__ __forceinline__ void raise_flag(int* flag) { asm volatile("st.release.gpu.global.b32 [%0], 1;" :: "l"(flag) : "memory"); }
__device__ __forceinline__ int read_flag(const int* flag)
{
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    return v;
}
#endif

// Tile number -> the tile's first row and column. Grouped order: GROUP tile rows at a time, walked
// column by column.
__device__ __forceinline__ void tile_origin(int tile, int tiles_m, int tiles_n, int& row0, int& col0)
{
    const int first_m = tile / (GROUP * tiles_n) * GROUP;
    const int group_rows = min(tiles_m - first_m, GROUP);
    const int in_group = tile % (GROUP * tiles_n);
    row0 = (first_m + in_group % group_rows) * BM;
    col0 = (in_group / group_rows) * BN;
}

// A block's work: `whole_count` whole tiles, first_tile + i * stride; then, with STREAMK, one
// run of K tiles through the split tiles: from K tile k0 of split tile t0 to K tile k1 (exclusive,
// 0 < k1 <= steps) of split tile t1 (t1 < t0: none). Split tile t is C tile `whole + t`. It sits in
// shared memory and is read through a volatile reference: the main loop needs every register, and
// this way none of it stays live across it.
struct Plan {
    long long sk_steps;                        // K tiles in all the split tiles
    int sk_blocks;                             // blocks that share them (the first sk_blocks)
    int tiles_m, tiles_n, steps, whole, whole_count, first_tile, stride, t0, k0, t1, k1;
    int last_helper;                           // blocks blockIdx.x + 1 .. last_helper hold pieces of tile t1
};

// Where block b's run through the split tiles starts, counted in K tiles.
__device__ __forceinline__ long long sk_first(const volatile Plan& plan, int b)
{
    return b < plan.sk_blocks ? plan.sk_steps * b / plan.sk_blocks : plan.sk_steps;
}

__device__ void make_plan(Plan& plan, int M, int N, int K)
{
    plan.tiles_n = (N + BN - 1) / BN;
    plan.tiles_m = (M + BM - 1) / BM;
    plan.steps = (K + BK - 1) / BK;
    const int tiles = plan.tiles_m * plan.tiles_n;
#if STREAMK
    // Split the partial last wave together with one full wave, so that every block's share of the
    // split tiles is at least one tile and a tile has pieces from at most two blocks.
    const int blocks = min(gridDim.x, SK_SLOTS), waves = tiles / blocks, rest = tiles % blocks;
    const int split = rest == 0 ? 0 : (waves >= 1 ? rest + blocks : tiles);
    plan.whole = tiles - split;
    plan.first_tile = blockIdx.x;
    plan.stride = blocks;
    plan.whole_count = plan.whole > (int)blockIdx.x ? (plan.whole - blockIdx.x + blocks - 1) / blocks : 0;
    plan.sk_steps = (long long)split * plan.steps;
    plan.sk_blocks = (int)min((long long)blocks, max(1LL, plan.sk_steps / SK_MIN_STEPS));
    const long long begin = sk_first(plan, blockIdx.x), end = sk_first(plan, blockIdx.x + 1);
    plan.t0 = (int)(begin / plan.steps);
    plan.k0 = (int)(begin % plan.steps);
    plan.t1 = end > begin ? (int)((end - 1) / plan.steps) : plan.t0 - 1;
    plan.k1 = (int)((end - 1) % plan.steps) + 1;
    // Every block below sk_blocks has at least SK_MIN_STEPS K tiles (or is the only one): the
    // blocks after this one whose runs start inside tile t1 hold its later pieces.
    const long long t1_end = (long long)(plan.t1 + 1) * plan.steps;
    plan.last_helper = blockIdx.x;
    while (plan.last_helper + 1 < plan.sk_blocks && sk_first(plan, plan.last_helper + 1) < t1_end)
        ++plan.last_helper;
#else
    plan.whole = tiles;
    plan.first_tile = blockIdx.y * gridDim.x + blockIdx.x;
    plan.stride = tiles;
    plan.whole_count = 1;
    plan.sk_steps = 0;
    plan.sk_blocks = 0;
    plan.t0 = 0; plan.k0 = 0; plan.t1 = -1; plan.k1 = 0;
    plan.last_helper = 0;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                          // [STAGES][BK][AM], A transposed
    float* Bs = smem + STAGES * A_STAGE;       // [STAGES][BK][BN]
    __shared__ Plan plan_shared;
#if STREAMK
    if (blockIdx.x >= SK_SLOTS) return;        // no workspace slot: the others do the work
#endif
    if (threadIdx.x == 0) make_plan(plan_shared, M, N, K);
    __syncthreads();
    const volatile Plan& plan = plan_shared;

    for (int piece = 0;; ++piece) {
        int tile, kb, ke;                      // this piece of work: K tiles [kb, ke) of C tile `tile`
        if (piece < plan.whole_count) {
            tile = plan.first_tile + piece * plan.stride;
            kb = 0;
            ke = plan.steps;
        } else {
            const int t = plan.t0 + piece - plan.whole_count;
            if (t > plan.t1) break;
            tile = plan.whole + t;
            kb = t == plan.t0 ? plan.k0 : 0;
            ke = t == plan.t1 ? plan.k1 : plan.steps;
        }
        int row0, col0;
        tile_origin(tile, plan.tiles_m, plan.tiles_n, row0, col0);
        __syncthreads();                       // the previous piece's warps are done with the stages

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
        // cost 2% at 4096 on the H100.
        const bool b_aligned = ldb % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
        const bool inside = b_aligned && row0 + BM <= M && col0 + BN <= N && K % BK == 0
                            && lda < (1 << 23) && ldb < (1 << 23);
        if (INTERIOR ? inside : b_aligned)
            accumulate<true, INTERIOR>(acc, As, Bs, A, lda, B, ldb, M, N, K, row0, col0, kb, ke);
        else
            accumulate<false, false>(acc, As, Bs, A, lda, B, ldb, M, N, K, row0, col0, kb, ke);

#if STREAMK
        // A thread keeps its accumulators in the workspace as float4s, THREADS apart: coalesced.
        if (kb != 0) {                         // a later piece of a split tile: leave it, raise the flag
            float4* slot = sk_partial[blockIdx.x] + threadIdx.x;
#pragma unroll
            for (int i = 0; i < TROWS; ++i)
#pragma unroll
                for (int q = 0; q < TCOLS / 4; ++q)
                    __stcg(slot + (i * TCOLS / 4 + q) * THREADS,
                           make_float4(acc[i][q * 4], acc[i][q * 4 + 1], acc[i][q * 4 + 2], acc[i][q * 4 + 3]));
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0) raise_flag(&sk_flag[blockIdx.x]);
            continue;
        }
        if (ke != plan.steps) {                // the first piece: add the later ones, then write C
            for (int b = blockIdx.x + 1; b <= plan.last_helper; ++b) {
                if (threadIdx.x == 0) {
                    while (read_flag(&sk_flag[b]) == 0) {}
                    sk_flag[b] = 0;
                }
                __syncthreads();
                const float4* slot = sk_partial[b] + threadIdx.x;
#pragma unroll
                for (int i = 0; i < TROWS; ++i)
#pragma unroll
                    for (int q = 0; q < TCOLS / 4; ++q) {
                        const float4 v = __ldcg(slot + (i * TCOLS / 4 + q) * THREADS);
                        acc[i][q * 4] += v.x; acc[i][q * 4 + 1] += v.y; acc[i][q * 4 + 2] += v.z; acc[i][q * 4 + 3] += v.w;
                    }
            }
        }
#endif

        tile_origin(tile, plan.tiles_m, plan.tiles_n, row0, col0);   // again: cheaper than a register
        const bool c_aligned = ldc % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        const int wr = warp / (BN / WN), wc = warp % (BN / WN);
        const int lr = lane / 8, lc = lane % 8;
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
}
