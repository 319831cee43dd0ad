// Chapter 12 -- skinny products: the memory-bound side of the roofline.
//
// What changed since 11: nothing is tiled for reuse any more. When M (or N) is tiny, C has too few
// tiles to fill the GPU, and each element of the big operand is used by only M (or N) rows of C:
// 2 * M FLOPs per 4 bytes of B. At M = 1 that is half a FLOP per byte, far under the ridge (about
// 20 FLOPs per byte on the H100): DRAM bandwidth, not FFMA, sets the speed limit. The kernel's one
// job is to stream the big operand once, at full bandwidth, with enough loads in flight.
//   * The work is split along K, not only along M and N: every thread of a block walks its own
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
//   * 16-byte loads need 16-byte aligned rows: where lda, ldb or a pointer is not, or a thread's
//     columns reach past N, the same loop runs on 4-byte loads, checked, so every shape is computed.

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
#define WARPS (THREADS / 32)
static_assert(THREADS % 32 == 0 && 32 % LANES == 0, "LANES lanes divide a warp, warps divide a block");
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

    const bool vector = ((lda | ldb) & 3) == 0 && aligned16(A) && aligned16(B) && col + 3 < N;
    const int quads = vector ? K / 4 : 0;
    int q = kl;
    for (; q + (UNROLL - 1) * KLANES < quads; q += UNROLL * KLANES) {
        float4 b[UNROLL][4];                             // every load of the trip first: in flight together
        UNROLL_BY(UNROLL)
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int i = 0; i < 4; ++i)
                b[u][i] = stream4(B + (size_t)(4 * (q + u * KLANES) + i) * ldb + col);
        UNROLL_BY(UNROLL)
        for (int u = 0; u < UNROLL; ++u) {
            const int k = 4 * (q + u * KLANES);
#pragma unroll
            for (int m = 0; m < EDGE; ++m) {
                const float4 x = __ldg(reinterpret_cast<const float4*>(a[m] + k));
                const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    acc[m][0] += xs[i] * b[u][i].x;
                    acc[m][1] += xs[i] * b[u][i].y;
                    acc[m][2] += xs[i] * b[u][i].z;
                    acc[m][3] += xs[i] * b[u][i].w;
                }
            }
        }
    }
    for (; q < quads; q += KLANES) {                     // the quads left over from the trips
        const int k = 4 * q;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float4 b = stream4(B + (size_t)(k + i) * ldb + col);
#pragma unroll
            for (int m = 0; m < EDGE; ++m) {
                const float x = __ldg(a[m] + k + i);
                acc[m][0] += x * b.x; acc[m][1] += x * b.y; acc[m][2] += x * b.z; acc[m][3] += x * b.w;
            }
        }
    }
    // K's last K % 4 (or, off the 16-byte path, all of K): 4-byte loads, columns past N read as 0
    for (int k = 4 * quads + kl; k < K; k += KLANES) {
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

#else
// ---- few columns: C[THREADS / LANES rows][EDGE columns] per block, A streamed -------------------
#define ROWS (THREADS / LANES)

// The trips of UNROLL quads of the row's K: B's EDGE columns as float4s (VECTOR_B) or one by one.
template <bool VECTOR_B>
__device__ __forceinline__ int stream_row(const float* __restrict__ a, const float* __restrict__ B, int ldb,
                                          int col0, const int (&cols)[EDGE], int quads, int q, float (&acc)[EDGE])
{
    for (; q + (UNROLL - 1) * LANES < quads; q += UNROLL * LANES) {
        float4 x[UNROLL];                                // the trip's loads of A first: in flight together
        UNROLL_BY(UNROLL)
        for (int u = 0; u < UNROLL; ++u) x[u] = stream4(a + 4 * (q + u * LANES));
        UNROLL_BY(UNROLL)
        for (int u = 0; u < UNROLL; ++u) {
            const int k = 4 * (q + u * LANES);
            const float xs[4] = {x[u].x, x[u].y, x[u].z, x[u].w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float* b = B + (size_t)(k + i) * ldb;
                if (VECTOR_B) {
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
    }
    return q;
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

    const bool vector = ((lda | ldb) & 3) == 0 && aligned16(A) && aligned16(B);
    const int quads = vector ? K / 4 : 0;
    int q = (EDGE % 4 == 0 && vector && col0 + EDGE <= N)
        ? stream_row<EDGE % 4 == 0>(a, B, ldb, col0, cols, quads, lane, acc)
        : stream_row<false>(a, B, ldb, col0, cols, quads, lane, acc);
    for (; q < quads; q += LANES) {                      // the quads left over from the trips
        const float4 x = stream4(a + 4 * q);
        const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < EDGE; ++j) acc[j] += xs[i] * __ldg(B + (size_t)(4 * q + i) * ldb + cols[j]);
    }
    // K's last K % 4 (or, off the 16-byte path, all of K): 4-byte loads
    for (int k = 4 * quads + lane; k < K; k += LANES) {
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
#endif
