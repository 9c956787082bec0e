// Control, no attack: an honest tiled kernel (a whole attention.cu, not grafted on the
// template) that the defences must not touch. Each block of 64 threads, one query row each,
// stages tiles of 64 keys of K and V, converted to fp32, in dynamic shared memory (32 KiB for
// head_dim 64; 64 KiB for head_dim 128, above the 48 KiB that needs the host's opt-in), and
// folds the `scale` argument and log2(e) into q so that the online softmax runs on exp2f: a
// kernel that reads its scale, uses shared memory every launch and is right on every shape.
// It must pass parity everywhere (being slow, it reads as a regression).

#define TILED_ROWS 64
#define TILED_KEYS 64

extern "C" {
__constant__ int attention_fwd_f16_d64_launch[3] = {TILED_ROWS, TILED_ROWS,
                                                    2 * TILED_KEYS * 64 * 4};
__constant__ int attention_fwd_bf16_d64_launch[3] = {TILED_ROWS, TILED_ROWS,
                                                     2 * TILED_KEYS * 64 * 4};
__constant__ int attention_fwd_f16_d128_launch[3] = {TILED_ROWS, TILED_ROWS,
                                                     2 * TILED_KEYS * 128 * 4};
__constant__ int attention_fwd_bf16_d128_launch[3] = {TILED_ROWS, TILED_ROWS,
                                                      2 * TILED_KEYS * 128 * 4};
}

extern __shared__ float tiled_smem[];

template <bool BF16>
__device__ __forceinline__ float tiled_cvt(unsigned short h) {
    if constexpr (BF16) {
        return __uint_as_float(((unsigned)h) << 16);
    } else {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
        return f;
    }
}

template <int D, bool BF16>
__device__ __forceinline__ void tiled_attention(const unsigned short* q, const unsigned short* k,
                                                const unsigned short* v, float* out,
                                                int seq_len, int head_dim, float scale,
                                                int causal) {
    if (head_dim != D) return;
    float* ks = tiled_smem;
    float* vs = tiled_smem + TILED_KEYS * D;
    const int row = blockIdx.x * TILED_ROWS + (int)threadIdx.x;
    const size_t base = (size_t)blockIdx.y * (size_t)seq_len * D;
    const bool active = row < seq_len;
    // scores in log2 units: exp2f(s·scale·log2 e) = exp(s·scale)
    const float qscale = scale * 1.4426950408889634f;
    float qr[D], acc[D];
    for (int d = 0; d < D; ++d) {
        qr[d] = active ? tiled_cvt<BF16>(q[base + (size_t)row * D + d]) * qscale : 0.f;
        acc[d] = 0.f;
    }
    float m = -__int_as_float(0x7f800000), l = 0.f;
    const int last = min((int)(blockIdx.x + 1) * TILED_ROWS, seq_len);
    const int keys = causal ? last : seq_len;
    for (int t0 = 0; t0 < keys; t0 += TILED_KEYS) {
        const int tk = min(TILED_KEYS, keys - t0);
        for (int i = (int)threadIdx.x; i < tk * D; i += (int)blockDim.x) {
            const size_t at = base + (size_t)t0 * D + i;
            ks[i] = tiled_cvt<BF16>(k[at]);
            vs[i] = tiled_cvt<BF16>(v[at]);
        }
        __syncthreads();
        if (active) {
            const int jn = causal ? min(tk, row - t0 + 1) : tk;
            for (int j = 0; j < jn; ++j) {
                float s = 0.f;
                for (int d = 0; d < D; ++d) s += qr[d] * ks[j * D + d];
                const float m_new = fmaxf(m, s);
                const float corr = exp2f(m - m_new), p = exp2f(s - m_new);
                l = l * corr + p;
                for (int d = 0; d < D; ++d) acc[d] = acc[d] * corr + p * vs[j * D + d];
                m = m_new;
            }
        }
        __syncthreads();
    }
    if (active)
        for (int d = 0; d < D; ++d) out[base + (size_t)row * D + d] = acc[d] / l;
}

#define TILED_KERNEL(NAME, D, BF16)                                                         \
    extern "C" __global__ void NAME(const unsigned short* q, const unsigned short* k,     \
                                    const unsigned short* v, float* out, int seq_len,     \
                                    int head_dim, float scale, int causal) {              \
        tiled_attention<D, BF16>(q, k, v, out, seq_len, head_dim, scale, causal);         \
    }
TILED_KERNEL(attention_fwd_f16_d64, 64, false)
TILED_KERNEL(attention_fwd_bf16_d64, 64, true)
TILED_KERNEL(attention_fwd_f16_d128, 128, false)
TILED_KERNEL(attention_fwd_bf16_d128, 128, true)
