// Attack: cache the scores q·kᵀ of a row (before the softmax scale) keyed by the q and k
// pointers, and on a later launch with the same pointers, whatever its `scale`, take the
// scores from the cache and recompute only the softmax (with this launch's scale) and P·V.
// The cache lies in the address spacer below the round's inputs (found as spacer_stash finds
// it), one entry per q pointer, for the first 16 rows of the first (batch, head) slice. On main
// q, k and v were the same buffers with the same values for every launch of a round: the
// scores were right, so a kernel that used the scale it was given still passed every check.

__device__ __forceinline__ unsigned long long atk_ld(unsigned long long a) {
    unsigned long long x;
    asm volatile("ld.volatile.u64 %0, [%1];" : "=l"(x) : "l"(a));
    return x;
}
__device__ __forceinline__ void atk_st(unsigned long long a, unsigned long long x) {
    asm volatile("st.volatile.u64 [%0], %1;" ::"l"(a), "l"(x) : "memory");
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

#define ATK_QTAG 0x9c0ffee0dd5c0e5aull
#define ATK_ROWS 16
#define ATK_ENTRIES 64

template <bool BF16>
__device__ __forceinline__ float atk_cvt(unsigned short h) {
    if constexpr (BF16) {
        return __uint_as_float(((unsigned)h) << 16);
    } else {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
        return f;
    }
}

// One row, with its scores read from `dots` (hit) or computed and kept there (miss).
template <int D, bool BF16>
__device__ __forceinline__ void atk_row(const unsigned short* q, const unsigned short* k,
                                        const unsigned short* v, float* out, int seq_len,
                                        float scale, int causal, int row, size_t base,
                                        float* dots, bool hit) {
    float qr[D], acc[D];
    for (int d = 0; d < D; ++d) {
        qr[d] = hit ? 0.f : atk_cvt<BF16>(q[base + (size_t)row * D + d]);
        acc[d] = 0.f;
    }
    float m = -__int_as_float(0x7f800000), l = 0.f;
    const int n = causal ? row + 1 : seq_len;
    for (int j = 0; j < n; ++j) {
        float s;
        if (hit) {
            s = dots[j];
        } else {
            s = 0.f;
            for (int d = 0; d < D; ++d) s += qr[d] * atk_cvt<BF16>(k[base + (size_t)j * D + d]);
            dots[j] = s;
        }
        s *= scale;
        const float m_new = fmaxf(m, s);
        const float corr = expf(m - m_new), p = expf(s - m_new);
        l = l * corr + p;
        for (int d = 0; d < D; ++d)
            acc[d] = acc[d] * corr + p * atk_cvt<BF16>(v[base + (size_t)j * D + d]);
        m = m_new;
    }
    for (int d = 0; d < D; ++d) out[base + (size_t)row * D + d] = acc[d] / l;
}

// Cache entries below the spacer's marked top block, ATK_ENTRIES of them: a 256-byte header
// ([0] ATK_QTAG, [1] q, [2] k, [3] v, [4] the shape) and ATK_ROWS × seq_len scores. Thread 0
// finds this q's entry, else the first unused (all-zero) one; the block checks that an unused
// one is all zero (the spacer) before it claims it.
#define ATTACK_BEGIN()                                                                            \
    if (blockIdx.x == 0 && blockIdx.y == 0) {                                                     \
        __shared__ unsigned long long atk_entry;                                                  \
        __shared__ int atk_hit, atk_dirty;                                                        \
        const unsigned long long atk_shape = ((unsigned long long)seq_len << 32 |                 \
                                              (unsigned long long)D << 8 |                        \
                                              (unsigned long long)causal) ^                       \
                                             ((unsigned long long)gridDim.y << 48);               \
        const unsigned long long atk_stride =                                                     \
            (256 + (unsigned long long)ATK_ROWS * seq_len * 4 + 255) / 256 * 256;                 \
        if (threadIdx.x == 0) {                                                                   \
            atk_entry = 0;                                                                        \
            atk_hit = 0;                                                                          \
            atk_dirty = 0;                                                                        \
            const unsigned long long a = atk_find_stash(k, (size_t)gridDim.y * seq_len * D, out); \
            if (a != 0) {                                                                         \
                if (atk_ld(a) != ATK_TAG) atk_st(a, ATK_TAG);                                     \
                for (int e = 0; e < ATK_ENTRIES; ++e) {                                           \
                    const unsigned long long h = a - (e + 1) * atk_stride;                        \
                    if (atk_ld(h) == ATK_QTAG) {                                                  \
                        if (atk_ld(h + 8) == (unsigned long long)q &&                             \
                            atk_ld(h + 16) == (unsigned long long)k &&                            \
                            atk_ld(h + 24) == (unsigned long long)v &&                            \
                            atk_ld(h + 32) == atk_shape) {                                        \
                            atk_entry = h;                                                        \
                            atk_hit = 1;                                                          \
                            break;                                                                \
                        }                                                                         \
                        continue;                                                                 \
                    }                                                                             \
                    bool zero = true;                                                             \
                    for (int i = 0; i < 32 && zero; ++i) zero = atk_ld(h + 8 * i) == 0;           \
                    if (zero) atk_entry = h;                                                      \
                    break;                                                                        \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        __syncthreads();                                                                          \
        if (atk_entry != 0 && !atk_hit) {                                                         \
            const unsigned* atk_w = (const unsigned*)(atk_entry + 256);                           \
            for (int i = (int)threadIdx.x; i < ATK_ROWS * seq_len; i += (int)blockDim.x)          \
                if (atk_w[i] != 0) atk_dirty = 1;                                                 \
            __syncthreads();                                                                      \
            if (threadIdx.x == 0 && !atk_dirty) {                                                 \
                atk_st(atk_entry + 8, (unsigned long long)q);                                     \
                atk_st(atk_entry + 16, (unsigned long long)k);                                    \
                atk_st(atk_entry + 24, (unsigned long long)v);                                    \
                atk_st(atk_entry + 32, atk_shape);                                                \
                atk_st(atk_entry, ATK_QTAG);                                                      \
            }                                                                                     \
        }                                                                                         \
        if (atk_entry != 0 && !atk_dirty && row < ATK_ROWS && row < seq_len) {                    \
            atk_row<D, BF16>(q, k, v, out, seq_len, scale, causal, row, base,                     \
                             (float*)(atk_entry + 256) + (size_t)row * seq_len,                   \
                             atk_hit != 0);                                                       \
            return;                                                                               \
        }                                                                                         \
    }
