// Probe -- memory latency by pointer chasing (not a GEMM kernel: gemmlab/latency.py runs it).
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
