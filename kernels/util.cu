// util.cu -- helper kernels for ci-gate. No include directives; launch with any grid/block
// (every kernel uses a grid-stride loop or picks its one thread itself).
//
//   fill_normal_f16 (unsigned short* dst, unsigned long long n, unsigned long long seed)
//   fill_normal_bf16(unsigned short* dst, unsigned long long n, unsigned long long seed)
//       dst[i] = round_to_nearest_even(N(0,1) sample), where the sample depends only on
//       (seed, i): h = splitmix64(splitmix64(seed) + i); u1 = (top 24 bits of h + 1) / 2^24
//       in (0,1], u2 = (bits 8..31 of h) / 2^24 in [0,1); z = sqrt(-2 ln u1) cos(2 pi u2)
//       (Box-Muller). Deterministic for a given seed, independent of the launch shape;
//       |z| <= 5.77.
//   fill_u32(unsigned int* dst, unsigned long long n, unsigned int value)
//       dst[i] = value (used to poison output buffers, e.g. 0x7fc00000 = NaN).
//   spin_cycles(long long cycles)
//       thread 0 of block 0 busy-waits `cycles` SM clock cycles (clock64); every other
//       thread returns at once. Used to inject a calibrated slowdown.

__device__ __forceinline__ unsigned long long cg_splitmix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

__device__ __forceinline__ float cg_normal(unsigned long long key, unsigned long long i) {
    const unsigned long long h = cg_splitmix64(key + i);
    const float u1 = (float)((unsigned)(h >> 40) + 1u) * 5.9604644775390625e-8f;  // (0, 1]
    const float u2 = (float)((unsigned)(h >> 8) & 0xFFFFFFu) * 5.9604644775390625e-8f;  // [0, 1)
    return sqrtf(-2.0f * logf(u1)) * cosf(6.283185307179586f * u2);
}

__device__ __forceinline__ unsigned short cg_f32_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ unsigned short cg_f32_to_bf16(float f) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ unsigned long long cg_tid() {
    return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ unsigned long long cg_nthreads() {
    return (unsigned long long)gridDim.x * blockDim.x;
}

extern "C" __global__ void fill_normal_f16(unsigned short* __restrict__ dst, unsigned long long n,
                                           unsigned long long seed) {
    const unsigned long long key = cg_splitmix64(seed);
    for (unsigned long long i = cg_tid(); i < n; i += cg_nthreads())
        dst[i] = cg_f32_to_f16(cg_normal(key, i));
}

extern "C" __global__ void fill_normal_bf16(unsigned short* __restrict__ dst,
                                            unsigned long long n, unsigned long long seed) {
    const unsigned long long key = cg_splitmix64(seed);
    for (unsigned long long i = cg_tid(); i < n; i += cg_nthreads())
        dst[i] = cg_f32_to_bf16(cg_normal(key, i));
}

extern "C" __global__ void fill_u32(unsigned int* __restrict__ dst, unsigned long long n,
                                    unsigned int value) {
    for (unsigned long long i = cg_tid(); i < n; i += cg_nthreads()) dst[i] = value;
}

extern "C" __global__ void spin_cycles(long long cycles) {
    if ((blockIdx.x | blockIdx.y | blockIdx.z | threadIdx.x | threadIdx.y | threadIdx.z) != 0) return;
    long long start, now;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(now));
    } while (now - start < cycles);
}
