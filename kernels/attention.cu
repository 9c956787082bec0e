// attention.cu -- FlashAttention-2-style forward kernel under the ci-gate perf gate.
//
// Compiled at run time by NVRTC for the GPU's own architecture (sm_80 and newer; checked
// for sm_89, sm_90 and sm_90a). No include directives at all: fp16/bf16 are raw `unsigned
// short` bit patterns and every conversion / matrix instruction is inline PTX. Two kernels
// share the ABI, the math and the tail/causal handling:
//   * mma.sync m16n8k16 + ldmatrix + cp.async, for every target (Ampere, Ada = the L4, and
//     plain sm_90) -- described below;
//   * on sm_90a (the host compiles for it on compute capability 9.0: H100, H200) a Hopper
//     kernel on wgmma, further down ("Hopper path"), and for d128 its warp-specialised form
//     ("Hopper, warp-specialised": TMA loads by a producer warpgroup, which takes three
//     tensor maps after the eight arguments, NAME_tma in kernels/README.md).
//
// ABI (see kernels/README.md):
//   extern "C" __global__ void NAME(const unsigned short* q, const unsigned short* k,
//       const unsigned short* v, float* out, int seq_len, int head_dim, float scale,
//       int causal)
//   layout [batch, heads, seq_len, head_dim] contiguous, output fp32 in the same layout,
//   blockIdx.y = batch*heads + head, blockIdx.x = tile of BM query rows,
//   NAME_launch[3] = {rows_per_block, threads_per_block, dynamic_smem_bytes}.
//
// Design of the mma.sync kernel (docs/KERNEL_NOTES.md has the long version):
//   * one CTA = BM query rows of one (batch, head); NW warps, each warp owns 16*MI
//     consecutive query rows (shipped: 4 warps x 32 rows), so each K/V fragment read from
//     shared memory feeds MI mma's;
//   * Q tile: cp.async -> smem (swizzled) -> ldmatrix once -> registers (d64), or kept in
//     smem and re-read per tile (d128, where registers hold the 32x128 fp32 O accumulators);
//   * K/V tiles of BN keys: cp.async into a 2-stage (double-buffered) smem ring, the
//     load of tile j+1 overlaps the math on tile j (a 3-stage ring is a tested option; the
//     split pipeline, one K and one V buffer, loads V_j during S and K_j+1 during O += P V);
//   * S = Q K^T and O += P V with mma.sync.m16n8k16 (fp16 or bf16 in, fp32 accumulate);
//     P is re-packed from the S accumulators straight into A fragments (no smem round trip);
//   * online softmax in fp32 with exp2 and log2(e)*scale folded into one FFMA;
//   * tails: out-of-range K/V/Q rows are zero-filled by cp.async (src-size 0), out-of-range
//     keys are masked to -inf, out-of-range query rows are never stored;
//   * causal (top-left aligned, query i sees keys 0..=i): key tiles past the CTA's last row
//     are never loaded, tiles past a warp's last row are skipped by that warp, only tiles
//     crossing the diagonal are masked element-wise; CTAs are walked heaviest-first.

#define CG_DEV __device__ __forceinline__
// bench/variants/mb3e.patch: 0 (tile j+2 issued after tile j); mb3s.patch: 1 (after S_j)
#ifndef CG_MB_AFTER_S
#define CG_MB_AFTER_S 0
#endif

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
// The same, all 16 bytes (no zero-fill operand): a tile wholly inside the sequence.
CG_DEV void cp_async16_all(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
CG_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
CG_DEV void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// mbarriers on sm_80+ (the 3-stage ring of the mma.sync kernel: bench/variants/mb3*.patch).
// The Hopper path has its own (try_wait, expect_tx: sm_90).
CG_DEV void mb80_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
CG_DEV void mb80_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrives on `bar` once every cp.async this thread issued before it has landed (counted in
// the barrier's init count: .noinc).
CG_DEV void mb80_arrive_copies(unsigned bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
CG_DEV void mb80_wait(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "MB80_WAIT_%=:\n"
        "mbarrier.test_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra MB80_WAIT_%=;\n"
        "}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
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

// Shared memory: a ring of ST stages, each [K tile (BN x D) | V tile (BN x D)] (ST = 1: one K
// and one V buffer, refilled in turn: the split pipeline of attn_fwd), 16-bit
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
    // An enum, not static constexpr members: NVRTC emits those as writable global variables
    // (.nv.global.init), which the gate refuses in a timed kernel (kernels/README.md). The
    // generated code is the same.
    enum : int {
        ROWB = D * 2,
        KV_TILE_B = BN * ROWB,
        STAGE_B = 2 * KV_TILE_B,
        Q_B = BM * ROWB,
        Q_IN_STAGE = (QREG && Q_B <= STAGE_B) ? 1 : 0,
        Q_OFF = QREG ? (Q_IN_STAGE ? (ST - 1) * STAGE_B : 0) : ST * STAGE_B,
        BAR_OFF = QREG ? ((ST * STAGE_B > Q_B) ? ST * STAGE_B : Q_B) : ST * STAGE_B + Q_B,
        SMEM_B = BAR_OFF + (ST == 3 ? 64 : 0),
    };
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
    // A tile wholly inside the sequence (uniform over the CTA: every tile but a last partial
    // one) needs no per-row bound, select or zero-fill: one address, immediate offsets.
    if (r0 + ROWS <= seq_len) {
        const unsigned short* p = g + g_off;
#pragma unroll
        for (int i = 0; i < ROWS / RSTEP; ++i)
            cp_async16_all(sdst + s_off + i * RSTEP * (D * 2), p + i * RSTEP * D);
        return;
    }
#pragma unroll
    for (int i = 0; i < ROWS / RSTEP; ++i) {
        const bool ok = r0 + row + i * RSTEP < seq_len;
        cp_async16(sdst + s_off + i * RSTEP * (D * 2), g + (ok ? g_off + i * RSTEP * D : 0),
                   ok ? 16 : 0);
    }
}

// ---------------------------------------------------------------- attention math, shared
//
// Both kernels (mma.sync below, wgmma in the Hopper path) keep their scores and output in
// the same per-warp fragment: a ROW BLOCK is 16 query rows of one warp, held as the C layout
// of mma.sync.m16n8 (which is also what wgmma.m64nN gives each warp of a warpgroup for its
// 16 rows). Lane l holds rows r0 + (l >> 2) ("row half" h = 0) and r0 + 8 + (l >> 2) (h = 1)
// and, in every 8-column n-block nb, columns 2 * (l & 3) + {0, 1}:
//   element [nb * 4 + 2 * h + c] = (row r0 + 8 * h + (l >> 2), column 8 * nb + 2 * (l & 3) + c).
// A row block's per-row state is two values per lane, [h]: m (raw-score maximum, the same in
// the 4 lanes of a quad), l (this lane's partial row sum, reduced over the quad only at the
// end) and lim (the row's last visible key).
// What differs between the kernels is only how many row blocks a warp owns (mma.sync: MI,
// wgmma: 1) and where the fragments come from; every helper below takes one row block, so
// the mma.sync kernel calls it per block and the wgmma kernel once. A fix to the math, the
// mask or the epilogue is made here, once, for both.
//
// The generated code is the same, instruction for instruction, as when each kernel had its
// own copy (bench/kernel_resources.py --base-kdir <the kernels at 1ebfa78>: identical SASS
// for every kernel on sm_89, sm_90 and sm_90a; docs/KERNEL_NOTES.md section 7). Two scalars
// of the tile walk are therefore still written out in each kernel rather than calling
// row_limit / keys_end: the smallest limit of a warp's, warpgroup's or CTA's rows
// (`*_lim_min`) and the CTA's key range (`kv_end`). Through the helpers the compiler
// optimises these set-up scalars differently (merged with the neighbouring past-the-end
// test), which changes ptxas' register allocation by ripple (sm_89 attention_fwd_*_d64_small
// 134 -> 138 registers).

// The last key query row `row` sees: the sequence's last, or (causal, top-left aligned)
// min(row, seq_len - 1). (Of a group of rows starting at `row`, also the smallest limit.)
CG_DEV int row_limit(int row, int seq_len, bool causal) {
    return causal ? min(row, seq_len - 1) : seq_len - 1;
}

// End (exclusive) of the keys that the rows [first, first + nrows) of a warp or a warpgroup
// need: none when they are all past the end of the sequence, else all of them, or (causal)
// up to the last of those rows.
CG_DEV int keys_end(int first, int nrows, int seq_len, bool causal) {
    return first >= seq_len ? 0 : (causal ? min(seq_len, first + nrows) : seq_len);
}

// Does a tile of `bn` keys from n0 hold a key past the smallest limit of a group of rows
// (i.e. cross the causal diagonal or the end of the sequence)? Only then is it masked.
CG_DEV bool tile_needs_mask(int n0, int bn, int lim_min) { return n0 + bn - 1 > lim_min; }

// Initial state of the row block whose first row is r0: no maximum yet, empty sums.
CG_DEV void init_rows(float* m_r, float* l_r, int* lim, int r0, int lane, int seq_len,
                      bool causal) {
    const float NEG_INF = -__int_as_float(0x7f800000);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        m_r[h] = NEG_INF;
        l_r[h] = 0.f;
        lim[h] = row_limit(r0 + h * 8 + (lane >> 2), seq_len, causal);
    }
}

// Masks keys past each row's limit to -inf (only called on tiles that cross the causal
// diagonal or the end of the sequence). s: a row block's 16 x (8*NB) scores, keys from n0.
template <int NB>
CG_DEV void mask_scores(float* s, int n0, int lane, const int* lim) {
    const float NEG_INF = -__int_as_float(0x7f800000);
    const int key0 = n0 + 2 * (lane & 3);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (key0 + nb * 8 + (e & 1) > lim[e >> 1]) s[nb * 4 + e] = NEG_INF;
}

// The tile's row maxima (tmax[h], quad-reduced) by Hopper's three-input integer max
// (VIMNMX3, the DPX __vimax3_s32): two scores an instruction where fmaxf takes one. Float
// bits order as signed integers among floats >= +0, and every other float's bits (negative,
// -0, -inf) are below them, so where a row's tile holds a score >= +0 the integer maximum of
// the bits is the float maximum. Where some row of the warp has none (all its scores
// negative, masked or -0), the warp takes the float maxima instead, as before.
template <int NB>
CG_DEV void tile_row_max_dpx(const float* s, float* tmax) {
    const float NEG_INF = -__int_as_float(0x7f800000);
    int im[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        int m = (int)0x80000000u;
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
            m = __vimax3_s32(m, __float_as_int(s[nb * 4 + 2 * h]),
                             __float_as_int(s[nb * 4 + 2 * h + 1]));
        m = max(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = max(m, __shfl_xor_sync(0xffffffffu, m, 2));
        im[h] = m;
    }
    if (__any_sync(0xffffffffu, (im[0] | im[1]) < 0)) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = NEG_INF;
#pragma unroll
            for (int nb = 0; nb < NB; ++nb)
                mx = fmaxf(mx, fmaxf(s[nb * 4 + 2 * h], s[nb * 4 + 2 * h + 1]));
            mx = fmaxf(mx, shfl_xor(mx, 1));
            mx = fmaxf(mx, shfl_xor(mx, 2));
            tmax[h] = mx;
        }
    } else {
        tmax[0] = __int_as_float(im[0]);
        tmax[1] = __int_as_float(im[1]);
    }
}

// Online softmax of one tile of a row block, in place, fp32: scores -> unnormalised
// probabilities p = exp2(s * scale * log2(e) - base) (one FFMA + one ex2 per element, sl2 =
// scale * log2(e)); the row maxima m_r and per-lane partial sums l_r move on. The row half's
// old O must be scaled by alpha = exp2((m_old - m_new) * scale * log2(e)) (0 on a row's first
// visible tile):
//   DB > 0: done here, on the row block's DB n-blocks of O (the mma.sync kernel: O is in
//           registers, nothing else writes it);
//   DB = 0: left to the caller, alpha[h] returned for rescale_o (the wgmma kernel: O may
//           still be written by the tensor cores, so it is scaled after their wait).
// IMAX: the tile's row maxima by tile_row_max_dpx (sm_90; the d128 wgmma kernels).
template <int NB, int DB = 0, bool IMAX = false>
CG_DEV void softmax_tile(float* s, float* m_r, float* l_r, float* alpha, float sl2,
                         float* o = nullptr) {
    const float NEG_INF = -__int_as_float(0x7f800000);
    float tmax[2];
    if (IMAX) tile_row_max_dpx<NB>(s, tmax);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float mx = m_r[h];
        if (IMAX) {
            mx = fmaxf(mx, tmax[h]);
        } else {
#pragma unroll
            for (int nb = 0; nb < NB; ++nb)
                mx = fmaxf(mx, fmaxf(s[nb * 4 + 2 * h], s[nb * 4 + 2 * h + 1]));
            mx = fmaxf(mx, shfl_xor(mx, 1));
            mx = fmaxf(mx, shfl_xor(mx, 2));
        }
        // exp2 base; a row with no visible key so far keeps base 0 (p = 0, no NaN)
        const float base = (mx == NEG_INF) ? 0.f : mx * sl2;
        const float a = ex2(fmaf(m_r[h], sl2, -base));  // old-state rescale
        m_r[h] = mx;
        float rs = 0.f;
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
            s[nb * 4 + 2 * h] = ex2(fmaf(s[nb * 4 + 2 * h], sl2, -base));
            s[nb * 4 + 2 * h + 1] = ex2(fmaf(s[nb * 4 + 2 * h + 1], sl2, -base));
            rs += s[nb * 4 + 2 * h] + s[nb * 4 + 2 * h + 1];
        }
        l_r[h] = fmaf(l_r[h], a, rs);
        if (DB == 0) alpha[h] = a;
#pragma unroll
        for (int db = 0; db < DB; ++db) {
            o[db * 4 + 2 * h] *= a;
            o[db * 4 + 2 * h + 1] *= a;
        }
    }
}

// A row block's output accumulators (DB n-blocks of 8 dims) times alpha of their row half
// (after softmax_tile<NB, 0>).
template <int DB>
CG_DEV void rescale_o(float* o, const float* alpha) {
#pragma unroll
    for (int db = 0; db < DB; ++db) {
        o[db * 4 + 0] *= alpha[0];
        o[db * 4 + 1] *= alpha[0];
        o[db * 4 + 2] *= alpha[1];
        o[db * 4 + 3] *= alpha[1];
    }
}

// P (fp32, C layout of S) -> A fragments of the input dtype (cvt.rn): the C layout of
// n-blocks 2kb and 2kb+1 is the A layout (m16n8k16 for mma.sync, and per warp for wgmma's
// register operand) of k-step kb. No shared-memory round trip.
template <int KB, bool BF16>
CG_DEV void pack_p(const float* s, unsigned (*pf)[4]) {
#pragma unroll
    for (int kb = 0; kb < KB; ++kb) {
        pf[kb][0] = Dt<BF16>::pack(s[8 * kb + 0], s[8 * kb + 1]);
        pf[kb][1] = Dt<BF16>::pack(s[8 * kb + 2], s[8 * kb + 3]);
        pf[kb][2] = Dt<BF16>::pack(s[8 * kb + 4], s[8 * kb + 5]);
        pf[kb][3] = Dt<BF16>::pack(s[8 * kb + 6], s[8 * kb + 7]);
    }
}

// Epilogue of a row block (first row r0) of a [seq_len, D] fp32 output slice og: the quad's
// partial sums reduced, O normalised by the row sum (0, not NaN, where the sum is 0); each
// lane pair swaps halves of two 8-column blocks (one shuffle a value) so that every lane
// stores 4 consecutive floats: float4 stores, half as many as float2 ones, each warp's
// covering 64 contiguous bytes of 8 rows; rows >= seq_len are never written.
template <int D>
CG_DEV void store_rows(float* __restrict__ og, const float* o, const float* l_r, int r0,
                       int lane, int seq_len) {
    constexpr int DB = D / 8;
    const bool odd = (lane & 1) != 0;
    const int col = 4 * ((lane >> 1) & 1);  // the pair's 4 columns of an 8-column block
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float l = l_r[h];
        l += shfl_xor(l, 1);
        l += shfl_xor(l, 2);
        const float inv = l > 0.f ? 1.f / l : 0.f;
        const int row = r0 + h * 8 + (lane >> 2);
        float* p = og + (size_t)row * D + col;
#pragma unroll
        for (int i = 0; i < DB / 2; ++i) {
            // even lanes keep block 2i (their columns, then the partner's), odd lanes block
            // 2i + 1 (the partner's columns, then theirs)
            const float a0 = o[(2 * i) * 4 + 2 * h] * inv, a1 = o[(2 * i) * 4 + 2 * h + 1] * inv;
            const float b0 = o[(2 * i + 1) * 4 + 2 * h] * inv;
            const float b1 = o[(2 * i + 1) * 4 + 2 * h + 1] * inv;
            const float r0v = shfl_xor(odd ? a0 : b0, 1);
            const float r1v = shfl_xor(odd ? a1 : b1, 1);
            const float4 v = odd ? make_float4(r0v, r1v, b0, b1) : make_float4(a0, a1, r0v, r1v);
            if (row < seq_len) *reinterpret_cast<float4*>(p + (2 * i + (odd ? 1 : 0)) * 8) = v;
        }
    }
}

// ---------------------------------------------------------------- the kernel body

// Which (row tile rank, head) a CTA of NAME_causal takes: the units of a causal grid dealt by
// cost. Row tile rank x (x = 0 the last, heaviest: it sees every key) costs about n - x key
// tiles. NAME deals x = blockIdx.x within each head, so its grid's CTAs (linear, x fastest)
// alternate heavy and light, and the block scheduler, which gives CTA L of the first wave SM
// L mod S (S SMs) and each later CTA the first slot that frees, puts CTAs L and L + S, of the
// same rank when S is a multiple of n, on one SM: the busiest SMs run two of the heaviest.
// Here, with CPS CTAs a SM:
//  * a grid of one wave in which some SM runs a second CTA (S < CTAs <= 2 S, CPS 2): the
//    first S take the units heaviest first, the rest from the lightest up, so each SM runs
//    one of the S heaviest beside one of the lightest;
//  * any other grid: heaviest first across the whole grid (rank-major: every head's last row
//    tile, then every head's one before it, ...), the longest-processing-time-first order for
//    the slots that free as CTAs end; a model of SMs that share their throughput
//    (bench/pair_order_sim.py) put today's order at the measured causal / non-causal times of
//    two grids and this one 12-19% below them.
// S from %nsmid; a bijection on the grid for any S, so a wrong S or another placement costs
// balance, never a unit. O(1).
template <int CPS>
CG_DEV void deal_causal_by_cost(unsigned& rank_x, unsigned& head) {
    unsigned sms;
    asm("mov.u32 %0, %%nsmid;" : "=r"(sms));
    const unsigned heads = gridDim.y, ctas = gridDim.x * gridDim.y;
    const unsigned l = blockIdx.y * gridDim.x + blockIdx.x;
    const bool paired = CPS == 2 && ctas <= 2 * sms && l >= sms;
    const unsigned r = paired ? ctas - 1 - (l - sms) : l;  // cost rank, 0 the heaviest
    rank_x = r / heads;
    head = r % heads;
}

// D: head_dim; BM: query rows per CTA; BN: keys per K/V tile; NW: warps; MI: 16-row
// blocks per warp (a warp owns rows [16*MI*warp, 16*MI*(warp+1)) of the tile, and every
// K/V fragment it reads from smem feeds MI mma's); QREG: Q fragments live in registers;
// ST: K/V pipeline stages (2: prefetch 1 tile ahead, 2 barriers per tile; 3: prefetch 2
// tiles ahead, 1 barrier per tile; 1: the split pipeline, one K and one V buffer, V of tile j
// loaded during S = Q K_j^T and K of tile j+1 during O += P V_j, 2 barriers per tile: half
// the shared memory of 2 stages, for two CTAs per SM where a block gets ~100 KB (the L4)).
// BY_COST: the units dealt by deal_causal_by_cost (NAME_causal) instead of by
// blockIdx. An entry of its own, not a branch in NAME: any change to NAME's body moves
// ptxas's schedule, and both a branch and a second copy cost NAME's other grids +1.4 ...
// +3.2% (docs/KERNEL_LOG.md, 2026-12-06, thirty-seventh session).
template <int D, int BM, int BN, int NW, int MI, bool QREG, int ST, bool BF16,
          bool BY_COST = false, int CPS = 1>
CG_DEV void attn_fwd(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,
                     const unsigned short* __restrict__ v, float* __restrict__ out, int seq_len,
                     int head_dim, float scale, int causal_i) {
    typedef Geo<D, BM, BN, QREG, ST> G;
    static_assert(ST >= 1 && ST <= 3, "pipeline depth");
    static_assert(ST != 1 || !QREG, "the split pipeline keeps Q in its own smem region");
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
    // Warp-uniform as far as the compiler can tell (a shuffle from lane 0, as the Hopper path
    // does): the per-warp tests of the tile walk (`work`, the mask) are then uniform branches,
    // and ptxas drops the divergence checks (BRA.DIV) it put before every shuffle of the
    // softmax, which also split the loop into blocks it could not schedule across (the L4's
    // d128 forms -3.4 ... -4.6% on an H200, docs/KERNEL_LOG.md 2026-12-03, ninth session).
    const int warp = __shfl_sync(0xffffffffu, tid >> 5, 0);
    const int lane = tid & 31;
    const bool causal = causal_i != 0;

    // Heaviest tiles first (matters for causal): blockIdx.x 0 takes the last query tile.
    const int n_qtiles = (seq_len + BM - 1) / BM;
    unsigned rank_x = blockIdx.x, head = blockIdx.y;
    if constexpr (BY_COST) deal_causal_by_cost<CPS>(rank_x, head);
    const int qtile = n_qtiles - 1 - (int)rank_x;
    if (qtile < 0) return;
    const int m0 = qtile * BM;

    const size_t bh = (size_t)head * (size_t)seq_len * D;
    const unsigned short* __restrict__ qg = q + bh;
    const unsigned short* __restrict__ kg = k + bh;
    const unsigned short* __restrict__ vg = v + bh;

    const unsigned st0 = smem_u32(smem);
    const unsigned qs = st0 + G::Q_OFF;

    // ST = 3: no CTA barrier in the loop. full[s]: the NT threads' copies of stage s's tile
    // landed (cp.async arrives); empty[s]: the NT threads are done reading it. Tile t uses
    // stage t % 3 and phase t / 3 of both.
    const unsigned full0 = st0 + G::BAR_OFF, empty0 = full0 + 24;
    if constexpr (ST == 3) {
        if (tid == 0) {
#pragma unroll
            for (int b = 0; b < 3; ++b) {
                mb80_init(full0 + 8 * b, NT);
                mb80_init(empty0 + 8 * b, NT);
            }
        }
        __syncthreads();
    }

    // Keys this CTA needs: all of them, or (causal) up to its last query row.
    // (keys_end without its test, m0 < seq_len here; written out: see "attention math, shared")
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
    if (ST == 1) {  // split: K of tile 0 (its V is requested in the loop)
        if (n_tiles > 0) load_tile<BN, D, NT>(st0, kg, 0, seq_len, tid);
        cp_async_commit();
    }
    if (kv_now) {
#pragma unroll
        for (int t = 0; t < ST - 1; ++t) {
            if (t < n_tiles) {
                load_tile<BN, D, NT>(st0 + t * G::STAGE_B, kg, t * BN, seq_len, tid);
                load_tile<BN, D, NT>(st0 + t * G::STAGE_B + G::KV_TILE_B, vg, t * BN, seq_len, tid);
                if constexpr (ST == 3) mb80_arrive_copies(full0 + 8 * t);
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

    // The warp's MI row blocks (16 rows each, "attention math, shared" above): output
    // accumulators, row state (maxima, partial sums, visibility limits).
    float o[MI][DB * 4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int i = 0; i < DB * 4; ++i) o[mi][i] = 0.f;
    float m_r[MI][2], l_r[MI][2];
    int lim[MI][2];
    const int warp_first = m0 + warp * WR;  // first query row of this warp
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
        init_rows(m_r[mi], l_r[mi], lim[mi], warp_first + mi * 16, lane, seq_len, causal);
    // The warp has work in a tile starting at key n0 iff n0 < warp_kv_end (0 when all its
    // rows are past the end); it needs element masks iff the tile's last key > warp_lim_min.
    const int warp_kv_end = keys_end(warp_first, WR, seq_len, causal);
    const int warp_lim_min = causal ? min(warp_first, seq_len - 1) : seq_len - 1;  // row_limit
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
        if (ST == 1) {
            cp_async_wait<0>();  // K of tile j (and Q) landed for this thread's copies ...
            __syncthreads();     // ... and everyone's; every warp is done with V of tile j-1
            load_tile<BN, D, NT>(cur + G::KV_TILE_B, vg, j * BN, seq_len, tid);
            cp_async_commit();  // V of tile j
        } else if constexpr (ST == 2) {
            cp_async_wait<1>();  // tile j (and Q) landed for this thread's copies ...
            __syncthreads();     // ... and for everyone's; also: every warp is done with tile j-1
        }

        const int n0 = j * BN;
        // A warp with no row that sees the tile (causal, or past the end) skips its math; with
        // the split pipeline it still takes the barrier between S (reads K) and O (reads V).
        const bool work = n0 < warp_kv_end;
        // ST = 3: tile j+2 goes into tile j-1's stage once every thread is done reading tile
        // j-1 (tile 2 into Q's staging stage, free since the prologue's barrier). Issued after
        // this thread's S of tile j (CG_MB_AFTER_S) or after its whole tile j, so a warp may
        // run up to that far ahead of the slowest; the copies arrive on full[(j+2) % 3].
        auto issue_next = [&]() {
            if constexpr (ST == 3) {
                if (j + 2 < n_tiles) {
                    if (j >= 1) mb80_wait(empty0 + 8 * ((j - 1) % 3), ((j - 1) / 3) & 1);
                    load_tile<BN, D, NT>(nxt, kg, (j + 2) * BN, seq_len, tid);
                    load_tile<BN, D, NT>(nxt + G::KV_TILE_B, vg, (j + 2) * BN, seq_len, tid);
                    mb80_arrive_copies(full0 + 8 * ((j + 2) % 3));
                }
            }
        };
        if constexpr (ST == 3) {
            if (work) mb80_wait(full0 + 8 * (j % 3), (j / 3) & 1);
        }
        if (ST == 1 || work) {
            float s[MI][NB * 4];
            if (ST != 1 || work) {
                // ---- S = Q K^T  (WR x BN per warp, fp32)
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int i = 0; i < NB * 4; ++i) s[mi][i] = 0.f;
#pragma unroll
                for (int kk = 0; kk < KD; ++kk) {
                    unsigned qa[MI][4];
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi) {
                        if (QREG) {
#pragma unroll
                            for (int x = 0; x < 4; ++x)
                                qa[mi][x] = qf[QREG ? mi : 0][QREG ? kk : 0][x];
                        } else {
                            ldsm_x4(qs + ((q_off + mi * 16 * ROWB) ^ (kk << 5)), qa[mi][0],
                                    qa[mi][1], qa[mi][2], qa[mi][3]);
                        }
                    }
                    const unsigned kbase = cur + (k_off ^ (kk << 5));
#pragma unroll
                    for (int np = 0; np < NB / 2; ++np) {
                        unsigned b0, b1, b2, b3;
                        ldsm_x4(kbase + np * 16 * ROWB, b0, b1, b2, b3);
#pragma unroll
                        for (int mi = 0; mi < MI; ++mi) {
                            Dt<BF16>::mma(&s[mi][(2 * np) * 4], qa[mi], b0, b1);
                            Dt<BF16>::mma(&s[mi][(2 * np + 1) * 4], qa[mi], b2, b3);
                        }
                    }
                }
            }
            if constexpr (ST == 3 && CG_MB_AFTER_S) issue_next();
            if (ST == 1) {
                cp_async_wait<0>();  // V of tile j landed for this thread's copies ...
                __syncthreads();     // ... and everyone's; every warp is done with K of tile j
                if (j + 1 < n_tiles) load_tile<BN, D, NT>(cur, kg, (j + 1) * BN, seq_len, tid);
                cp_async_commit();  // K of tile j+1
            }
            if (ST != 1 || work) {
                // ---- masking (only tiles that cross the diagonal or the end of the
                // sequence), online softmax (fp32), then P -> A fragments of the input dtype
                if (tile_needs_mask(n0, BN, warp_lim_min)) {
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi) mask_scores<NB>(s[mi], n0, lane, lim[mi]);
                }
                unsigned pf[MI][KB][4];
#pragma unroll
                for (int mi = 0; mi < MI; ++mi) {
                    softmax_tile<NB, DB>(s[mi], m_r[mi], l_r[mi], nullptr, sl2, o[mi]);
                    pack_p<KB, BF16>(s[mi], pf[mi]);
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
                            Dt<BF16>::mma(&o[mi][(2 * dp) * 4], pf[mi][kb], b0, b1);
                            Dt<BF16>::mma(&o[mi][(2 * dp + 1) * 4], pf[mi][kb], b2, b3);
                        }
                    }
                }
            }
        }
        if (ST == 2) __syncthreads();  // stage `cur` is refilled by the next prefetch
        if constexpr (ST == 3) {
            // Done reading tile j's stage. Said before this thread issues more copies: the
            // arrive's release (a MEMBAR.ALL.CTA on sm_89) would otherwise wait for them.
            mb80_arrive(empty0 + 8 * (j % 3));
            if (!CG_MB_AFTER_S || !work) issue_next();
        }
    }
    if constexpr (ST == 3) cp_async_wait<0>();  // none of this thread's copies outlives it

    // ---- epilogue: normalise and store fp32 (rows >= seq_len are never written)
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
        store_rows<D>(out + bh, o[mi], l_r[mi], warp_first + mi * 16, lane, seq_len);
}

// The mma.sync d64 NAME's tile (2 stages, Q in registers staged in a K/V stage) as a filling
// form (NAME_fill, kernels/README.md "Filling the GPU"): CTA (x, head) takes the row tiles of
// rank x, x + gridDim.x, ... of its head, one after another, and requests the next unit's Q
// during its last K/V tile (into the stage the prefetch leaves free there) and the next
// unit's first K/V tile before its epilogue's store (into the last tile's stage), so that a
// unit's store and the next unit's first loads overlap where one CTA a unit runs them back to
// back across two CTAs. On an H100 (CG_ADA_TILES) at two units a CTA: -5.3% on [8,16,512],
// -2.0 ... -3.1% on the other grids of two rounds (docs/KERNEL_LOG.md, 2026-12-07). A function
// of its own, so that no other entry's code moves.
template <int D, int BM, int BN, int NW, int MI, bool BF16>
CG_DEV void attn_fwd_fill(const unsigned short* __restrict__ q,
                          const unsigned short* __restrict__ k,
                          const unsigned short* __restrict__ v, float* __restrict__ out,
                          int seq_len, int head_dim, float scale, int causal_i) {
    constexpr int ST = 2;
    typedef Geo<D, BM, BN, true, ST> G;
    static_assert(G::Q_IN_STAGE == 1 && G::Q_B <= G::STAGE_B, "Q staged in one K/V stage");
    constexpr int NT = NW * 32;
    constexpr int ROWB = G::ROWB;
    constexpr int KD = D / 16;
    constexpr int NB = BN / 8;
    constexpr int KB = BN / 16;
    constexpr int DB = D / 8;
    constexpr int WR = 16 * MI;
    static_assert(BM == WR * NW, "warps tile the query rows");
    static_assert(D % 64 == 0 && BN % 16 == 0, "tile shape");

    if (head_dim != D || seq_len <= 0) return;

    extern __shared__ __align__(128) unsigned char smem[];

    const int tid = threadIdx.x;
    const int warp = __shfl_sync(0xffffffffu, tid >> 5, 0);
    const int lane = tid & 31;
    const bool causal = causal_i != 0;

    const int n_qtiles = (seq_len + BM - 1) / BM;
    int rank_x = (int)blockIdx.x;
    const unsigned head = blockIdx.y;
    if (rank_x >= n_qtiles) return;

    const size_t bh = (size_t)head * (size_t)seq_len * D;
    const unsigned short* __restrict__ qg = q + bh;
    const unsigned short* __restrict__ kg = k + bh;
    const unsigned short* __restrict__ vg = v + bh;

    const unsigned st0 = smem_u32(smem);

    const unsigned q_off =
        (warp * WR + (lane & 15)) * ROWB + (((lane >> 4) ^ (lane & 7)) << 4);
    const unsigned k_off = ((lane & 7) + ((lane >> 4) << 3)) * ROWB +
                           ((((lane >> 3) & 1) ^ (lane & 7)) << 4);
    const unsigned v_off = (lane & 15) * ROWB + (((lane >> 4) ^ (lane & 7)) << 4);
    const float sl2 = scale * 1.4426950408889634f;

    // The first unit: Q into stage 1, K/V tile 0 into stage 0 (NAME's prologue). Each later
    // unit finds its Q in one stage and its tile 0 in the other (slot0), both requested by the
    // unit before it.
    {
        const int m0 = (n_qtiles - 1 - rank_x) * BM;
        load_tile<BM, D, NT>(st0 + G::STAGE_B, qg, m0, seq_len, tid);
        cp_async_commit();
        load_tile<BN, D, NT>(st0, kg, 0, seq_len, tid);
        load_tile<BN, D, NT>(st0 + G::KV_TILE_B, vg, 0, seq_len, tid);
        cp_async_commit();
    }
    int slot0 = 0;
#pragma unroll 1
    for (;;) {
        const int qtile = n_qtiles - 1 - rank_x;
        const int m0 = qtile * BM;

        // Q (in the stage that is not slot0) landed; to registers; its stage is then free
        unsigned qf[MI][KD][4];
        cp_async_wait<1>();
        __syncthreads();
        {
            const unsigned qs = st0 + (1 - slot0) * G::STAGE_B;
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int kk = 0; kk < KD; ++kk)
                    ldsm_x4(qs + ((q_off + mi * 16 * ROWB) ^ (kk << 5)), qf[mi][kk][0],
                            qf[mi][kk][1], qf[mi][kk][2], qf[mi][kk][3]);
        }
        __syncthreads();

        const int kv_end = causal ? min(seq_len, m0 + BM) : seq_len;
        const int n_tiles = (kv_end + BN - 1) / BN;

        float o[MI][DB * 4];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int i = 0; i < DB * 4; ++i) o[mi][i] = 0.f;
        float m_r[MI][2], l_r[MI][2];
        int lim[MI][2];
        const int warp_first = m0 + warp * WR;
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
            init_rows(m_r[mi], l_r[mi], lim[mi], warp_first + mi * 16, lane, seq_len, causal);
        const int warp_kv_end = keys_end(warp_first, WR, seq_len, causal);
        const int warp_lim_min = causal ? min(warp_first, seq_len - 1) : seq_len - 1;

        int slot = slot0, last_slot = slot0;
        for (int j = 0; j < n_tiles; ++j) {
            const unsigned cur = st0 + slot * G::STAGE_B;
            const unsigned nxt = st0 + (1 - slot) * G::STAGE_B;
            last_slot = slot;
            slot = 1 - slot;
            if (j + 1 < n_tiles) {
                load_tile<BN, D, NT>(nxt, kg, (j + 1) * BN, seq_len, tid);
                load_tile<BN, D, NT>(nxt + G::KV_TILE_B, vg, (j + 1) * BN, seq_len, tid);
            } else if (rank_x + (int)gridDim.x < n_qtiles) {  // the next unit's Q
                load_tile<BM, D, NT>(nxt, qg, (n_qtiles - 1 - rank_x - (int)gridDim.x) * BM,
                                     seq_len, tid);
            }
            cp_async_commit();
            cp_async_wait<1>();
            __syncthreads();

            const int n0 = j * BN;
            const bool work = n0 < warp_kv_end;
            if (work) {
                float s[MI][NB * 4];
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int i = 0; i < NB * 4; ++i) s[mi][i] = 0.f;
#pragma unroll
                for (int kk = 0; kk < KD; ++kk) {
                    const unsigned kbase = cur + (k_off ^ (kk << 5));
#pragma unroll
                    for (int np = 0; np < NB / 2; ++np) {
                        unsigned b0, b1, b2, b3;
                        ldsm_x4(kbase + np * 16 * ROWB, b0, b1, b2, b3);
#pragma unroll
                        for (int mi = 0; mi < MI; ++mi) {
                            Dt<BF16>::mma(&s[mi][(2 * np) * 4], qf[mi][kk], b0, b1);
                            Dt<BF16>::mma(&s[mi][(2 * np + 1) * 4], qf[mi][kk], b2, b3);
                        }
                    }
                }
                if (tile_needs_mask(n0, BN, warp_lim_min)) {
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi) mask_scores<NB>(s[mi], n0, lane, lim[mi]);
                }
                unsigned pf[MI][KB][4];
#pragma unroll
                for (int mi = 0; mi < MI; ++mi) {
                    softmax_tile<NB, DB>(s[mi], m_r[mi], l_r[mi], nullptr, sl2, o[mi]);
                    pack_p<KB, BF16>(s[mi], pf[mi]);
                }
#pragma unroll
                for (int dp = 0; dp < DB / 2; ++dp) {
                    const unsigned vbase = cur + G::KV_TILE_B + (v_off ^ (dp << 5));
#pragma unroll
                    for (int kb = 0; kb < KB; ++kb) {
                        unsigned b0, b1, b2, b3;
                        ldsm_x4_t(vbase + kb * 16 * ROWB, b0, b1, b2, b3);
#pragma unroll
                        for (int mi = 0; mi < MI; ++mi) {
                            Dt<BF16>::mma(&o[mi][(2 * dp) * 4], pf[mi][kb], b0, b1);
                            Dt<BF16>::mma(&o[mi][(2 * dp + 1) * 4], pf[mi][kb], b2, b3);
                        }
                    }
                }
            }
            __syncthreads();  // stage `cur` is refilled by the next request
        }
        const bool has_next = rank_x + (int)gridDim.x < n_qtiles;  // uniform over the CTA
        if (has_next) {
            // the next unit's K/V tile 0 into the last tile's stage (every warp is done with
            // it: the barrier above), in flight during this unit's store; its Q is in the
            // other stage (requested during the last tile)
            const unsigned last = st0 + last_slot * G::STAGE_B;
            load_tile<BN, D, NT>(last, kg, 0, seq_len, tid);
            load_tile<BN, D, NT>(last + G::KV_TILE_B, vg, 0, seq_len, tid);
            cp_async_commit();
            slot0 = last_slot;
        }
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
            store_rows<D>(out + bh, o[mi], l_r[mi], warp_first + mi * 16, lane, seq_len);
        if (!has_next) break;
        rank_x += (int)gridDim.x;
    }
    cp_async_wait<0>();
}



// ---------------------------------------------------------------- Hopper path (sm_90a)
//
// Compiled only when the target has the sm_90a features (the Rust side compiles for sm_90a on
// compute capability 9.0; plain sm_90 and every other target keep the mma.sync kernel above).
// Same ABI, same math, same tails and causal handling; what changes is the matrix engine:
//   * one warpgroup (4 warps, 128 threads) owns 64 query rows, NWG warpgroups per CTA;
//   * S = Q K^T with wgmma.m64n<BN>k16, both operands read from shared memory through
//     descriptors (Q and K are "K-major": rows of head_dim elements);
//   * O += P V with wgmma.m64n<D>k16, P from registers (the S accumulator layout of each
//     warp is the A-fragment layout, as with mma.sync), V from shared memory, transposed
//     ("MN-major": rows of keys, head_dim contiguous);
//   * shared tiles use the hardware's 128-byte swizzle: a tile of R rows x D columns is
//     D/64 blocks of [R rows x 128 bytes], 16-byte chunk c of row r stored at chunk
//     c ^ (r & 7) -- the same XOR swizzle as above, in 1024-byte-aligned atoms;
//   * cp.async still loads the tiles (zero-fill for tails); a generic->async proxy fence
//     before the barrier makes them visible to wgmma.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CG_HAVE_WGMMA 1

#define CG_D8(i)                                                                          \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]),           \
        "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])

template <bool BF16>
struct Wg;

#define CG_WG_STRUCT(BF16V, TY)                                                                              \
    template <>                                                                                              \
    struct Wg<BF16V> {                                                                                       \
    static CG_DEV void ss64(float* d, unsigned long long da, unsigned long long db, int scale_d) {           \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                            \
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY "\n"                            \
                     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                               \
                     "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31},\n"                   \
                     "%32, %33, p, 1, 1, 0, 0;\n}\n"                                                         \
                     : CG_D8(0), CG_D8(8), CG_D8(16), CG_D8(24)                                              \
                     : "l"(da), "l"(db), "r"(scale_d));                                                      \
    }                                                                                                        \
    static CG_DEV void ss128(float* d, unsigned long long da, unsigned long long db, int scale_d) {          \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                            \
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY "\n"                           \
                     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                               \
                     "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"                      \
                     "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"                      \
                     "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63},\n"                   \
                     "%64, %65, p, 1, 1, 0, 0;\n}\n"                                                         \
                     : CG_D8(0), CG_D8(8), CG_D8(16), CG_D8(24), CG_D8(32), CG_D8(40), CG_D8(48), CG_D8(56)  \
                     : "l"(da), "l"(db), "r"(scale_d));                                                      \
    }                                                                                                        \
    static CG_DEV void ss192(float* d, unsigned long long da, unsigned long long db, int scale_d) {          \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"                                            \
                     "wgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY "\n"                           \
                     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                               \
                     "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"                      \
                     "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"                      \
                     "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"                      \
                     "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"                      \
                     "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95},\n"                   \
                     "%96, %97, p, 1, 1, 0, 0;\n}\n"                                                         \
                     : CG_D8(0), CG_D8(8), CG_D8(16), CG_D8(24), CG_D8(32), CG_D8(40), CG_D8(48), CG_D8(56),  \
                       CG_D8(64), CG_D8(72), CG_D8(80), CG_D8(88)                                              \
                     : "l"(da), "l"(db), "r"(scale_d));                                                      \
    }                                                                                                        \
    static CG_DEV void rs64(float* d, const unsigned* a, unsigned long long db, int scale_d) {               \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                            \
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY "\n"                            \
                     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                               \
                     "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31},\n"                   \
                     "{%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"                                              \
                     : CG_D8(0), CG_D8(8), CG_D8(16), CG_D8(24)                                              \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));                   \
    }                                                                                                        \
    static CG_DEV void rs128(float* d, const unsigned* a, unsigned long long db, int scale_d) {              \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                            \
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY "\n"                           \
                     "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                               \
                     "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"                      \
                     "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"                      \
                     "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63},\n"                   \
                     "{%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"                                              \
                     : CG_D8(0), CG_D8(8), CG_D8(16), CG_D8(24), CG_D8(32), CG_D8(40), CG_D8(48), CG_D8(56)  \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));                   \
    }                                                                                                        \
    };

CG_WG_STRUCT(false, "f16")
CG_WG_STRUCT(true, "bf16")
#undef CG_WG_STRUCT
#undef CG_D8

CG_DEV void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
CG_DEV void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
CG_DEV void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Tells the compiler a register changes here: accumulators are written by the tensor cores
// between the wgmma and its wait, which inline asm cannot express.
CG_DEV void reg_fence(float& r) { asm volatile("" : "+f"(r)::"memory"); }
// Shared memory written by cp.async (generic proxy) becomes visible to wgmma (async proxy).
CG_DEV void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Shared-memory matrix descriptor, 128-byte swizzle. For K-major operands (Q, K) the stride
// byte offset is the distance between 8-row groups (1024 B) and the leading one is unused;
// for the MN-major V it is again 1024 B between groups of 8 keys, and the leading offset is
// the distance between 64-column blocks of head_dim.
CG_DEV unsigned long long wg_desc(unsigned saddr, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((saddr & 0x3FFFF) >> 4) |
           ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) |
           ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

// cp.async of ROWS rows of a [seq_len, D] matrix into the 128-byte-swizzle layout: column
// block b (64 elements) of the tile at b * ROWS * 128 bytes, rows of 128 bytes inside it.
// As load_tile: a thread's rows share row & 7, rows >= seq_len are zero-filled.
template <int ROWS, int D, int NT>
CG_DEV void load_tile_sw128(unsigned sdst, const unsigned short* __restrict__ g, int r0,
                            int seq_len, int tid) {
    constexpr int CPR = D / 8;
    constexpr int RSTEP = NT / CPR;
    static_assert(NT % CPR == 0 && ROWS % RSTEP == 0 && RSTEP % 8 == 0, "loader shape");
    const int row = tid / CPR;
    const int ch = tid % CPR;
    const unsigned s_off = (ch >> 3) * (ROWS * 128) + row * 128 + (((ch & 7) ^ (row & 7)) << 4);
    const int g_off = (r0 + row) * D + ch * 8;
#pragma unroll
    for (int i = 0; i < ROWS / RSTEP; ++i) {
        const bool ok = r0 + row + i * RSTEP < seq_len;
        cp_async16(sdst + s_off + i * RSTEP * 128, g + (ok ? g_off + i * RSTEP * D : 0),
                   ok ? 16 : 0);
    }
}

template <int D, int BN, int NWG>
struct WgGeo {
    // An enum for the reason given at Geo.
    enum : int {
        BM = 64 * NWG,
        Q_B = BM * D * 2,
        KV_TILE_B = BN * D * 2,
        STAGE_B = 2 * KV_TILE_B,
        // + 1024: the swizzle atoms must be 1024-byte aligned; the base is rounded up at run
        // time.
        SMEM_B = Q_B + 2 * STAGE_B + 1024,
    };
};

template <int N, bool BF16>
CG_DEV void wg_ss(float* d, unsigned long long da, unsigned long long db, int scale_d) {
    if (N == 64) Wg<BF16>::ss64(d, da, db, scale_d);
    else if (N == 128) Wg<BF16>::ss128(d, da, db, scale_d);
    else Wg<BF16>::ss192(d, da, db, scale_d);
}
template <int N, bool BF16>
CG_DEV void wg_rs(float* d, const unsigned* a, unsigned long long db, int scale_d) {
    if (N == 64) Wg<BF16>::rs64(d, a, db, scale_d); else Wg<BF16>::rs128(d, a, db, scale_d);
}

// S = Q K^T for one warpgroup: its 64 Q rows at q_wg (column block 0 of a BM-row tile) times
// the first NT keys of the BN-key K tile at kt (NT = BN but in a narrowed last tile): D/16
// wgmma's of k16, 32 bytes apart inside a 128-byte row, column blocks of 64 elements BN rows
// apart. S of NT keys is the first NT / 2 accumulators of S of BN keys, in the same places.
// (Shared by attn_fwd_wg and attn_fwd_ws.)
template <int D, int BN, int BM, bool BF16, int NT = BN>
CG_DEV void wg_issue_qk(float* s, unsigned q_wg, unsigned kt) {
    static_assert(NT % 64 == 0 && NT <= BN, "a tile's first NT keys");
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        const unsigned qa = q_wg + (kk >> 2) * (BM * 128) + (kk & 3) * 32;
        const unsigned ka = kt + (kk >> 2) * (BN * 128) + (kk & 3) * 32;
        wg_ss<NT, BF16>(s, wg_desc(qa, 16, 1024), wg_desc(ka, 16, 1024), kk > 0);
    }
}

// O += P V for the first KT keys (KT = BN but in a narrowed last tile) of the BN-key V tile
// at vt: KT/16 wgmma's of k16 = 16 keys = 2048 bytes of V rows; head_dim's 64-column blocks
// BN rows apart.
template <int D, int BN, bool BF16, int KT = BN>
CG_DEV void wg_issue_pv(float* o, const unsigned (*pf)[4], unsigned vt) {
    static_assert(KT % 16 == 0 && KT <= BN, "a tile's first KT keys");
#pragma unroll
    for (int kb = 0; kb < KT / 16; ++kb)
        wg_rs<D, BF16>(o, pf[kb], wg_desc(vt + kb * 2048, BN * 128, 1024), 1);
}

// Scores of a tile's first NT keys from n0 (landed) -> masked where the tile crosses a row's
// limit (lim_min: the smallest), softmax (softmax_tile, alpha left to the caller).
template <int NT, bool IMAX = false>
CG_DEV void scores_to_p_tile(float* s, int n0, int lane, const int* lim, int lim_min,
                             float* m_r, float* l_r, float* alpha, float sl2) {
#pragma unroll
    for (int i = 0; i < NT / 2; ++i) reg_fence(s[i]);
    if (tile_needs_mask(n0, NT, lim_min)) mask_scores<NT / 8>(s, n0, lane, lim);
    softmax_tile<NT / 8, 0, IMAX>(s, m_r, l_r, alpha, sl2);
}

// D: head_dim (64 or 128); BN: keys per K/V tile (64 or 128); NWG: warpgroups per CTA
// (BM = 64 * NWG query rows).
// PIPE false: per tile, S = Q K^T, softmax, O += P V, each waited for in turn; the tensor
//   cores are kept busy by the other warpgroups of the SM while one does its softmax.
// PIPE true: the softmax of tile j runs while the tensor cores do O += P V of tile j-1
//   (issued together with S of tile j). K and V then go one tile apart: load group j holds
//   K_j and V_{j-1}, so the same four tile slots (K and V, two each) suffice.
//   (The prologue's group is then Q with K_0 only.)
template <int D, int BN, int NWG, bool BF16, bool PIPE>
CG_DEV void attn_fwd_wg(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,
                        const unsigned short* __restrict__ v, float* __restrict__ out,
                        int seq_len, int head_dim, float scale, int causal_i) {
    typedef WgGeo<D, BN, NWG> G;
    static_assert((D == 64 || D == 128) && (BN == 64 || BN == 128), "wgmma tile shape");
    constexpr int BM = G::BM;
    constexpr int NT = 128 * NWG;
    constexpr int NB = BN / 8;   // n-blocks (8 keys) of S
    constexpr int KB = BN / 16;  // k-steps of O += P V
    constexpr int DB = D / 8;    // n-blocks (8 dims) of O

    if (head_dim != D || seq_len <= 0) return;

    extern __shared__ unsigned char smem_wg[];

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int wg = tid >> 7;           // warpgroup
    const int wwarp = (tid >> 5) & 3;  // warp within the warpgroup: rows 16*wwarp..+15
    const bool causal = causal_i != 0;

    const int n_qtiles = (seq_len + BM - 1) / BM;
    const int qtile = n_qtiles - 1 - (int)blockIdx.x;  // heaviest first
    if (qtile < 0) return;
    const int m0 = qtile * BM;

    const size_t bh = (size_t)blockIdx.y * (size_t)seq_len * D;
    const unsigned short* __restrict__ qg = q + bh;
    const unsigned short* __restrict__ kg = k + bh;
    const unsigned short* __restrict__ vg = v + bh;

    // [Q | K slot 0 | V slot 0 | K slot 1 | V slot 1], 1024-byte aligned
    const unsigned qs = (smem_u32(smem_wg) + 1023u) & ~1023u;
    const unsigned st0 = qs + G::Q_B;

    const int kv_end = causal ? min(seq_len, m0 + BM) : seq_len;  // as in attn_fwd
    const int n_tiles = (kv_end + BN - 1) / BN;

    load_tile_sw128<BM, D, NT>(qs, qg, m0, seq_len, tid);
    cp_async_commit();
    load_tile_sw128<BN, D, NT>(st0, kg, 0, seq_len, tid);
    if (!PIPE) load_tile_sw128<BN, D, NT>(st0 + G::KV_TILE_B, vg, 0, seq_len, tid);
    cp_async_commit();

    float o[DB * 4];
    float s[NB * 4];
    unsigned pf[KB][4];
#pragma unroll
    for (int i = 0; i < DB * 4; ++i) o[i] = 0.f;
#pragma unroll
    for (int i = 0; i < NB * 4; ++i) s[i] = 0.f;
#pragma unroll
    for (int i = 0; i < KB; ++i) pf[i][0] = pf[i][1] = pf[i][2] = pf[i][3] = 0u;

    // The warp's one row block ("attention math, shared" above): row state.
    float m_r[2], l_r[2], alpha[2];
    int lim[2];
    const int wg_first = m0 + wg * 64;             // first query row of this warpgroup
    const int warp_first = wg_first + wwarp * 16;  // ... and of this warp
    init_rows(m_r, l_r, lim, warp_first, lane, seq_len, causal);
    // wgmma is issued by the whole warpgroup, so the tiles it works on are decided per
    // warpgroup (a prefix of the CTA's tiles); masking stays per warp.
    const int wg_kv_end = keys_end(wg_first, 64, seq_len, causal);
    const int wg_tiles = (wg_kv_end + BN - 1) / BN;
    const int warp_lim_min = causal ? min(warp_first, seq_len - 1) : seq_len - 1;  // row_limit
    const float sl2 = scale * 1.4426950408889634f;

    const unsigned q_wg = qs + wg * 64 * 128;  // this warpgroup's Q rows, column block 0

    auto issue_qk = [&](unsigned kt) { wg_issue_qk<D, BN, BM, BF16>(s, q_wg, kt); };
    auto issue_pv = [&](unsigned vt) { wg_issue_pv<D, BN, BF16>(o, pf, vt); };

    if constexpr (!PIPE) {
        for (int j = 0; j < n_tiles; ++j) {
            const unsigned cur = st0 + (j & 1) * G::STAGE_B;
            const unsigned nxt = st0 + ((j + 1) & 1) * G::STAGE_B;
            if (j + 1 < n_tiles) {
                load_tile_sw128<BN, D, NT>(nxt, kg, (j + 1) * BN, seq_len, tid);
                load_tile_sw128<BN, D, NT>(nxt + G::KV_TILE_B, vg, (j + 1) * BN, seq_len, tid);
            }
            cp_async_commit();
            cp_async_wait<1>();
            fence_proxy_async();
            __syncthreads();
            if (j < wg_tiles) {
                wg_fence();
                issue_qk(cur);
                wg_commit();
                wg_wait<0>();
#pragma unroll
                for (int i = 0; i < NB * 4; ++i) reg_fence(s[i]);
                if (tile_needs_mask(j * BN, BN, warp_lim_min)) mask_scores<NB>(s, j * BN, lane, lim);
                softmax_tile<NB>(s, m_r, l_r, alpha, sl2);
                rescale_o<DB>(o, alpha);
                pack_p<KB, BF16>(s, pf);
                wg_fence();
                issue_pv(cur + G::KV_TILE_B);
                wg_commit();
                wg_wait<0>();
#pragma unroll
                for (int i = 0; i < DB * 4; ++i) reg_fence(o[i]);
            }
            __syncthreads();  // stage `cur` is refilled by the next prefetch
        }
    } else {
        // Nothing between a wgmma and its wait may branch on the thread (ptxas would then
        // serialize every wgmma), so here all warpgroups walk all of the CTA's tiles (a
        // warpgroup's tiles past its rows come out fully masked) and the masking decision
        // is the CTA's. Load group j holds K_j and V_{j-1}; K_0 came with Q.
        const int cta_lim_min = causal ? min(m0, seq_len - 1) : seq_len - 1;  // row_limit
        auto load_group = [&](int j) {  // K_j (if any) and V_{j-1}
            if (j < n_tiles)
                load_tile_sw128<BN, D, NT>(st0 + (j & 1) * G::STAGE_B, kg, j * BN, seq_len, tid);
            load_tile_sw128<BN, D, NT>(st0 + ((j - 1) & 1) * G::STAGE_B + G::KV_TILE_B, vg,
                                       (j - 1) * BN, seq_len, tid);
            cp_async_commit();
        };
        auto scores_to_p = [&](int j) {  // S_j (landed) -> softmax; P packed by the caller
#pragma unroll
            for (int i = 0; i < NB * 4; ++i) reg_fence(s[i]);
            if (tile_needs_mask(j * BN, BN, cta_lim_min)) mask_scores<NB>(s, j * BN, lane, lim);
            softmax_tile<NB>(s, m_r, l_r, alpha, sl2);
        };
        load_group(1);
        cp_async_wait<1>();  // Q and K_0
        fence_proxy_async();
        __syncthreads();
        wg_fence();
        issue_qk(st0);
        wg_commit();
        wg_wait<0>();
        scores_to_p(0);
        pack_p<KB, BF16>(s, pf);  // O is 0: no rescale
        __syncthreads();
        for (int j = 1; j < n_tiles; ++j) {
            load_group(j + 1);
            cp_async_wait<1>();  // K_j and V_{j-1}
            fence_proxy_async();
            __syncthreads();
            wg_fence();
            issue_qk(st0 + (j & 1) * G::STAGE_B);
            wg_commit();
            issue_pv(st0 + ((j - 1) & 1) * G::STAGE_B + G::KV_TILE_B);
            wg_commit();
            wg_wait<1>();  // S_j is in; P_{j-1} V_{j-1} may still be running
            scores_to_p(j);
            wg_wait<0>();
#pragma unroll
            for (int i = 0; i < DB * 4; ++i) reg_fence(o[i]);
            rescale_o<DB>(o, alpha);
            pack_p<KB, BF16>(s, pf);
            __syncthreads();  // K_j's and V_{j-1}'s slots are refilled next iteration
        }
        cp_async_wait<0>();  // V_{n-1}
        fence_proxy_async();
        __syncthreads();
        wg_fence();
        issue_pv(st0 + ((n_tiles - 1) & 1) * G::STAGE_B + G::KV_TILE_B);
        wg_commit();
        wg_wait<0>();
#pragma unroll
        for (int i = 0; i < DB * 4; ++i) reg_fence(o[i]);
    }

    store_rows<D>(out + bh, o, l_r, warp_first, lane, seq_len);
}

// ---------------------------------------------------------------- Hopper, warp-specialised
//
// attn_fwd_ws: the FlashAttention-3 structure (issue 22). A CTA of NC + 1 warpgroups owns
// 64 * NC query rows of one (batch, head):
//   * warpgroup 0, the PRODUCER, gives registers back (setmaxnreg 24) and one of its threads
//     issues every load as TMA: Q once, then K and V tiles of BN keys into a ring of ST
//     stages. Each stage has a "full" mbarrier (the TMA's bytes landed) and an "empty" one
//     (every consumer is done reading it);
//   * warpgroups 1 .. NC, the CONSUMERS, take CREG registers each (setmaxnreg; 240 with
//     NC = 2) and own 64 rows each: S = Q K^T and O += P V with wgmma as in attn_fwd_wg,
//     softmax in registers. No consumer issues a load or waits at a CTA barrier: they wait
//     on mbarriers only.
// Options (the steps of the ablation in docs/KERNEL_NOTES.md section 8):
//   INTRA: S_j and P_{j-1} V_{j-1} issued together, as PIPE in attn_fwd_wg, the softmax of
//          tile j written between their waits; the consumers' 240 registers make room for
//          the second score tile that d128 could not afford there. In the SASS (NVRTC 13.0
//          and 13.5, every entry) ptxas puts the wait for P_{j-1} V_{j-1} before the softmax:
//          the two GEMMs run back to back and the softmax follows both. Forcing the overlap
//          (a never-taken uniform branch after the softmax, so that the wait and the V
//          slot's release come after it) measured 1-10% slower at d64 and up to 3% at d128
//          (H200, 2026-12-03, docs/KERNEL_LOG.md);
//   PP:    ping-pong: the consumers take turns, round robin, to issue their GEMMs (named
//          barriers 1 .. NC), so one's softmax runs while another's GEMMs keep the tensor
//          cores busy.
// Tails: the tensor maps' bounds are the (batch, head) slice's, so TMA zero-fills rows past
// seq_len; keys past a row's limit are masked as elsewhere, rows past seq_len never stored.
// All consumers walk all of the CTA's key tiles (masking decided per CTA): nothing between
// a wgmma and its wait branches on the thread, and the ping-pong turns stay paired.

// A CUtensorMap (128 bytes), passed by value in the launch's parameter space.
struct __align__(128) Tmap {
    unsigned long long opaque[16];
};

CG_DEV void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// One arrival that also expects `bytes` of TMA transactions before the phase can complete.
CG_DEV void mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}
CG_DEV void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Blocks until the phase with this parity has completed.
CG_DEV void mbar_wait(unsigned bar, unsigned parity) {
    asm volatile(
        "{\n.reg .pred p;\nCG_WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra CG_WAIT;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}
// TMA: the box at {c0 (column), c1 (row), c2 (slice)} of `map` into shared memory at dst,
// completing `bar`'s transactions.
CG_DEV void tma_load(unsigned dst, const Tmap* map, unsigned bar, int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}
CG_DEV void tma_prefetch(const Tmap* map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map))
                 : "memory");
}
// A named barrier between two consumer warpgroups (256 threads): wait / only signal.
CG_DEV void named_sync(int id) { asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory"); }
CG_DEV void named_arrive(int id) { asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory"); }
template <int N>
CG_DEV void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N) : "memory");
}
template <int N>
CG_DEV void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N) : "memory");
}

// Rows, columns of one TMA box (the ABI's layout 1, kernels/README.md): 64 x 64 16-bit values,
// one 8 KiB atom of the 128-byte swizzle.
enum : int { TMA_BOX_ROWS = 64, TMA_BOX_COLS = 64 };

// The ROWS x D tile at row r0 of slice bh into the swizzled layout at dst (column block b at
// b * ROWS * 128 bytes): ROWS/64 x D/64 boxes.
template <int ROWS, int D>
CG_DEV void tma_tile(unsigned dst, const Tmap* map, unsigned bar, int r0, int bh) {
#pragma unroll
    for (int cb = 0; cb < D / TMA_BOX_COLS; ++cb)
#pragma unroll
        for (int rb = 0; rb < ROWS / TMA_BOX_ROWS; ++rb)
            tma_load(dst + cb * (ROWS * 128) + rb * (TMA_BOX_ROWS * 128), map, bar,
                     cb * TMA_BOX_COLS, r0 + rb * TMA_BOX_ROWS, bh);
}

template <int D, int BN, int ST, int NC, int NSUB, int QBUF = 2>
struct WsGeo {
    // An enum for the reason given at Geo.
    enum : int {
        BM = 64 * NC,  // NC consumer warpgroups x 64 rows: one sub-tile
        // Q buffers: with two, the next sub-tile's Q loads during this one; one (QBUF = 1)
        // leaves room for wider K/V tiles
        QB = NSUB > 1 ? QBUF : 1,
        Q_B = BM * D * 2,
        KV_TILE_B = BN * D * 2,
        K_OFF = QB * Q_B,                          // ST K tiles
        V_OFF = QB * Q_B + ST * KV_TILE_B,         // ST V tiles
        // mbarriers: Q full (and, with two Q buffers, Q full / empty per buffer), then K
        // full, K empty, V full, V empty per stage
        BAR_OFF = QB * Q_B + 2 * ST * KV_TILE_B,
        N_QBAR = NSUB > 1 ? 4 : 1,
        // + 1024: the swizzle atoms must be 1024-byte aligned; the base is rounded up at run
        // time.
        SMEM_B = BAR_OFF + 8 * (N_QBAR + 4 * ST) + 1024,
    };
};

// Whether a launch over seq_len keys per row should take 192-key tiles rather than 128-key
// ones: when it needs at most 9/13 (69%) as many of them. A 192-key tile costs about 1.43 of
// a 128-key one at d128 (the gate's A/B on an H200, 2026-12-02, 192-key tiles at every
// length against 128: 22 against 32 tiles at 4096 keys -1.5%, 86 against 128 at 16384
// -4.5%, 9 against 13 at 1664 -1.2%, but 7 against 10 at 1280 +0.3% and 6 against 8 at
// 1024 +6.3%, where the last tile masks half its keys).
CG_DEV bool wide_tiles(int seq_len) {
    return ((seq_len + 191) / 192) * 13 <= ((seq_len + 127) / 128) * 9;
}

// D: head_dim; BN: keys per K/V tile (64, 128 or 192); ST: stages of the K/V ring; NC:
// consumer warpgroups (BM = 64 * NC rows per sub-tile); CREG: the consumers' registers per thread after
// setmaxnreg (the producer keeps 24; 24 * 128 + CREG * 128 * NC must fit the CTA's
// allocation at launch); NSUB: sub-tiles of BM rows per CTA (rows_per_block = NSUB * BM),
// done one after the other by the same warpgroups, the producer loading the next sub-tile's
// Q and first K/V tiles while the consumers finish the current one (the K/V ring and its
// phases simply run on across sub-tiles).
// DYN: NSUB is a maximum; rows_per_block is one sub-tile (BM) and the kernel declares
// NAME_fill = {MINB, NSUB}, so the host sizes grid.x for one wave of CTAs at MINB per SM, each
// doing up to NSUB tiles (kernels/README.md, gpu::device::grid_x); the kernel reads its
// sub-tiles per CTA back from the grid: nsub = ceil(tiles / gridDim.x). Small grids get one
// tile per CTA, larger ones become persistent-like.
template <int D, int BN, int ST, int NC, bool BF16, bool INTRA, bool PP, int CREG, int NSUB,
          bool DYN = false, int QBUF = 2, bool EVEN = false, bool NF = false>
CG_DEV void attn_fwd_ws(const Tmap* tq, const Tmap* tk, const Tmap* tv, float* __restrict__ out,
                        int seq_len, int head_dim, float scale, int causal_i) {
    typedef WsGeo<D, BN, ST, NC, NSUB, QBUF> G;
    static_assert((D == 64 || D == 128) && (BN == 64 || BN == 128 || BN == 192),
                  "wgmma tile shape");
    static_assert(!PP || NC >= 2, "ping-pong needs two consumers");
    static_assert(NSUB >= 1, "sub-tiles");
    static_assert(!EVEN || (NC > 1 && NSUB > 1), "an even split: several consumers, sub-tiles");
    constexpr int BM = G::BM;
    constexpr int NB = BN / 8;   // n-blocks (8 keys) of S
    constexpr int KB = BN / 16;  // k-steps of O += P V
    constexpr int DB = D / 8;    // n-blocks (8 dims) of O
    constexpr int NARROW = 64;  // keys of a narrowed first K/V tile (NF: stage 0 below)

    if (head_dim != D || seq_len <= 0) return;

    extern __shared__ unsigned char smem_ws[];

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    // warp-uniform as far as the compiler can tell (a shuffle from lane 0), so that the
    // producer / consumer split is not a divergent branch around the wgmma's
    const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
    const int wwarp = (tid >> 5) & 3;
    const bool causal = causal_i != 0;

    // The CTAs of a (batch, head) deal its BM-row tiles out like cards, back and forth
    // (round r: tile r * n_ctas + c when r is even, (r + 1) * n_ctas - 1 - c when odd), so
    // that under a causal mask every CTA gets about the same work; each does its tiles the
    // highest (heaviest) first, and the CTAs with the heaviest first tile start first. Tiles
    // past the end of the sequence are skipped by everyone. (With NSUB = 1: tile
    // n_ctas - 1 - blockIdx.x, as in attn_fwd.)
    //
    // EVEN instead (NAME_long_noncausal at d64: three consumers, non-causal launches): the
    // CTAs of a (batch, head) split its rows evenly in 64-row units, one unit per consumer,
    // instead of dealing whole BM-row tiles: CTA blockIdx.x of gridDim.x takes units [u_lo,
    // u_hi), in sub-tiles of NC units from u_lo; in the last one the consumers past u_hi have
    // no rows and keep only the barrier and turn protocol (idle_sub below). The entry declares
    // one unit as rows_per_block, so the host's fill rule sizes the grid by units. Why:
    // 192-row tiles dealt whole left the busiest CTA 6 tiles of work where the average is 5.2
    // (b4h16s2048d64: 11 tiles per head over 2 CTAs, the last one two-thirds past the end yet
    // computed in full; at b1h8s16384d64, 86 tiles per head over 15 CTAs); split evenly, each
    // CTA has 5 tiles and one unit, and [1,8,16384] gets 16 CTAs per head.
    int nsub = NSUB;
    int n_ctas, cta, u_lo = 0, u_hi = 0;
    if (EVEN) {
        const int units = (seq_len + 63) / 64;
        n_ctas = (int)gridDim.x;
        cta = (int)blockIdx.x;
        u_lo = (int)((long long)units * cta / n_ctas);
        u_hi = (int)((long long)units * (cta + 1) / n_ctas);
        nsub = (u_hi - u_lo + NC - 1) / NC;  // any grid: every unit is some CTA's
    } else {
        if (DYN) {
            const int tiles = (seq_len + BM - 1) / BM;
            const int grid_x = (int)gridDim.x;
            nsub = min(NSUB, max(1, (tiles + grid_x - 1) / grid_x));
        }
        n_ctas = (seq_len + BM * nsub - 1) / (BM * nsub);
        cta = n_ctas - 1 - (int)blockIdx.x;
        if (cta < 0) return;
    }
    const int bh = (int)blockIdx.y;
    auto sub_m0 = [&](int t) {
        if (EVEN) return (u_lo + t * NC) * 64;
        const int r = nsub - 1 - t;
        return ((r & 1) ? (r + 1) * n_ctas - 1 - cta : r * n_ctas + cta) * BM;
    };
    // whether sub-tile t (at m0) has rows of this CTA
    auto sub_live = [&](int t, int m0) { return EVEN ? u_lo + t * NC < u_hi : m0 < seq_len; };
    auto sub_kv_end = [&](int m0) {  // keys of the sub-tile at m0 (kv_end as in attn_fwd)
        return causal ? min(seq_len, m0 + BM) : seq_len;
    };
    auto sub_tiles = [&](int m0) { return (sub_kv_end(m0) + BN - 1) / BN; };  // its K/V tiles
    // whether the sub-tile at m0 takes a narrowed tile 0 (NF: the consumers' stage 0, INTRA):
    // 192-key tiles whose keys end at most NARROW keys into the last one
    auto sub_narrow = [&](int m0) {
        const int n = sub_tiles(m0);
        return NF && INTRA && BN == 192 && n > 1 && sub_kv_end(m0) - (n - 1) * BN <= NARROW;
    };
    // the first key of tile j (narrow: tile 0 holds NARROW keys and the others start
    // BN - NARROW keys early, so the last one ends where the keys do)
    auto tile_key0 = [&](int j, bool narrow) {
        return narrow && j > 0 ? j * BN - (BN - NARROW) : j * BN;
    };

    const unsigned base = (smem_u32(smem_ws) + 1023u) & ~1023u;
    const unsigned bar0 = base + G::BAR_OFF;
    auto q_buf = [&](int b) { return base + b * G::Q_B; };
    auto q_full = [&](int b) { return bar0 + 8 * b; };
    auto q_empty = [&](int b) { return bar0 + 8 * (2 + b); };  // NSUB > 1 only
    const unsigned bar_kv = bar0 + 8 * G::N_QBAR;
    auto k_tile = [&](int s) { return base + G::K_OFF + s * G::KV_TILE_B; };
    auto v_tile = [&](int s) { return base + G::V_OFF + s * G::KV_TILE_B; };
    auto k_full = [&](int s) { return bar_kv + 8 * s; };
    auto k_empty = [&](int s) { return bar_kv + 8 * (ST + s); };
    auto v_full = [&](int s) { return bar_kv + 8 * (2 * ST + s); };
    auto v_empty = [&](int s) { return bar_kv + 8 * (3 * ST + s); };

    if (tid == 0) {
#pragma unroll
        for (int b = 0; b < G::QB; ++b) {
            mbar_init(q_full(b), 1);
            if (NSUB > 1) mbar_init(q_empty(b), NC);
        }
#pragma unroll
        for (int s = 0; s < ST; ++s) {
            mbar_init(k_full(s), 1);   // the producer's expect_tx arrival
            mbar_init(v_full(s), 1);
            mbar_init(k_empty(s), NC);  // one arrival per consumer warpgroup
            mbar_init(v_empty(s), NC);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();  // the last CTA-wide barrier: the producer may leave early

    if (wg == 0) {
        // ---- producer
        setmaxnreg_dec<24>();
        if (tid == 0) {
            tma_prefetch(tq);
            tma_prefetch(tk);
            tma_prefetch(tv);
            int g = 0;  // K/V tiles issued so far (ring slot g % ST, phase g / ST)
            int u = 0;  // sub-tiles started so far (Q buffer u % QB)
            for (int t = 0; t < nsub; ++t) {
                const int m0 = sub_m0(t);
                if (!sub_live(t, m0)) continue;
                const int b = u & (G::QB - 1);
                // buffer b last held sub-tile u - QB: wait until every consumer is done with it
                if (NSUB > 1 && u >= G::QB)
                    mbar_wait(q_empty(b), (unsigned)(u / G::QB - 1) & 1u);
                mbar_expect_tx(q_full(b), G::Q_B);
                tma_tile<BM, D>(q_buf(b), tq, q_full(b), m0, bh);
                ++u;
                const int n_tiles = sub_tiles(m0);
                const bool narrow = sub_narrow(m0);
                for (int j = 0; j < n_tiles; ++j, ++g) {
                    const int s = g % ST;
                    const unsigned ph = (unsigned)(g / ST) & 1u;
                    // slot s last held tile g - ST: wait until every consumer released it
                    if (g >= ST) mbar_wait(k_empty(s), ph ^ 1u);
                    mbar_expect_tx(k_full(s), G::KV_TILE_B);
                    tma_tile<BN, D>(k_tile(s), tk, k_full(s), tile_key0(j, narrow), bh);
                    if (g >= ST) mbar_wait(v_empty(s), ph ^ 1u);
                    mbar_expect_tx(v_full(s), G::KV_TILE_B);
                    tma_tile<BN, D>(v_tile(s), tv, v_full(s), tile_key0(j, narrow), bh);
                }
            }
        }
        return;
    }

    // ---- consumers
    setmaxnreg_inc<CREG>();
    const int cw = wg - 1;  // consumer 0 .. NC-1: rows m0 + 64 * cw ..
    const bool signal = (tid & 127) == 0;  // the thread that releases slots for its warpgroup
    const float sl2 = scale * 1.4426950408889634f;

    // ping-pong turns, round robin: wait for mine (barrier 1 + cw, which the previous
    // consumer signals), then hand over to the next (barrier 1 + (cw + 1) % NC)
    auto turn_begin = [&]() {
        if (PP) named_sync(1 + cw);
    };
    auto turn_end = [&]() {
        if (PP) named_arrive(1 + (cw + 1) % NC);
    };
    if (PP && cw == NC - 1) named_arrive(1);  // consumer 0 goes first

    // A consumer with no rows in a sub-tile (EVEN) does none of its math but every wait,
    // turn and release the others count on, in their order: Q full; then per turn the K/V
    // tiles that turn's wgmma's would read, the turn, and their release (waiting for a
    // tile before releasing it keeps each release in that tile's phase).
    auto idle_sub = [&](int n_tiles, int u0, int g0) {  // u0, g0: sub-tiles, K/V tiles before
        const int b = u0 & (G::QB - 1);
        mbar_wait(q_full(b), (unsigned)(u0 / G::QB) & 1u);
        auto turn = [&](int jk, int jv) {  // Q K_jk^T and / or P V_jv (-1: none)
            if (jk >= 0) mbar_wait(k_full((g0 + jk) % ST), (unsigned)((g0 + jk) / ST) & 1u);
            if (jv >= 0) mbar_wait(v_full((g0 + jv) % ST), (unsigned)((g0 + jv) / ST) & 1u);
            turn_begin();
            turn_end();
            if (signal && jk >= 0) mbar_arrive(k_empty((g0 + jk) % ST));
            if (signal && jv >= 0) mbar_arrive(v_empty((g0 + jv) % ST));
        };
        if (INTRA) {
            for (int j = 0; j <= n_tiles; ++j) turn(j < n_tiles ? j : -1, j - 1);
        } else {
            for (int j = 0; j < n_tiles; ++j) {
                turn(j, -1);
                turn(-1, j);
            }
        }
        if (NSUB > 1 && signal) mbar_arrive(q_empty(b));
    };

    int g = 0;  // K/V tiles consumed so far, as the producer counts them
    int u = 0;  // sub-tiles done so far
    for (int t = 0; t < nsub; ++t) {
        const int m0 = sub_m0(t);
        if (!sub_live(t, m0)) continue;
        const int n_tiles = sub_tiles(m0);
        const int b = u & (G::QB - 1);
        if (EVEN && u_lo + t * NC + cw >= u_hi) {
            idle_sub(n_tiles, u, g);
            g += n_tiles;
            ++u;
            continue;
        }

        float o[DB * 4];
        float s[NB * 4];
        unsigned pf[KB][4];
#pragma unroll
        for (int i = 0; i < DB * 4; ++i) o[i] = 0.f;
#pragma unroll
        for (int i = 0; i < NB * 4; ++i) s[i] = 0.f;

        float m_r[2], l_r[2], alpha[2];
        int lim[2];
        const int warp_first = m0 + cw * 64 + wwarp * 16;
        init_rows(m_r, l_r, lim, warp_first, lane, seq_len, causal);
        const int cta_lim_min = causal ? min(m0, seq_len - 1) : seq_len - 1;  // row_limit
        const unsigned q_wg = q_buf(b) + cw * 64 * 128;  // this warpgroup's Q rows, block 0

        auto issue_qk = [&](unsigned kt) { wg_issue_qk<D, BN, BM, BF16>(s, q_wg, kt); };
        auto issue_pv = [&](unsigned vt) { wg_issue_pv<D, BN, BF16>(o, pf, vt); };
        const bool narrow = sub_narrow(m0);
        auto scores_to_p = [&](int j) {  // S_j (landed) -> masked, softmax
            // the row maxima by VIMNMX3 at d128 only: the d64 kernels measured slower with it
            scores_to_p_tile<BN, D == 128>(s, tile_key0(j, narrow), lane, lim, cta_lim_min,
                                           m_r, l_r, alpha, sl2);
        };
        auto o_landed = [&]() {
#pragma unroll
            for (int i = 0; i < DB * 4; ++i) reg_fence(o[i]);
        };
        auto slot = [&](int j) { return (g + j) % ST; };
        auto phase = [&](int j) { return (unsigned)((g + j) / ST) & 1u; };

        mbar_wait(q_full(b), (unsigned)(u / G::QB) & 1u);
        if constexpr (!INTRA) {
            for (int j = 0; j < n_tiles; ++j) {
                const int st = slot(j);
                mbar_wait(k_full(st), phase(j));
                turn_begin();
                wg_fence();
                issue_qk(k_tile(st));
                wg_commit();
                turn_end();
                wg_wait<0>();
                if (signal) mbar_arrive(k_empty(st));
                scores_to_p(j);
                rescale_o<DB>(o, alpha);
                pack_p<KB, BF16>(s, pf);
                mbar_wait(v_full(st), phase(j));
                turn_begin();
                wg_fence();
                issue_pv(v_tile(st));
                wg_commit();
                turn_end();
                wg_wait<0>();
                o_landed();
                if (signal) mbar_arrive(v_empty(st));
            }
        } else {
            // Stage 0: S_0 alone. Where the sub-tile's keys end at most 64 keys into their
            // last 192-key tile (narrow), tile 0 is those 64 keys instead (its first 64: the
            // others start 128 keys early, tile_key0), so that no tile computes keys only to
            // mask them: at 4096 keys, 22 tiles of 192 held 64 keys in the last, 3% of the
            // sub-tile's Q K^T, softmax and P V. The narrow parts (stage 0, and tile 1 with
            // P V of tile 0) are whole copies, wgmma fence to wait: a branch on the width
            // inside a stage made ptxas serialise every wgmma of the kernel (C7511, C7515;
            // +14 ... +48% on an H200, 2026-12-03), and a narrowed last tile, whose P V
            // overlaps a full Q K^T, was serialised by one NVRTC version (13.5). Without NF, stage 0 is the code as it was (through the
            // lambdas below ptxas chose otherwise, and NAME's SASS stays byte-identical).
            auto stage0_begin = [&]() {
                mbar_wait(k_full(slot(0)), phase(0));
                turn_begin();
                wg_fence();
            };
            auto stage0_end = [&]() {
                wg_commit();
                turn_end();
                wg_wait<0>();
                if (signal) mbar_arrive(k_empty(slot(0)));
                // one Q buffer: the sub-tile's last Q K^T has completed, so the next
                // sub-tile's Q may land while this one finishes
                if (NSUB > 1 && G::QB == 1 && signal && n_tiles == 1) mbar_arrive(q_empty(b));
            };
            if constexpr (!NF) {
                mbar_wait(k_full(slot(0)), phase(0));
                turn_begin();
                wg_fence();
                issue_qk(k_tile(slot(0)));
                wg_commit();
                turn_end();
                wg_wait<0>();
                if (signal) mbar_arrive(k_empty(slot(0)));
                // one Q buffer: the sub-tile's last Q K^T has completed, so the next
                // sub-tile's Q may land while this one finishes
                if (NSUB > 1 && G::QB == 1 && signal && n_tiles == 1) mbar_arrive(q_empty(b));
                scores_to_p(0);
                pack_p<KB, BF16>(s, pf);  // O is 0: no rescale
            } else if (!narrow) {
                stage0_begin();
                issue_qk(k_tile(slot(0)));
                stage0_end();
                scores_to_p(0);
                pack_p<KB, BF16>(s, pf);  // O is 0: no rescale
            } else {
                stage0_begin();
                wg_issue_qk<D, BN, BM, BF16, NARROW>(s, q_wg, k_tile(slot(0)));
                stage0_end();
                scores_to_p_tile<NARROW, D == 128>(s, 0, lane, lim, cta_lim_min, m_r, l_r,
                                                   alpha, sl2);
                pack_p<NARROW / 16, BF16>(s, pf);
            }
            if (narrow) {  // tile 1 with P V of the narrow tile 0 (n_tiles > 1: see sub_narrow)
                const int st = slot(1), sp = slot(0);
                mbar_wait(k_full(st), phase(1));
                mbar_wait(v_full(sp), phase(0));
                turn_begin();
                wg_fence();
                issue_qk(k_tile(st));
                wg_commit();
                wg_issue_pv<D, BN, BF16, NARROW>(o, pf, v_tile(sp));
                wg_commit();
                turn_end();
                wg_wait<1>();
                if (signal) mbar_arrive(k_empty(st));
                if (NSUB > 1 && G::QB == 1 && signal && n_tiles == 2) mbar_arrive(q_empty(b));
                scores_to_p(1);
                wg_wait<0>();
                o_landed();
                if (signal) mbar_arrive(v_empty(sp));
                rescale_o<DB>(o, alpha);
                pack_p<KB, BF16>(s, pf);
            }
            for (int j = narrow ? 2 : 1; j < n_tiles; ++j) {
                const int st = slot(j), sp = slot(j - 1);
                mbar_wait(k_full(st), phase(j));
                mbar_wait(v_full(sp), phase(j - 1));
                turn_begin();
                wg_fence();
                issue_qk(k_tile(st));
                wg_commit();
                issue_pv(v_tile(sp));
                wg_commit();
                turn_end();
                wg_wait<1>();  // S_j is in; P_{j-1} V_{j-1} may still be running
                if (signal) mbar_arrive(k_empty(st));
                // one Q buffer: after the sub-tile's last Q K^T the next sub-tile's Q may land
                // while the last softmax and P V run (with two, the next one is in already;
                // releasing this one early measured +0.8% at b8h16s512d64, 2026-12-02)
                if (NSUB > 1 && G::QB == 1 && signal && j == n_tiles - 1)
                    mbar_arrive(q_empty(b));
                scores_to_p(j);
                wg_wait<0>();
                o_landed();
                if (signal) mbar_arrive(v_empty(sp));
                rescale_o<DB>(o, alpha);
                pack_p<KB, BF16>(s, pf);
            }
            const int sl = slot(n_tiles - 1);  // (with narrow, the last tile is whole)
            mbar_wait(v_full(sl), phase(n_tiles - 1));
            turn_begin();
            wg_fence();
            issue_pv(v_tile(sl));
            wg_commit();
            turn_end();
            wg_wait<0>();
            o_landed();
            if (signal) mbar_arrive(v_empty(sl));
        }
        // every QK of this sub-tile has completed: its Q buffer may be refilled (with INTRA
        // and one Q buffer it was released after the last QK, above)
        if ((!INTRA || G::QB > 1) && NSUB > 1 && signal) mbar_arrive(q_empty(b));
        g += n_tiles;
        ++u;
        store_rows<D>(out + (size_t)bh * (size_t)seq_len * D, o, l_r, warp_first, lane, seq_len);
    }
    if (PP && cw == 0) named_sync(1);  // the last consumer's last hand-over
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace cg_attn

// ---------------------------------------------------------------- extern "C" entry points

// BY_COST: NAME_causal's order of units (deal_causal_by_cost, MINB CTAs a SM).
#define CG_ATTN_KERNEL_AS(NAME, BY_COST, D, BM, BN, NW, MI, QREG, ST, BF16, MINB)             \
    extern "C" {                                                                              \
    __constant__ int NAME##_launch[3] = {BM, NW * 32,                                         \
                                         cg_attn::Geo<D, BM, BN, QREG, ST>::SMEM_B};           \
    }                                                                                         \
    extern "C" __global__ void __launch_bounds__(NW * 32, MINB)                               \
        NAME(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,       \
             const unsigned short* __restrict__ v, float* __restrict__ out, int seq_len,       \
             int head_dim, float scale, int causal) {                                         \
        cg_attn::attn_fwd<D, BM, BN, NW, MI, QREG, ST, BF16, BY_COST, MINB>(                  \
            q, k, v, out, seq_len, head_dim, scale, causal);                                  \
    }
#define CG_ATTN_KERNEL(NAME, D, BM, BN, NW, MI, QREG, ST, BF16, MINB)                          \
    CG_ATTN_KERNEL_AS(NAME, false, D, BM, BN, NW, MI, QREG, ST, BF16, MINB)

// NAME's d64 tile as a filling form: NAME_fill = {MINB, MAXT}, and NAME_fill_or_one, so that
// the host launches one tile a CTA where the fill grid's per-head rounding would cost the
// busiest SM a round (an L4's 58 SMs: kernels/README.md). On one tile a CTA NAME runs its own
// body (attn_fwd), not the fill loop: at one unit the loop cost +1.36% on [4,16,512], the
// branch +0.53% (H100).
#define CG_ATTN_KERNEL_FILL(NAME, D, BM, BN, NW, MI, BF16, MINB, MAXT)                       \
    extern "C" {                                                                              \
    __constant__ int NAME##_launch[3] = {BM, NW * 32,                                         \
                                         cg_attn::Geo<D, BM, BN, true, 2>::SMEM_B};            \
    __constant__ int NAME##_fill[2] = {MINB, MAXT};                                           \
    __constant__ int NAME##_fill_or_one[1] = {1};                                             \
    }                                                                                         \
    extern "C" __global__ void __launch_bounds__(NW * 32, MINB)                               \
        NAME(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,       \
             const unsigned short* __restrict__ v, float* __restrict__ out, int seq_len,       \
             int head_dim, float scale, int causal) {                                         \
        if ((int)gridDim.x >= (seq_len + BM - 1) / BM)                                       \
            cg_attn::attn_fwd<D, BM, BN, NW, MI, true, 2, BF16, false, MINB>(                 \
                q, k, v, out, seq_len, head_dim, scale, causal);                              \
        else                                                                                  \
            cg_attn::attn_fwd_fill<D, BM, BN, NW, MI, BF16>(q, k, v, out, seq_len, head_dim,  \
                                                            scale, causal);                   \
    }

#define CG_ATTN_WG_KERNEL(NAME, D, BN, NWG, BF16, MINB, PIPE)                                       \
    extern "C" {                                                                              \
    __constant__ int NAME##_launch[3] = {64 * NWG, 128 * NWG,                                 \
                                         cg_attn::WgGeo<D, BN, NWG>::SMEM_B};                  \
    }                                                                                         \
    extern "C" __global__ void __launch_bounds__(128 * NWG, MINB)                             \
        NAME(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,       \
             const unsigned short* __restrict__ v, float* __restrict__ out, int seq_len,       \
             int head_dim, float scale, int causal) {                                         \
        cg_attn::attn_fwd_wg<D, BN, NWG, BF16, PIPE>(q, k, v, out, seq_len, head_dim, scale,    \
                                                    causal);                                  \
    }

// The warp-specialised kernel takes the q, k, v TMA tensor maps after the eight arguments
// (NAME_tma = {1}: layout 1 of kernels/README.md); q/k/v pointers stay in the signature.
#define CG_WS_ENTRY(NAME, NC, MINB)                                                           \
    extern "C" __global__ void __launch_bounds__(128 * (NC + 1), MINB)                        \
        NAME(const unsigned short* __restrict__ q, const unsigned short* __restrict__ k,       \
             const unsigned short* __restrict__ v, float* __restrict__ out, int seq_len,       \
             int head_dim, float scale, int causal, const __grid_constant__ cg_attn::Tmap tq,  \
             const __grid_constant__ cg_attn::Tmap tk, const __grid_constant__ cg_attn::Tmap tv)
// What an entry passes on to attn_fwd_ws.
#define CG_WS_ARGS &tq, &tk, &tv, out, seq_len, head_dim, scale, causal
#define CG_ATTN_WS_KERNEL_N(NAME, D, BN, ST, NC, BF16, INTRA, PP, MINB, CREG, NSUB)           \
    extern "C" {                                                                              \
    __constant__ int NAME##_launch[3] = {64 * NC * NSUB, 128 * (NC + 1),                      \
                                         cg_attn::WsGeo<D, BN, ST, NC, NSUB>::SMEM_B};         \
    __constant__ int NAME##_tma[1] = {1};                                                     \
    }                                                                                         \
    CG_WS_ENTRY(NAME, NC, MINB) {                                                             \
        cg_attn::attn_fwd_ws<D, BN, ST, NC, BF16, INTRA, PP, CREG, NSUB>(                     \
            CG_WS_ARGS);                                                                      \
    }
// The filling form (DYN above): rows_per_block = one sub-tile, NAME_fill = {MINB, NSUB};
// QBUF Q buffers (2, or 1 to make room for wider K/V tiles).
#define CG_ATTN_WS_KERNEL_DYN(NAME, D, BN, ST, NC, BF16, INTRA, PP, MINB, CREG, NSUB, QBUF)   \
    extern "C" {                                                                              \
    __constant__ int NAME##_launch[3] = {64 * NC, 128 * (NC + 1),                             \
                                         cg_attn::WsGeo<D, BN, ST, NC, NSUB, QBUF>::SMEM_B};   \
    __constant__ int NAME##_tma[1] = {1};                                                     \
    __constant__ int NAME##_fill[2] = {MINB, NSUB};                                           \
    }                                                                                         \
    CG_WS_ENTRY(NAME, NC, MINB) {                                                             \
        cg_attn::attn_fwd_ws<D, BN, ST, NC, BF16, INTRA, PP, CREG, NSUB, true, QBUF>(     \
            CG_WS_ARGS);                                                                      \
    }
// The evenly split form (EVEN above; non-causal launches): rows_per_block is one 64-row unit
// and NAME_fill = {MINB, 64}, so the host sizes one wave of CTAs at MINB per SM over a head's
// units, each taking up to 64 of them (the host's most); the kernel splits a head's units
// evenly over gridDim.x. Q double-buffered (NSUB = 2: the sub-tile count is the kernel's own).
// NAME_tiles_at_once = {NC}: the NC consumer warpgroups compute NC units at a time, which the
// host needs to weigh this form against NAME / NAME_long by the busiest SM's passes.
#define CG_ATTN_WS_KERNEL_EVEN(NAME, D, BN, ST, NC, BF16, INTRA, PP, MINB, CREG)                \
    extern "C" {                                                                              \
    __constant__ int NAME##_launch[3] = {64, 128 * (NC + 1),                                  \
                                         cg_attn::WsGeo<D, BN, ST, NC, 2, 2>::SMEM_B};         \
    __constant__ int NAME##_tma[1] = {1};                                                     \
    __constant__ int NAME##_fill[2] = {MINB, 64};                                             \
    __constant__ int NAME##_tiles_at_once[1] = {NC};                                          \
    }                                                                                         \
    CG_WS_ENTRY(NAME, NC, MINB) {                                                             \
        cg_attn::attn_fwd_ws<D, BN, ST, NC, BF16, INTRA, PP, CREG, 2, true, 2, true>(          \
            CG_WS_ARGS);                                                                      \
    }
// The larger dynamic shared memory of two WsGeo's (ST stages, NC consumers, NSUB sub-tiles;
// the first with BN_A-key tiles and QB_A Q buffers, the second with BN_B and QB_B): what a
// kernel that takes either tile shape declares in NAME_launch.
#define CG_WS_SMEM_MAX(D, ST, NC, NSUB, BN_A, QB_A, BN_B, QB_B)                               \
    ((int)cg_attn::WsGeo<D, BN_A, ST, NC, NSUB, QB_A>::SMEM_B >                               \
             (int)cg_attn::WsGeo<D, BN_B, ST, NC, NSUB, QB_B>::SMEM_B                         \
         ? (int)cg_attn::WsGeo<D, BN_A, ST, NC, NSUB, QB_A>::SMEM_B                           \
         : (int)cg_attn::WsGeo<D, BN_B, ST, NC, NSUB, QB_B>::SMEM_B)
// The sub-tiled form (CG_ATTN_WS_KERNEL_N) with the tile chosen per launch: causal launches,
// and those that wide_tiles() turns down, take 128-key tiles and two Q buffers; the rest
// 192-key tiles and one Q buffer (released after the sub-tile's last Q K^T, so the next
// sub-tile's Q lands during its last softmax and P V). NAME_launch's shared memory is the
// larger of the two.
#define CG_ATTN_WS_KERNEL_WIDE(NAME, D, ST, NC, BF16, INTRA, PP, MINB, CREG, NSUB)              \
    extern "C" {                                                                              \
    __constant__ int NAME##_launch[3] = {                                                     \
        64 * NC * NSUB, 128 * (NC + 1), CG_WS_SMEM_MAX(D, ST, NC, NSUB, 128, 2, 192, 1)};     \
    __constant__ int NAME##_tma[1] = {1};                                                     \
    }                                                                                         \
    CG_WS_ENTRY(NAME, NC, MINB) {                                                             \
        if (causal || !cg_attn::wide_tiles(seq_len))                                          \
            cg_attn::attn_fwd_ws<D, 128, ST, NC, BF16, INTRA, PP, CREG, NSUB, false, 2>(      \
                CG_WS_ARGS);                                                                  \
        else                                                                                  \
            cg_attn::attn_fwd_ws<D, 192, ST, NC, BF16, INTRA, PP, CREG, NSUB, false, 1>(      \
                CG_WS_ARGS);                                                                  \
    }
// The sub-tiled form with 192-key tiles and one Q buffer only, and a first tile of NARROW
// keys where the keys end at most NARROW into the last tile (NF), as NAME_long_noncausal from
// NAME_long_noncausal_from = {FROM} keys: the same grid as CG_ATTN_WS_KERNEL_WIDE's, whose
// NAME then keeps the shorter lengths and causal launches (kernels/README.md: a form of the
// same geometry is taken from its from alone).
#define CG_ATTN_WS_KERNEL_NARROW(NAME, D, ST, NC, BF16, INTRA, PP, MINB, CREG, NSUB, FROM)      \
    extern "C" {                                                                              \
    __constant__ int NAME##_launch[3] = {                                                     \
        64 * NC * NSUB, 128 * (NC + 1), CG_WS_SMEM_MAX(D, ST, NC, NSUB, 128, 2, 192, 1)};     \
    __constant__ int NAME##_tma[1] = {1};                                                     \
    __constant__ int NAME##_from[1] = {FROM};                                                 \
    }                                                                                         \
    CG_WS_ENTRY(NAME, NC, MINB) {                                                             \
        cg_attn::attn_fwd_ws<D, 192, ST, NC, BF16, INTRA, PP, CREG, NSUB, false, 1, false,    \
                             true>(CG_WS_ARGS);                                               \
    }
#define CG_ATTN_WS_KERNEL(NAME, D, BN, ST, NC, BF16, INTRA, PP, MINB, CREG) \
    CG_ATTN_WS_KERNEL_N(NAME, D, BN, ST, NC, BF16, INTRA, PP, MINB, CREG, 1)

// Shipped configurations (chosen by timing variants on an H200, docs/KERNEL_NOTES.md).
//
// Hopper with sm_90a features (H100, H200): the warp-specialised kernel (attn_fwd_ws).
//   (name, D, BN keys/tile, ST stages, NC consumer warpgroups, bf16, INTRA: S_j issued with
//    P_{j-1} V_{j-1}, PP ping-pong, min CTAs/SM, consumer registers[, sub-tiles per CTA])
// Each option was kept only when the gate's A/B against the step before called it an
// improvement (docs/KERNEL_NOTES.md section 8).
#if defined(CG_HAVE_WGMMA) && !defined(CG_ADA_TILES)
// d64 : a TMA producer and one consumer warpgroup of 64 rows, 128-key tiles, INTRA,
//       2 CTAs per SM (setmaxnreg 24 / 232); NAME_fill = {2, 4}: the host sizes
//       the grid for one wave at 2 CTAs per SM, each CTA doing up to 4 tiles dealt back and
//       forth (Q double-buffered, 81 KiB smem).
CG_ATTN_WS_KERNEL_DYN(attention_fwd_f16_d64, 64, 128, 2, 1, false, true, false, 2, 232, 4, 2)
CG_ATTN_WS_KERNEL_DYN(attention_fwd_bf16_d64, 64, 128, 2, 1, true, true, false, 2, 232, 4, 2)
// d64 small grids (NAME_small: NAME's one-tile grid has fewer CTAs than SMs): the same
//       kernel, one tile per CTA (one Q buffer, 73 KiB).
// d64 long sequences (NAME_long, from seq_len NAME_long_from on): NAME_fill = {2, 8}, one
//       wave of CTAs at 2 per SM, up to 8 tiles each dealt back and forth (the deal evens
//       out the causal mask's triangle), 128-key tiles, two Q buffers. The gate's A/B on an
//       H200, 2026-12-02 (docs/KERNEL_LOG.md): b4h16s2048d64 causal -8.3%, b2h16s4096d64
//       causal -7.2%, b1h16s8192d64 causal -5.9%.
// d64 long non-causal sequences (NAME_long_noncausal, from seq_len NAME_long_noncausal_from
//       on): three consumer warpgroups of 64 rows (192 rows per tile) with 160 registers,
//       ping-pong and INTRA, one CTA per SM; the three share each K/V tile. A
//       head's rows are split evenly over its CTAs in 64-row units (EVEN; rows_per_block 64,
//       NAME_fill = {1, 64}); the gate's A/B on an H200, 2026-12-02 (seventh session), against
//       whole 192-row tiles: b4h16s2048d64 -5.6%, b1h16s8192d64 -5.7%, b1h8s16384d64 -5.2%.
//       The gate's A/B on an H200, 2026-12-02 (fifth session), against the
//       `_long` form with 192-key tiles: b2h16s1536d64 -10.2%, b4h16s2048d64 -5.0%, 8k and
//       16k keys within 0.3%. Causal launches lose 9-11% with it (not profiled: a 192-row
//       tile crosses more of the diagonal than three dealt 64-row ones), so they keep
//       NAME_long.
CG_ATTN_WS_KERNEL(attention_fwd_f16_d64_small, 64, 128, 2, 1, false, true, false, 2, 232)
CG_ATTN_WS_KERNEL(attention_fwd_bf16_d64_small, 64, 128, 2, 1, true, true, false, 2, 232)
CG_ATTN_WS_KERNEL_DYN(attention_fwd_f16_d64_long, 64, 128, 2, 1, false, true, false, 2, 232, 8, 2)
CG_ATTN_WS_KERNEL_DYN(attention_fwd_bf16_d64_long, 64, 128, 2, 1, true, true, false, 2, 232, 8, 2)
extern "C" __constant__ int attention_fwd_f16_d64_long_from[1] = {1536};
extern "C" __constant__ int attention_fwd_bf16_d64_long_from[1] = {1536};
CG_ATTN_WS_KERNEL_EVEN(attention_fwd_f16_d64_long_noncausal, 64, 128, 2, 3, false, true, true, 1,
                       160)
CG_ATTN_WS_KERNEL_EVEN(attention_fwd_bf16_d64_long_noncausal, 64, 128, 2, 3, true, true, true, 1,
                       160)
extern "C" __constant__ int attention_fwd_f16_d64_long_noncausal_from[1] = {512};
extern "C" __constant__ int attention_fwd_bf16_d64_long_noncausal_from[1] = {512};
// d64 short non-causal sequences (NAME_short_noncausal, up to seq_len NAME_short_noncausal_to):
//       one 64-row unit per CTA, 64-key tiles, no INTRA, four CTAs per SM (64 registers at
//       launch, 104 for the consumer after setmaxnreg; 41 KiB): an SM's four units at once
//       where NAME runs them in two passes of two. The gate's A/B on an H200, 2026-12-04
//       (eighteenth session, this tile as NAME): b4h16s512d64 -2.71%, b6h8s512d64 -14.45%,
//       b8h16s256d64 -4.12%; longer rows lose (a 64-key step without INTRA costs more per
//       key: b2h16s1024d64 +1.2%, b2h16s1280d64 +22.5%) and causal launches 7-28% (no deal
//       of the triangle's tiles), so the host takes it for non-causal launches up to 640 keys
//       where its busiest SM costs less (a pass costing 1.5 NAME tiles beyond its rows).
CG_ATTN_WS_KERNEL(attention_fwd_f16_d64_short_noncausal, 64, 64, 2, 1, false, false, false, 4,
                  104)
CG_ATTN_WS_KERNEL(attention_fwd_bf16_d64_short_noncausal, 64, 64, 2, 1, true, false, false, 4,
                  104)
extern "C" __constant__ int attention_fwd_f16_d64_short_noncausal_to[1] = {640};
extern "C" __constant__ int attention_fwd_bf16_d64_short_noncausal_to[1] = {640};

// d128: two consumer warpgroups of 64 rows with 240 registers, ping-pong and INTRA,
//       1 CTA per SM; two sub-tiles of 128 rows per CTA dealt back and forth
//       (rows_per_block 256). Causal launches and short sequences: 128-key tiles, Q
//       double-buffered; the rest (wide_tiles) 192-key tiles, one Q buffer (225 KiB smem).
//       The gate's A/B on an H200, 2026-12-02 (docs/KERNEL_LOG.md): b1h8s16384d128 -4.5%,
//       b1h16s8192d128 bf16 -4.0%, b2h16s4096d128 -1.5%.
//       NAME_long_noncausal, non-causal launches from 1408 keys: 192-key tiles only, and
//       where the keys end at most 64 into the last tile, a first tile of 64 keys (NF;
//       attn_fwd_ws, stage 0): at 4096 keys 21 tiles and one of 64 keys, where NAME computes
//       22 of 192 and masks 128 keys of the last (the gate's A/B on an H200, 2026-12-03:
//       b2h16s4096d128 -2.37%, b1h8s16384d128 -1.30%, 1792 keys -2.58%, 1408 keys -1.52%).
//       A separate entry: ptxas allocates registers per function, and the narrowed tile in
//       NAME's function made its 128-key path 0.7 ... 3.2% slower; shorter lengths stay on
//       NAME, where 192-key tiles with the narrowed tile measured +0.6% (1000 keys), +1.3%
//       (1280) and +2.6% (864) against NAME's choice.
CG_ATTN_WS_KERNEL_WIDE(attention_fwd_f16_d128, 128, 2, 2, false, true, true, 1, 240, 2)
CG_ATTN_WS_KERNEL_WIDE(attention_fwd_bf16_d128, 128, 2, 2, true, true, true, 1, 240, 2)
CG_ATTN_WS_KERNEL_NARROW(attention_fwd_f16_d128_long_noncausal, 128, 2, 2, false, true, true, 1,
                         240, 2, 1408)
CG_ATTN_WS_KERNEL_NARROW(attention_fwd_bf16_d128_long_noncausal, 128, 2, 2, true, true, true, 1,
                         240, 2, 1408)
#else
// Everything else (the L4, plain sm_90, Ampere): the mma.sync kernel.
//   (name, D, BM rows/CTA, BN keys/tile, NW warps, MI 16-row blocks/warp, Q in registers,
//    ST pipeline stages, bf16, min CTAs/SM for __launch_bounds__)
// d64 : 128 rows x 64 keys, 4 warps x 32 rows, Q in registers, 2 stages, 32 KiB smem
//       (2 CTAs = 8 warps per SM on both H200 and L4)
// as a filling form of at most two units a CTA (four: +3.2% on [16,16,512], H100)
CG_ATTN_KERNEL_FILL(attention_fwd_f16_d64, 64, 128, 64, 4, 2, false, 2, 2)
CG_ATTN_KERNEL_FILL(attention_fwd_bf16_d64, 64, 128, 64, 4, 2, true, 2, 2)
// Causal launches on NAME's tile (NAME_causal, kernels/README.md: the host launches it for
// every causal launch it would give NAME): the units dealt by cost (deal_causal_by_cost), the
// heaviest row tiles first across the grid, paired with the lightest on a grid of one wave.
// The pairing alone, on an H100, CG_ADA_TILES, 2026-12-06: -7.5% (160 CTAs) ... -28.4% (256
// CTAs of 16 row tiles) on seven grids of one wave against NAME.
CG_ATTN_KERNEL_AS(attention_fwd_f16_d64_causal, true, 64, 128, 64, 4, 2, true, 2, false, 2)
CG_ATTN_KERNEL_AS(attention_fwd_bf16_d64_causal, true, 64, 128, 64, 4, 2, true, 2, true, 2)
// d64 small grids (NAME_small, kernels/README.md: the host launches it when NAME's grid would
// have fewer CTAs than the GPU has SMs, and for a non-causal grid whose busiest SM it makes
// cheaper): 64 rows x 64 keys, 4 warps x 16 rows, 32 KiB, 3 CTAs per SM. Twice the CTAs keep
// more SMs busy: 27% faster at [1,8,512] on an H200, but 17% slower at [4,16,2048] where the
// 128-row tile's 32 rows per warp matter (KERNEL_NOTES.md).
CG_ATTN_KERNEL(attention_fwd_f16_d64_small, 64, 64, 64, 4, 1, true, 2, false, 3)
CG_ATTN_KERNEL(attention_fwd_bf16_d64_small, 64, 64, 64, 4, 1, true, 2, true, 3)
// d128 depends on the shared memory per SM of the target (the source is the same; the
// Rust side reads whichever NAME_launch the module it compiled carries):
//  * parts with ~100 KB of shared memory per SM (sm_86, sm_89 = L4, sm_120): the 4-warp
//    Hopper tile below (64 KiB) would leave one CTA = 4 warps per SM, so use
//    128 rows x 64 keys, 8 warps x 16 rows, Q in registers -> 8 warps per SM (one CTA, by
//    registers), with 3 stages (96 KiB, within the 99 KiB a block may take there): the
//    gate's A/B of CG_ADA_TILES on an H200, 2026-12-02, -2.4 ... -2.5% on the three
//    configs/pr-ada.yaml shapes against 2 stages (64 KiB);
//  * everything else (sm_80, sm_90 = H200, ...): 128 rows x 32 keys, 4 warps x 32 rows,
//    Q re-read from smem, 64 KiB -> 2 CTAs = 8 warps per SM on an H200.
// -DCG_ADA_TILES forces the first set on any GPU (bench/kernel_check.py tests it on H200).
#if defined(CG_ADA_TILES) || \
    (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 890 || __CUDA_ARCH__ >= 1200))
CG_ATTN_KERNEL(attention_fwd_f16_d128, 128, 128, 64, 8, 1, true, 3, false, 1)
CG_ATTN_KERNEL(attention_fwd_bf16_d128, 128, 128, 64, 8, 1, true, 3, true, 1)
CG_ATTN_KERNEL_AS(attention_fwd_f16_d128_causal, true, 128, 128, 64, 8, 1, true, 3, false, 1)
CG_ATTN_KERNEL_AS(attention_fwd_bf16_d128_causal, true, 128, 128, 64, 8, 1, true, 3, true, 1)
// d128 non-causal launches of 256 to 319 keys (NAME_long_noncausal from
//    NAME_long_noncausal_from to NAME_long_noncausal_to; the host takes it only where NAME's
//    grid needs a second CTA on some SM): 128 rows x 32 keys, 4 warps x 32 rows (each K/V
//    fragment feeds two mma's: half the ldmatrix traffic per mma of 16 rows per warp), Q kept
//    in smem, the split pipeline (one K and one V buffer): 48 KiB, so two CTAs = 8 warps per
//    SM on the L4 (255 registers). FA2 runs this tile on sm_86/sm_89 for non-causal d128. It
//    took every non-causal launch from 256 keys until NAME went on the mbarrier ring; the
//    gate's A/B on an H200 (CG_ADA_TILES, 2026-12-05, twenty-fifth session) of NAME against
//    it on non-causal launches: 256 keys +2.83 / +3.10% (two calls), 320 -19.34%, 384 -19.79%
//    (three CTAs on the busiest SM: this tile's third runs alone), 447 -0.46%, 448 -1.19%,
//    512 -0.75%, 1024 -2.88%, 2048 -4.08%, 4096 -5.08% (bench/variants/ncname.patch). NAME's
//    64-key tiles pay half this tile's softmax and rescale a key, and its ring no barrier;
//    this tile's two CTAs a SM hide the start of a short walk better. Causal launches stay on
//    NAME (+4.0% and +9.3% with this tile: a warp's 32 rows cross the diagonal on more tiles;
//    nineteenth session).
CG_ATTN_KERNEL(attention_fwd_f16_d128_long_noncausal, 128, 128, 32, 4, 2, false, 1, false, 2)
CG_ATTN_KERNEL(attention_fwd_bf16_d128_long_noncausal, 128, 128, 32, 4, 2, false, 1, true, 2)
extern "C" __constant__ int attention_fwd_f16_d128_long_noncausal_from[1] = {256};
extern "C" __constant__ int attention_fwd_bf16_d128_long_noncausal_from[1] = {256};
extern "C" __constant__ int attention_fwd_f16_d128_long_noncausal_to[1] = {319};
extern "C" __constant__ int attention_fwd_bf16_d128_long_noncausal_to[1] = {319};
#else
CG_ATTN_KERNEL(attention_fwd_f16_d128, 128, 128, 32, 4, 2, false, 2, false, 2)
CG_ATTN_KERNEL(attention_fwd_bf16_d128, 128, 128, 32, 4, 2, false, 2, true, 2)
CG_ATTN_KERNEL_AS(attention_fwd_f16_d128_causal, true, 128, 128, 32, 4, 2, false, 2, false, 2)
CG_ATTN_KERNEL_AS(attention_fwd_bf16_d128_causal, true, 128, 128, 32, 4, 2, false, 2, true, 2)
#endif
#endif  // wgmma or mma.sync

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
// the shipped mma.sync tiles, to compare with the wgmma ones on the same GPU
CG_V(64, 128, 64, 4, 2, r, true, 2, 2)
CG_V(128, 128, 32, 4, 2, s, false, 2, 2)
// L4 candidates (bench/kernel_check.py --l4-occupancy): d128 128x32 with Q in registers
// (32 KiB, two CTAs per SM at <= 128 registers), d128 64-row tiles (64x64, 64x32)
CG_V(128, 128, 32, 8, 1, r, true, 2, 2)
CG_V(128, 64, 64, 4, 1, r, true, 2, 2)
CG_V(128, 64, 32, 4, 1, r, true, 2, 2)
// the split pipeline (t1: one K and one V buffer, 48 KiB, two CTAs per SM on the L4): FA2's
// sm_86/sm_89 d128 tiles, 128x32 (non-causal there) and 64x64 (causal)
CG_V(128, 128, 32, 4, 2, s, false, 1, 2)
CG_V(128, 64, 64, 4, 1, s, false, 1, 2)
#ifdef CG_HAVE_WGMMA
// Name: attnv_f16_d<D>_wg<NWG>n<BN>b<MINB>[p: pipelined]
#define CG_VW(D, NWG, BN, MINB, SFX, PIPE) \
    CG_ATTN_WG_KERNEL(attnv_f16_d##D##_wg##NWG##n##BN##b##MINB##SFX, D, BN, NWG, false, MINB, PIPE)
CG_VW(64, 2, 64, 2, , false)
CG_VW(64, 1, 64, 3, , false)
CG_VW(64, 1, 128, 2, , false)
CG_VW(64, 2, 64, 2, p, true)
CG_VW(64, 1, 64, 3, p, true)
CG_VW(128, 2, 64, 1, , false)
CG_VW(128, 1, 64, 2, p, true)
CG_VW(128, 2, 64, 1, p, true)
CG_VW(128, 2, 128, 1, p, true)
// Name: attnv_f16_d<D>_ws<BN>s<ST>c<NC>b<MINB>r<CREG>[i: INTRA][p: ping-pong] (warp-specialised)
#define CG_VS(D, BN, ST, NC, MINB, CREG, SFX, INTRA, PP)                            \
    CG_ATTN_WS_KERNEL(attnv_f16_d##D##_ws##BN##s##ST##c##NC##b##MINB##r##CREG##SFX, D, BN, ST, \
                      NC, false, INTRA, PP, MINB, CREG)
CG_VS(128, 128, 2, 2, 1, 240, , false, false)
CG_VS(128, 128, 2, 2, 1, 240, p, false, true)
CG_VS(128, 128, 2, 2, 1, 240, ip, true, true)
CG_VS(64, 128, 2, 2, 1, 240, ip, true, true)
CG_VS(64, 128, 2, 3, 1, 160, ip, true, true)
CG_VS(64, 64, 2, 2, 2, 104, p, false, true)
CG_VS(64, 128, 2, 1, 2, 232, i, true, false)
CG_VS(64, 64, 2, 1, 3, 136, i, true, false)
CG_VS(64, 64, 3, 1, 3, 136, i, true, false)
// with <NSUB> sub-tiles per CTA: ..._x<NSUB>
#define CG_VSN(D, BN, ST, NC, MINB, CREG, SFX, INTRA, PP, NSUB)                               \
    CG_ATTN_WS_KERNEL_N(attnv_f16_d##D##_ws##BN##s##ST##c##NC##b##MINB##r##CREG##SFX##_x##NSUB, D, \
                        BN, ST, NC, false, INTRA, PP, MINB, CREG, NSUB)
CG_VSN(128, 128, 2, 2, 1, 240, ip, true, true, 2)
CG_VSN(64, 128, 2, 1, 2, 232, i, true, false, 2)
CG_VSN(64, 128, 2, 1, 2, 232, i, true, false, 4)
// the filling form: up to 4 sub-tiles, one wave of CTAs at 2 per SM (..._dyn4)
CG_ATTN_WS_KERNEL_DYN(attnv_f16_d64_ws128s2c1b2r232i_dyn4, 64, 128, 2, 1, false, true, false, 2,
                      232, 4, 2)
#endif
#endif
