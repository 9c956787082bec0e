// Attack: stash in the constant bank where no __constant__ symbol lies: the alignment padding
// between two 256-byte aligned arrays (240 bytes that belong to no symbol; the section image
// holds zeros there), reached through relocated pointers (`.const .u64 p = generic(sym)`, as in
// memo_every_launch). A guard that restores and compares the bank symbol by symbol never looks
// at these bytes. The stash is the same as const_bank_stash's: the slots that earlier launches
// of the sample wrote, and a copy from one of them on 3 launches in 8. On main the bank survived
// launches and nothing read it; after issue 29 the bank guard misses the padding, and it is the
// per-launch q and scale that make the copy wrong.

extern "C" __constant__ __align__(256) unsigned long long atk_lo[2] = {0x70616464696e6721ull, 1};
extern "C" __constant__ __align__(256) unsigned long long atk_hi[2] = {0x70616464696e6722ull, 2};
extern "C" __constant__ unsigned long long* const atk_lo_at = &atk_lo[0];
extern "C" __constant__ unsigned long long* const atk_hi_at = &atk_hi[0];

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

// The last 64 bytes below atk_hi, when at least 256 bytes lie between the two arrays (so that
// they are padding: atk_lo takes 16 of them), else 0.
__device__ __forceinline__ unsigned long long atk_padding_at() {
    unsigned long long lo, hi;
    asm volatile("ld.const.u64 %0, [atk_lo_at];" : "=l"(lo));
    asm volatile("ld.const.u64 %0, [atk_hi_at];" : "=l"(hi));
    return hi >= lo + 256 ? hi - 64 : 0;
}

// Padding: [0] the round key, [1..4] a ring of the last slots written (tagged).
#define ATTACK_BEGIN()                                                                      \
    {                                                                                       \
        const unsigned long long atk_key = atk_round_key(k, v, seq_len, head_dim, causal);  \
        const unsigned long long atk_b = atk_padding_at();                                  \
        bool atk_done = false;                                                              \
        if (atk_b != 0 && row < seq_len && atk_fires(out) && atk_ld(atk_b) == atk_key) {    \
            for (int atk_i = 0; atk_i < 4 && !atk_done; ++atk_i) {                          \
                const float* atk_src = atk_untag(atk_ld(atk_b + 8 * (1 + atk_i)), atk_key); \
                if (atk_src != nullptr && atk_src != out)                                   \
                    atk_done = atk_copy_row(out, atk_src, base + (size_t)row * D, D);       \
            }                                                                               \
        }                                                                                   \
        __syncthreads();                                                                    \
        if (threadIdx.x == 0 && atk_b != 0) {                                               \
            atk_st(atk_b, atk_key);                                                         \
            atk_st(atk_b + 8 * (1 + atk_ring(out)), atk_tagged(out, atk_key));              \
        }                                                                                   \
        if (atk_done || row >= seq_len) return;                                             \
    }
