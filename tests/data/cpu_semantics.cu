// Chapter 01's launch geometry (BLOCK_M x BLOCK_N threads, one element of C each) with one twist per
// MODE, to test what the CPU runner (gemmlab/cpu) does with it: tests/test_cpu_check.py.
//   0 right            1 a race (no barrier)      2 a shuffle mask that leaves lanes out
//   3 misaligned float4 4 a read past A           5 threads at two different barriers
//   6 cp.async read before its wait               7 cp.async read after its wait
//   8 a wait for a flag no block sets             9 shuffles that give the right answer
//  10 mode 1 with its barriers
#ifndef BLOCK_M
#define BLOCK_M 32
#endif
#ifndef BLOCK_N
#define BLOCK_N 4
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_M * BLOCK_N)
sgemm(int M, int N, int K, float alpha, const float* __restrict__ A, int lda,
      const float* __restrict__ B, int ldb, float beta, float* __restrict__ C, int ldc)
{
    __shared__ float scratch[BLOCK_M * BLOCK_N];
    __shared__ __align__(16) float staged[BLOCK_M * BLOCK_N * 4];
    __device__ static unsigned flag;
    const int t = threadIdx.x;
    const int row = blockIdx.y * BLOCK_M + t % BLOCK_M;
    const int col = blockIdx.x * BLOCK_N + t / BLOCK_M;
    const bool inside = row < M && col < N;
    float acc = 0.0f;
    for (int k = 0; inside && k < K; ++k)
        acc += A[(size_t)row * lda + k] * B[(size_t)k * ldb + col];
#if MODE == 1 || MODE == 10
    // a value through a neighbour and back: right with the barriers (10), a race without them (1)
    scratch[t] = acc;
#if MODE == 10
    __syncthreads();
#endif
    const float other = scratch[t ^ 1];
#if MODE == 10
    __syncthreads();
#endif
    scratch[t] = other;
#if MODE == 10
    __syncthreads();
#endif
    acc = scratch[t ^ 1];
#elif MODE == 2
    acc = __shfl_xor_sync(0x0000ffffu, acc, 1);
    acc = __shfl_xor_sync(0x0000ffffu, acc, 1);
#elif MODE == 3
    const float4 v = *reinterpret_cast<const float4*>(A + 1);
    acc += 0.0f * v.x;
#elif MODE == 4
    acc += 0.0f * A[(size_t)M * lda + t];
#elif MODE == 5
    if (t % 2) __syncthreads();
    else __syncthreads();
#elif MODE == 6 || MODE == 7
    if (inside) glcpu::cp_async(&staged[t * 4], A + (size_t)row * lda, 4, 4, __LINE__);
    glcpu::cp_async_commit(__LINE__);
#if MODE == 7
    glcpu::cp_async_wait(0, __LINE__);
#endif
    if (inside) acc += staged[t * 4] - A[(size_t)row * lda];
    glcpu::cp_async_wait(0, __LINE__);
#elif MODE == 8
    if (t == 0) while (glcpu::load_acquire(&flag, __LINE__) != 1) {}
#elif MODE == 9
    acc = __shfl_xor_sync(0xffffffffu, acc, 1);
    acc = __shfl_xor_sync(0xffffffffu, acc, 1);
    acc = __shfl_sync(0xffffffffu, acc, t % 32);
#endif
    if (!inside) return;
    float* c = C + (size_t)row * ldc + col;
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
}
