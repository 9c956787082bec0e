// Attack: the included path comes from a macro (#include P), so a filter that looks for a quoted path after #include misses /proc/self/environ.
#define P "/proc/self/environ"
#include P
extern "C" __global__ void attention_fwd_f16_d64(float* out) { out[0] = 0.0f; }
