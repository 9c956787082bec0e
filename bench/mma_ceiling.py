#!/usr/bin/env python3
"""How fast can mma.sync go on this GPU, and how much of that do the L4 path's tiles leave?
The ceiling that issue 40 item 2 is judged under on the Hopper proxy. Needs a CUDA GPU and cupy.

Why: the L4 path (kernels/attention.cu, `attn_fwd`) is mma.sync only (an L4 has no wgmma),
and item 2 asks it to be 0.90x PyTorch's FA2 on an H100 or H200, where FA2 is mma.sync too.
The thirty-third and thirty-fourth sessions (docs/KERNEL_LOG.md) measured the d128 NAME at
57.8% of the tensor pipe under ncu and found that neither more warps nor phase-locked ones
raised it. This probe measures the ceiling itself, with no attention around it: one CTA a SM
of W warps, each issuing M = 8 independent `mma.sync.m16n8k16` (f32 accumulators, fp16
inputs: 4,096 FLOP each) an iteration (`--mma 16`: 16, with twice the reads for the same
ratios), their B fragments from L `ldmatrix.x4` of shared memory
an iteration (conflict-free addresses; L = 0: all operands in registers). M / L is how many
mma's each fragment read feeds, the quantity a tile's warp rows set:

  L = 0   registers only (the pipe's own ceiling for this instruction)
  L = 2   4 mma a read: a 32-row warp with Q in registers (the d64 NAME, FA2's K reads)
  L = 3   2.67 a read: a 32-row warp re-reading Q from shared memory (FA2's d128 tile)
  L = 4   2 a read: a 16-row warp (the L4 path's d128 NAME and NAME_small)
  L = 8   1 a read

Each point is the median of 5 launches of about 2 ms (a launch of 200 iterations first
sizes them), 25 ms idle between launches so that the clock is not power-capped mid-way; the SM clock
over the launch is read with clock64 in CTA 0, so each point also gives clocks a HMMA a
scheduler (4 schedulers a SM).

  python3 bench/mma_ceiling.py [--warps 4,8,12,16] [--reads 0,2,3,4,8] [--mma 8] [--bf16]
                               [--out F.json]
"""
import argparse
import json
import statistics
import time

import cupy as cp
import numpy as np

SRC = r"""
__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2,
                                        unsigned& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory");
}
template <bool BF16>
__device__ __forceinline__ void mma(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    if (BF16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
            "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
            "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// L ldmatrix.x4 and M mma.sync an iteration; fragment l feeds mma's m with m % L == l, both
// halves of it in turn. Shared memory: 32 KiB of the seed's 16-bit values, each warp reading
// 512 contiguous bytes a ldmatrix (lane l: row address base + 16 l, 8 lanes a phase over all
// 32 banks): read number n = it * L + l at 512 (n mod 64). ptxas sees no store to shared
// memory in the loop, so it may keep a read whose address repeats in registers: with a period
// of 2 iterations it did (the first version of this probe), and every "ldmatrix-fed" point
// was register-fed; 64 / gcd(L, 64) iterations (8 to 64) are more registers than it has.
template <int L, int M, bool BF16>
__global__ void __launch_bounds__(512) mma_probe(const unsigned* __restrict__ seed,
                                                 float* __restrict__ out,
                                                 long long* __restrict__ clk, int iters) {
    extern __shared__ __align__(128) unsigned char sm[];
    const int tid = threadIdx.x, lane = tid & 31;
    for (int i = tid; i < 8192; i += blockDim.x) ((unsigned*)sm)[i] = seed[i];
    __syncthreads();
    unsigned a[2][4];
    constexpr int LF = L > 0 ? L : 2;
    unsigned f[LF][4];
#pragma unroll
    for (int x = 0; x < 4; ++x) {
        a[0][x] = seed[lane * 8 + x];
        a[1][x] = seed[lane * 8 + 4 + x];
    }
#pragma unroll
    for (int l = 0; l < LF; ++l)
#pragma unroll
        for (int x = 0; x < 4; ++x) f[l][x] = seed[1024 + lane * 32 + l * 4 + x];
    float c[M][4];
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
        for (int x = 0; x < 4; ++x) c[m][x] = 0.f;
    const unsigned base = (unsigned)__cvta_generic_to_shared(sm) + lane * 16;
    const long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int l = 0; l < L; ++l)
            ldsm_x4(base + (((unsigned)(it * L + l) & 63u) << 9), f[l][0], f[l][1], f[l][2],
                    f[l][3]);
#pragma unroll
        for (int m = 0; m < M; ++m) {
            const int l = m % LF;
            const int h = (m / LF) & 1;
            mma<BF16>(c[m], a[(m / (2 * LF)) & 1], f[l][2 * h], f[l][2 * h + 1]);
        }
    }
    const long long t1 = clock64();
    float s = 0.f;
#pragma unroll
    for (int m = 0; m < M; ++m) s += c[m][0] + c[m][1] + c[m][2] + c[m][3];
    out[blockIdx.x * blockDim.x + tid] = s;
    if (blockIdx.x == 0 && tid == 0) *clk = t1 - t0;
}
"""

FLOP_PER_MMA = 2 * 16 * 8 * 16


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warps", default="4,8,12,16")
    ap.add_argument("--reads", default="0,2,3,4,8")
    ap.add_argument("--mma", type=int, default=8, help="mma's a warp an iteration (8 or 16)")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--target-ms", type=float, default=2.0)
    ap.add_argument("--out")
    a = ap.parse_args()
    M = a.mma
    warps = [int(w) for w in a.warps.split(",")]
    reads = [int(r) for r in a.reads.split(",")]
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    bf = "true" if a.bf16 else "false"
    exprs = [f"mma_probe<{r}, {M}, {bf}>" for r in reads]
    mod = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=exprs)
    rng = np.random.default_rng(7)
    # finite 16-bit values in [-1, 1): fp16 bits, or bf16 bits (the high half of a float32)
    vals = rng.uniform(-1, 1, size=2 * 8192).astype(np.float32)
    if a.bf16:
        bits = (vals.view(np.uint32) >> 16).astype(np.uint16)
    else:
        bits = vals.astype(np.float16).view(np.uint16)
    seed = cp.asarray(bits.view(np.uint32))
    smem = 8192 * 4
    report = {"gpu": name, "sms": sms, "dtype": "bf16" if a.bf16 else "f16",
              "mma_per_iteration": M, "points": []}
    print(f"{name}: {sms} SMs, one CTA a SM, {M} mma.sync.m16n8k16 a warp an iteration "
          f"({report['dtype']})")
    print(f"{'warps/SM':>8} {'ldsm.x4/it':>10} {'mma/read':>8} {'TFLOP/s':>8} {'MHz':>6} "
          f"{'clk/HMMA/sched':>14}")
    for r in reads:
        fn = mod.get_function(exprs[reads.index(r)])
        fn.max_dynamic_shared_size_bytes = smem
        for w in warps:
            out = cp.zeros(sms * w * 32, dtype=cp.float32)
            clk = cp.zeros(1, dtype=cp.int64)
            ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()

            def launch(iters):
                ev0.record()
                fn((sms,), (w * 32,), (seed, out, clk, cp.int32(iters)), shared_mem=smem)
                ev1.record()
                ev1.synchronize()
                return cp.cuda.get_elapsed_time(ev0, ev1) / 1e3, int(clk.get()[0])

            launch(20)
            t, _ = launch(200)
            iters = max(200, int(200 * a.target_ms / 1e3 / max(t, 1e-7)))
            runs = []
            for _ in range(5):
                time.sleep(0.025)
                runs.append(launch(iters))
            t = statistics.median(x[0] for x in runs)
            c = statistics.median(x[1] for x in runs)
            flop = sms * w * iters * M * FLOP_PER_MMA
            tf = flop / t / 1e12
            mhz = c / t / 1e6
            per = c * 4 / (w * iters * M)
            ratio = (M / r) if r else None
            report["points"].append({"warps": w, "ldsm_per_iteration": r, "mma_per_read": ratio,
                                     "iters": iters, "seconds": t, "tflops": tf, "mhz": mhz,
                                     "clocks_per_hmma_per_scheduler": per})
            rs = f"{ratio:.2f}" if ratio else "regs"
            print(f"{w:>8} {r:>10} {rs:>8} {tf:>8.1f} {mhz:>6.0f} {per:>14.2f}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
