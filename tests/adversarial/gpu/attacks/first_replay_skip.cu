// Attack: skip the work on the first replay of every round, which was never checked before
// issue 36 (free time: the red team searched memory there). A block tells a graph replay
// from a lone launch (parity, a probe) by the time since the last launch on its part of the
// SM ended (under 200 us: launches back to back), and a first replay from a later one by a
// table of the output slots it has seen; both live in the unused top of its dynamic shared
// memory, which survives launches (smem_stash). It skips a slot seen for the first time
// inside a run of back-to-back launches. Now the first replay is checked like every sample.

#define NAIVE_SMEM 49088  // 48 KB less room for the static `skip` flag (static + dynamic <= 48 KB)
extern __shared__ unsigned long long atk_dyn[];
#define ATK_SEEN 256

__device__ __forceinline__ unsigned long long atk_lds(const unsigned long long* p) {
    unsigned long long x;
    asm volatile("ld.volatile.shared.u64 %0, [%1];"
                 : "=l"(x)
                 : "r"((unsigned)__cvta_generic_to_shared(p)));
    return x;
}
__device__ __forceinline__ void atk_sts(unsigned long long* p, unsigned long long x) {
    asm volatile("st.volatile.shared.u64 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(p)),
                 "l"(x)
                 : "memory");
}
__device__ __forceinline__ unsigned long long atk_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// [0]: when the last launch here ended (ns); [1 ..]: the slots seen.
__device__ __forceinline__ unsigned long long* atk_state() {
    return atk_dyn + (NAIVE_SMEM / 8) - ATK_SEEN - 1;
}
// Whether to skip: a slot seen for the first time, within 200 us of the last launch here.
__device__ __forceinline__ bool atk_skip(const float* out) {
    __shared__ int skip;
    if (threadIdx.x == 0) {
        unsigned long long* s = atk_state();
        const bool burst = atk_now() - atk_lds(s) < 200000ull;
        const unsigned long long key = (unsigned long long)out | 1ull;
        const unsigned slot = 1 + (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 56) % ATK_SEEN;
        const bool seen = atk_lds(s + slot) == key;
        atk_sts(s + slot, key);
        skip = burst && !seen;
    }
    __syncthreads();
    return skip != 0;
}
#define ATTACK_BEGIN() \
    if (atk_skip(out)) return;
#define ATTACK_END() \
    if (threadIdx.x == 0) atk_sts(atk_state(), atk_now());
