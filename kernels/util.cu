// util.cu -- helper kernels for ci-gate. No include directives; launch with any grid/block
// (every kernel uses a grid-stride loop or picks its one thread itself).
//
//   fill_input_f16 (unsigned short* dst, unsigned long long n, unsigned long long seed,
//                   int role, int seq_len, int head_dim)
//   fill_input_bf16(...)
//       dst[i] = round_to_nearest_even(cg_input(key, role, i)) with key = splitmix64(seed):
//       element i of a [batch*heads, seq_len, head_dim] tensor of role 0 (q), 1 (k) or 2 (v)
//       drawn from the input mixture below ("The input mixture"): each (batch, head) slice
//       gets a class of its own from the key, and every value depends only on (seed, role,
//       i, seq_len, head_dim). Deterministic for a given seed, independent of the launch
//       shape.
//   fill_u32(unsigned int* dst, unsigned long long n, unsigned int value)
//       dst[i] = value (used to poison output buffers, e.g. 0x7fc00000 = NaN).
//   spin_cycles(long long cycles)
//       thread 0 of block 0 busy-waits `cycles` SM clock cycles (clock64); every other
//       thread returns at once. Used to inject a calibrated slowdown.
//
// Standard normal values: h = splitmix64(key + i); u1 = (top 24 bits of h + 1) / 2^24 in
// (0,1], u2 = (bits 8..31 of h) / 2^24 in [0,1); z = sqrt(-2 ln u1) cos(2 pi u2)
// (Box-Muller), |z| <= 5.77.

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

// ---- The input mixture (issue 36): what real attention sees, not only N(0,1) ----
//
// A kernel whose numerics hold only for N(0,1) inputs (a softmax maximum frozen after the
// first key tile, a skipped rescale, an fp16 running sum) is right on N(0,1) and wrong on
// real models' inputs. So every tensor the gate feeds a kernel -- parity, probes, warm-up,
// sanitize and ncu launches, and every timed launch -- is drawn from this mixture, one class
// per (batch, head) slice and tensor, chosen by the slice's hash of the secret key
// (docs/MEASURING.md, "The input mixture"; bench/mixture_study.py mirrors it exactly):
//
//   q  normal    30%  z
//      large     30%  a z, a in [2.5, 5)         (logits spanning tens of nats)
//      outliers  20%  z, but ~1/16 of the channels b z, b in [8, 16) (outlier channels)
//      biased    20%  z + beta, beta in [0.5, 1.5) (a shared direction: meets a sink)
//   k  normal    30%  z
//      late      30%  z, but ~1/8 of the keys at j >= seq_len/4 g z, g in [3, 8): the
//                     row maximum arrives after the first key tiles
//      sink      20%  z, but key 0 = g0 (1 + z/4) / sqrt(head_dim), g0 in [2, 6): an
//                     attention sink (with a biased q its logit leads by up to ~11 nats,
//                     so it takes much of a row's weight but never all of it)
//      flat      20%  base_c + z/2: a broad softmax (logits within about a nat, so a
//                     running sum must stay exact over seq_len)
//   v  normal    40%  z
//      offset    30%  mu + sigma z, |mu| in [2, 6), sigma in [1, 4) (a non-zero mean, at
//                     most 6 sigma: an honest kernel's rounding grows with mu, the part
//                     of the output that depends on q with sigma)
//      wide      30%  sigma z, sigma in [8, 32) (a large range)
//
// No class combination makes attention degenerate (2026-12-08): where a row's output is nearly
// the same for every q (keys within 1/100 of each other: the mean of V; a sink that takes all
// of a row's weight: V's first row), a kernel can recognise the class and compute that
// cheaper function instead, right within every tolerance and faster on the gate's inputs
// than on a model's. bench/mixture_study.py holds every combination to it: no q-independent
// output and no output linear in q passes parity on any of them.
//
// h = cg_head_hash(key, role, bh) picks the class ((h >> 32) & 0xFFFF) * 10 >> 16 (a decile)
// and its parameters (16-bit fractions of h). The scale of a v slice, s_V = |mu| + sigma
// (1 for normal), is what parity errors are measured in (the host mirrors it:
// src/gpu/mixture.rs). Every value stays far inside fp16 and bf16 range (|x| < 200).
// Arithmetic uses the _rn intrinsics so that the fill and the reference's regeneration of
// q (launch_rows_*) give the same bits in every kernel that inlines them.

#define CG_GOLDEN 0x9E3779B97F4A7C15ull
#define CG_ROLE_SALT 0xA24BAED4963EE407ull

__device__ __forceinline__ unsigned long long cg_head_hash(unsigned long long key, int role,
                                                           unsigned long long bh) {
    return cg_splitmix64(key ^ (CG_ROLE_SALT * (unsigned long long)(role + 1)) ^
                         ((bh + 1ull) * CG_GOLDEN));
}

__device__ __forceinline__ int cg_decile(unsigned long long h) {
    return (int)((((h >> 32) & 0xFFFFull) * 10ull) >> 16);
}

// A fraction in [0, 1) from 16 bits of h.
__device__ __forceinline__ float cg_frac(unsigned long long h, int shift) {
    return (float)((unsigned)(h >> shift) & 0xFFFFu) * (1.0f / 65536.0f);
}

// lo + (hi - lo) * frac, rounded once per operation.
__device__ __forceinline__ float cg_lerp(float lo, float span, unsigned long long h, int shift) {
    return __fadd_rn(lo, __fmul_rn(span, cg_frac(h, shift)));
}

// The class of a slice: q 0 normal, 1 large, 2 outliers, 3 biased; k 0 normal, 1 late,
// 2 sink, 3 flat; v 0 normal, 1 offset, 2 wide.
__device__ __forceinline__ int cg_class(int role, unsigned long long h) {
    const int d = cg_decile(h);
    if (role == 2) return d < 4 ? 0 : (d < 7 ? 1 : 2);
    return d < 3 ? 0 : (d < 6 ? 1 : (d < 8 ? 2 : 3));
}

// Element i (flat, [bh, row, col]) of a tensor of `role` drawn from `key`.
__device__ __forceinline__ float cg_input(unsigned long long key, int role, unsigned long long i,
                                          int seq_len, int head_dim) {
    const unsigned long long d = (unsigned long long)head_dim;
    const unsigned long long per_head = (unsigned long long)seq_len * d;
    unsigned long long bh, row, col;
    if (i <= 0xFFFFFFFFull && per_head <= 0xFFFFFFFFull) {
        // 32-bit divisions where the indices fit (every fill of one launch's tensors).
        const unsigned ii = (unsigned)i, ph = (unsigned)per_head, dd = (unsigned)head_dim;
        const unsigned rest = ii % ph;
        bh = ii / ph;
        row = rest / dd;
        col = rest % dd;
    } else {
        const unsigned long long rest = i % per_head;
        bh = i / per_head;
        row = rest / d;
        col = rest % d;
    }
    const unsigned long long h = cg_head_hash(key, role, bh);
    const int cls = cg_class(role, h);
    const float z = cg_normal(key, i);
    if (role == 0) {
        if (cls == 1) return __fmul_rn(z, cg_lerp(2.5f, 2.5f, h, 0));
        if (cls == 2) {
            const bool outlier = (cg_splitmix64(h ^ ((col + 1ull) * CG_GOLDEN)) >> 60) == 0;
            return outlier ? __fmul_rn(z, cg_lerp(8.0f, 8.0f, h, 16)) : z;
        }
        if (cls == 3) return __fadd_rn(z, cg_lerp(0.5f, 1.0f, h, 0));
        return z;
    }
    if (role == 1) {
        if (cls == 1) {
            const unsigned long long late0 = seq_len / 4 > 1 ? (unsigned long long)(seq_len / 4) : 1ull;
            const bool strong =
                row >= late0 && (cg_splitmix64(h ^ ((row + 1ull) * CG_GOLDEN)) >> 61) == 0;
            return strong ? __fmul_rn(z, cg_lerp(3.0f, 5.0f, h, 0)) : z;
        }
        if (cls == 2) {
            if (row != 0) return z;
            return __fdiv_rn(__fmul_rn(cg_lerp(2.0f, 4.0f, h, 0), __fadd_rn(1.0f, __fmul_rn(0.25f, z))),
                             __fsqrt_rn((float)head_dim));
        }
        if (cls == 3) return __fadd_rn(cg_normal(h, 0x7F000000ull + col), __fmul_rn(0.5f, z));
        return z;
    }
    if (cls == 1) {
        const float mu = cg_lerp(2.0f, 4.0f, h, 0);
        const float sigma = cg_lerp(1.0f, 3.0f, h, 16);
        return __fadd_rn((h >> 63) ? -mu : mu, __fmul_rn(sigma, z));
    }
    if (cls == 2) return __fmul_rn(cg_lerp(8.0f, 24.0f, h, 0), z);
    return z;
}

template <bool BF16>
__device__ __forceinline__ void cg_fill_input(unsigned short* __restrict__ dst,
                                              unsigned long long n, unsigned long long seed,
                                              int role, int seq_len, int head_dim) {
    const unsigned long long key = cg_splitmix64(seed);
    for (unsigned long long i = cg_tid(); i < n; i += cg_nthreads()) {
        const float x = cg_input(key, role, i, seq_len, head_dim);
        dst[i] = BF16 ? cg_f32_to_bf16(x) : cg_f32_to_f16(x);
    }
}

extern "C" __global__ void fill_input_f16(unsigned short* __restrict__ dst, unsigned long long n,
                                          unsigned long long seed, int role, int seq_len,
                                          int head_dim) {
    cg_fill_input<false>(dst, n, seed, role, seq_len, head_dim);
}

extern "C" __global__ void fill_input_bf16(unsigned short* __restrict__ dst,
                                           unsigned long long n, unsigned long long seed,
                                           int role, int seq_len, int head_dim) {
    cg_fill_input<true>(dst, n, seed, role, seq_len, head_dim);
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

// ---- Integrity checks (issue 18): the harness proves the timed kernel did the work. ----
//
//   hash_u16(const unsigned short* p, unsigned long long n, unsigned long long key,
//            unsigned long long* out)
//   hash_u32(const unsigned int* p, unsigned long long n, unsigned long long key,
//            unsigned long long* out)
//       *out += sum over i < n of mix(key, i, p[i]) (mod 2^64): a keyed hash that does not
//       depend on the launch shape or on the order threads run in. The key is drawn by the
//       host from the OS for every run, so a kernel cannot forge a collision it cannot
//       compute. Zero *out first.
//   check_outputs(const float* region, const unsigned long long* slot_offsets,
//                 const unsigned long long* ref_offsets, const float* refs, const int* rows,
//                 int nrows, int rows_stride, int seq_len, int head_dim,
//                 unsigned long long n, unsigned int poison, const float* v_scales,
//                 int sets, CgCheck* results)
//       blockIdx.y = slot s, an output of n = batch*heads*seq_len*head_dim floats at
//       region + slot_offsets[s]: counts its elements still holding the poison pattern and its
//       non-finite ones (all n), and compares the query rows rs[0 .. nrows) of every
//       (batch, head), rs = rows + s * rows_stride (0: one list for every slot; nrows: a list
//       of its own per slot, as launch_rows_* writes them), with the reference at
//       refs + ref_offsets[s] (compact [batch*heads, nrows, head_dim], as attention_ref_launches
//       writes it), accumulating into results[s] the largest
//       |out - ref| / s_V (as float bits, in a 64-bit word: read it whole) with s_V =
//       v_scales[(s % sets) * batch*heads + bh], the scale of the V slice the launch read
//       (the input mixture), and the sums of (out - ref)^2 and ref^2 (the relative L2
//       error). A row outside 0 .. seq_len-1 counts every element of it as non-finite.
//       Zero results first (after the launches it checks: nothing a kernel wrote there
//       before may count).
//   check_fill(const unsigned int* region, const unsigned long long* offsets,
//              const unsigned long long* lens, unsigned int value,
//              unsigned long long* mismatches)
//       blockIdx.y = span s: counts the words of region[offsets[s] .. + lens[s]) that are not
//       `value` (the poisoned gaps between output slots: a write outside `out` lands there).

struct CgCheck {
    unsigned long long unwritten;
    unsigned long long nonfinite;
    unsigned long long max_abs_bits;
    double diff2;
    double ref2;
};

__device__ __forceinline__ unsigned long long cg_warp_sum_u64(unsigned long long x) {
    for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m);
    return x;
}
__device__ __forceinline__ double cg_warp_sum_f64(double x) {
    for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m);
    return x;
}
__device__ __forceinline__ unsigned int cg_warp_max_u32(unsigned int x) {
    for (int m = 16; m > 0; m >>= 1) x = max(x, __shfl_xor_sync(0xffffffffu, x, m));
    return x;
}

// Block-wide sums (and a max) through shared memory, so that each block adds to the global
// accumulators once: thousands of atomics on one address serialise in L2 and cost
// milliseconds. Blocks have at most 1024 threads, a multiple of 32; every thread calls
// these (they contain __syncthreads).
__device__ __forceinline__ unsigned long long cg_block_sum_u64(unsigned long long x,
                                                                unsigned long long* sh) {
    x = cg_warp_sum_u64(x);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = x;
    __syncthreads();
    x = threadIdx.x < (blockDim.x >> 5) ? sh[threadIdx.x] : 0;
    if (threadIdx.x < 32) x = cg_warp_sum_u64(x);
    __syncthreads();
    return x;
}
__device__ __forceinline__ double cg_block_sum_f64(double x, double* sh) {
    x = cg_warp_sum_f64(x);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = x;
    __syncthreads();
    x = threadIdx.x < (blockDim.x >> 5) ? sh[threadIdx.x] : 0.0;
    if (threadIdx.x < 32) x = cg_warp_sum_f64(x);
    __syncthreads();
    return x;
}
__device__ __forceinline__ unsigned int cg_block_max_u32(unsigned int x, unsigned int* sh) {
    x = cg_warp_max_u32(x);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = x;
    __syncthreads();
    x = threadIdx.x < (blockDim.x >> 5) ? sh[threadIdx.x] : 0u;
    if (threadIdx.x < 32) x = cg_warp_max_u32(x);
    __syncthreads();
    return x;
}

__device__ __forceinline__ unsigned long long cg_mix(unsigned long long key, unsigned long long i,
                                                     unsigned long long value) {
    return cg_splitmix64(cg_splitmix64(key ^ i) ^ value);
}

extern "C" __global__ void hash_u16(const unsigned short* __restrict__ p, unsigned long long n,
                                    unsigned long long key, unsigned long long* out) {
    __shared__ unsigned long long sh[32];
    unsigned long long acc = 0;
    for (unsigned long long i = cg_tid(); i < n; i += cg_nthreads()) acc += cg_mix(key, i, p[i]);
    acc = cg_block_sum_u64(acc, sh);
    if (threadIdx.x == 0) atomicAdd(out, acc);
}

extern "C" __global__ void hash_u32(const unsigned int* __restrict__ p, unsigned long long n,
                                    unsigned long long key, unsigned long long* out) {
    __shared__ unsigned long long sh[32];
    unsigned long long acc = 0;
    for (unsigned long long i = cg_tid(); i < n; i += cg_nthreads()) acc += cg_mix(key, i, p[i]);
    acc = cg_block_sum_u64(acc, sh);
    if (threadIdx.x == 0) atomicAdd(out, acc);
}

extern "C" __global__ void check_outputs(const float* __restrict__ region,
                                         const unsigned long long* __restrict__ slot_offsets,
                                         const unsigned long long* __restrict__ ref_offsets,
                                         const float* __restrict__ refs,
                                         const int* __restrict__ rows, int nrows,
                                         int rows_stride, int seq_len, int head_dim,
                                         unsigned long long n, unsigned int poison,
                                         const float* __restrict__ v_scales, int sets,
                                         CgCheck* results) {
    __shared__ unsigned long long sh_u[32];
    __shared__ double sh_d[32];
    __shared__ unsigned int sh_m[32];
    const unsigned int slot = blockIdx.y;
    const float* out = region + slot_offsets[slot];
    const float* ref = refs + ref_offsets[slot];
    const int* rs = rows + (size_t)slot * (size_t)rows_stride;
    unsigned long long unwritten = 0, nonfinite = 0;
    unsigned int max_bits = 0;
    double diff2 = 0.0, ref2 = 0.0;
    // Every element: written, and finite.
    for (unsigned long long i = cg_tid(); i < n; i += cg_nthreads()) {
        const unsigned int bits = __float_as_uint(out[i]);
        if (bits == poison) {
            ++unwritten;
        } else if ((bits & 0x7f800000u) == 0x7f800000u) {
            ++nonfinite;
        }
    }
    // The sampled rows: against the reference (compact [batch*heads, nrows, head_dim]).
    const unsigned long long d = (unsigned long long)head_dim;
    const unsigned long long per_head = (unsigned long long)nrows * d;
    const unsigned long long m = n / ((unsigned long long)seq_len * d) * per_head;
    for (unsigned long long j = cg_tid(); j < m; j += cg_nthreads()) {
        const unsigned long long bh = j / per_head, rest = j % per_head;
        const unsigned long long r = rest / d, c = rest % d;
        const int row = rs[r];
        if (row < 0 || row >= seq_len) {  // never written so by the harness: fail, never read
            ++nonfinite;
            continue;
        }
        const float o = out[(bh * seq_len + row) * d + c];
        const unsigned int bits = __float_as_uint(o);
        if ((bits & 0x7f800000u) == 0x7f800000u) continue;  // counted above
        const float want = ref[j];
        const float diff = fabsf(o - want);
        const float s_v = v_scales[(unsigned long long)(slot % (unsigned)sets) *
                                       (n / ((unsigned long long)seq_len * d)) + bh];
        max_bits = max(max_bits, __float_as_uint(__fdiv_rn(diff, s_v)));
        diff2 += (double)diff * (double)diff;
        ref2 += (double)want * (double)want;
    }
    unwritten = cg_block_sum_u64(unwritten, sh_u);
    nonfinite = cg_block_sum_u64(nonfinite, sh_u);
    max_bits = cg_block_max_u32(max_bits, sh_m);
    diff2 = cg_block_sum_f64(diff2, sh_d);
    ref2 = cg_block_sum_f64(ref2, sh_d);
    if (threadIdx.x == 0) {
        CgCheck* r = results + slot;
        if (unwritten) atomicAdd(&r->unwritten, unwritten);
        if (nonfinite) atomicAdd(&r->nonfinite, nonfinite);
        if (max_bits) atomicMax(&r->max_abs_bits, (unsigned long long)max_bits);
        atomicAdd(&r->diff2, diff2);
        atomicAdd(&r->ref2, ref2);
    }
}

extern "C" __global__ void check_fill(const unsigned int* __restrict__ region,
                                      const unsigned long long* __restrict__ offsets,
                                      const unsigned long long* __restrict__ lens,
                                      unsigned int value, unsigned long long* mismatches) {
    const unsigned int span = blockIdx.y;
    const unsigned int* p = region + offsets[span];
    const unsigned long long len = lens[span];
    unsigned long long bad = 0;
    for (unsigned long long i = cg_tid(); i < len; i += cg_nthreads()) bad += p[i] != value;
    bad = cg_warp_sum_u64(bad);
    if ((threadIdx.x & 31) == 0 && bad) atomicAdd(mismatches, bad);
}

// ---- Every timed launch computes a function of its own (issue 29) ----
//
// In a sample's CUDA graph, launch i reads its own q (a slice of one pool, n elements each)
// and gets its own softmax scale; before every sample the whole pool is filled again from a
// new secret key, so no launch of the run computes what another one did: a copied output, a
// cached intermediate (QK^T) or a remembered pointer is simply wrong, wherever it was kept.
//
//   cg_launch_seed(key, i) = key ^ (0xD1B54A32D192ED03 * (i + 1))
//       the seed of launch i's q: its values are exactly fill_input_*(seed, role 0).
//   fill_q_pool_f16 / fill_q_pool_bf16(unsigned short* dst, unsigned long long n,
//                                      unsigned long long key, int seq_len, int head_dim)
//       blockIdx.y = launch i: dst[i*n + j] = fill_input's q element j of seed
//       cg_launch_seed(key, i), for j < n (grid-stride in x): every launch's q a draw of
//       its own from the input mixture, a class of its own per (batch, head).
//   launch_rows_f16 / launch_rows_bf16(unsigned long long key, unsigned long long row_key,
//       int heads, int seq_len, int head_dim, int nrows, int* rows, float* qrows)
//       grid (nrows, heads, launches), any block: row t of launch i is
//       cg_launch_row(row_key, i, t) (t = 0: the last row, seq_len - 1; t = 1: a secret row
//       at a tile edge, the last or first row of a 64-row block; else a secret random row),
//       written to rows[i*nrows + t]; and the dtype-rounded q values of that row of
//       head h of launch i's q (as fill_q_pool made them from `key`), as fp32, to
//       qrows[((i*heads + h)*nrows + t)*head_dim + c]: what attention_ref_launches_* reads.
//       The reference never reads the pool the kernel under test could have written.
//   check_bytes(const unsigned long long* addrs, const unsigned long long* offsets,
//               const unsigned char* image, unsigned long long* mismatches)
//       blockIdx.y = span s: the bytes at device address addrs[s], offsets[s+1] - offsets[s]
//       of them, are compared with image[offsets[s] ..]; each byte that differs adds 1 to
//       *mismatches. Nothing is written: the timed module's __constant__ data verified
//       before and after every sample (a kernel can write it through a generic address), a
//       change failing the round.

__device__ __forceinline__ unsigned long long cg_launch_seed(unsigned long long key,
                                                             unsigned long long i) {
    return key ^ (0xD1B54A32D192ED03ull * (i + 1ull));
}

__device__ __forceinline__ int cg_launch_row(unsigned long long row_key, unsigned long long i,
                                             int t, int nrows, int seq_len) {
    if (t == 0) return seq_len - 1;
    const unsigned long long h =
        cg_splitmix64(row_key ^ (i * (unsigned long long)nrows + (unsigned long long)t));
    if (t == 1) {
        // A tile edge: row 64 m - 1 or 64 m (tiles of 64 and 128 rows both end at one).
        const unsigned long long edges = (unsigned long long)(seq_len / 64) + 1ull;
        const long long r = (long long)(64ull * ((h >> 1) % edges)) - (long long)(h & 1ull);
        return (int)(r < 0 ? 0 : (r >= seq_len ? seq_len - 1 : r));
    }
    return (int)(h % (unsigned long long)seq_len);
}

__device__ __forceinline__ float cg_f16_to_f32(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ float cg_bf16_to_f32(unsigned short h) {
    return __uint_as_float(((unsigned)h) << 16);
}

template <bool BF16>
__device__ __forceinline__ void cg_fill_q_pool(unsigned short* __restrict__ dst,
                                               unsigned long long n, unsigned long long key,
                                               int seq_len, int head_dim) {
    const unsigned long long i = blockIdx.y;
    const unsigned long long k = cg_splitmix64(cg_launch_seed(key, i));
    unsigned short* d = dst + i * n;
    for (unsigned long long j = cg_tid(); j < n; j += cg_nthreads()) {
        const float x = cg_input(k, 0, j, seq_len, head_dim);
        d[j] = BF16 ? cg_f32_to_bf16(x) : cg_f32_to_f16(x);
    }
}

extern "C" __global__ void fill_q_pool_f16(unsigned short* __restrict__ dst,
                                           unsigned long long n, unsigned long long key,
                                           int seq_len, int head_dim) {
    cg_fill_q_pool<false>(dst, n, key, seq_len, head_dim);
}
extern "C" __global__ void fill_q_pool_bf16(unsigned short* __restrict__ dst,
                                            unsigned long long n, unsigned long long key,
                                            int seq_len, int head_dim) {
    cg_fill_q_pool<true>(dst, n, key, seq_len, head_dim);
}

template <bool BF16>
__device__ __forceinline__ void cg_launch_rows(unsigned long long key,
                                               unsigned long long row_key, int heads,
                                               int seq_len, int head_dim, int nrows,
                                               int* __restrict__ rows,
                                               float* __restrict__ qrows) {
    const int t = blockIdx.x, h = blockIdx.y;
    const unsigned long long i = blockIdx.z;
    const int row = cg_launch_row(row_key, i, t, nrows, seq_len);
    if (h == 0 && threadIdx.x == 0) rows[i * nrows + t] = row;
    const unsigned long long k = cg_splitmix64(cg_launch_seed(key, i));
    const unsigned long long d = (unsigned long long)head_dim;
    const unsigned long long first = ((unsigned long long)h * seq_len + row) * d;
    float* o = qrows + ((i * heads + h) * nrows + t) * d;
    for (int c = threadIdx.x; c < head_dim; c += blockDim.x) {
        const float x = cg_input(k, 0, first + c, seq_len, head_dim);
        o[c] = BF16 ? cg_bf16_to_f32(cg_f32_to_bf16(x)) : cg_f16_to_f32(cg_f32_to_f16(x));
    }
}

extern "C" __global__ void launch_rows_f16(unsigned long long key, unsigned long long row_key,
                                           int heads, int seq_len, int head_dim, int nrows,
                                           int* __restrict__ rows, float* __restrict__ qrows) {
    cg_launch_rows<false>(key, row_key, heads, seq_len, head_dim, nrows, rows, qrows);
}
extern "C" __global__ void launch_rows_bf16(unsigned long long key, unsigned long long row_key,
                                            int heads, int seq_len, int head_dim, int nrows,
                                            int* __restrict__ rows, float* __restrict__ qrows) {
    cg_launch_rows<true>(key, row_key, heads, seq_len, head_dim, nrows, rows, qrows);
}

extern "C" __global__ void check_bytes(const unsigned long long* __restrict__ addrs,
                                       const unsigned long long* __restrict__ offsets,
                                       const unsigned char* __restrict__ image,
                                       unsigned long long* mismatches) {
    const unsigned int span = blockIdx.y;
    const volatile unsigned char* p = (const volatile unsigned char*)addrs[span];
    const unsigned long long from = offsets[span], len = offsets[span + 1] - from;
    unsigned long long bad = 0;
    for (unsigned long long i = cg_tid(); i < len; i += cg_nthreads())
        bad += p[i] != image[from + i];
    bad = cg_warp_sum_u64(bad);
    if ((threadIdx.x & 31) == 0 && bad) atomicAdd(mismatches, bad);
}

//   copy_bytes(const unsigned long long* addrs, const unsigned long long* offsets,
//              unsigned char* image)
//       blockIdx.y = span s: copies the offsets[s+1] - offsets[s] bytes at device address
//       addrs[s] to image[offsets[s] ..]: the snapshot check_bytes compares with, taken when
//       the timed module is loaded, before any of its kernels ran.
extern "C" __global__ void copy_bytes(const unsigned long long* __restrict__ addrs,
                                      const unsigned long long* __restrict__ offsets,
                                      unsigned char* __restrict__ image) {
    const unsigned int span = blockIdx.y;
    const volatile unsigned char* p = (const volatile unsigned char*)addrs[span];
    const unsigned long long from = offsets[span], len = offsets[span + 1] - from;
    for (unsigned long long i = cg_tid(); i < len; i += cg_nthreads()) image[from + i] = p[i];
}
