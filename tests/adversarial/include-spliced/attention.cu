// Attack: a backslash-newline (line splice) cuts the word include in two, so a filter that reads physical lines misses this include of /proc/self/environ.
#inc\
lude "/proc/self/environ"
extern "C" __global__ void attention_fwd_f16_d64(float* out) { out[0] = 0.0f; }
