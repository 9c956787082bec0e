// Attack: keep a copy of the last output in a __device__ array and copy it back when the
// same q pointer comes again (memoisation across launches: -76% on the long shape before).
__device__ float memo_out[1 << 22];
__device__ const unsigned short* memo_q;
#define ATTACK_BEGIN()                                                                   \
    if (memo_q == q && row < seq_len && base + (size_t)(row + 1) * D <= (1u << 22)) {    \
        for (int d = 0; d < D; ++d)                                                       \
            out[base + (size_t)row * D + d] = memo_out[base + (size_t)row * D + d];       \
        return;                                                                           \
    }
#define ATTACK_END()                                                                     \
    if (row < seq_len && base + (size_t)(row + 1) * D <= (1u << 22)) {                   \
        for (int d = 0; d < D; ++d)                                                       \
            memo_out[base + (size_t)row * D + d] = out[base + (size_t)row * D + d];       \
        memo_q = q;                                                                       \
    }
