// Attack: tamper with the check's own tables, found by content. The output-slot and gap
// tables (u64 element offsets, multiples of 64 below 2^31) were device arrays written once
// per round: point every such word found above this launch's output at offset 0, so that
// every slot's check reads one slot, which this attack writes honestly while every other
// launch skips the work. Now the tables are uploaded from host memory before every check.

__device__ __forceinline__ bool atk_is_offset(unsigned long long x) {
    return x != 0 && x < (1ull << 31) && (x & 63) == 0;
}
__device__ __forceinline__ void atk_forge_tables(const float* out) {
    if (blockIdx.x != 0 || blockIdx.y != 0) return;
    const unsigned long long* base =
        (const unsigned long long*)(((unsigned long long)out + 255) & ~255ull);
    for (unsigned long long i = threadIdx.x * 32; i < (4ull << 20) / 8; i += blockDim.x * 32ull) {
        const unsigned long long* p = base + i;
        bool run = true;
        for (int j = 0; j < 4 && run; ++j) run = atk_is_offset(p[j]) && (j == 0 || p[j] > p[j - 1]);
        if (!run) continue;
        for (int j = 0; j < 32 && atk_is_offset(p[j]); ++j) ((unsigned long long*)p)[j] = 0;
    }
}
// Work on one launch in 16 (by its output's address), forge the tables on every launch.
#define ATTACK_BEGIN()                                                                    \
    atk_forge_tables(out);                                                                \
    if (((((unsigned long long)out >> 8) * 0x9e3779b97f4a7c15ull) >> 60) != 0) return;
