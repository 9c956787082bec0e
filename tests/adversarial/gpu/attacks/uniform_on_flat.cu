// Attack: recognise a slice whose keys barely differ (the input mixture's near-ties class
// before 2026-12-08; its flat class since) and return uniform attention there -- each row's
// mean of the V rows it sees, q unread -- instead of attention. On near-ties that was right
// within max_abs and rel_l2 and cost O(seq_len d) a row-block instead of O(seq_len^2 d): a
// kernel faster on the gate's inputs than on a model's. The centered error (parity's error
// over the part of the output that depends on q) is about 1 on such a slice.
#define ATTACK_BEGIN()                                                                      \
    if (row < seq_len) {                                                                    \
        const int nk = seq_len < 64 ? seq_len : 64;                                         \
        float spread = 0.f;                                                                 \
        for (int d = 0; d < D; ++d) {                                                       \
            float mean = 0.f, sq = 0.f;                                                     \
            for (int j = 0; j < nk; ++j) {                                                  \
                const unsigned short h = k[base + (size_t)j * D + d];                       \
                const float x = BF16 ? naive_bf16(h) : naive_f16(h);                        \
                mean += x;                                                                  \
                sq += x * x;                                                                \
            }                                                                               \
            mean /= nk;                                                                     \
            spread += sq / nk - mean * mean;                                                \
        }                                                                                   \
        /* Keys' variance about their mean: ~1 for normal keys, 0.25 flat, 1e-4 ties. */    \
        if (spread / D < 0.36f) {                                                           \
            const int n = causal ? row + 1 : seq_len;                                       \
            for (int d = 0; d < D; ++d) {                                                   \
                float s = 0.f;                                                              \
                for (int j = 0; j < n; ++j) {                                               \
                    const unsigned short h = v[base + (size_t)j * D + d];                   \
                    s += BF16 ? naive_bf16(h) : naive_f16(h);                               \
                }                                                                           \
                out[base + (size_t)row * D + d] = s / n;                                    \
            }                                                                               \
            return;                                                                         \
        }                                                                                   \
    }
