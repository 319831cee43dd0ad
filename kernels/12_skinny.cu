// Chapter 12 -- skinny products: the memory-bound side of the roofline.
//
// What changed since 11: nothing is tiled for reuse any more. When M (or N) is tiny, C has too few
// tiles to fill the GPU, and each element of the big operand is used by only M (or N) rows of C:
// 2 * M FLOPs per 4 bytes of B. At M = 1 that is half a FLOP per byte, far under the ridge (about
// 20 FLOPs per byte on the H100): DRAM bandwidth, not FFMA, sets the speed limit. The kernel's one
// job is to stream the big operand once, at full bandwidth, with enough loads (SIDE 2: stores) in flight.
//   * SIDE 0 and 1 split the work along K, not only along M and N: every thread of a block walks its own
//     slice of K (its "k-lane") in quads of 4 floats, 16-byte loads, UNROLL quads in flight at a
//     time, and keeps partial sums in registers. The partial sums are added at the end, first across
//     a warp's lanes with shuffles (no shared memory, no barrier), then across warps in shared memory.
//   * SIDE 0, few rows (M small): a block owns EDGE rows and 4 * LANES columns of C. A warp's LANES
//     column lanes read 4 consecutive columns each of one row of B (LANES * 16 contiguous bytes),
//     its 32 / LANES k-lanes read different rows. The EDGE rows of A are re-read by every column
//     lane from L1 (the same address across the lanes: one request).
//     Blocks that share a strip of B are numbered next to each other, so the EDGE-row groups of
//     one strip run at about the same time and only the first reads it from DRAM.
//   * SIDE 1, few columns (N small): a group of LANES lanes owns one row of A and C, and walks the
//     row in quads (LANES * 16 contiguous bytes); B's rows (EDGE floats each) come from L1.
//   * SIDE 2, small K (K up to 4 EDGE: 32 at EDGE = 8): each output is K multiply-adds, and C itself is
//     the big operand, written once: 4 bytes for 2K FLOPs. No split along K, no shuffles. Each thread
//     holds 4 EDGE rows of B (0 past K) for its UNROLL columns, 32 apart, in registers; the block's
//     rows of A (LANES a warp) sit in shared memory. It then stores C a row at a time, a warp's 32
//     lanes writing 32 consecutive floats: 128 contiguous bytes a store instruction, whatever the
//     row's alignment, so an N that is not a multiple of 4 costs little here, where the tiled kernels
//     then store each thread's own columns 4 bytes at a time. A and B are read 4 bytes at a time.
//     ACROSS sets how the block's warps share C: 1 stacks them along M (every warp reads the same
//     columns of B, each for LANES rows of its own); with ACROSS > 1, ACROSS warps side by side each
//     read columns of their own and walk the same rows. The block covers ACROSS times fewer rows and
//     ACROSS times more columns, so its rows of A, copied into shared memory once a block, serve
//     ACROSS times as many floats of C; and where C has fewer rows than a block (a short, wide C), each
//     warp's columns of B serve more of them. Quads of K past K are skipped: the row loop is built once
//     for each count of quads, 1 to EDGE, and a launch runs the one its K needs.
//   * SIDE 0 and 1: 16-byte loads need 16-byte aligned rows: where A's rows (lda, the pointer) are not, A's quads
//     come in 4-byte loads; where B's are not, or a thread's columns reach past N, B's likewise,
//     checked. Each operand keeps its 16-byte loads where it can, and every shape is computed.

#ifndef SIDE
#define SIDE 0
#endif
#ifndef EDGE
#define EDGE 4
#endif
#ifndef LANES
#define LANES 8
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef EVICT_FIRST
#define EVICT_FIRST 1
#endif
#ifndef ACROSS
#define ACROSS 1
#endif
#define WARPS (THREADS / 32)
static_assert(THREADS % 32 == 0 && (SIDE == 2 || 32 % LANES == 0), "LANES lanes divide a warp, warps divide a block");
#define PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) PRAGMA(unroll n)

// A load of the streamed operand. Its every byte is used once: with EVICT_FIRST it is marked so in the
// caches (ld.global.cs), so that it does not push out of L1 the small operand every thread re-reads.
__device__ __forceinline__ float4 stream4(const float* p)
{
#if EVICT_FIRST
    return __ldcs(reinterpret_cast<const float4*>(p));
#else
    return __ldg(reinterpret_cast<const float4*>(p));
#endif
}

__device__ __forceinline__ float stream1(const float* p)
{
#if EVICT_FIRST
    return __ldcs(p);
#else
    return __ldg(p);
#endif
}

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<unsigned long long>(p) & 15) == 0;
}

// Four consecutive floats of a row: one 16-byte load where the row is 16-byte aligned (VECTOR), else
// four 4-byte loads; of the streamed operand (STREAMED: evict-first) or of the re-read one.
template <bool VECTOR, bool STREAMED>
__device__ __forceinline__ float4 four(const float* p)
{
    if (VECTOR) return STREAMED ? stream4(p) : __ldg(reinterpret_cast<const float4*>(p));
    return STREAMED ? make_float4(stream1(p), stream1(p + 1), stream1(p + 2), stream1(p + 3))
                    : make_float4(__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
}

// exercise: begin
// Adds `v` over the lanes of a warp that share (lane % STRIDE): the lanes STRIDE, 2 * STRIDE, ...
// apart. Each step adds the value held `offset` lanes away, halving the lanes still apart; every
// lane ends with the sum.
template <int STRIDE>
__device__ __forceinline__ float add_across(float v)
{
#pragma unroll
    for (int offset = 16; offset >= STRIDE; offset /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}
// exercise: end

__device__ __forceinline__ void store_c(float* C, size_t at, float alpha, float beta, float v)
{
    C[at] = (beta == 0.0f) ? alpha * v : alpha * v + beta * C[at];
}

#if SIDE == 0
// ---- few rows: C[EDGE rows][4 * LANES columns] per block, B streamed ----------------------------
#define KLANES (THREADS / LANES)          // k-lanes of the block
#define COLS (4 * LANES)

// Four columns of a row of B from `col` on: 16 bytes (VECTOR), else one by one, columns past N as 0.
template <bool VECTOR>
__device__ __forceinline__ float4 b_row(const float* row, int col, int N)
{
    if (VECTOR) return stream4(row + col);
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = col + j < N ? stream1(row + col + j) : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

// acc += the EDGE rows of A at k .. k + 3 times the four rows of B in b: 16 x EDGE multiply-adds.
template <bool VA>
__device__ __forceinline__ void add_quad(const float* const (&a)[EDGE], int k, const float4 (&b)[4],
                                         float (&acc)[EDGE][4])
{
#pragma unroll
    for (int m = 0; m < EDGE; ++m) {
        const float4 x = four<VA, false>(a[m] + k);
        const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            acc[m][0] += xs[i] * b[i].x;
            acc[m][1] += xs[i] * b[i].y;
            acc[m][2] += xs[i] * b[i].z;
            acc[m][3] += xs[i] * b[i].w;
        }
    }
}

// The thread's quads of K (4 k each, KLANES quads apart), UNROLL of them a trip (one off B's 16-byte
// path), every load of B in a trip issued before its math. VA: A's rows are 16-byte aligned; VB: so
// are B's, and the thread's four columns lie inside N.
template <bool VA, bool VB>
__device__ __forceinline__ void few_rows(const float* const (&a)[EDGE], const float* __restrict__ B, int ldb,
                                         int col, int N, int quads, int q, float (&acc)[EDGE][4])
{
    constexpr int TRIP = VB ? UNROLL : 1;                // 4-byte loads of B: one quad a trip (registers)
    for (; q + (TRIP - 1) * KLANES < quads; q += TRIP * KLANES) {
        float4 b[TRIP][4];
        UNROLL_BY(TRIP)
        for (int u = 0; u < TRIP; ++u)
#pragma unroll
            for (int i = 0; i < 4; ++i) b[u][i] = b_row<VB>(B + (size_t)(4 * (q + u * KLANES) + i) * ldb, col, N);
        UNROLL_BY(TRIP)
        for (int u = 0; u < TRIP; ++u)
            add_quad<VA>(a, 4 * (q + u * KLANES), b[u], acc);
    }
    for (; q < quads; q += KLANES) {                     // the quads left over from the trips
        float4 b[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) b[i] = b_row<VB>(B + (size_t)(4 * q + i) * ldb, col, N);
        add_quad<VA>(a, 4 * q, b, acc);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    __shared__ float partial[WARPS][EDGE][COLS];

    // the row groups of one strip of B are neighbours in launch order (see the header)
    const unsigned id = blockIdx.y * gridDim.x + blockIdx.x;
    const int row0 = (id % gridDim.y) * EDGE, col0 = (id / gridDim.y) * COLS;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int c = lane % LANES;                          // column lane: columns col0 + 4c .. + 3
    const int kl = warp * (32 / LANES) + lane / LANES;   // k-lane
    const int col = col0 + 4 * c;

    const float* a[EDGE];                                // rows past M read row M - 1; never stored
#pragma unroll
    for (int m = 0; m < EDGE; ++m) a[m] = A + (size_t)min(row0 + m, M - 1) * lda;

    float acc[EDGE][4];
#pragma unroll
    for (int m = 0; m < EDGE; ++m)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[m][j] = 0.0f;

    const bool va = (lda & 3) == 0 && aligned16(A);
    const bool vb = (ldb & 3) == 0 && aligned16(B) && col + 3 < N;
    const int quads = K / 4;
    if (va && vb) few_rows<true, true>(a, B, ldb, col, N, quads, kl, acc);
    else if (va) few_rows<true, false>(a, B, ldb, col, N, quads, kl, acc);
    else if (vb) few_rows<false, true>(a, B, ldb, col, N, quads, kl, acc);
    else few_rows<false, false>(a, B, ldb, col, N, quads, kl, acc);
    for (int k = 4 * quads + kl; k < K; k += KLANES) {   // K's last K % 4
        float b[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) b[j] = col + j < N ? stream1(B + (size_t)k * ldb + col + j) : 0.0f;
#pragma unroll
        for (int m = 0; m < EDGE; ++m) {
            const float x = __ldg(a[m] + k);
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[m][j] += x * b[j];
        }
    }

    // the partial sums: across the warp's k-lanes (lanes LANES apart), then across warps
#pragma unroll
    for (int m = 0; m < EDGE; ++m)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[m][j] = add_across<LANES>(acc[m][j]);
    if (lane < LANES) {
#pragma unroll
        for (int m = 0; m < EDGE; ++m)
#pragma unroll
            for (int j = 0; j < 4; ++j) partial[warp][m][4 * c + j] = acc[m][j];
    }
    __syncthreads();
    for (int o = threadIdx.x; o < EDGE * COLS; o += THREADS) {
        const int m = o / COLS, n = o % COLS;
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) sum += partial[w][m][n];
        if (row0 + m < M && col0 + n < N) store_c(C, (size_t)(row0 + m) * ldc + col0 + n, alpha, beta, sum);
    }
}

#elif SIDE == 1
// ---- few columns: C[THREADS / LANES rows][EDGE columns] per block, A streamed -------------------
#define ROWS (THREADS / LANES)

// acc += A's row at k .. k + 3 (x) times rows k .. k + 3 of B's EDGE columns: 16-byte loads (VB), or
// one by one, columns past N clamped.
template <bool VB>
__device__ __forceinline__ void add_quad(const float* __restrict__ B, int ldb, int k, int col0,
                                         const int (&cols)[EDGE], float4 x, float (&acc)[EDGE])
{
    const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float* b = B + (size_t)(k + i) * ldb;
        if (VB) {
#pragma unroll
            for (int j = 0; j < EDGE; j += 4) {
                const float4 v = __ldg(reinterpret_cast<const float4*>(b + col0 + j));
                acc[j] += xs[i] * v.x; acc[j + 1] += xs[i] * v.y;
                acc[j + 2] += xs[i] * v.z; acc[j + 3] += xs[i] * v.w;
            }
        } else {
#pragma unroll
            for (int j = 0; j < EDGE; ++j) acc[j] += xs[i] * __ldg(b + cols[j]);
        }
    }
}

// The row's quads of K (4 k each, LANES quads apart), UNROLL of them a trip, every load of A in a trip
// issued before its math. VA: A's rows are 16-byte aligned; VB: B's rows are too, EDGE is a multiple
// of 4 and the block's columns lie inside N (else B's EDGE columns one by one, past N clamped).
template <bool VA, bool VB>
__device__ __forceinline__ void few_columns(const float* __restrict__ a, const float* __restrict__ B, int ldb,
                                            int col0, const int (&cols)[EDGE], int quads, int q, float (&acc)[EDGE])
{
    for (; q + (UNROLL - 1) * LANES < quads; q += UNROLL * LANES) {
        float4 x[UNROLL];
        UNROLL_BY(UNROLL)
        for (int u = 0; u < UNROLL; ++u) x[u] = four<VA, true>(a + 4 * (q + u * LANES));
        UNROLL_BY(UNROLL)
        for (int u = 0; u < UNROLL; ++u) add_quad<VB>(B, ldb, 4 * (q + u * LANES), col0, cols, x[u], acc);
    }
    for (; q < quads; q += LANES)                        // the quads left over from the trips
        add_quad<VB>(B, ldb, 4 * q, col0, cols, four<VA, true>(a + 4 * q), acc);
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    const int lane = threadIdx.x % LANES;                // k-lane within the row's group
    const int row = blockIdx.y * ROWS + threadIdx.x / LANES;
    const int col0 = blockIdx.x * EDGE;
    const float* a = A + (size_t)min(row, M - 1) * lda;  // a row past M reads row M - 1; never stored
    int cols[EDGE];                                      // columns past N read column N - 1; never stored
#pragma unroll
    for (int j = 0; j < EDGE; ++j) cols[j] = min(col0 + j, N - 1);

    float acc[EDGE];
#pragma unroll
    for (int j = 0; j < EDGE; ++j) acc[j] = 0.0f;

    const bool va = (lda & 3) == 0 && aligned16(A);
    const bool vb = EDGE % 4 == 0 && (ldb & 3) == 0 && aligned16(B) && col0 + EDGE <= N;
    const int quads = K / 4;
    if (va && vb) few_columns<true, EDGE % 4 == 0>(a, B, ldb, col0, cols, quads, lane, acc);
    else if (va) few_columns<true, false>(a, B, ldb, col0, cols, quads, lane, acc);
    else if (vb) few_columns<false, EDGE % 4 == 0>(a, B, ldb, col0, cols, quads, lane, acc);
    else few_columns<false, false>(a, B, ldb, col0, cols, quads, lane, acc);
    for (int k = 4 * quads + lane; k < K; k += LANES) {  // K's last K % 4
        const float x = stream1(a + k);
#pragma unroll
        for (int j = 0; j < EDGE; ++j) acc[j] += x * __ldg(B + (size_t)k * ldb + cols[j]);
    }

    // the partial sums of the row's LANES lanes (the lanes 1, 2, ... apart in its group); lane j of the
    // group then stores column j (and j + LANES, ...)
#pragma unroll
    for (int j = 0; j < EDGE; ++j) {
        float v = acc[j];
#pragma unroll
        for (int offset = LANES / 2; offset >= 1; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
        if (j % LANES == lane && row < M && col0 + j < N) store_c(C, (size_t)row * ldc + col0 + j, alpha, beta, v);
    }
}
#else
// ---- small K: C[LANES * WARPS / ACROSS rows][32 * UNROLL * ACROSS columns] per block, C streamed ------
#define KMAX (4 * EDGE)
#define DOWN (WARPS / ACROSS)             // warps stacked along M
#define ROWS (LANES * DOWN)
static_assert(WARPS % ACROSS == 0, "ACROSS divides the block's warps");

// A store of C, whose every byte is written once: evict-first (st.global.cs) with EVICT_FIRST.
__device__ __forceinline__ void stream_out(float* p, float alpha, float beta, float v)
{
    const float out = beta == 0.0f ? alpha * v : alpha * v + beta * *p;
#if EVICT_FIRST
    __stcs(p, out);
#else
    *p = out;
#endif
}

// Each of the warp's rows of C in turn: a row of A from shared memory (one address: a broadcast),
// UNROLL outputs a thread, the warp's 32 lanes storing 32 consecutive floats each time, aligned to 16
// bytes or not. Q quads of K, in straight-line code, so the compiler issues a row's loads from shared
// memory ahead of the multiply-adds that wait on them. (A test of K between the quads put a branch after
// each quad, and each load then waited for the quad before: 12-19% slower at K of 18 to 47 on the H100.)
template <int Q>
__device__ __forceinline__ void rows_of(const float (&a)[ROWS][KMAX], const float (&b)[KMAX][UNROLL], int down,
                                        int rows, float* C, int ldc, int col, int N, float alpha, float beta)
{
    for (int r = down; r < rows; r += DOWN) {
        float acc[UNROLL];
#pragma unroll
        for (int t = 0; t < UNROLL; ++t) acc[t] = 0.0f;
#pragma unroll
        for (int k = 0; k < 4 * Q; k += 4) {
            const float4 x = *reinterpret_cast<const float4*>(&a[r][k]);
#pragma unroll
            for (int t = 0; t < UNROLL; ++t)
                acc[t] = fmaf(x.w, b[k + 3][t], fmaf(x.z, b[k + 2][t], fmaf(x.y, b[k + 1][t], fmaf(x.x, b[k][t], acc[t]))));
        }
        float* c = C + (size_t)r * ldc;
#pragma unroll
        for (int t = 0; t < UNROLL; ++t)
            if (col + 32 * t < N) stream_out(c + col + 32 * t, alpha, beta, acc[t]);
    }
}

// rows_of<quads> for a count of quads (1 .. EDGE) known only at launch: one build a count, chosen once.
// Quads past K hold zeros, so leaving them out changes no sum.
template <int Q>
__device__ __forceinline__ void rows_by_quads(int quads, const float (&a)[ROWS][KMAX], const float (&b)[KMAX][UNROLL],
                                              int down, int rows, float* C, int ldc, int col, int N, float alpha,
                                              float beta)
{
    if constexpr (Q > 1)
        if (quads < Q) return rows_by_quads<Q - 1>(quads, a, b, down, rows, C, ldc, col, N, alpha, beta);
    rows_of<Q>(a, b, down, rows, C, ldc, col, N, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    __shared__ __align__(16) float a[ROWS][KMAX];        // the block's rows of A, 0 past K and past M
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int across = warp % ACROSS, down = warp / ACROSS;
    // the row groups of one strip of columns are neighbours in launch order: B's strip is read from DRAM once
    const unsigned id = blockIdx.y * gridDim.x + blockIdx.x;
    const int row0 = (id % gridDim.y) * ROWS, col = ((id / gridDim.y) * ACROSS + across) * (32 * UNROLL) + lane;
    for (int o = threadIdx.x; o < ROWS * KMAX; o += THREADS) {
        const int r = o / KMAX, k = o % KMAX;
        a[r][k] = row0 + r < M && k < K ? __ldg(A + (size_t)(row0 + r) * lda + k) : 0.0f;
    }
    float b[KMAX][UNROLL];                               // the thread's columns of B (32 apart), 0 past K and N
#pragma unroll
    for (int k = 0; k < KMAX; ++k)
#pragma unroll
        for (int t = 0; t < UNROLL; ++t)
            b[k][t] = k < K && col + 32 * t < N ? __ldg(B + (size_t)k * ldb + col + 32 * t) : 0.0f;
    __syncthreads();

    rows_by_quads<EDGE>((K + 3) / 4, a, b, down, min(ROWS, M - row0), C + (size_t)row0 * ldc, ldc, col, N,
                        alpha, beta);
}
#endif
