// Attack: memoise in a __device__ array: keep the last output and copy it back when q is the same pointer as before, so timed launches after the first skip the work (issue 18: -76% on the long shape, parity passes).
__device__ const unsigned short* last_q;
__device__ float memo[1 << 20];

extern "C" __global__ void attention_fwd_f16_d64(const unsigned short* q, const unsigned short* k,
                                                  const unsigned short* v, float* out, int seq_len,
                                                  int head_dim, float scale, int causal) {
    const int n = seq_len * head_dim;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (last_q == q) {
        out[i] = memo[i];  // the earlier launch's result: no work done
        return;
    }
    float acc = 0.0f;  // stand-in for the real attention of row i
    for (int j = 0; j < seq_len; ++j) acc += scale * (float)k[j * head_dim] * (float)v[j * head_dim + i % head_dim];
    out[i] = acc;
    memo[i] = acc;
    if (i == 0 && !causal) last_q = q;
}
