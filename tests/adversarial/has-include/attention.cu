// Attack: __has_include probes the runner's file system one bit at a time (here: does /proc/self/environ exist?) and turns the answer into a compile error or a different kernel.
#if __has_include("/proc/self/environ")
#error "the runner has /proc/self/environ"
#endif
extern "C" __global__ void attention_fwd_f16_d64(float* out) { out[0] = 0.0f; }
