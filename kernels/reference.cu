// reference.cu -- plain fp32 attention, written to be obviously correct, not fast.
//
// Same ABI as the fast kernels (see kernels/README.md):
//   extern "C" __global__ void NAME(const unsigned short* q, const unsigned short* k,
//       const unsigned short* v, float* out, int seq_len, int head_dim, float scale,
//       int causal)
// One CTA of REF_THREADS threads computes ONE query row of one (batch, head):
//   pass 1: m   = max_j s_j                 with s_j = scale * dot(q, k_j)
//   pass 2: l   = sum_j exp(s_j - m)
//   pass 3: out = sum_j exp(s_j - m) * v_j / l
// Scores are recomputed in every pass (same code, same order), so there is no score
// buffer whose size depends on seq_len: any seq_len works (grid.x = seq_len <= 2^31-1).
// Pass 3 goes through a fixed shared buffer of REF_CHUNK weights. Everything is fp32,
// exp is the accurate expf, no tensor cores, no online softmax.
// Limits: 1 <= head_dim <= REF_MAX_D (256); other head_dim values return without writing.
// No include directives: fp16/bf16 arrive as raw 16-bit patterns.

#define REF_THREADS 256
#define REF_WARPS (REF_THREADS / 32)
#define REF_MAX_D 256
#define REF_CHUNK 1024

namespace cg_ref {

__device__ __forceinline__ float f16_to_f32(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ float bf16_to_f32(unsigned short h) {
    return __uint_as_float(((unsigned)h) << 16);
}

template <bool BF16>
__device__ __forceinline__ float to_f32(unsigned short h) {
    return BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

__device__ __forceinline__ float warp_sum(float x) {
    for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m);
    return x;
}
__device__ __forceinline__ float warp_max(float x) {
    for (int m = 16; m > 0; m >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, m));
    return x;
}

// scale * dot(q_row, k_j), computed by one whole warp (lanes split head_dim); every lane
// gets the same value.
template <bool BF16>
__device__ __forceinline__ float score(const float* qs, const unsigned short* krow, int d,
                                       float scale, int lane) {
    float acc = 0.f;
    for (int i = lane; i < d; i += 32) acc += qs[i] * to_f32<BF16>(krow[i]);
    return warp_sum(acc) * scale;
}

// One query row `row` of (batch, head) blockIdx.y, written to out_row[0 .. head_dim).
template <bool BF16>
__device__ void attention_ref(const unsigned short* __restrict__ q,
                              const unsigned short* __restrict__ k,
                              const unsigned short* __restrict__ v, float* __restrict__ out_row,
                              int seq_len, int head_dim, float scale, int causal, int row) {
    __shared__ float qs[REF_MAX_D];
    __shared__ float ps[REF_CHUNK];
    __shared__ float red[REF_WARPS];

    if (row < 0 || row >= seq_len || head_dim < 1 || head_dim > REF_MAX_D) return;
    const int d = head_dim;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const size_t base = (size_t)blockIdx.y * (size_t)seq_len * (size_t)d;
    const unsigned short* kb = k + base;
    const unsigned short* vb = v + base;

    for (int i = tid; i < d; i += REF_THREADS) qs[i] = to_f32<BF16>(q[base + (size_t)row * d + i]);
    __syncthreads();

    const int n_keys = causal ? row + 1 : seq_len;  // keys 0..n_keys-1 are visible

    // pass 1: row maximum
    float mx = -__int_as_float(0x7f800000);
    for (int j = warp; j < n_keys; j += REF_WARPS)
        mx = fmaxf(mx, score<BF16>(qs, kb + (size_t)j * d, d, scale, lane));
    if (lane == 0) red[warp] = mx;
    __syncthreads();
    mx = red[0];
    for (int w = 1; w < REF_WARPS; ++w) mx = fmaxf(mx, red[w]);
    __syncthreads();

    // pass 2: sum of exponentials
    float sum = 0.f;
    for (int j = warp; j < n_keys; j += REF_WARPS)
        sum += expf(score<BF16>(qs, kb + (size_t)j * d, d, scale, lane) - mx);
    if (lane == 0) red[warp] = sum;
    __syncthreads();
    sum = 0.f;
    for (int w = 0; w < REF_WARPS; ++w) sum += red[w];

    // pass 3: weighted sum of V, REF_CHUNK keys at a time; thread t owns output dim t
    // (head_dim <= REF_MAX_D == REF_THREADS, so one dim per thread is enough)
    float acc = 0.f;
    for (int j0 = 0; j0 < n_keys; j0 += REF_CHUNK) {
        const int n = min(REF_CHUNK, n_keys - j0);
        for (int jj = warp; jj < n; jj += REF_WARPS) {
            const float p = expf(score<BF16>(qs, kb + (size_t)(j0 + jj) * d, d, scale, lane) - mx);
            if (lane == 0) ps[jj] = p;
        }
        __syncthreads();
        if (tid < d)
            for (int jj = 0; jj < n; ++jj)
                acc += ps[jj] * to_f32<BF16>(vb[(size_t)(j0 + jj) * d + tid]);
        __syncthreads();
    }
    if (tid < d) out_row[tid] = acc / sum;
}

}  // namespace cg_ref

// launch contract: {rows_per_block, threads_per_block, dynamic_smem_bytes}
// (all shared memory is static: 256 + 1024 + 8 floats = 5152 bytes)
extern "C" {
__constant__ int attention_ref_f16_launch[3] = {1, REF_THREADS, 0};
__constant__ int attention_ref_bf16_launch[3] = {1, REF_THREADS, 0};
}

extern "C" __global__ void __launch_bounds__(REF_THREADS)
    attention_ref_f16(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,
                      const unsigned short* __restrict__ v, float* __restrict__ out, int seq_len,
                      int head_dim, float scale, int causal) {
    const int row = blockIdx.x;
    cg_ref::attention_ref<false>(
        q, k, v, out + ((size_t)blockIdx.y * seq_len + row) * (size_t)head_dim, seq_len,
        head_dim, scale, causal, row);
}

extern "C" __global__ void __launch_bounds__(REF_THREADS)
    attention_ref_bf16(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,
                       const unsigned short* __restrict__ v, float* __restrict__ out, int seq_len,
                       int head_dim, float scale, int causal) {
    const int row = blockIdx.x;
    cg_ref::attention_ref<true>(
        q, k, v, out + ((size_t)blockIdx.y * seq_len + row) * (size_t)head_dim, seq_len,
        head_dim, scale, causal, row);
}

// ---- The same reference for every row, tiled (what parity checks against) ----
//
//   attention_ref_full_f16 / attention_ref_full_bf16: the ABI of attention_ref_* above;
//   grid (ceil(seq_len / REF_T_ROWS), batch * heads), block REF_T_THREADS.
// Block (x, y) computes rows x*REF_T_ROWS .. +REF_T_ROWS-1 of (batch, head) y. The math is
// attention_ref's: fp32, the accurate expf, no online softmax, no tensor cores. Pass 1: the
// row maximum m over every visible key; pass 2: l = sum_j exp(s_j - m) and
// acc = sum_j exp(s_j - m) * v_j; out = acc / l. Each score is one thread's dot product in
// the order of the head dimension, computed the same way in both passes. What the tiling
// changes is only where the operands come from: REF_T_ROWS query rows and REF_T_KEYS keys
// (then values) at a time in shared memory as fp32, each row read once per key tile
// instead of once per (row, key) pair, so the whole output costs about what one row of
// attention_ref costs per key tile (parity on a 4096-long d128 shape went from ~0.2 s).
// Thread t owns row t / 8 of the block and, in a key tile, keys (t % 8) and (t % 8) + 8; in
// P.V it owns output dims 4 ((t % 8) + 8i) .. + 3 of its row. Operands are read from shared
// memory 4 floats at a time (rows zero-padded to a multiple of 4). Rows past seq_len are
// computed as row seq_len - 1 and not written. Limits: 1 <= head_dim <= REF_MAX_D.

#define REF_T_ROWS 16
#define REF_T_KEYS 16
#define REF_T_THREADS 128
#define REF_T_LANES (REF_T_THREADS / REF_T_ROWS)   // 8 threads per row, 2 keys each
#define REF_T_PAD (REF_MAX_D + 4)                  // a row of fp32 in shared memory, padded

namespace cg_ref {

__device__ __forceinline__ float4 ld4(const float* p) {
    return *reinterpret_cast<const float4*>(p);
}

// Loads `n` rows (from row `first`; rows past `limit` are zeros) of a [seq_len, d] slice
// into dst as fp32, each padded with zeros from d up to d4 (d rounded up to 4), so that a
// dot product over d4 is the one over d (the padding adds 0 * 0).
template <bool BF16>
__device__ __forceinline__ void load_rows(float (*dst)[REF_T_PAD], const unsigned short* src,
                                          int first, int n, int limit, int d, int d4) {
    for (int x = threadIdx.x; x < n * d4; x += REF_T_THREADS) {
        const int r = x / d4, c = x % d4, row = first + r;
        dst[r][c] = (row < limit && c < d) ? to_f32<BF16>(src[(size_t)row * d + c]) : 0.f;
    }
}

// scale * dot(q, k0) and scale * dot(q, k1) over d4 (a multiple of 4), each summed in the
// order of the head dimension.
__device__ __forceinline__ float2 scores2(const float* q, const float* k0, const float* k1,
                                          int d4, float scale) {
    float s0 = 0.f, s1 = 0.f;
    for (int c = 0; c < d4; c += 4) {
        const float4 x = ld4(q + c), y0 = ld4(k0 + c), y1 = ld4(k1 + c);
        s0 += x.x * y0.x; s0 += x.y * y0.y; s0 += x.z * y0.z; s0 += x.w * y0.w;
        s1 += x.x * y1.x; s1 += x.y * y1.y; s1 += x.z * y1.z; s1 += x.w * y1.w;
    }
    return make_float2(s0 * scale, s1 * scale);
}

template <bool BF16>
__device__ void attention_ref_tiled(const unsigned short* __restrict__ q,
                                    const unsigned short* __restrict__ k,
                                    const unsigned short* __restrict__ v,
                                    float* __restrict__ out, int seq_len, int head_dim,
                                    float scale, int causal) {
    __shared__ __align__(16) float qs[REF_T_ROWS][REF_T_PAD];
    __shared__ __align__(16) float ks[REF_T_KEYS][REF_T_PAD];  // keys, then values
    __shared__ float ps[REF_T_ROWS][REF_T_KEYS];
    if (head_dim < 1 || head_dim > REF_MAX_D || seq_len < 1) return;
    const int d = head_dim, d4 = (head_dim + 3) & ~3, tid = threadIdx.x;
    const int r = tid / REF_T_LANES, lane = tid % REF_T_LANES;
    const int first = blockIdx.x * REF_T_ROWS;
    if (first >= seq_len) return;
    const int row = min(first + r, seq_len - 1);  // rows past the end: computed, not written
    const int last = min(first + REF_T_ROWS, seq_len) - 1;
    const size_t base = (size_t)blockIdx.y * (size_t)seq_len * (size_t)d;
    const int n_keys = causal ? last + 1 : seq_len;  // keys any row of the block sees
    const int visible = causal ? row + 1 : seq_len;  // keys this thread's row sees
    const int k0 = lane, k1 = lane + REF_T_LANES;    // this thread's keys in a tile

    for (int x = tid; x < REF_T_ROWS * d4; x += REF_T_THREADS) {
        const int rr = min(first + x / d4, seq_len - 1), c = x % d4;
        qs[x / d4][c] = c < d ? to_f32<BF16>(q[base + (size_t)rr * d + c]) : 0.f;
    }

    // pass 1: row maximum (key 0 is visible to every row, so it is finite)
    float mx = -__int_as_float(0x7f800000);
    for (int j0 = 0; j0 < n_keys; j0 += REF_T_KEYS) {
        __syncthreads();
        load_rows<BF16>(ks, k + base, j0, REF_T_KEYS, seq_len, d, d4);
        __syncthreads();
        const float2 s = scores2(qs[r], ks[k0], ks[k1], d4, scale);
        if (j0 + k0 < visible) mx = fmaxf(mx, s.x);
        if (j0 + k1 < visible) mx = fmaxf(mx, s.y);
    }
    // the row's 8 threads are 8 consecutive lanes of one warp
    for (int m = REF_T_LANES / 2; m > 0; m >>= 1)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, m));

    // pass 2: sum of exponentials and the weighted sum of V; thread owns the 4-wide columns
    // 4 * (lane + 8 i) .. + 3 of its row
    float sum = 0.f;
    float4 acc[REF_MAX_D / (4 * REF_T_LANES)];
    for (int i = 0; i < REF_MAX_D / (4 * REF_T_LANES); ++i) acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int j0 = 0; j0 < n_keys; j0 += REF_T_KEYS) {
        __syncthreads();
        load_rows<BF16>(ks, k + base, j0, REF_T_KEYS, seq_len, d, d4);
        __syncthreads();
        const float2 s = scores2(qs[r], ks[k0], ks[k1], d4, scale);
        ps[r][k0] = j0 + k0 < visible ? expf(s.x - mx) : 0.f;
        ps[r][k1] = j0 + k1 < visible ? expf(s.y - mx) : 0.f;
        __syncthreads();
        load_rows<BF16>(ks, v + base, j0, REF_T_KEYS, seq_len, d, d4);
        __syncthreads();
        const int keys = min(REF_T_KEYS, n_keys - j0);
        for (int kk = 0; kk < keys; ++kk) {
            const float p = ps[r][kk];
            sum += p;
            for (int i = 0; i < REF_MAX_D / (4 * REF_T_LANES); ++i) {
                const int c = 4 * (lane + i * REF_T_LANES);
                if (c < d4) {
                    const float4 x = ld4(&ks[kk][c]);
                    acc[i].x += p * x.x; acc[i].y += p * x.y;
                    acc[i].z += p * x.z; acc[i].w += p * x.w;
                }
            }
        }
    }
    if (first + r < seq_len) {
        float* o = out + base + (size_t)(first + r) * d;
        for (int i = 0; i < REF_MAX_D / (4 * REF_T_LANES); ++i) {
            const int c = 4 * (lane + i * REF_T_LANES);
            const float a[4] = {acc[i].x, acc[i].y, acc[i].z, acc[i].w};
            for (int e = 0; e < 4; ++e)
                if (c + e < d) o[c + e] = a[e] / sum;
        }
    }
}

}  // namespace cg_ref

// launch contract (all shared memory static: (16 + 16) x 260 + 16 x 16 floats = 34,304 bytes)
extern "C" {
__constant__ int attention_ref_full_f16_launch[3] = {REF_T_ROWS, REF_T_THREADS, 0};
__constant__ int attention_ref_full_bf16_launch[3] = {REF_T_ROWS, REF_T_THREADS, 0};
}

extern "C" __global__ void __launch_bounds__(REF_T_THREADS)
    attention_ref_full_f16(const unsigned short* __restrict__ q,
                           const unsigned short* __restrict__ k,
                           const unsigned short* __restrict__ v, float* __restrict__ out,
                           int seq_len, int head_dim, float scale, int causal) {
    cg_ref::attention_ref_tiled<false>(q, k, v, out, seq_len, head_dim, scale, causal);
}

extern "C" __global__ void __launch_bounds__(REF_T_THREADS)
    attention_ref_full_bf16(const unsigned short* __restrict__ q,
                            const unsigned short* __restrict__ k,
                            const unsigned short* __restrict__ v, float* __restrict__ out,
                            int seq_len, int head_dim, float scale, int causal) {
    cg_ref::attention_ref_tiled<true>(q, k, v, out, seq_len, head_dim, scale, causal);
}

// ---- The reference of every timed launch (each launch its own q and scale) ----
//
//   attention_ref_launches_f16 / attention_ref_launches_bf16(const float* qrows,
//       const unsigned short* k, const unsigned short* v, const float* scales,
//       const int* rows, int nrows, int heads, int seq_len, int head_dim, int causal,
//       int sets, float* out)
//   grid (heads = batch * heads, launches), block REF_L_THREADS. Block (h, i) computes the
//   rows rows[i*nrows + t] (t < nrows <= REF_L_MAX_ROWS; each < seq_len) of (batch, head) h
//   of launch i: its query rows qrows[((i*heads + h)*nrows + t)*head_dim ..] (fp32, already
//   rounded to the dtype: launch_rows_* in util.cu makes them), its scale scales[i], and
//   the key/value set i % sets (k and v hold `sets` sets back to back, each
//   heads*seq_len*head_dim elements); it writes out[((i*heads + h)*nrows + t)*head_dim + c],
//   compact [launches, heads, nrows, head_dim]. fp32 throughout, the accurate expf, each
//   score computed once: keys in chunks of REF_L_THREADS (one key per thread), softmax
//   online across chunks (running max and sum per row, the accumulated output rescaled
//   when the max grows). Causal: row r sees keys 0 ..= r. head_dim 1 .. REF_MAX_D.

// 512 threads: a sample's launches of a long shape are few (2 of b2h16s4096d128 in 1 ms), so
// the grid is small (64 CTAs there) and each CTA's walk over the keys is the check's time;
// 512 keys a chunk makes that walk 4 times shorter than 128 did (1.4 ms of GPU time a sample
// there, more than the timed launches, on an H200: docs/PERF.md 2026-12-02).
#define REF_L_THREADS 512
#define REF_L_MAX_ROWS 8
#define REF_L_ACC (REF_L_MAX_ROWS * REF_MAX_D / REF_L_THREADS)

namespace cg_ref {

template <bool BF16>
__device__ void attention_ref_launch(const float* __restrict__ qrows,
                                     const unsigned short* __restrict__ k,
                                     const unsigned short* __restrict__ v,
                                     const float* __restrict__ scales,
                                     const int* __restrict__ rows, int nrows, int heads,
                                     int seq_len, int head_dim, int causal, int sets,
                                     float* __restrict__ out) {
    __shared__ float qs[REF_L_MAX_ROWS][REF_MAX_D];
    __shared__ float ps[REF_L_MAX_ROWS][REF_L_THREADS];
    __shared__ float row_max[REF_L_MAX_ROWS], row_sum[REF_L_MAX_ROWS],
        row_alpha[REF_L_MAX_ROWS];
    __shared__ int row_of[REF_L_MAX_ROWS];
    if (nrows < 1 || nrows > REF_L_MAX_ROWS || head_dim < 1 || head_dim > REF_MAX_D ||
        sets < 1 || seq_len < 1)
        return;
    const int d = head_dim, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const unsigned long long h = blockIdx.x, i = blockIdx.y;
    const unsigned long long n = (unsigned long long)heads * seq_len * d;
    const unsigned long long slice = (i % (unsigned long long)sets) * n + h * seq_len * d;
    const unsigned short* kb = k + slice;
    const unsigned short* vb = v + slice;
    const float scale = scales[i];
    const float* q = qrows + (i * heads + h) * nrows * d;

    for (int x = tid; x < nrows * d; x += REF_L_THREADS) qs[x / d][x % d] = q[x];
    if (tid < nrows) {
        row_of[tid] = min(max(rows[i * nrows + tid], 0), seq_len - 1);
        row_max[tid] = -__int_as_float(0x7f800000);
        row_sum[tid] = 0.f;
    }
    __syncthreads();
    // Keys any row sees: 0 .. n_keys-1.
    int n_keys = seq_len;
    if (causal) {
        n_keys = 0;
        for (int t = 0; t < nrows; ++t) n_keys = max(n_keys, row_of[t] + 1);
    }
    float acc[REF_L_ACC];
    for (int a = 0; a < REF_L_ACC; ++a) acc[a] = 0.f;

    for (int j0 = 0; j0 < n_keys; j0 += REF_L_THREADS) {
        // Scores: thread tid takes key j0 + tid, for every row at once (each element of the
        // key read once: 8 at a time where the row is 16-byte aligned), each row's dot product
        // summed in the order of the head dimension.
        const int j = j0 + tid;
        float dots[REF_L_MAX_ROWS];
        for (int t = 0; t < REF_L_MAX_ROWS; ++t) dots[t] = 0.f;
        if (j < n_keys) {
            const unsigned short* krow = kb + (size_t)j * d;
            if ((d & 7) == 0 && (((size_t)krow) & 15) == 0) {
                for (int c0 = 0; c0 < d; c0 += 8) {
                    const uint4 w = *reinterpret_cast<const uint4*>(krow + c0);
                    const unsigned int words[4] = {w.x, w.y, w.z, w.w};
                    for (int e = 0; e < 8; ++e) {
                        const float kv = to_f32<BF16>(
                            (unsigned short)(words[e >> 1] >> ((e & 1) * 16)));
                        for (int t = 0; t < REF_L_MAX_ROWS; ++t)
                            if (t < nrows) dots[t] += qs[t][c0 + e] * kv;
                    }
                }
            } else {
                for (int c = 0; c < d; ++c) {
                    const float kv = to_f32<BF16>(krow[c]);
                    for (int t = 0; t < REF_L_MAX_ROWS; ++t)
                        if (t < nrows) dots[t] += qs[t][c] * kv;
                }
            }
        }
        for (int t = 0; t < nrows; ++t) {
            float s = -__int_as_float(0x7f800000);
            if (j < n_keys && (!causal || j <= row_of[t])) s = dots[t] * scale;
            ps[t][tid] = s;
        }
        __syncthreads();
        // Online softmax: warp w takes rows w, w + 4, ...; key 0 is in the first chunk and
        // every row sees it, so a row's max is finite from the first chunk on.
        for (int t = warp; t < nrows; t += REF_L_THREADS / 32) {
            float m = -__int_as_float(0x7f800000);
            for (int x = lane; x < REF_L_THREADS; x += 32) m = fmaxf(m, ps[t][x]);
            m = warp_max(m);
            const float m_old = row_max[t];
            const float m_new = fmaxf(m_old, m);
            float sum = 0.f;
            for (int x = lane; x < REF_L_THREADS; x += 32) {
                const float p = expf(ps[t][x] - m_new);  // exp(-inf) = 0 for masked keys
                ps[t][x] = p;
                sum += p;
            }
            sum = warp_sum(sum);
            if (lane == 0) {
                const float alpha = expf(m_old - m_new);  // 0 on the first chunk
                row_alpha[t] = alpha;
                row_sum[t] = row_sum[t] * alpha + sum;
                row_max[t] = m_new;
            }
        }
        __syncthreads();
        // P.V: thread tid owns outputs (t, c) = tid, tid + REF_L_THREADS, ... of nrows x d.
        const int keys = min(REF_L_THREADS, n_keys - j0);
        for (int a = 0; a < REF_L_ACC; ++a) {
            const int x = tid + a * REF_L_THREADS;
            if (x >= nrows * d) break;
            const int t = x / d, c = x % d;
            float o = acc[a] * row_alpha[t];
            for (int jj = 0; jj < keys; ++jj)
                o += ps[t][jj] * to_f32<BF16>(vb[(size_t)(j0 + jj) * d + c]);
            acc[a] = o;
        }
        __syncthreads();
    }
    float* o = out + (i * heads + h) * nrows * d;
    for (int a = 0; a < REF_L_ACC; ++a) {
        const int x = tid + a * REF_L_THREADS;
        if (x >= nrows * d) break;
        o[x] = acc[a] / row_sum[x / d];
    }
}

}  // namespace cg_ref

extern "C" {
__constant__ int attention_ref_launches_f16_launch[3] = {1, REF_L_THREADS, 0};
__constant__ int attention_ref_launches_bf16_launch[3] = {1, REF_L_THREADS, 0};
}

extern "C" __global__ void __launch_bounds__(REF_L_THREADS)
    attention_ref_launches_f16(const float* __restrict__ qrows,
                               const unsigned short* __restrict__ k,
                               const unsigned short* __restrict__ v,
                               const float* __restrict__ scales, const int* __restrict__ rows,
                               int nrows, int heads, int seq_len, int head_dim, int causal,
                               int sets, float* __restrict__ out) {
    cg_ref::attention_ref_launch<false>(qrows, k, v, scales, rows, nrows, heads, seq_len,
                                        head_dim, causal, sets, out);
}

extern "C" __global__ void __launch_bounds__(REF_L_THREADS)
    attention_ref_launches_bf16(const float* __restrict__ qrows,
                                const unsigned short* __restrict__ k,
                                const unsigned short* __restrict__ v,
                                const float* __restrict__ scales, const int* __restrict__ rows,
                                int nrows, int heads, int seq_len, int head_dim, int causal,
                                int sets, float* __restrict__ out) {
    cg_ref::attention_ref_launch<true>(qrows, k, v, scales, rows, nrows, heads, seq_len,
                                       head_dim, causal, sets, out);
}
