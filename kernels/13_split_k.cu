// Chapter 13 -- every shape: edge tiles moved inside C, and every tile split along K.
//
// What changed since 11: 11 is fast where C's tiles fill the GPU many times over and M, N and K are
// multiples of its tiles. Elsewhere two things cost it speed, and this kernel removes both; a
// tunable takes on a third, A's copies where C is narrow.
//   * Ragged edges. 11's blocks whose tile reaches past M, N or K, and all of them where B's rows
//     are not 16-byte multiples, take a checked copy path that works out, element by element,
//     whether each copy lies inside the matrices, which makes each such tile slower (chapter 14
//     fits how much). Here no copy in the main loop is checked.
//       - A tile at the bottom or right edge is moved back inside C (its origin becomes M - BM or
//         N - BN): it recomputes a few rows or columns of its neighbour and stores only its own.
//         Every tile then lies inside C, so every block runs the same unchecked loop. M and N must
//         be at least BM and BN (the shape rule `tile-fits`).
//       - K's remainder goes first: the K range is padded at its start to whole BK tiles, and only
//         the first tile's copies are checked, in the prologue, with cp.async's zero-fill (a
//         src-size of 0 writes zeros). Every later tile is whole.
//       - Where B's rows (or this tile's columns) do not start 16 bytes aligned, B is copied
//         4 bytes at a time, still unchecked: 4 copies for one, where the checked path cost a
//         bounds test and an address per float. RAGGED_B=1 lays those copies across the warp:
//         consecutive lanes copy consecutive floats of a row, BN / 4 of them (a warp's copy covers
//         one row of a tile 128 or more wide, 2 or 4 rows of one 64 or 32 wide), written 1, 2 or 4
//         to a bank (0: each thread copies its own 4 floats, 16 bytes apart across the warp, 4 to a bank).
//       - Where C's rows (or this tile's columns) do not start 16 bytes aligned, STAGE_C=1 stores the
//         tile through shared memory, a warp's 32 stores on one row (0: 4 bytes at a time from the
//         registers, 4 rows a warp's store). Which is faster depends on the shape: the plan chooses.
//   * Grids that do not fill the GPU. At 640 x 640, 128 x 128 tiles make 25 blocks (11's
//     128 x 256, 15) for 132 SMs. Small tiles (down to 32 x 32) make more blocks, and SPLIT cuts
//     every tile's K range into up to SPLIT pieces, one block each (gridDim.z pieces: the launcher
//     uses fewer where the workspace cannot hold SPLIT partial tiles of every tile, or K has fewer
//     tiles): each piece writes its partial tile to a workspace, and the last piece of a tile to
//     arrive adds all of them, in piece order, and writes C. Nobody waits for anybody (11's pieces
//     took turns: chapter 14 fits what each adds), and the sum's order does not depend on which
//     piece came last, so a result is the same bits run after run. The workspace and the arrival
//     counts belong to the module: two launches of one compiled kernel must not run at once.
//   * A's copies. A is copied into shared memory transposed, As[k][m], one float a copy, so that
//     the math reads a thread's 4 rows of one k in one 16-byte load. Where C has few columns, A is
//     nearly all of a tile's copies, and they pace the kernel. A_QUADS=1 keeps A's tile as it lies,
//     As[m][k], copied 16 bytes at a time (a quarter of the copies), and the math reads 4 k steps
//     of a row in one 16-byte load: 4 times the registers for A, so for narrow tiles. It needs lda
//     and K multiples of 4 (the shape rule `a-quads`) and A 16-byte aligned (`pointer-alignment`).

#include "ptx.cuh"   // cp.async and the block's coordinates: PTX (and its CPU twin)

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 32
#endif
#ifndef WN
#define WN 32
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
#define MINB 2
#endif
#ifndef SNAKE
#define SNAKE 1
#endif
#ifndef SPREAD
#define SPREAD 2
#endif
#ifndef SPLIT
#define SPLIT 1
#endif
#ifndef STAGE_C
#define STAGE_C 0
#endif
#ifndef RAGGED_B
#define RAGGED_B 0
#endif
#ifndef A_QUADS
#define A_QUADS 0
#endif
#define PARTIAL_FLOATS (1 << 23)  // the workspace: 32 MiB (gemmlab/specs/ch13_split_k.py agrees)
#define ARRIVALS 65536            // most tiles one split launch may have (likewise)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define WMITER (WM / 16)          // a sub-tile is 16 rows: 4 lane rows x 4
#define WNITER (WN / 32)          // and 32 columns: 8 lane columns x 4
#define TROWS (4 * WMITER)        // a thread's rows of C
#define TCOLS (4 * WNITER)        // and columns
#define AM (BM + 4)               // padded row of the transposed A tile [BK][AM]
#if A_QUADS
#define A_STAGE (BM * BK)         // A's tile as it lies [BM][BK]
#define A_COPIES (BM * BK / 4 / THREADS)   // 16-byte chunks of A
#define A_ROW_LANES (BK / 4)      // threads that copy one row of A's tile
static_assert(BM * BK / 4 % THREADS == 0 && THREADS % A_ROW_LANES == 0, "A's chunks split evenly over the threads");
#else
#define A_STAGE (BK * AM)
#define A_COPIES (BM * BK / THREADS)       // single floats of A
#define A_ROW_LANES BK
static_assert(THREADS % BK == 0, "a thread's copies of A sit a whole number of rows apart");
#endif
#define B_STAGE (BK * BN)
#define B_CHUNKS (BK * BN / 4 / THREADS)
#define COPIES (A_COPIES + B_CHUNKS)  // a thread's copies per tile (16-byte chunks counted once)
#define SPREAD_BY (SPREAD > 0 ? SPREAD : 1)
#define COPY_GROUPS ((COPIES + SPREAD_BY - 1) / SPREAD_BY)   // with SPREAD, groups of copies per tile
static_assert(THREADS % (BN / 4) == 0, "a thread's copies of B sit a whole number of rows apart");
#define PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) PRAGMA(unroll n)

// One 4-float chunk of a B row: a 16-byte copy where B's rows allow (VEC), else four 4-byte ones.
template <bool VEC>
__device__ __forceinline__ void copy_chunk(float* dst, const float* src, int valid)
{
    if (VEC) {
        copy_async<16>(dst, src, valid ? 16 : 0);
    } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) copy_async<4>(dst + q, src + q, valid ? 4 : 0);
    }
}

// Copy c of a thread's COPIES for one tile: the first A_COPIES are of A (single floats transposed
// into as[BK][AM]; with A_QUADS 4-float chunks into as[BM][BK]), the rest 4-float chunks of B (into
// bs[BK][BN]). `a_src` and `b_src` point at the thread's first copy of this tile; a thread's copies of
// A are THREADS / A_ROW_LANES rows apart, of B THREADS / (BN / 4) rows apart (int offsets: the shape
// rule `row-offsets` keeps them below 2^31). PADDED only for the first tile of K: its first `pad`
// columns of A and rows of B are zeros (with A_QUADS, pad is a multiple of 4: a chunk is all or none).
template <bool VEC, bool PADDED>
__device__ __forceinline__ void copy_one(int c, float* as, float* bs, const float* a_src, const float* b_src,
                                         int lda, int ldb, int tid, int pad, const float* A, const float* B)
{
    if (c < A_COPIES) {
#if A_QUADS
        const bool ok = !PADDED || tid % A_ROW_LANES * 4 >= pad;
        copy_async<16>(as + (tid / A_ROW_LANES + c * (THREADS / A_ROW_LANES)) * BK + tid % A_ROW_LANES * 4,
                       ok ? a_src + c * (THREADS / A_ROW_LANES) * lda : A, ok ? 16 : 0);
#else
        const bool ok = !PADDED || tid % BK >= pad;
        copy_async<4>(as + (tid % BK) * AM + tid / BK + c * (THREADS / BK),
                      ok ? a_src + c * (THREADS / BK) * lda : A, ok ? 4 : 0);
#endif
    } else {
        const int i = c - A_COPIES, row = tid / (BN / 4) + i * (THREADS / (BN / 4));
        const bool ok = !PADDED || row >= pad;
#if RAGGED_B
        if (!VEC) {                            // the thread's floats lie BN / 4 apart on its row
            const int lane_col = tid % (BN / 4);
            const float* row_src = b_src + i * (THREADS / (BN / 4)) * ldb - 3 * lane_col;   // column lane_col
#pragma unroll
            for (int q = 0; q < 4; ++q)
                copy_async<4>(bs + row * BN + lane_col + q * (BN / 4), ok ? row_src + q * (BN / 4) : B, ok ? 4 : 0);
            return;
        }
#endif
        copy_chunk<VEC>(bs + row * BN + tid % (BN / 4) * 4, ok ? b_src + i * (THREADS / (BN / 4)) * ldb : B, ok);
    }
}

// All of a thread's copies of one tile.
template <bool VEC, bool PADDED>
__device__ __forceinline__ void copy_tile(float* as, float* bs, const float* a_src, const float* b_src,
                                          int lda, int ldb, int tid, int pad, const float* A, const float* B)
{
#pragma unroll
    for (int c = 0; c < COPIES; ++c)
        copy_one<VEC, PADDED>(c, as, bs, a_src, b_src, lda, ldb, tid, pad, A, B);
}

// acc += the block's panel of A times its panel of B over K tiles [t0, t1), through a STAGES-deep
// pipeline. Tile t covers k from t * BK - pad: `a_src` and `b_src` already include that shift.
template <bool VEC>
__device__ __forceinline__ void accumulate(float (&acc)[TROWS][TCOLS], float* As, float* Bs,
                                           const float* a_src, int lda, const float* b_src, int ldb,
                                           int t0, int t1, int pad, const float* A, const float* B)
{
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);
    const int lr = lane / 8, lc = lane % 8;
    const int tiles = t1 - t0;
    a_src += t0 * BK;
    b_src += (ptrdiff_t)t0 * BK * ldb;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) {
            float* as = As + s * A_STAGE;
            float* bs = Bs + s * B_STAGE;
            const float* a = a_src + s * BK;
            const float* b = b_src + (ptrdiff_t)s * BK * ldb;
            if (t0 + s == 0 && pad > 0)        // only tile 0 of K has padding
                copy_tile<VEC, true>(as, bs, a, b, lda, ldb, tid, pad, A, B);
            else
                copy_tile<VEC, false>(as, bs, a, b, lda, ldb, tid, 0, A, B);
        }
        commit();                              // an empty group keeps the counting uniform
    }

    for (int t = 0; t < tiles; ++t) {
        wait_pending<STAGES - 2>();            // this thread's copies of tile t have landed
        __syncthreads();                       // everyone's have; and nobody still reads tile t-1's stage
        const int next = t + STAGES - 1;       // goes where tile t-1 was
        // Spread, past the last tile the copies repeat it into a stage nobody reads: no branch
        // around them, which would keep ptxas from placing them among the FFMAs. The repeat is
        // unpadded, so a block's last tile must never be the padded tile 0: the launcher gives a
        // first piece at least two tiles where K is padded, and refuses a K shorter than BK.
        const int src_t = min(next, tiles - 1);
        float* as_next = As + next % STAGES * A_STAGE;
        float* bs_next = Bs + next % STAGES * B_STAGE;
        const float* a_next = a_src + src_t * BK;
        const float* b_next = b_src + (ptrdiff_t)src_t * BK * ldb;
        if (SPREAD == 0) {                     // all of the next tile's copies, before the math
            if (next < tiles) copy_tile<VEC, false>(as_next, bs_next, a_next, b_next, lda, ldb, tid, 0, A, B);
            commit();
        }

#if A_QUADS
        const float* as = As + t % STAGES * A_STAGE + (wr * WM + lr * 4) * BK;
        float4 quad[TROWS];                    // each of the thread's rows, 4 k steps (k & ~3 on)
#else
        const float* as = As + t % STAGES * A_STAGE + wr * WM + lr * 4;
#endif
        const float* bs = Bs + t % STAGES * B_STAGE + wc * WN + lc * 4;
        UNROLL_BY(KUNROLL)
        for (int k = 0; k < BK; ++k) {
            float a[TROWS], b[TCOLS];
#if A_QUADS
            if (k % 4 == 0) {                  // unrolled by a multiple of 4: k % 4 is known
#pragma unroll
                for (int i = 0; i < TROWS; ++i)
                    quad[i] = *reinterpret_cast<const float4*>(as + (i / 4 * 16 + i % 4) * BK + k);
            }
#pragma unroll
            for (int i = 0; i < TROWS; ++i)
                a[i] = k % 4 == 0 ? quad[i].x : k % 4 == 1 ? quad[i].y : k % 4 == 2 ? quad[i].z : quad[i].w;
#else
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm) {
                const float4 v = *reinterpret_cast<const float4*>(as + k * AM + wm * 16);
                a[wm * 4 + 0] = v.x; a[wm * 4 + 1] = v.y; a[wm * 4 + 2] = v.z; a[wm * 4 + 3] = v.w;
            }
#endif
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const float4 v = *reinterpret_cast<const float4*>(bs + k * BN + wn * 32);
                b[wn * 4 + 0] = v.x; b[wn * 4 + 1] = v.y; b[wn * 4 + 2] = v.z; b[wn * 4 + 3] = v.w;
            }
            if (SPREAD > 0) {                  // group g of SPREAD copies goes out at step 1 + g (BK-1) / groups
#pragma unroll
                for (int c = 0; c < COPIES; ++c)
                    if (1 + c / SPREAD_BY * (BK - 1) / COPY_GROUPS == k)
                        copy_one<VEC, false>(c, as_next, bs_next, a_next, b_next, lda, ldb, tid, 0, A, B);
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
// Per piece and tile, the piece's partial tile, as each thread's accumulators in float4s
// ([piece][tile][TROWS * TCOLS / 4][THREADS]); per tile, how many pieces have written theirs (the
// last resets it to 0 for the next launch).
__device__ float4 partials[PARTIAL_FLOATS / 4];
__device__ unsigned arrivals[ARRIVALS];

// Whether this block is the last piece of its tile to arrive; if so, acc becomes the sum of every
// piece's partial tile, added in piece order (its own read back too, so the order never depends on
// which piece came last).
__device__ __forceinline__ bool gather_pieces(float (&acc)[TROWS][TCOLS], unsigned* flag)
{
    const unsigned bx = ctaid_x(), by = ctaid_y(), bz = ctaid_z();   // read anew (volatile): nothing
    const unsigned nx = nctaid_x(), ny = nctaid_y(), nz = nctaid_z();  // kept through the main loop
    const int tile = (int)(by * nx + bx), tiles = (int)(nx * ny), pieces = (int)nz;
    const int tid = threadIdx.x, piece = (int)bz;
    constexpr int QUADS = TROWS * TCOLS / 4;
    float4* mine = partials + ((size_t)piece * tiles + tile) * QUADS * THREADS + tid;
#pragma unroll
    for (int q = 0; q < QUADS; ++q) {
        const float* v = &acc[q / (TCOLS / 4)][q % (TCOLS / 4) * 4];
        __stcg(mine + q * THREADS, make_float4(v[0], v[1], v[2], v[3]));
    }
    __threadfence();                           // the partial tile is visible before the count says so
    __syncthreads();                           // (and no thread still reads the tiles' shared memory)
    // exercise: begin
    if (tid == 0) {
        const unsigned before = atomicAdd(arrivals + tile, 1u);
        const bool last = before == pieces - 1;
        if (last) arrivals[tile] = 0;          // every piece has counted: ready for the next launch
        *flag = last;
    }
    __syncthreads();
    if (!*flag) return false;
    __threadfence();                           // the other pieces' partial tiles are read after the count
    // exercise: end
    const float4* tile_parts = partials + (size_t)tile * QUADS * THREADS + tid;
    const size_t piece_stride = (size_t)tiles * QUADS * THREADS;
    // Every piece's part, its own too, in piece order: the same sum whichever piece came last. A
    // batch of quads is read a piece at a time, its loads all in flight together, so a piece costs
    // one wait on L2 a batch rather than one a quad (8 quads: 32 registers more at most). A batch divides
    // the quads: a 48-row warp tile 32 columns wide has 12.
    constexpr int BATCH = QUADS % 8 == 0 ? 8 : QUADS % 4 == 0 ? 4 : QUADS;
#pragma unroll
    for (int q0 = 0; q0 < QUADS; q0 += BATCH) {
        float4 sum[BATCH];
#pragma unroll
        for (int b = 0; b < BATCH; ++b) sum[b] = __ldcg(tile_parts + (q0 + b) * THREADS);
#pragma unroll 1
        for (int p = 1; p < pieces; ++p) {
            float4 w[BATCH];
#pragma unroll
            for (int b = 0; b < BATCH; ++b) w[b] = __ldcg(tile_parts + p * piece_stride + (q0 + b) * THREADS);
#pragma unroll
            for (int b = 0; b < BATCH; ++b) {
                sum[b].x += w[b].x; sum[b].y += w[b].y; sum[b].z += w[b].z; sum[b].w += w[b].w;
            }
        }
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            float* v = &acc[(q0 + b) / (TCOLS / 4)][(q0 + b) % (TCOLS / 4) * 4];
            v[0] = sum[b].x; v[1] = sum[b].y; v[2] = sum[b].z; v[3] = sum[b].w;
        }
    }
    return true;
}
#endif

// Which tile a block computes: grouped block order, GROUP tile rows at a time, walked column by
// column. The tile's own rows and columns start at first_row and first_col; an edge tile is moved
// back inside C (row0, col0) and stores only its own. Worked out before the main loop and again
// after it: read through ptx.cuh's volatile reads, none of it is kept in registers during the loop.
struct Origin { int first_row, first_col, row0, col0; };

__device__ __forceinline__ Origin origin_of(int M, int N)
{
    const unsigned bx = ctaid_x(), by = ctaid_y(), tiles_n = nctaid_x(), tiles_m = nctaid_y();
    const int bid = (int)(by * tiles_n + bx);
    const int first_m = bid / (GROUP * (int)tiles_n) * GROUP;
    const int group_rows = min((int)tiles_m - first_m, GROUP);
    const int in_group = bid % (GROUP * (int)tiles_n);
    Origin o;
    o.first_row = (first_m + in_group % group_rows) * BM;
    o.first_col = (in_group / group_rows) * BN;
    o.row0 = min(o.first_row, M - BM);
    o.col0 = min(o.first_col, N - BN);
    return o;
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                          // [STAGES][BK][AM], A transposed ([STAGES][BM][BK] with A_QUADS)
    float* Bs = smem + STAGES * A_STAGE;       // [STAGES][BK][BN]

    const Origin at = origin_of(M, N);
    const int row0 = at.row0, col0 = at.col0;

    // This piece's K tiles [t0, t1), in tiles that end at K: the first tile starts at -pad.
    const int tiles_k = (K + BK - 1) / BK, pad = tiles_k * BK - K;
    const int t0 = (int)blockIdx.z * tiles_k / (int)gridDim.z, t1 = ((int)blockIdx.z + 1) * tiles_k / (int)gridDim.z;

    float acc[TROWS][TCOLS];
#pragma unroll
    for (int i = 0; i < TROWS; ++i)
#pragma unroll
        for (int j = 0; j < TCOLS; ++j) acc[i][j] = 0.0f;

    const int tid = threadIdx.x;
#if A_QUADS
    const float* a_src = A + (ptrdiff_t)(row0 + tid / A_ROW_LANES) * lda + tid % A_ROW_LANES * 4 - pad;
#else
    const float* a_src = A + (ptrdiff_t)(row0 + tid / BK) * lda + tid % BK - pad;
#endif
    const float* b_src = B + (ptrdiff_t)(tid / (BN / 4) - pad) * ldb + col0 + tid % (BN / 4) * 4;
    // 16-byte copies of B need each of its chunks to start 16-byte aligned.
    if (ldb % 4 == 0 && col0 % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0)
        accumulate<true>(acc, As, Bs, a_src, lda, b_src, ldb, t0, t1, pad, A, B);
    else
        accumulate<false>(acc, As, Bs, a_src, lda, b_src, ldb, t0, t1, pad, A, B);

#if SPLIT > 1
    if (gridDim.z > 1 && !gather_pieces(acc, reinterpret_cast<unsigned*>(smem))) return;
#endif

    const Origin done = origin_of(M, N);
    const int first_row = done.first_row, first_col = done.first_col;
    const int warp = tid / 32, lane = tid % 32;
    const int wr = warp / (BN / WN), wc = warp % (BN / WN);
    const int lr = lane / 8, lc = lane % 8;
    const bool c_aligned = ldc % 4 == 0 && done.col0 % 4 == 0 && reinterpret_cast<size_t>(C) % 16 == 0;
#if STAGE_C
    // Where C's rows (or this tile's columns) do not start 16 bytes aligned, a thread's 4-float
    // patches land 4 bytes at a time in 4 different rows' cache lines. Instead the block stages its
    // tile in shared memory (the launcher gives it BM x BN floats at least), 16 bytes a store, and
    // then stores it row by row: a warp's 32 stores are 32 consecutive floats of one row. The loop
    // is not unrolled: code a block runs once, at its end, is fetched into the instruction cache by
    // each SM first, and a long unrolled store path cost small-K launches more than it saved
    // (docs/dispatch-history.md).
    if (!c_aligned) {
        __syncthreads();                       // nobody still reads the last K tile (or the split's flag)
#pragma unroll
        for (int i = 0; i < TROWS; ++i)
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
                *reinterpret_cast<float4*>(smem + (wr * WM + (i / 4) * 16 + lr * 4 + i % 4) * BN
                                           + wc * WN + wn * 32 + lc * 4) =
                    make_float4(acc[i][wn * 4], acc[i][wn * 4 + 1], acc[i][wn * 4 + 2], acc[i][wn * 4 + 3]);
        __syncthreads();
#pragma unroll 1
        for (int o = tid; o < BM * BN; o += THREADS) {
            const int r = done.row0 + o / BN, c = done.col0 + o % BN;
            if (r < first_row || c < first_col) continue;   // the neighbour's, recomputed
            float* p = C + (size_t)r * ldc + c;
            *p = beta == 0.0f ? alpha * smem[o] : alpha * smem[o] + beta * *p;
        }
        return;
    }
#endif
#pragma unroll
    for (int i = 0; i < TROWS; ++i) {
        const int r = done.row0 + wr * WM + (i / 4) * 16 + lr * 4 + i % 4;
        if (r < first_row) continue;           // the neighbour's row, recomputed
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn) {
            const int c = done.col0 + wc * WN + wn * 32 + lc * 4;
            float* p = C + (size_t)r * ldc + c;
            const float* v = &acc[i][wn * 4];
            if (c_aligned && c >= first_col) {
                float4 out = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
                if (beta != 0.0f) {
                    const float4 old = *reinterpret_cast<const float4*>(p);
                    out.x += beta * old.x; out.y += beta * old.y; out.z += beta * old.z; out.w += beta * old.w;
                }
                *reinterpret_cast<float4*>(p) = out;
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (c + q >= first_col) p[q] = beta == 0.0f ? alpha * v[q] : alpha * v[q] + beta * p[q];
            }
        }
    }
}
