// Attack: no stash at all. Each timed launch writes its own slot between poisoned gaps; the
// gap is 64 to 16384 words of one NaN pattern (read from the word just outside the slot), and
// slot sizes are whole multiples of 64 words, so a neighbouring slot starts or ends 64·m words
// beyond the own slot. Scan both gaps for the first word that is not the poison, check that
// it is the edge of a written slot (finite, poison just outside it), and copy this launch's
// rows from that neighbour. On main every launch of a sample computed the same function, and
// about half of the launches found a neighbour written earlier in the sample: the red team's
// "no stash at all" copy.

__device__ __forceinline__ unsigned atk_bits(const float* p) {
    unsigned x;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(x) : "l"(p));
    return x;
}
__device__ __forceinline__ bool atk_finite_bits(unsigned x) {
    return (x & 0x7f800000u) != 0x7f800000u;
}
// The gaps' poison: a NaN with a payload, never what arithmetic writes.
__device__ __forceinline__ bool atk_poison_like(unsigned x) {
    return (x & 0x7fc00000u) == 0x7fc00000u && (x & 0x003fffffu) != 0;
}

// The block looks at m = 1, 2, ... 256 (the largest gap) on both sides, blockDim.x values of m
// at a time, and stops a side at its first hit (so that it reads as little as it can past the
// region's ends): the smallest m on a side whose word is not the poison is that side's nearest
// slot edge. Below: out[-64m-1] is the lower slot's last element; above: out[n+64m] is the
// upper slot's first. Returns (via *src) the start of a written neighbour slot, or nullptr.
__device__ __forceinline__ void atk_scan(const float* out, size_t n, const float** src) {
    __shared__ int atk_lo, atk_hi;
    if (threadIdx.x == 0) {
        atk_lo = 1 << 30;
        atk_hi = 1 << 30;
    }
    __syncthreads();
    const unsigned below = atk_bits(out - 1), above = atk_bits(out + n);
    bool scan_lo = atk_poison_like(below), scan_hi = atk_poison_like(above);
    for (int from = 1; from <= 256 && (scan_lo || scan_hi); from += (int)blockDim.x) {
        const int m = from + (int)threadIdx.x;
        if (m <= 256) {
            if (scan_lo && atk_bits(out - 64 * (size_t)m - 1) != below) atomicMin(&atk_lo, m);
            if (scan_hi && atk_bits(out + n + 64 * (size_t)m) != above) atomicMin(&atk_hi, m);
        }
        __syncthreads();
        scan_lo = scan_lo && atk_lo > 256;
        scan_hi = scan_hi && atk_hi > 256;
        __syncthreads();
    }
    *src = nullptr;
    if (atk_lo <= 256) {
        // The lower neighbour ends at out[-64m-1]: it starts n-1 words below that.
        const float* s = out - 64 * (size_t)atk_lo - n;
        if (atk_finite_bits(atk_bits(s + n - 1)) && atk_finite_bits(atk_bits(s)) &&
            atk_bits(s - 1) == below)
            *src = s;
    }
    if (*src == nullptr && atk_hi <= 256) {
        const float* s = out + n + 64 * (size_t)atk_hi;
        if (atk_finite_bits(atk_bits(s)) && atk_finite_bits(atk_bits(s + n - 1)) &&
            atk_bits(s + n) == above)
            *src = s;
    }
}

#define ATTACK_BEGIN()                                                                          \
    {                                                                                           \
        const float* atk_src;                                                                   \
        atk_scan(out, (size_t)gridDim.y * seq_len * D, &atk_src);                               \
        if (row >= seq_len) return;                                                             \
        if (atk_src != nullptr) {                                                               \
            const float* atk_r = atk_src + base + (size_t)row * D;                              \
            if (atk_finite_bits(atk_bits(atk_r)) && atk_finite_bits(atk_bits(atk_r + D - 1))) { \
                for (int atk_d = 0; atk_d < D; ++atk_d)                                         \
                    out[base + (size_t)row * D + atk_d] = atk_r[atk_d];                         \
                return;                                                                         \
            }                                                                                   \
        }                                                                                       \
    }
