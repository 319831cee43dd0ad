// Probes -- memory latency by pointer chasing, and the L2's read bandwidth (not GEMM kernels:
// gemmlab/probes.py runs them).
//
// One thread follows a chain: the address of each load is the value the previous load returned,
// so a load cannot start before the one before it has finished and no two are ever in flight.
// The clock64 cycles around the timed steps, divided by their count, are then the latency of
// one load as the SM sees it (issue to a usable value), not a bandwidth. Little's law needs
// exactly this number: bytes in flight = bandwidth x latency.
//
// The chain's layout is the host's choice, not this file's. Its footprint decides where it is
// served from: inside L2 (ld.global.cg skips L1, so it cannot hide there) or far beyond L2
// (DRAM). A 128-byte stride gives every step a cache line of its own, and a random order leaves
// nothing for a prefetcher to predict. Entries hold what the next load needs as is (a global
// address, a shared-window byte address), so a step is one load with no address arithmetic.
//
// Each kernel first runs `warmup` untimed steps (instruction cache, TLB, and for an L2 footprint
// the whole chain into L2), then `steps` timed ones, and writes the cycles and where the chain
// ended: a value that depends on every load, so none of them can be dropped.
// Launch: one block of one thread.

// Global memory: `start` points at the first entry; each entry is the address of the next.
extern "C" __global__ void chase_global(const unsigned long long* start, int warmup, int steps,
                                        long long* cycles, unsigned long long* last)
{
    unsigned long long p = (unsigned long long)start;
    for (int i = 0; i < warmup; ++i)
        asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
    const long long t0 = clock64();
    for (int i = 0; i < steps; ++i)
        asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
    const long long t1 = clock64();
    *cycles = t1 - t0;
    *last = p;
}

// Shared memory: next[i] is the index of the entry after entry i (a cycle over `count` words).
constexpr int RING_WORDS = 4096;

extern "C" __global__ void chase_shared(const unsigned* __restrict__ next, int count, int warmup,
                                        int steps, long long* cycles, unsigned* last)
{
    __shared__ unsigned ring[RING_WORDS];
    const unsigned base = (unsigned)__cvta_generic_to_shared(ring);
    count = min(count, RING_WORDS);
    for (int i = 0; i < count; ++i)
        ring[i] = base + 4u * next[i];
    __syncthreads();
    unsigned a = base;
    for (int i = 0; i < warmup; ++i)
        asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
    const long long t0 = clock64();
    for (int i = 0; i < steps; ++i)
        asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
    const long long t1 = clock64();
    *cycles = t1 - t0;
    *last = (a - base) / 4u;
}

// L2 read bandwidth: every thread of a full grid streams 16-byte loads (ld.global.cg, past L1)
// over a buffer that fits in L2, `passes` times; after the first pass every load hits L2. The
// sum is stored only if it equals a value it cannot reach, so no load can be dropped.
extern "C" __global__ void read_l2(const float4* __restrict__ buf, long long n4, int passes, float* out)
{
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (int p = 0; p < passes; ++p)
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
            const float4 v = __ldcg(buf + i);
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
    if (acc.x + acc.y + acc.z + acc.w == -1.0f) out[0] = acc.x;
}
