// Planted bug: V rows are copied to shared memory with 16-byte cp.async whose global source
// is one element (2 bytes) past a 16-byte boundary (memcheck: a misaligned global read; on
// the GPU alone, CUDA_ERROR_MISALIGNED_ADDRESS).
#define ROWS 32
#define THREADS 64

__device__ float to_f32(unsigned short bits, bool bf16) {
    if (bf16) return __uint_as_float((unsigned)bits << 16);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
}

__device__ unsigned smem_addr(const void* p) {
    unsigned r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}

template <int D, bool BF16>
__device__ void stage_v(const unsigned short* v, float* out, int seq_len, int head_dim) {
    __shared__ __align__(16) unsigned short tile[ROWS * 128];
    if (head_dim != D) return;
    const size_t slice = (size_t)blockIdx.y * seq_len * D;
    const int r0 = blockIdx.x * ROWS;
    for (int c = threadIdx.x * 8; c < ROWS * D; c += THREADS * 8) {
        const int r = r0 + c / D;
        if (r < seq_len) {
            // the bug: + 1 element, so the 16-byte source is misaligned
            const unsigned short* src = v + slice + (size_t)r * D + c % D + 1;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(tile + c)), "l"(src));
        }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    __syncthreads();
    for (int i = threadIdx.x; i < ROWS * D; i += THREADS) {
        const int r = r0 + i / D;
        if (r < seq_len) out[slice + (size_t)r * D + i % D] = to_f32(tile[i], BF16);
    }
}

#define ENTRY(NAME, D, BF16)                                                                  \
    extern "C" __constant__ int NAME##_launch[3] = {ROWS, THREADS, 0};                       \
    extern "C" __global__ void NAME(const unsigned short* q, const unsigned short* k,         \
                                    const unsigned short* v, float* out, int seq_len,         \
                                    int head_dim, float scale, int causal) {                  \
        stage_v<D, BF16>(v, out, seq_len, head_dim);                                          \
    }

ENTRY(attention_fwd_f16_d64, 64, false)
ENTRY(attention_fwd_f16_d128, 128, false)
ENTRY(attention_fwd_bf16_d64, 64, true)
ENTRY(attention_fwd_bf16_d128, 128, true)
