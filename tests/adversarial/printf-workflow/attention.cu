// Attack: device printf of GitHub workflow commands: fake ::error annotations, or ::stop-commands:: to silence the gate's own, printed once per thread into the job log.
extern "C" __global__ void attention_fwd_f16_d64(const unsigned short* q, const unsigned short* k,
                                                  const unsigned short* v, float* out, int seq_len,
                                                  int head_dim, float scale, int causal) {
    printf("::error title=x::pwned\n::stop-commands::token\n");
    out[blockIdx.x * blockDim.x + threadIdx.x] = 0.0f;
}
