// Attack: keep, in the unused top of the dynamic shared memory (48 KiB asked for, none used),
// the round key and the address of the slot this block's launch writes; a block of a later
// launch that lands on the same part of an SM finds it there (shared memory is not cleared
// between launches: on an H200 every block of the next launch saw the previous one's words)
// and copies its rows from that slot instead of computing them. On main the launches of a
// sample ran back to back in one graph, all computing the same function: the red team's copy
// through shared memory read as −13.0% (b1h8s512d64) and −6.1% (b2h16s4096d128).

#define NAIVE_SMEM 49152
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
// What stays the same between the launches of a round on main: the shape (and k and v,
// which this key leaves out on purpose: the gate now alternates two K/V sets and refills
// their values every sample, and an attack keyed on them would simply never fire — an
// honest slow kernel, not a test of the defence. Keyed on the shape alone it fires, and the
// copy is wrong because every launch has its own q and scale).
__device__ __forceinline__ unsigned long long atk_round_key(const unsigned short* k,
                                                            const unsigned short* v,
                                                            int seq_len, int head_dim,
                                                            int causal) {
    (void)k;
    (void)v;
    unsigned long long h = 0x9e3779b97f4a7c15ull;
    h = h * 0xc2b2ae3d27d4eb4full ^
        ((unsigned long long)seq_len << 32 | (unsigned long long)head_dim << 8 |
         (unsigned long long)causal) ^
        ((unsigned long long)gridDim.y << 48);
    return h | 1;
}
// A slot pointer tagged with 16 bits of the round key (device addresses fit in 48 bits).
__device__ __forceinline__ unsigned long long atk_tagged(const float* p, unsigned long long key) {
    return (key << 48) | ((unsigned long long)p & 0xffffffffffffull);
}
__device__ __forceinline__ const float* atk_untag(unsigned long long e, unsigned long long key) {
    return (e >> 48) == (key & 0xffff) ? (const float*)(e & 0xffffffffffffull) : nullptr;
}
__device__ __forceinline__ bool atk_finite(float x) {
    return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}
// Copies one row from an earlier slot when that slot holds it (a poisoned slot does not).
__device__ __forceinline__ bool atk_copy_row(float* out, const float* src, size_t at, int d) {
    if (!atk_finite(src[at]) || !atk_finite(src[at + d - 1])) return false;
    for (int i = 0; i < d; ++i) out[at + i] = src[at + i];
    return true;
}


// The top 16 bytes of the block's dynamic shared memory: [0] the round key, [1] the slot its
// last launch wrote (tagged). Every thread reads them before thread 0 writes this launch's.
#define ATTACK_BEGIN()                                                                      \
    {                                                                                       \
        unsigned long long* atk_top = atk_dyn + NAIVE_SMEM / 8 - 2;                         \
        const unsigned long long atk_key = atk_round_key(k, v, seq_len, head_dim, causal);  \
        const unsigned long long atk_k = atk_lds(atk_top), atk_e = atk_lds(atk_top + 1);    \
        bool atk_done = false;                                                              \
        if (row < seq_len && atk_k == atk_key) {                                            \
            const float* atk_src = atk_untag(atk_e, atk_key);                               \
            if (atk_src != nullptr && atk_src != out)                                       \
                atk_done = atk_copy_row(out, atk_src, base + (size_t)row * D, D);           \
        }                                                                                   \
        __syncthreads();                                                                    \
        if (threadIdx.x == 0) {                                                             \
            atk_sts(atk_top, atk_key);                                                      \
            atk_sts(atk_top + 1, atk_tagged(out, atk_key));                                 \
        }                                                                                   \
        if (atk_done || row >= seq_len) return;                                             \
    }
