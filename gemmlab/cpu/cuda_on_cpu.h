// CUDA C on the CPU, for checking a learner's kernel where there is no GPU (gemmlab/cpu/__init__.py).
//
// A kernel file is compiled by the host's C++ compiler with this header in front of it. Each CUDA
// thread of a block is a fiber; a block's threads run one at a time, each up to its next point of
// synchronisation (a barrier, a warp shuffle), in an order the runner chooses (first to last, or
// last to first), so code that needs a barrier it does not have reads what another thread has not
// written yet and gives a wrong answer rather than a lucky one. Blocks run one after another.
//
// Shared memory is poisoned with NaN when a block starts; a cp.async copy lands only at the wait that
// covers it; a misaligned vector access, an access outside A, B, C or a shared array, a barrier or a
// shuffle that not every thread reaches are reported with the CUDA thread, the block and the line
// (AddressSanitizer and UndefinedBehaviorSanitizer do the checking of addresses).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

struct uint3 { unsigned x, y, z; };
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) int4 { int x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }

namespace glcpu {
enum ShuffleKind { SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR };

const uint3& thread_idx();
const uint3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();
void barrier(int line);
uint64_t shuffle(unsigned mask, uint64_t value, int arg, int width, ShuffleKind kind, int line);
void* dynamic_shared();
void cp_async(void* dst, const void* src, int bytes, int src_bytes, int line);
void cp_async_commit(int line);
void cp_async_wait(int pending, int line);
unsigned load_acquire(const unsigned* p, int line);
void store_release(unsigned* p, unsigned v, int line);
void spin(int line);

template <class T>
T shfl(unsigned mask, T value, int arg, int width, ShuffleKind kind, int line) {
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    uint64_t raw = 0;
    std::memcpy(&raw, &value, sizeof(T));
    raw = shuffle(mask, raw, arg, width, kind, line);
    T out;
    std::memcpy(&out, &raw, sizeof(T));
    return out;
}

// Atomics: one thread runs at a time, so a plain read-modify-write is atomic.
template <class T> T atomic_add(T* p, T v) { T old = *p; *p = old + v; return old; }
template <class T> T atomic_exch(T* p, T v) { T old = *p; *p = v; return old; }
template <class T> T atomic_max(T* p, T v) { T old = *p; *p = old > v ? old : v; return old; }
template <class T> T atomic_min(T* p, T v) { T old = *p; *p = old < v ? old : v; return old; }
template <class T> T atomic_cas(T* p, T compare, T v) { T old = *p; if (old == compare) *p = v; return old; }
inline unsigned atomic_inc(unsigned* p, unsigned limit) { unsigned old = *p; *p = old >= limit ? 0 : old + 1; return old; }
}  // namespace glcpu

#define threadIdx (glcpu::thread_idx())
#define blockIdx (glcpu::block_idx())
#define blockDim (glcpu::block_dim())
#define gridDim (glcpu::grid_dim())
#define warpSize 32

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Every block's shared arrays live in one section: the runner fills it with NaN when a block starts.
#define __shared__ static __attribute__((section("glcpu_shared")))
#define __constant__ static

#define __syncthreads() glcpu::barrier(__LINE__)
#define __syncwarp(...) ((void)0)
#define __threadfence() ((void)0)
#define __threadfence_block() ((void)0)
// The cache hints of loads and stores change nothing on the CPU.
#define __ldg(p) (*(p))
#define __ldcs(p) (*(p))
#define __ldcg(p) (*(p))
#define __ldca(p) (*(p))
#define __ldlu(p) (*(p))
#define __ldcv(p) (*(p))
#define __stcs(p, v) (*(p) = (v))
#define __stcg(p, v) (*(p) = (v))
#define __stwt(p, v) (*(p) = (v))
#define __stwb(p, v) (*(p) = (v))
#define __shfl_sync(mask, v, lane, ...) glcpu::shfl(mask, v, lane, glcpu_width(__VA_ARGS__), glcpu::SHFL_IDX, __LINE__)
#define __shfl_up_sync(mask, v, d, ...) glcpu::shfl(mask, v, d, glcpu_width(__VA_ARGS__), glcpu::SHFL_UP, __LINE__)
#define __shfl_down_sync(mask, v, d, ...) glcpu::shfl(mask, v, d, glcpu_width(__VA_ARGS__), glcpu::SHFL_DOWN, __LINE__)
#define __shfl_xor_sync(mask, v, m, ...) glcpu::shfl(mask, v, m, glcpu_width(__VA_ARGS__), glcpu::SHFL_XOR, __LINE__)
inline int glcpu_width(int width = 32) { return width; }

#define atomicAdd(p, v) glcpu::atomic_add(p, v)
#define atomicExch(p, v) glcpu::atomic_exch(p, v)
#define atomicMax(p, v) glcpu::atomic_max(p, v)
#define atomicMin(p, v) glcpu::atomic_min(p, v)
#define atomicCAS(p, c, v) glcpu::atomic_cas(p, c, v)
#define atomicInc(p, v) glcpu::atomic_inc(p, v)

inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline int __float2int_rn(float x) { return int(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline float __int2float_rn(int x) { return float(x); }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((uint64_t(a) * b) >> 32); }
inline int __mulhi(int a, int b) { return int((int64_t(a) * b) >> 32); }
// CUDA's min and max take any two arithmetic types, as its overloads do.
template <class A, class B> inline auto min(A a, B b) -> decltype(a + b) { return a < b ? a : b; }
template <class A, class B> inline auto max(A a, B b) -> decltype(a + b) { return a > b ? a : b; }
