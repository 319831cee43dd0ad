// ptx.cuh -- the course's inline PTX, in one place.
//
// Chapters 09 to 13 need a few instructions that CUDA C++ has no word for: the asynchronous copy
// from global to shared memory (cp.async) and its groups, the acquire load and release store that
// let one block wait for another's writes, and reads of the block's coordinates that the compiler
// may neither keep in a register nor move. Each is a small helper here, written once, with its CPU
// twin beside it:
//   * the GPU build is the PTX the kernels had inline (tests/test_ptx_header.py checks that their
//     SASS did not change when it moved here);
//   * built with GEMMLAB_CPU (gemmlab/cpu: a learner's kernel checked where there is no GPU), each
//     helper calls that runtime instead, and passes the line of its caller in the kernel, so that
//     what goes wrong there is reported at the learner's line.
// The kernels include it with #include "ptx.cuh"; its code counts in their identity (gemmlab/identity.py):
// a change here makes the records of every kernel that includes it stale.
#pragma once

#ifdef GEMMLAB_CPU

// The CPU runtime (gemmlab/cpu/cuda_on_cpu.h, included before the kernel) does what the PTX does:
// a copy lands at the wait that covers it, its bytes past `valid` zero-filled.
template <int bytes>
__device__ __forceinline__ void copy_async(float* dst, const float* src, int valid, int line = __builtin_LINE())
{
    glcpu::cp_async(dst, src, bytes, valid, line);
}

__device__ __forceinline__ void commit(int line = __builtin_LINE()) { glcpu::cp_async_commit(line); }

template <int N>
__device__ __forceinline__ void wait_pending(int line = __builtin_LINE()) { glcpu::cp_async_wait(N, line); }

__device__ __forceinline__ unsigned load_acquire(const unsigned* p, int line = __builtin_LINE())
{
    return glcpu::load_acquire(p, line);
}

__device__ __forceinline__ void store_release(unsigned* p, unsigned v, int line = __builtin_LINE())
{
    glcpu::store_release(p, v, line);
}

// Nothing is kept in registers on the CPU: the plain coordinates.
__device__ __forceinline__ unsigned ctaid_x() { return blockIdx.x; }
__device__ __forceinline__ unsigned ctaid_y() { return blockIdx.y; }
__device__ __forceinline__ unsigned ctaid_z() { return blockIdx.z; }
__device__ __forceinline__ unsigned nctaid_x() { return gridDim.x; }
__device__ __forceinline__ unsigned nctaid_y() { return gridDim.y; }
__device__ __forceinline__ unsigned nctaid_z() { return gridDim.z; }

#else

__device__ __forceinline__ unsigned smem_address(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copy `bytes` (4 or 16) from global to shared memory (sm_80 and newer); of them only `valid` bytes
// are read, the rest are zero-filled (that is how the kernels pad the edges of A and B with zeros).
// 16-byte copies bypass L1 (.cg, which takes 16-byte copies only); 4-byte ones go through it (.ca).
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

// Close this thread's copies issued since the last commit into one group.
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

// A load that no later read or write of this thread may pass: what it reads was released (by
// store_release) before the writes that came with it, and those are visible after it.
__device__ __forceinline__ unsigned load_acquire(const unsigned* p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// A store that no earlier read or write of this thread may pass, visible to the whole GPU.
__device__ __forceinline__ void store_release(unsigned* p, unsigned v)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

// blockIdx and gridDim, read anew at each call: a volatile read is neither kept in a register nor
// moved, so a kernel can work out its tile before its main loop and again after it, holding no
// register through the loop (what it got from blockIdx and gridDim, the compiler would keep).
__device__ __forceinline__ unsigned ctaid_x() { unsigned v; asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(v)); return v; }
__device__ __forceinline__ unsigned ctaid_y() { unsigned v; asm volatile("mov.u32 %0, %%ctaid.y;" : "=r"(v)); return v; }
__device__ __forceinline__ unsigned ctaid_z() { unsigned v; asm volatile("mov.u32 %0, %%ctaid.z;" : "=r"(v)); return v; }
__device__ __forceinline__ unsigned nctaid_x() { unsigned v; asm volatile("mov.u32 %0, %%nctaid.x;" : "=r"(v)); return v; }
__device__ __forceinline__ unsigned nctaid_y() { unsigned v; asm volatile("mov.u32 %0, %%nctaid.y;" : "=r"(v)); return v; }
__device__ __forceinline__ unsigned nctaid_z() { unsigned v; asm volatile("mov.u32 %0, %%nctaid.z;" : "=r"(v)); return v; }

#endif
