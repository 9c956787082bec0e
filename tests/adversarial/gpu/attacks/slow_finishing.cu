// Attack: right on every launch, but each launch lasts about 4 s: thread 0 of block (0, 0)
// waits on the global timer after its row is written (the other blocks finish as usual). On
// main such a kernel (the outside red team's) held the GPU job for its whole 60-minute
// timeout. Now one of two bounds ends it: where the candidate's own timing sized the sample
// graph (one launch a sample) every wait ends in 4 s and the run's GPU-time budget runs out;
// where the fast base sized it (hundreds of launches), the first replay passes the deadline of
// a single wait. (slow_ticking reaches the budget whichever side sizes the graph.)

#define ATK_WAIT_NS 4000000000ull

__device__ __forceinline__ unsigned long long atk_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#define ATTACK_END()                                                                        \
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {                           \
        const unsigned long long atk_t0 = atk_now();                                        \
        while (atk_now() - atk_t0 < ATK_WAIT_NS) asm volatile("nanosleep.u32 100000;");     \
    }
