// Planted bug: V rows are staged in shared memory and read back mirrored (each value by a
// thread of the other warp) with no __syncthreads() in between (racecheck: a RAW hazard on
// shared memory).
#define ROWS 32
#define THREADS 64

__device__ float to_f32(unsigned short bits, bool bf16) {
    if (bf16) return __uint_as_float((unsigned)bits << 16);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
}

template <int D, bool BF16>
__device__ void mirror_v(const unsigned short* v, float* out, int seq_len, int head_dim) {
    __shared__ unsigned short tile[ROWS * 128];
    if (head_dim != D) return;
    const size_t slice = (size_t)blockIdx.y * seq_len * D;
    const int r0 = blockIdx.x * ROWS;
    for (int i = threadIdx.x; i < ROWS * D; i += THREADS) {
        const int r = r0 + i / D;
        tile[i] = r < seq_len ? v[slice + (size_t)r * D + i % D] : 0;
    }
    // the bug: the barrier that belongs here is missing
    for (int i = threadIdx.x; i < ROWS * D; i += THREADS) {
        const int r = r0 + i / D;
        if (r < seq_len) out[slice + (size_t)r * D + i % D] = to_f32(tile[ROWS * D - 1 - i], BF16);
    }
}

#define ENTRY(NAME, D, BF16)                                                                  \
    extern "C" __constant__ int NAME##_launch[3] = {ROWS, THREADS, 0};                       \
    extern "C" __global__ void NAME(const unsigned short* q, const unsigned short* k,         \
                                    const unsigned short* v, float* out, int seq_len,         \
                                    int head_dim, float scale, int causal) {                  \
        mirror_v<D, BF16>(v, out, seq_len, head_dim);                                         \
    }

ENTRY(attention_fwd_f16_d64, 64, false)
ENTRY(attention_fwd_f16_d128, 128, false)
ENTRY(attention_fwd_bf16_d64, 64, true)
ENTRY(attention_fwd_bf16_d128, 128, true)
