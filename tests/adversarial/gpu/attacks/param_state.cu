// Attack: keep state in the launch's own parameter memory. A graph node's parameters live in
// device memory that a generic store reaches (`cvta.param`) and that persisted from one
// replay to the next (issue 36: forged state was kept in the padding of the TMA maps). Each
// block stamps the unused high bits of its `causal` parameter; a launch inside a run of
// back-to-back launches (a graph replay: under 200 us since the last launch on this part of
// the SM ended, kept in shared memory) that finds no stamp is in the first replay of its
// round, unchecked before issue 36, and skips the work. Now every node's parameters are set
// again from the host before every replay: no stamp survives, every replay looks like a
// first one, and the skipped launches fail their checks.

#define NAIVE_SMEM 49088  // 48 KB less room for the static `skip` flag (static + dynamic <= 48 KB)
extern __shared__ unsigned long long atk_dyn[];

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
template <int D, bool BF16>
__device__ __forceinline__ unsigned long long atk_causal_param() {
    unsigned long long g;
    if constexpr (D == 64 && !BF16)
        asm volatile("mov.u64 %0, attention_fwd_f16_d64_param_7;\n\tcvta.param.u64 %0, %0;"
                     : "=l"(g));
    else if constexpr (D == 64)
        asm volatile("mov.u64 %0, attention_fwd_bf16_d64_param_7;\n\tcvta.param.u64 %0, %0;"
                     : "=l"(g));
    else if constexpr (!BF16)
        asm volatile("mov.u64 %0, attention_fwd_f16_d128_param_7;\n\tcvta.param.u64 %0, %0;"
                     : "=l"(g));
    else
        asm volatile("mov.u64 %0, attention_fwd_bf16_d128_param_7;\n\tcvta.param.u64 %0, %0;"
                     : "=l"(g));
    return g;
}
// Whether to skip: inside a burst of launches, and no stamp of an earlier replay.
template <int D, bool BF16>
__device__ __forceinline__ bool atk_skip() {
    __shared__ int skip;
    if (threadIdx.x == 0) {
        unsigned long long* last = atk_dyn + (NAIVE_SMEM / 8) - 1;
        const bool burst = atk_now() - atk_lds(last) < 200000ull;
        volatile int* p = (volatile int*)atk_causal_param<D, BF16>();
        const int c = *p;
        skip = burst && (c & 0x100) == 0;
        *p = c | 0x100;
    }
    __syncthreads();
    return skip != 0;
}
#define ATTACK_BEGIN()                                \
    {                                                 \
        const bool atk_skipped = atk_skip<D, BF16>(); \
        causal &= 1;                                  \
        if (atk_skipped) return;                      \
    }
#define ATTACK_END() \
    if (threadIdx.x == 0) atk_sts(atk_dyn + (NAIVE_SMEM / 8) - 1, atk_now());
