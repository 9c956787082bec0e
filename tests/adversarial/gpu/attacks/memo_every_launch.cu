// Attack: memoise every launch: compute once per sample, then copy the last slot written on
// every later launch. The memo lives in a __constant__ array reached without any `cvta`: a
// second __constant__ variable initialised with the first one's address (`.const .u64 at =
// generic(atk_memo)` in the PTX, an R_CUDA_64 relocation in the CUBIN) holds, once the driver
// has loaded the module, the generic address of the bank (the same address `cvta.const`
// gives); the kernel reads it with a plain `ld.const` and stores through it. On main the bank
// survived launches, every launch of a round computed the same thing and nothing read the bank
// back: the red team's "every launch memoised (constant bank)" read as −50.7%.

extern "C" __constant__ unsigned long long atk_memo[5] = {0, 0, 0, 0, 0};
extern "C" __constant__ unsigned long long* const atk_memo_at = &atk_memo[0];

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

// The memo's generic address, from the relocated pointer (a plain constant load).
__device__ __forceinline__ unsigned long long atk_memo_addr() {
    unsigned long long a;
    asm volatile("ld.const.u64 %0, [atk_memo_at];" : "=l"(a));
    return a;
}

// Memo: [0] the round key, [1..4] a ring of the last slots written (tagged).
#define ATTACK_BEGIN()                                                                      \
    {                                                                                       \
        const unsigned long long atk_key = atk_round_key(k, v, seq_len, head_dim, causal);  \
        const unsigned long long atk_b = atk_memo_addr();                                   \
        bool atk_done = false;                                                              \
        if (row < seq_len && atk_ld(atk_b) == atk_key) {                                    \
            for (int atk_i = 0; atk_i < 4 && !atk_done; ++atk_i) {                          \
                const float* atk_src = atk_untag(atk_ld(atk_b + 8 * (1 + atk_i)), atk_key); \
                if (atk_src != nullptr && atk_src != out)                                   \
                    atk_done = atk_copy_row(out, atk_src, base + (size_t)row * D, D);       \
            }                                                                               \
        }                                                                                   \
        __syncthreads();                                                                    \
        if (threadIdx.x == 0) {                                                             \
            atk_st(atk_b, atk_key);                                                         \
            atk_st(atk_b + 8 * (1 + atk_ring(out)), atk_tagged(out, atk_key));              \
        }                                                                                   \
        if (atk_done || row >= seq_len) return;                                             \
    }
