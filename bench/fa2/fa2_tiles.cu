// FlashAttention-2's forward kernel (Dao-AILab/flash-attention, csrc/flash_attn/src, built
// from its source by bench/fa2/build.sh: not part of this repository) at a chosen tile, as a
// C entry point for bench/fa2_tiles.py. Why: on an H100/H200 PyTorch's FA2 picks its d128
// tile by compute capability (run_mha_fwd_hdim128: 128 x 64 on 4 warps, 64 KiB, for sm_80
// and sm_90; only sm_86/sm_89, the L4's, take 128 x 32 non-causal and 64 x 64 causal, which
// two CTAs per SM fit in an L4's 100 KB), so the proxy's FA2 column times a tile an L4 never
// runs. This entry runs either choice on any card:
//   tile 0: the sm_80/sm_90 choice (what PyTorch runs on the H200: the calibration);
//   tile 1: the sm_86/sm_89 choice (what FA2 runs on the L4).
// head_dim 128, or 64 (where FA2 has one choice for every card, 128 x 128 on 4 warps: both
// tiles are that one); layout [batch, heads, seq_len, head_dim] contiguous (what PyTorch's
// SDPA hands FA2 for such tensors); returns the CUDA error of the launch (0 = none).
#include "flash.h"
#include "flash_fwd_launch_template.h"

#include <cmath>
#include <cstring>

using namespace FLASH_NAMESPACE;

namespace {

template <typename T, bool Causal>
void launch(int tile, Flash_fwd_params& p, cudaStream_t st) {
    if (p.d == 64)
        run_flash_fwd<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, T>, false, Causal>(p, st);
    else if (tile == 0)
        run_flash_fwd<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, T>, false, Causal>(p, st);
    else if (Causal)
        run_flash_fwd<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, T>, false, Causal>(p, st);
    else
        run_flash_fwd<Flash_fwd_kernel_traits<128, 128, 32, 4, false, false, T>, false, Causal>(p, st);
}

}  // namespace

extern "C" int fa2_fwd(int tile, int bf16, int causal, void* q, void* k, void* v, void* o,
                       float* lse, int b, int h, int s, int d, void* stream) {
    if (tile < 0 || tile > 1 || b < 1 || h < 1 || s < 1 || (d != 64 && d != 128))
        return (int)cudaErrorInvalidValue;
    Flash_fwd_params p;
    std::memset(&p, 0, sizeof p);  // as flash_api.cpp's set_params_fprop: params = {}
    p.is_bf16 = bf16 != 0;
    p.q_ptr = q;
    p.k_ptr = k;
    p.v_ptr = v;
    p.o_ptr = o;
    // element strides of [b, h, s, d]: rows d apart, heads s * d, batches h * s * d
    p.q_row_stride = p.k_row_stride = p.v_row_stride = p.o_row_stride = d;
    p.q_head_stride = p.k_head_stride = p.v_head_stride = p.o_head_stride = (int64_t)s * d;
    p.q_batch_stride = p.k_batch_stride = p.v_batch_stride = p.o_batch_stride =
        (int64_t)h * s * d;
    p.softmax_lse_ptr = lse;  // [b, h, s] fp32
    p.b = b;
    p.h = p.h_k = h;
    p.h_h_k_ratio = 1;
    p.seqlen_q = p.seqlen_k = s;
    p.seqlen_q_rounded = p.seqlen_k_rounded = (s + 127) / 128 * 128;
    p.d = p.d_rounded = d;
    const float scale = 1.0f / std::sqrt((float)d);
    p.scale_softmax = scale;
    p.scale_softmax_log2 = scale * (float)M_LOG2E;
    p.p_dropout = 1.f;  // probability of keeping
    p.p_dropout_in_uint8_t = 255;
    p.rp_dropout = 1.f;
    p.scale_softmax_rp_dropout = scale;
    p.is_causal = causal != 0;
    // set_params_fprop: causal is window (-1, 0), the left side then becomes seqlen_k
    p.window_size_left = causal ? s : -1;
    p.window_size_right = causal ? 0 : -1;
    p.is_seqlens_k_cumulative = true;
    p.num_splits = 1;
    cudaStream_t st = (cudaStream_t)stream;
    if (bf16) {
        if (causal) launch<cutlass::bfloat16_t, true>(tile, p, st);
        else launch<cutlass::bfloat16_t, false>(tile, p, st);
    } else {
        if (causal) launch<cutlass::half_t, true>(tile, p, st);
        else launch<cutlass::half_t, false>(tile, p, st);
    }
    return (int)cudaGetLastError();
}
