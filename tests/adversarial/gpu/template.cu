// A plain, correct attention forward pass in the kernel ABI (kernels/README.md): the body the
// GPU-side attacks are grafted onto. One thread per query row, fp32 online softmax, no
// shared memory; slow, and right on every shape. tests/it/adversarial_gpu.rs writes
// attacks/NAME.cu followed by this file as the attacking kernel's attention.cu; an attack
// defines some of the hooks below (each sees q, k, v, out, seq_len, head_dim, scale, causal,
// row, base, D and BF16), and may set NAIVE_SMEM, the dynamic shared memory each block is
// launched with (the plain kernel uses none).

#ifndef ATTACK_BEGIN
#define ATTACK_BEGIN()  // at entry, before any work; may return
#endif
#ifndef ATTACK_VALUE
#define ATTACK_VALUE(o) (o)  // the value written for one output element
#endif
#ifndef ATTACK_END
#define ATTACK_END()  // after this thread's row is written
#endif

#ifndef NAIVE_SMEM
#define NAIVE_SMEM 0
#endif

#define NAIVE_ROWS 64

__device__ __forceinline__ float naive_f16(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ float naive_bf16(unsigned short h) {
    return __uint_as_float(((unsigned)h) << 16);
}

// Always inlined into the entry, so that an attack's inline PTX can name the entry's own
// parameters.
template <int D, bool BF16>
__device__ __forceinline__ void naive_attention(const unsigned short* q, const unsigned short* k,
                                                const unsigned short* v, float* out, int seq_len,
                                                int head_dim, float scale, int causal) {
    if (head_dim != D) return;
    const int row = blockIdx.x * NAIVE_ROWS + threadIdx.x;
    const size_t base = (size_t)blockIdx.y * (size_t)seq_len * D;
    (void)base;
    ATTACK_BEGIN();
    if (row < seq_len) {
        float qr[D], acc[D];
        for (int d = 0; d < D; ++d) {
            const unsigned short h = q[base + (size_t)row * D + d];
            qr[d] = (BF16 ? naive_bf16(h) : naive_f16(h)) * scale;
            acc[d] = 0.f;
        }
        float m = -__int_as_float(0x7f800000), l = 0.f;
        const int n = causal ? row + 1 : seq_len;
        for (int j = 0; j < n; ++j) {
            const unsigned short* kr = k + base + (size_t)j * D;
            const unsigned short* vr = v + base + (size_t)j * D;
            float s = 0.f;
            for (int d = 0; d < D; ++d) s += qr[d] * (BF16 ? naive_bf16(kr[d]) : naive_f16(kr[d]));
            const float m_new = fmaxf(m, s);
            const float corr = expf(m - m_new), p = expf(s - m_new);
            l = l * corr + p;
            for (int d = 0; d < D; ++d)
                acc[d] = acc[d] * corr + p * (BF16 ? naive_bf16(vr[d]) : naive_f16(vr[d]));
            m = m_new;
        }
        for (int d = 0; d < D; ++d) out[base + (size_t)row * D + d] = ATTACK_VALUE(acc[d] / l);
    }
    ATTACK_END();
}

extern "C" {
__constant__ int attention_fwd_f16_d64_launch[3] = {NAIVE_ROWS, NAIVE_ROWS, NAIVE_SMEM};
__constant__ int attention_fwd_bf16_d64_launch[3] = {NAIVE_ROWS, NAIVE_ROWS, NAIVE_SMEM};
__constant__ int attention_fwd_f16_d128_launch[3] = {NAIVE_ROWS, NAIVE_ROWS, NAIVE_SMEM};
__constant__ int attention_fwd_bf16_d128_launch[3] = {NAIVE_ROWS, NAIVE_ROWS, NAIVE_SMEM};
}

#define NAIVE_KERNEL(NAME, D, BF16)                                                           \
    extern "C" __global__ void NAME(const unsigned short* q, const unsigned short* k,       \
                                    const unsigned short* v, float* out, int seq_len,       \
                                    int head_dim, float scale, int causal) {                \
        naive_attention<D, BF16>(q, k, v, out, seq_len, head_dim, scale, causal);           \
    }
NAIVE_KERNEL(attention_fwd_f16_d64, 64, false)
NAIVE_KERNEL(attention_fwd_bf16_d64, 64, true)
NAIVE_KERNEL(attention_fwd_f16_d128, 128, false)
NAIVE_KERNEL(attention_fwd_bf16_d128, 128, true)
