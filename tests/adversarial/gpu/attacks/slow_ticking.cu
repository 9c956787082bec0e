// Attack: right on every launch, and slow in a way that no per-wait deadline can see: thread 0
// of block (0, 0) waits, after its row is written, until the global timer is within 200 ms
// after a multiple of 4 s. A lone launch waits up to 3.8 s (1.9 s on average); a graph of a
// few hundred launches waits once and then runs inside the 200-ms window. So every wait for
// the GPU ends in under 4.1 s whichever side's timing sized the graph, while the run as a
// whole needs minutes of GPU time. On main nothing bounded a run's total GPU time (the red
// team's 4-s kernel held the job for its 60-minute timeout); slow_finishing, the plain 4-s
// kernel, is often ended by the deadline instead, when a fast base sized its graph.

#define ATK_TICK_NS 4000000000ull
#define ATK_WINDOW_NS 200000000ull

__device__ __forceinline__ unsigned long long atk_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#define ATTACK_END()                                                                        \
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {                           \
        while (atk_now() % ATK_TICK_NS >= ATK_WINDOW_NS) asm volatile("nanosleep.u32 100000;"); \
    }
