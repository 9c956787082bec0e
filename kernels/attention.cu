// attention.cu -- FlashAttention-2-style forward kernel under the ci-gate perf gate.
//
// Compiled at run time by NVRTC for the GPU's own architecture (sm_80 and newer; checked
// for sm_89 and sm_90). No include directives at all: fp16/bf16 are raw `unsigned short`
// bit patterns and every conversion / matrix instruction is inline PTX (mma.sync m16n8k16,
// ldmatrix, cp.async). No wgmma/TMA, so the same source runs on Ampere, Ada and Hopper.
//
// ABI (see kernels/README.md):
//   extern "C" __global__ void NAME(const unsigned short* q, const unsigned short* k,
//       const unsigned short* v, float* out, int seq_len, int head_dim, float scale,
//       int causal)
//   layout [batch, heads, seq_len, head_dim] contiguous, output fp32 in the same layout,
//   blockIdx.y = batch*heads + head, blockIdx.x = tile of BM query rows,
//   NAME_launch[3] = {rows_per_block, threads_per_block, dynamic_smem_bytes}.
//
// Design (docs/KERNEL_NOTES.md has the long version):
//   * one CTA = BM query rows of one (batch, head); NW warps, each warp owns 16*MI
//     consecutive query rows (shipped: 4 warps x 32 rows), so each K/V fragment read from
//     shared memory feeds MI mma's;
//   * Q tile: cp.async -> smem (swizzled) -> ldmatrix once -> registers (d64), or kept in
//     smem and re-read per tile (d128, where registers hold the 32x128 fp32 O accumulators);
//   * K/V tiles of BN keys: cp.async into a 2-stage (double-buffered) smem ring, the
//     load of tile j+1 overlaps the math on tile j (a 3-stage ring is a tested option);
//   * S = Q K^T and O += P V with mma.sync.m16n8k16 (fp16 or bf16 in, fp32 accumulate);
//     P is re-packed from the S accumulators straight into A fragments (no smem round trip);
//   * online softmax in fp32 with exp2 and log2(e)*scale folded into one FFMA;
//   * tails: out-of-range K/V/Q rows are zero-filled by cp.async (src-size 0), out-of-range
//     keys are masked to -inf, out-of-range query rows are never stored;
//   * causal (top-left aligned, query i sees keys 0..=i): key tiles past the CTA's last row
//     are never loaded, tiles past a warp's last row are skipped by that warp, only tiles
//     crossing the diagonal are masked element-wise; CTAs are walked heaviest-first.

#define CG_DEV __device__ __forceinline__

namespace cg_attn {

// ---------------------------------------------------------------- PTX helpers

CG_DEV unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}

// 16-byte global->shared async copy; src_bytes = 0 zero-fills the 16 destination bytes.
CG_DEV void cp_async16(unsigned dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}
CG_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
CG_DEV void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

CG_DEV void ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}
CG_DEV void ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr)
                 : "memory");
}

CG_DEV float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

CG_DEV float shfl_xor(float v, int m) {
    return __shfl_xor_sync(0xffffffffu, v, m);
}

// dtype-specific pieces: the mma instruction and the fp32x2 -> 16-bit x2 pack.
template <bool BF16>
struct Dt;

template <>
struct Dt<false> {  // IEEE fp16
    static CG_DEV void mma(float* c, const unsigned* a, unsigned b0, unsigned b1) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
            "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    // low 16 bits <- lo, high 16 bits <- hi (cvt puts its first source in the high half)
    static CG_DEV unsigned pack(float lo, float hi) {
        unsigned r;
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
        return r;
    }
};

template <>
struct Dt<true> {  // bfloat16
    static CG_DEV void mma(float* c, const unsigned* a, unsigned b0, unsigned b1) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
            "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    static CG_DEV unsigned pack(float lo, float hi) {
        unsigned r;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
        return r;
    }
};

// ---------------------------------------------------------------- tile geometry

// Shared memory: a ring of ST stages, each [K tile (BN x D) | V tile (BN x D)], 16-bit
// elements, rows of D*2 bytes. Within a row the 16-byte chunk c of row r is stored at chunk
// c ^ (r & 7): the 8 row addresses of every ldmatrix phase then hit 8 distinct 16-byte
// bank groups (conflict-free), and cp.async writes stay 16-byte aligned.
// Q (BM x D, same swizzle):
//   QREG  : staged once, read into registers with ldmatrix, then its space is K/V space:
//           it sits in the last stage when it fits (BM <= 2*BN), else at offset 0 and the
//           first K/V tiles are only requested after the Q fragments are in registers;
//   !QREG : kept in its own region after the stages and re-read (ldmatrix) per tile.
template <int D, int BM, int BN, bool QREG, int ST>
struct Geo {
    static constexpr int ROWB = D * 2;
    static constexpr int KV_TILE_B = BN * ROWB;
    static constexpr int STAGE_B = 2 * KV_TILE_B;
    static constexpr int Q_B = BM * ROWB;
    static constexpr bool Q_IN_STAGE = QREG && Q_B <= STAGE_B;
    static constexpr int Q_OFF = QREG ? (Q_IN_STAGE ? (ST - 1) * STAGE_B : 0) : ST * STAGE_B;
    static constexpr int SMEM_B =
        QREG ? ((ST * STAGE_B > Q_B) ? ST * STAGE_B : Q_B) : ST * STAGE_B + Q_B;
};

// Issue cp.async for ROWS rows (starting at global row r0) of a [seq_len, D] matrix into a
// swizzled smem tile. Thread t copies chunk (t % CPR) of rows t / CPR + i * (NT / CPR):
// all its rows share row & 7, so the smem offsets differ by immediates. Rows >= seq_len
// are zero-filled (src-size 0, source = row 0, which exists because seq_len >= 1).
template <int ROWS, int D, int NT>
CG_DEV void load_tile(unsigned sdst, const unsigned short* __restrict__ g, int r0, int seq_len,
                      int tid) {
    constexpr int CPR = D / 8;       // 16-byte chunks per row
    constexpr int RSTEP = NT / CPR;  // rows covered by one pass of the CTA
    static_assert(NT % CPR == 0 && ROWS % RSTEP == 0 && RSTEP % 8 == 0, "loader shape");
    const int row = tid / CPR;
    const int ch = tid % CPR;
    const unsigned s_off = row * (D * 2) + ((ch ^ (row & 7)) << 4);
    const int g_off = (r0 + row) * D + ch * 8;  // element offset in the (batch, head) slice
#pragma unroll
    for (int i = 0; i < ROWS / RSTEP; ++i) {
        const bool ok = r0 + row + i * RSTEP < seq_len;
        cp_async16(sdst + s_off + i * RSTEP * (D * 2), g + (ok ? g_off + i * RSTEP * D : 0),
                   ok ? 16 : 0);
    }
}

// ---------------------------------------------------------------- the kernel body

// D: head_dim; BM: query rows per CTA; BN: keys per K/V tile; NW: warps; MI: 16-row
// blocks per warp (a warp owns rows [16*MI*warp, 16*MI*(warp+1)) of the tile, and every
// K/V fragment it reads from smem feeds MI mma's); QREG: Q fragments live in registers;
// ST: K/V pipeline stages (2: prefetch 1 tile ahead, 2 barriers per tile; 3: prefetch 2
// tiles ahead, 1 barrier per tile).
template <int D, int BM, int BN, int NW, int MI, bool QREG, int ST, bool BF16>
CG_DEV void attn_fwd(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,
                     const unsigned short* __restrict__ v, float* __restrict__ out, int seq_len,
                     int head_dim, float scale, int causal_i) {
    typedef Geo<D, BM, BN, QREG, ST> G;
    static_assert(ST == 2 || ST == 3, "pipeline depth");
    constexpr int NT = NW * 32;
    constexpr int ROWB = G::ROWB;
    constexpr int KD = D / 16;   // k-steps of S = Q K^T
    constexpr int NB = BN / 8;   // n-blocks (8 keys) of S
    constexpr int KB = BN / 16;  // k-steps of O += P V
    constexpr int DB = D / 8;    // n-blocks (8 dims) of O
    constexpr int WR = 16 * MI;  // query rows per warp
    static_assert(BM == WR * NW, "warps tile the query rows");
    static_assert(D % 64 == 0 && BN % 16 == 0, "tile shape");
    constexpr int QR = QREG ? MI : 1;  // register Q fragments kept (1 = dummy)
    constexpr int QK = QREG ? KD : 1;

    if (head_dim != D || seq_len <= 0) return;  // the Rust side guarantees head_dim == D

    extern __shared__ __align__(128) unsigned char smem[];

    const int tid = threadIdx.x;
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const bool causal = causal_i != 0;

    // Heaviest tiles first (matters for causal): blockIdx.x 0 takes the last query tile.
    const int n_qtiles = (seq_len + BM - 1) / BM;
    const int qtile = n_qtiles - 1 - (int)blockIdx.x;
    if (qtile < 0) return;
    const int m0 = qtile * BM;

    const size_t bh = (size_t)blockIdx.y * (size_t)seq_len * D;
    const unsigned short* __restrict__ qg = q + bh;
    const unsigned short* __restrict__ kg = k + bh;
    const unsigned short* __restrict__ vg = v + bh;

    const unsigned st0 = smem_u32(smem);
    const unsigned qs = st0 + G::Q_OFF;

    // Keys this CTA needs: all of them, or (causal) up to its last query row.
    const int kv_end = causal ? min(seq_len, m0 + BM) : seq_len;
    const int n_tiles = (kv_end + BN - 1) / BN;

    // Per-lane ldmatrix offsets inside a tile. Every row a lane addresses has
    // row & 7 == lane & 7 and chunk = 2*step + bit, so the swizzled offset of
    // (row, chunk) is (row*ROWB + ((bit ^ (lane&7)) << 4)) ^ (step << 5): one XOR per
    // step; whole 16-row blocks are added as immediates.
    //   Q (A operand, row-major):       lanes 0-15 rows 0-15 chunk 2kk, 16-31 chunk 2kk+1
    //   K (B operand of S, non-trans):  lanes 0-7 keys 0-7 chunk 2kk, 8-15 keys 0-7 chunk
    //                                   2kk+1, 16-23 keys 8-15 chunk 2kk, 24-31 keys 8-15 2kk+1
    //   V (B operand of O, transposed): lanes 0-15 keys 0-15 chunk 2dp, 16-31 chunk 2dp+1
    const unsigned q_off =
        (warp * WR + (lane & 15)) * ROWB + (((lane >> 4) ^ (lane & 7)) << 4);
    const unsigned k_off = ((lane & 7) + ((lane >> 4) << 3)) * ROWB +
                           ((((lane >> 3) & 1) ^ (lane & 7)) << 4);
    const unsigned v_off = (lane & 15) * ROWB + (((lane >> 4) ^ (lane & 7)) << 4);

    // ---- prologue: Q tile (+ the first ST-1 K/V tiles) in flight. One commit group per
    // K/V tile (possibly empty), so "tile j landed" is always cp.async.wait_group 1 below.
    unsigned qf[QR][QK][4];
    load_tile<BM, D, NT>(qs, qg, m0, seq_len, tid);
    cp_async_commit();
    const bool kv_now = !QREG || G::Q_IN_STAGE;
    if (kv_now) {
#pragma unroll
        for (int t = 0; t < ST - 1; ++t) {
            if (t < n_tiles) {
                load_tile<BN, D, NT>(st0 + t * G::STAGE_B, kg, t * BN, seq_len, tid);
                load_tile<BN, D, NT>(st0 + t * G::STAGE_B + G::KV_TILE_B, vg, t * BN, seq_len, tid);
            }
            cp_async_commit();
        }
    }
    if (QREG) {
        if (kv_now) cp_async_wait<ST - 1>(); else cp_async_wait<0>();  // Q landed
        __syncthreads();
#pragma unroll
        for (int mi = 0; mi < QR; ++mi)
#pragma unroll
            for (int kk = 0; kk < QK; ++kk)
                ldsm_x4(qs + ((q_off + mi * 16 * ROWB) ^ (kk << 5)), qf[mi][kk][0],
                        qf[mi][kk][1], qf[mi][kk][2], qf[mi][kk][3]);
        __syncthreads();  // the Q staging area is K/V space from here on
        if (!kv_now) {
#pragma unroll
            for (int t = 0; t < ST - 1; ++t) {
                if (t < n_tiles) {
                    load_tile<BN, D, NT>(st0 + t * G::STAGE_B, kg, t * BN, seq_len, tid);
                    load_tile<BN, D, NT>(st0 + t * G::STAGE_B + G::KV_TILE_B, vg, t * BN, seq_len, tid);
                }
                cp_async_commit();
            }
        }
    }

    float o[MI][DB][4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int i = 0; i < DB; ++i) o[mi][i][0] = o[mi][i][1] = o[mi][i][2] = o[mi][i][3] = 0.f;

    // Row statistics per 16-row block: [0] = row g (lane>>2), [1] = row g+8.
    // m: raw-score maxima (identical in the 4 lanes of a quad); l: per-lane partial sums,
    // reduced across the quad only at the end.
    const float NEG_INF = -__int_as_float(0x7f800000);
    float m_r[MI][2], l_r[MI][2];
    // Visibility: row r sees keys 0..lim(r), lim = seq_len-1, or min(r, seq_len-1) if causal.
    int lim[MI][2];
    const int warp_first = m0 + warp * WR;  // first query row of this warp
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            m_r[mi][h] = NEG_INF;
            l_r[mi][h] = 0.f;
            const int row = warp_first + mi * 16 + h * 8 + (lane >> 2);
            lim[mi][h] = causal ? min(row, seq_len - 1) : seq_len - 1;
        }
    // The warp has work in a tile starting at key n0 iff n0 < warp_kv_end (0 when all its
    // rows are past the end); it needs element masks iff the tile's last key > warp_lim_min.
    const int warp_kv_end =
        warp_first >= seq_len ? 0 : (causal ? min(seq_len, warp_first + WR) : seq_len);
    const int warp_lim_min = causal ? min(warp_first, seq_len - 1) : seq_len - 1;
    const float sl2 = scale * 1.4426950408889634f;  // scale * log2(e)

    int slot = 0;  // stage of tile j
    for (int j = 0; j < n_tiles; ++j) {
        const unsigned cur = st0 + slot * G::STAGE_B;
        // stage of tile j + ST - 1 == stage of tile j - 1 (ring of ST)
        const unsigned nxt = st0 + (slot == 0 ? ST - 1 : slot - 1) * G::STAGE_B;
        slot = (slot == ST - 1) ? 0 : slot + 1;
        if (ST == 2) {
            // 2 stages: the prefetch goes into the stage everyone finished with at the
            // barrier that closed the previous iteration.
            if (j + 1 < n_tiles) {
                load_tile<BN, D, NT>(nxt, kg, (j + 1) * BN, seq_len, tid);
                load_tile<BN, D, NT>(nxt + G::KV_TILE_B, vg, (j + 1) * BN, seq_len, tid);
            }
            cp_async_commit();  // (possibly empty) group for tile j+1
        }
        cp_async_wait<1>();  // tile j (and Q) landed for this thread's copies ...
        __syncthreads();     // ... and for everyone's; also: every warp is done with tile j-1
        if (ST == 3) {
            // 3 stages: tile j+2 goes into tile j-1's stage, free since the barrier above.
            if (j + 2 < n_tiles) {
                load_tile<BN, D, NT>(nxt, kg, (j + 2) * BN, seq_len, tid);
                load_tile<BN, D, NT>(nxt + G::KV_TILE_B, vg, (j + 2) * BN, seq_len, tid);
            }
            cp_async_commit();  // (possibly empty) group for tile j+2
        }

        const int n0 = j * BN;
        if (n0 < warp_kv_end) {
            // ---- S = Q K^T  (WR x BN per warp, fp32)
            float s[MI][NB][4];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int i = 0; i < NB; ++i) s[mi][i][0] = s[mi][i][1] = s[mi][i][2] = s[mi][i][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < KD; ++kk) {
                unsigned qa[MI][4];
#pragma unroll
                for (int mi = 0; mi < MI; ++mi) {
                    if (QREG) {
#pragma unroll
                        for (int x = 0; x < 4; ++x) qa[mi][x] = qf[QREG ? mi : 0][QREG ? kk : 0][x];
                    } else {
                        ldsm_x4(qs + ((q_off + mi * 16 * ROWB) ^ (kk << 5)), qa[mi][0], qa[mi][1],
                                qa[mi][2], qa[mi][3]);
                    }
                }
                const unsigned kbase = cur + (k_off ^ (kk << 5));
#pragma unroll
                for (int np = 0; np < NB / 2; ++np) {
                    unsigned b0, b1, b2, b3;
                    ldsm_x4(kbase + np * 16 * ROWB, b0, b1, b2, b3);
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi) {
                        Dt<BF16>::mma(s[mi][2 * np], qa[mi], b0, b1);
                        Dt<BF16>::mma(s[mi][2 * np + 1], qa[mi], b2, b3);
                    }
                }
            }

            // ---- masking (only tiles that cross the diagonal or the end of the sequence)
            if (n0 + BN - 1 > warp_lim_min) {
                const int key0 = n0 + 2 * (lane & 3);
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                        for (int e = 0; e < 4; ++e)
                            if (key0 + nb * 8 + (e & 1) > lim[mi][e >> 1]) s[mi][nb][e] = NEG_INF;
            }

            // ---- online softmax (fp32), then P -> A fragments of the input dtype
            unsigned pf[MI][KB][4];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    float mx = m_r[mi][h];
#pragma unroll
                    for (int nb = 0; nb < NB; ++nb)
                        mx = fmaxf(mx, fmaxf(s[mi][nb][2 * h], s[mi][nb][2 * h + 1]));
                    mx = fmaxf(mx, shfl_xor(mx, 1));
                    mx = fmaxf(mx, shfl_xor(mx, 2));
                    // exp2 base; a row with no visible key so far keeps base 0 (p = 0, no NaN)
                    const float base = (mx == NEG_INF) ? 0.f : mx * sl2;
                    const float alpha = ex2(fmaf(m_r[mi][h], sl2, -base));  // old-state rescale
                    m_r[mi][h] = mx;
                    float rs = 0.f;
#pragma unroll
                    for (int nb = 0; nb < NB; ++nb) {
                        s[mi][nb][2 * h] = ex2(fmaf(s[mi][nb][2 * h], sl2, -base));
                        s[mi][nb][2 * h + 1] = ex2(fmaf(s[mi][nb][2 * h + 1], sl2, -base));
                        rs += s[mi][nb][2 * h] + s[mi][nb][2 * h + 1];
                    }
                    l_r[mi][h] = fmaf(l_r[mi][h], alpha, rs);
#pragma unroll
                    for (int db = 0; db < DB; ++db) {
                        o[mi][db][2 * h] *= alpha;
                        o[mi][db][2 * h + 1] *= alpha;
                    }
                }
#pragma unroll
                for (int kb = 0; kb < KB; ++kb) {
                    pf[mi][kb][0] = Dt<BF16>::pack(s[mi][2 * kb][0], s[mi][2 * kb][1]);
                    pf[mi][kb][1] = Dt<BF16>::pack(s[mi][2 * kb][2], s[mi][2 * kb][3]);
                    pf[mi][kb][2] = Dt<BF16>::pack(s[mi][2 * kb + 1][0], s[mi][2 * kb + 1][1]);
                    pf[mi][kb][3] = Dt<BF16>::pack(s[mi][2 * kb + 1][2], s[mi][2 * kb + 1][3]);
                }
            }

            // ---- O += P V
#pragma unroll
            for (int dp = 0; dp < DB / 2; ++dp) {
                const unsigned vbase = cur + G::KV_TILE_B + (v_off ^ (dp << 5));
#pragma unroll
                for (int kb = 0; kb < KB; ++kb) {
                    unsigned b0, b1, b2, b3;
                    ldsm_x4_t(vbase + kb * 16 * ROWB, b0, b1, b2, b3);
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi) {
                        Dt<BF16>::mma(o[mi][2 * dp], pf[mi][kb], b0, b1);
                        Dt<BF16>::mma(o[mi][2 * dp + 1], pf[mi][kb], b2, b3);
                    }
                }
            }
        }
        if (ST == 2) __syncthreads();  // stage `cur` is refilled by the next prefetch
    }

    // ---- epilogue: normalise and store fp32 (rows >= seq_len are never written)
    float* __restrict__ og = out + bh;
    const int col = 2 * (lane & 3);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float l = l_r[mi][h];
            l += shfl_xor(l, 1);
            l += shfl_xor(l, 2);
            const float inv = l > 0.f ? 1.f / l : 0.f;
            const int row = warp_first + mi * 16 + h * 8 + (lane >> 2);
            if (row < seq_len) {
                float* p = og + (size_t)row * D + col;
#pragma unroll
                for (int db = 0; db < DB; ++db)
                    *reinterpret_cast<float2*>(p + db * 8) =
                        make_float2(o[mi][db][2 * h] * inv, o[mi][db][2 * h + 1] * inv);
            }
        }
}

}  // namespace cg_attn

// ---------------------------------------------------------------- extern "C" entry points

#define CG_ATTN_KERNEL(NAME, D, BM, BN, NW, MI, QREG, ST, BF16, MINB)                          \
    extern "C" {                                                                              \
    __constant__ int NAME##_launch[3] = {BM, NW * 32,                                         \
                                         cg_attn::Geo<D, BM, BN, QREG, ST>::SMEM_B};           \
    }                                                                                         \
    extern "C" __global__ void __launch_bounds__(NW * 32, MINB)                               \
        NAME(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,       \
             const unsigned short* __restrict__ v, float* __restrict__ out, int seq_len,       \
             int head_dim, float scale, int causal) {                                         \
        cg_attn::attn_fwd<D, BM, BN, NW, MI, QREG, ST, BF16>(q, k, v, out, seq_len, head_dim, \
                                                             scale, causal);                  \
    }

// Shipped configurations (chosen by timing variants on an H200, docs/KERNEL_NOTES.md):
//   (name, D, BM rows/CTA, BN keys/tile, NW warps, MI 16-row blocks/warp, Q in registers,
//    ST pipeline stages, bf16, min CTAs/SM for __launch_bounds__)
// d64 : 128 rows x 64 keys, 4 warps x 32 rows, Q in registers, 2 stages, 32 KiB smem
//       (2 CTAs = 8 warps per SM on both H200 and L4)
CG_ATTN_KERNEL(attention_fwd_f16_d64, 64, 128, 64, 4, 2, true, 2, false, 2)
CG_ATTN_KERNEL(attention_fwd_bf16_d64, 64, 128, 64, 4, 2, true, 2, true, 2)
// d64 small grids (NAME_small, kernels/README.md: the host launches it when NAME's grid would
// have fewer CTAs than the GPU has SMs): 64 rows x 64 keys, 4 warps x 16 rows, 32 KiB, 3 CTAs
// per SM. Twice the CTAs keep more SMs busy: 27% faster at [1,8,512] on an H200, but 17%
// slower at [4,16,2048] where the 128-row tile's 32 rows per warp matter (KERNEL_NOTES.md).
CG_ATTN_KERNEL(attention_fwd_f16_d64_small, 64, 64, 64, 4, 1, true, 2, false, 3)
CG_ATTN_KERNEL(attention_fwd_bf16_d64_small, 64, 64, 64, 4, 1, true, 2, true, 3)
// d128 depends on the shared memory per SM of the target (the source is the same; the
// Rust side reads whichever NAME_launch the module it compiled carries):
//  * parts with ~100 KB of shared memory per SM (sm_86, sm_89 = L4, sm_120): the 4-warp
//    Hopper tile below (64 KiB) would leave one CTA = 4 warps per SM, so use
//    128 rows x 64 keys, 8 warps x 16 rows, Q in registers, 64 KiB -> 8 warps per SM;
//  * everything else (sm_80, sm_90 = H200, ...): 128 rows x 32 keys, 4 warps x 32 rows,
//    Q re-read from smem, 64 KiB -> 2 CTAs = 8 warps per SM on an H200.
// -DCG_ADA_TILES forces the first set on any GPU (bench/kernel_check.py tests it on H200).
#if defined(CG_ADA_TILES) || \
    (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 890 || __CUDA_ARCH__ >= 1200))
CG_ATTN_KERNEL(attention_fwd_f16_d128, 128, 128, 64, 8, 1, true, 2, false, 1)
CG_ATTN_KERNEL(attention_fwd_bf16_d128, 128, 128, 64, 8, 1, true, 2, true, 1)
#else
CG_ATTN_KERNEL(attention_fwd_f16_d128, 128, 128, 32, 4, 2, false, 2, false, 2)
CG_ATTN_KERNEL(attention_fwd_bf16_d128, 128, 128, 32, 4, 2, false, 2, true, 2)
#endif

// Tuning variants, compiled only by bench/kernel_check.py (-DCI_GATE_VARIANTS) so one
// device call can time several tile shapes; the Rust side never sees them.
// Name: attnv_f16_d<D>_m<BM>n<BN>w<NW>i<MI><r|s>t<ST>b<MINB>  (r: Q in registers, s: smem)
#ifdef CI_GATE_VARIANTS
#define CG_V(D, BM, BN, NW, MI, QR, QREG, ST, MINB)                                           \
    CG_ATTN_KERNEL(attnv_f16_d##D##_m##BM##n##BN##w##NW##i##MI##QR##t##ST##b##MINB, D, BM, BN, \
                   NW, MI, QREG, ST, false, MINB)
CG_V(64, 128, 64, 4, 2, r, true, 3, 2)
CG_V(64, 64, 64, 4, 1, r, true, 2, 3)
CG_V(64, 128, 64, 8, 1, r, true, 2, 1)
CG_V(128, 128, 64, 8, 1, r, true, 2, 1)
CG_V(128, 128, 48, 4, 2, s, false, 2, 2)
#endif
