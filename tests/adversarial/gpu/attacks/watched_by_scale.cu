// Attack: be honest exactly when watched. Before issue 36, parity, the random-shape probes,
// the warm-up, `ci-gate sanitize` and ncu launched with scale exactly 1/sqrt(head_dim), and
// no timed launch ever did: compute only when the scale is that, and skip the work (write
// nothing) otherwise. Now every launch draws its scale from the same distribution.

__device__ __forceinline__ bool atk_watched(float scale, int d) {
    return fabsf(scale * sqrtf((float)d) - 1.0f) < 1e-6f;
}
#define ATTACK_BEGIN() \
    if (!atk_watched(scale, D)) return;
