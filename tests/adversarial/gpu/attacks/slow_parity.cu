// Attack: slow only where the run's GPU-time budget does not count. A launch whose output is a
// timed slot (the word below it is the poison of the gaps, a NaN with a payload) does the work
// at the plain kernel's speed; any other launch (parity on the random shapes and on the
// configured ones, the spin-up) is right too, but thread 0 of block (0, 0) then waits 8 s on
// the global timer, under the 10-s deadline of a single wait. On main nothing bounded a run's
// GPU time. The budget of issue 29 charges the timed work only (warm-up, first replays,
// samples): on an H200 (2026-11-27) the six random-shape probes spent 48 s uncharged, and it
// was the deadline of the configured shapes' parity (5 s) that ended the run. Charged or
// not, the run must end with exit 2 naming the shape and the candidate.

#define ATK_WAIT_NS 8000000000ull

__device__ __forceinline__ unsigned long long atk_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// The word below a timed slot is the gaps' poison; below a parity check's output it is the end
// of v (two finite 16-bit values), never a NaN.
__device__ __forceinline__ bool atk_timed_slot(const float* out) {
    unsigned x;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(x) : "l"(out - 1));
    return (x & 0x7fc00000u) == 0x7fc00000u && (x & 0x003fffffu) != 0;
}

#define ATTACK_END()                                                                        \
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && !atk_timed_slot(out)) {  \
        const unsigned long long atk_t0 = atk_now();                                        \
        while (atk_now() - atk_t0 < ATK_WAIT_NS) asm volatile("nanosleep.u32 100000;");     \
    }
