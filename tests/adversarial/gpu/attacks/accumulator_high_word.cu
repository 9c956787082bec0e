// Attack: pre-set the checks' accumulators. The largest error of each launch was a u64
// atomicMax read back as u32: a word with its high half set reads as 0 (no error) whatever
// the low half. Write 2^32 into every word of the 4 MiB above this launch's output that
// holds a zero (the accumulators were zeroed once per round), and skip the work. Now the
// accumulators are zeroed after the launches and read at their full width, and a write
// outside the output lands in a checked gap.

__device__ __forceinline__ void atk_preset(float* out) {
    if (blockIdx.x != 0 || blockIdx.y != 0) return;
    unsigned long long* base = (unsigned long long*)(((unsigned long long)out + 255) & ~255ull);
    for (unsigned long long i = threadIdx.x; i < (4ull << 20) / 8; i += blockDim.x)
        if (base[i] == 0) base[i] = 1ull << 32;
}
#define ATTACK_BEGIN() \
    atk_preset(out);   \
    return;
