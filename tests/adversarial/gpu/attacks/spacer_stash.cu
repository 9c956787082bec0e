// Attack: stash in the address spacer, the random-sized zeroed allocation made just before
// each round's inputs, which nothing hashed, poisoned or checked. In a timed launch (its slot
// lies between poisoned gaps), step down from k one input buffer at a time (on main the round's
// buffers were [spacer][q][k][v], so k − 2·n bytes is q and the 256 bytes below q are the
// spacer's top) to the first 256-byte block that is all zero or already holds the stash; there
// keep the round key and a ring of the slots that earlier launches of the sample wrote, and
// copy this launch's rows from one of them. On main every launch of a round computed the same
// function and the spacer was never looked at: the red team's copy read as −11.6%.

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

#define ATK_TAG 0x5ca7e55ace5a11edull

// Only in a timed round: its slot lies between gaps of the poison, a NaN with a payload (the
// word before a parity check's output is the end of v, never a NaN), and only there is the
// memory below q known to be the spacer (below a parity check's q may be unmapped).
__device__ __forceinline__ bool atk_timed_slot(const float* out) {
    unsigned x;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(x) : "l"(out - 1));
    return (x & 0x7fc00000u) == 0x7fc00000u && (x & 0x003fffffu) != 0;
}

// The stash: the first 256-byte block at k - 2*n*j - 256 (j = 0 ... 4: on main j = 1, the top of
// the spacer, or j = 2 past allocation padding) that is all zero or starts with ATK_TAG.
// Thread 0 looks; returns 0 when there is none or this is no timed launch.
__device__ __forceinline__ unsigned long long atk_find_stash(const unsigned short* k, size_t n,
                                                             const float* out) {
    if (!atk_timed_slot(out)) return 0;
    const unsigned long long top = (unsigned long long)k;
    for (unsigned long long j = 0; j <= 4; ++j) {
        const unsigned long long a = top - j * 2 * n - 256;
        const unsigned long long w = atk_ld(a);
        if (w == ATK_TAG) return a;
        if (w != 0) continue;
        bool zero = true;
        for (int i = 1; i < 32 && zero; ++i) zero = atk_ld(a + 8 * i) == 0;
        if (zero) return a;
    }
    return 0;
}

// Stash: [0] ATK_TAG, [1] the round key, [2..5] a ring of the last slots written (tagged).
#define ATTACK_BEGIN()                                                                      \
    {                                                                                       \
        __shared__ unsigned long long atk_found;                                            \
        if (threadIdx.x == 0)                                                               \
            atk_found = atk_find_stash(k, (size_t)gridDim.y * seq_len * D, out);            \
        __syncthreads();                                                                    \
        const unsigned long long atk_b = atk_found;                                         \
        const unsigned long long atk_key = atk_round_key(k, v, seq_len, head_dim, causal);  \
        bool atk_done = false;                                                              \
        if (atk_b != 0 && row < seq_len && atk_ld(atk_b) == ATK_TAG &&                      \
            atk_ld(atk_b + 8) == atk_key) {                                                 \
            for (int atk_i = 0; atk_i < 4 && !atk_done; ++atk_i) {                          \
                const float* atk_src = atk_untag(atk_ld(atk_b + 8 * (2 + atk_i)), atk_key); \
                if (atk_src != nullptr && atk_src != out)                                   \
                    atk_done = atk_copy_row(out, atk_src, base + (size_t)row * D, D);       \
            }                                                                               \
        }                                                                                   \
        __syncthreads();                                                                    \
        if (threadIdx.x == 0 && atk_b != 0) {                                               \
            atk_st(atk_b + 8, atk_key);                                                     \
            atk_st(atk_b + 8 * (2 + atk_ring(out)), atk_tagged(out, atk_key));              \
            atk_st(atk_b, ATK_TAG);                                                         \
        }                                                                                   \
        if (atk_done || row >= seq_len) return;                                             \
    }
