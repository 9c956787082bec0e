// Attack: device assert: its message ("... Assertion ::error::... failed") reaches the log, and a failed assert kills the CUDA context mid-run.
extern "C" __global__ void attention_fwd_f16_d64(const unsigned short* q, const unsigned short* k,
                                                  const unsigned short* v, float* out, int seq_len,
                                                  int head_dim, float scale, int causal) {
    assert(seq_len > 0 && "::error title=x::pwned");
    out[blockIdx.x * blockDim.x + threadIdx.x] = 0.0f;
}
