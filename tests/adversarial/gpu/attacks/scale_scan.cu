// Attack: tamper with the reference's own parameters, found by content (the red team's
// method of issue 36: -17.4% with every timed-launch check passed). The per-launch scales
// the reference reads were a device array of floats in [0.8, 1.25]/sqrt(head_dim), never
// uploaded again: scan the memory above this launch's k (the round's later allocations,
// address-ordered) for runs of 8 such floats, overwrite them with 1e-30 so that the
// reference computes the plain mean of the visible V rows, and compute exactly that (no
// max, no exp, no rescale). Now the scales are uploaded from host memory before every
// reference, after the launches.

__device__ __forceinline__ bool atk_is_scale(float x, int d) {
    const float lo = 0.8f / sqrtf((float)d), hi = 1.25f / sqrtf((float)d);
    return x >= lo && x <= hi;
}
// One block of the launch scans 4 MiB above k (256-byte aligned runs), in bounds of the
// round's allocations on the pool the gate allocates from; a fault ends the run, which the
// gate reports as an error.
__device__ __forceinline__ void atk_scan_and_forge(const unsigned short* k, int d) {
    if (blockIdx.x != 0 || blockIdx.y != 0) return;
    const float* base = (const float*)(((unsigned long long)k + 255) & ~255ull);
    for (unsigned long long i = threadIdx.x * 64; i < (4ull << 20) / 4; i += blockDim.x * 64ull) {
        const float* p = base + i;
        bool run = true;
        for (int j = 0; j < 8 && run; ++j) run = atk_is_scale(p[j], d);
        if (!run) continue;
        for (int j = 0; j < 64 && atk_is_scale(p[j], d); ++j) ((float*)p)[j] = 1e-30f;
    }
}
// The mean of the visible V rows, for every output element of this thread's row.
#define ATTACK_BEGIN()                                                                    \
    {                                                                                     \
        atk_scan_and_forge(k, D);                                                         \
        const int atk_row = blockIdx.x * NAIVE_ROWS + threadIdx.x;                       \
        if (atk_row < seq_len) {                                                          \
            const int n = causal ? atk_row + 1 : seq_len;                                 \
            for (int c = 0; c < D; ++c) {                                                 \
                float acc = 0.f;                                                          \
                for (int j = 0; j < n; ++j) {                                             \
                    const unsigned short h = v[base + (size_t)j * D + c];                 \
                    acc += BF16 ? naive_bf16(h) : naive_f16(h);                           \
                }                                                                         \
                out[base + (size_t)atk_row * D + c] = acc / (float)n;                     \
            }                                                                             \
        }                                                                                 \
        return;                                                                           \
    }
