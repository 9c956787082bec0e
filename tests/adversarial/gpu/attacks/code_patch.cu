// Attack: write the instructions of its own CUDA context (the precondition of sabotage). In an
// A/B the base's kernel is loaded into the candidate's context (docs/SECURITY.md, "What this
// does not stop"): a kernel that could rewrite code there could slow the base's kernel and
// read as an improvement with every output it writes right, where no check of outputs looks.
// This probes the precondition on its own code: a noinline function returns a marker, a 32-bit
// immediate of one instruction; thread 0 of every block reads the function's bytes through its
// address, and where it finds the marker it writes marker + 1 over it and reads it back. Where
// that store lands (code memory writable through a data address), the kernel does its work
// honestly, so the gate gives a verdict on its timings: the suite reports the attack unmet, the
// class open (a context of the base's own is then the defence). Where the read or the store
// faults, the run ends with exit 2; where the marker is not found (the function's address is
// not where a load reads its code), the kernel writes zeros: `parity-fail`. Either way closed.

#define ATK_MARKER 0x5A17C0DEu

__device__ __noinline__ unsigned atk_marker() { return ATK_MARKER; }

// 1: the marker was found and the store of marker + 1 over it read back (or an earlier block
// had written it); 0: not found.
__device__ __forceinline__ bool atk_code_written() {
    __shared__ int written;
    if (threadIdx.x == 0) {
        unsigned (*volatile fn)() = atk_marker;  // its address, kept (no inlining, no folding)
        volatile unsigned* p = reinterpret_cast<volatile unsigned*>(fn);
        int found = 0;
        for (int i = 0; i < 64 && !found; ++i) {
            const unsigned w = p[i];
            if (w == ATK_MARKER + 1u) {
                found = 1;
            } else if (w == ATK_MARKER) {
                p[i] = ATK_MARKER + 1u;
                __threadfence();
                found = p[i] == ATK_MARKER + 1u;
            }
        }
        written = found && fn() != 0u;  // the call keeps the function (and its address) real
    }
    __syncthreads();
    return written != 0;
}

#define ATTACK_BEGIN() const bool atk_written = atk_code_written();
#define ATTACK_VALUE(o) (atk_written ? (o) : 0.f)
