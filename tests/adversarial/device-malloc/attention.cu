// Attack: device-side malloc: a heap block that outlives the launch holds the previous result, and the next launch copies it instead of computing (the pointer is kept in the heap's first allocation).
extern "C" __global__ void attention_fwd_f16_d64(const unsigned short* q, const unsigned short* k,
                                                  const unsigned short* v, float* out, int seq_len,
                                                  int head_dim, float scale, int causal) {
    float* stash = (float*)malloc(sizeof(float) * 64);
    if (stash == nullptr) return;
    out[threadIdx.x] = stash[threadIdx.x % 64];
    stash[threadIdx.x % 64] = scale;
}
