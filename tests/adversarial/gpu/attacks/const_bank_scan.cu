// Attack: reach the __constant__ bank without `cvta.const`, and stash there as
// const_bank_stash does (remember the slots earlier launches of the sample wrote, copy from
// one on 3 launches in 8). The way in: `cvta.param` of the kernel's own first parameter gives
// the generic address of its parameter bank (bank 0; the shipped sm_90a kernels use
// `cvta.param` 24 times for their TMA maps, so it cannot be refused), and bank 0 holds the
// driver's pointer to the module's constant bank (c[0x0][0xd0] on an H200: what `cvta.const`
// compiles to). The attack scans bank 0 for a pointer under which it finds its own magic
// words, an initialised __constant__ array, and writes the bank through it. On main the bank
// survived launches and nothing read it back (the red team's stash, by another door).

extern "C" __constant__ unsigned long long atk_bank[7] = {0x6e6f697461726f6eull,
                                                          0x1eaf5ca7c0ffee11ull, 0, 0, 0, 0, 0};

__device__ __forceinline__ unsigned long long atk_ld(unsigned long long a) {
    unsigned long long x;
    asm volatile("ld.volatile.u64 %0, [%1];" : "=l"(x) : "l"(a));
    return x;
}
__device__ __forceinline__ void atk_st(unsigned long long a, unsigned long long x) {
    asm volatile("st.volatile.u64 [%0], %1;" ::"l"(a), "l"(x) : "memory");
}
// What stays the same between the launches of a round on main: k and v and the shape.
__device__ __forceinline__ unsigned long long atk_round_key(const unsigned short* k,
                                                            const unsigned short* v,
                                                            int seq_len, int head_dim,
                                                            int causal) {
    unsigned long long h = (unsigned long long)k ^ ((unsigned long long)v << 1);
    h = h * 0x9e3779b97f4a7c15ull ^ ((const unsigned long long*)k)[0] ^
        (((const unsigned long long*)v)[0] << 7);
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
// 3 slots in 8, by the slot's address (random on main, so a random 3/8 of the launches).
__device__ __forceinline__ bool atk_fires(const float* out) {
    return ((((unsigned long long)out >> 8) * 0x9e3779b97f4a7c15ull) >> 61) < 3;
}
__device__ __forceinline__ unsigned atk_ring(const float* out) {
    return (unsigned)((((unsigned long long)out >> 8) * 0xc2b2ae3d27d4eb4full) >> 62);
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

// The generic address of the entry's own first parameter (`cvta.param`).
template <int D, bool BF16>
__device__ __forceinline__ unsigned long long atk_param_at() {
    unsigned long long g;
    if constexpr (D == 64 && !BF16)
        asm volatile("mov.u64 %0, attention_fwd_f16_d64_param_0;\n\tcvta.param.u64 %0, %0;"
                     : "=l"(g));
    else if constexpr (D == 64)
        asm volatile("mov.u64 %0, attention_fwd_bf16_d64_param_0;\n\tcvta.param.u64 %0, %0;"
                     : "=l"(g));
    else if constexpr (!BF16)
        asm volatile("mov.u64 %0, attention_fwd_f16_d128_param_0;\n\tcvta.param.u64 %0, %0;"
                     : "=l"(g));
    else
        asm volatile("mov.u64 %0, attention_fwd_bf16_d128_param_0;\n\tcvta.param.u64 %0, %0;"
                     : "=l"(g));
    return g;
}
// Scans bank 0, from its start to the parameters (0x210 bytes on sm_90, 0x160 before), for a
// pointer p below the parameters (within 1 GiB, 256-byte aligned) such that p + (offset of
// atk_bank in its bank) holds the magic words. Returns the generic address of atk_bank, or 0.
template <int D, bool BF16>
__device__ __forceinline__ unsigned long long atk_find_bank() {
    const unsigned long long g = atk_param_at<D, BF16>();
    unsigned long long off;
    asm("mov.u64 %0, atk_bank;" : "=l"(off));
#if __CUDA_ARCH__ >= 900
    const unsigned long long params_at = 0x210;
#else
    const unsigned long long params_at = 0x160;
#endif
    for (unsigned long long a = g - params_at; a < g; a += 8) {
        const unsigned long long p = atk_ld(a);
        if ((p & 0xff) != 0 || p >= g || g - p > (1ull << 30)) continue;
        if (atk_ld(p + off) == 0x6e6f697461726f6eull && atk_ld(p + off + 8) == 0x1eaf5ca7c0ffee11ull)
            return p + off;
    }
    return 0;
}

// Bank: [0..1] the magic, [2] the round key, [3..6] a ring of the last slots written (tagged).
// Thread 0 finds the bank, the block shares it.
#define ATTACK_BEGIN()                                                                        \
    {                                                                                         \
        __shared__ unsigned long long atk_found;                                              \
        if (threadIdx.x == 0) atk_found = atk_find_bank<D, BF16>();                           \
        __syncthreads();                                                                      \
        const unsigned long long atk_b = atk_found;                                           \
        const unsigned long long atk_key = atk_round_key(k, v, seq_len, head_dim, causal);    \
        bool atk_done = false;                                                                \
        if (atk_b != 0 && row < seq_len && atk_fires(out) && atk_ld(atk_b + 16) == atk_key) { \
            for (int atk_i = 0; atk_i < 4 && !atk_done; ++atk_i) {                            \
                const float* atk_src = atk_untag(atk_ld(atk_b + 8 * (3 + atk_i)), atk_key);   \
                if (atk_src != nullptr && atk_src != out)                                     \
                    atk_done = atk_copy_row(out, atk_src, base + (size_t)row * D, D);         \
            }                                                                                 \
        }                                                                                     \
        __syncthreads();                                                                      \
        if (threadIdx.x == 0 && atk_b != 0) {                                                 \
            atk_st(atk_b + 16, atk_key);                                                      \
            atk_st(atk_b + 8 * (3 + atk_ring(out)), atk_tagged(out, atk_key));                \
        }                                                                                     \
        if (atk_done || row >= seq_len) return;                                               \
    }
