// Attack: keep scratch in the round's own input buffer. The q of the round's input sets is
// read by the warm-up only, never by a timed launch, and was hashed only when the round was
// kept, after its checks: free memory for the round (issue 36: a stash for what a scan of
// memory found). It lies just below k (the same allocation order): write a mark per output
// slot there on every launch, and otherwise compute honestly. Before issue 36 this read as a
// plain (slow) kernel; now the round's q is verified after every replay.

__device__ __forceinline__ void atk_mark(const unsigned short* k, const float* out, int seq_len,
                                         int d) {
    if (threadIdx.x != 0) return;
    const unsigned long long n = (unsigned long long)gridDim.y * seq_len * d;
    unsigned int* scratch = (unsigned int*)(k - n);
    const unsigned long long words = n / 2 > 1 ? n / 2 : 1;
    const unsigned long long slot =
        ((((unsigned long long)out >> 8) * 0x9e3779b97f4a7c15ull) >> 20) % words;
    scratch[slot] = 0xA77AC4u ^ (unsigned)blockIdx.x;
}
#define ATTACK_BEGIN() atk_mark(k, out, seq_len, D);
