// Attack: include a file next to the source by a relative name (the test writes canary.txt there), so the compile error prints its content.
#include "canary.txt"
extern "C" __global__ void attention_fwd_f16_d64(float* out) { out[0] = 0.0f; }
