#!/usr/bin/env python3
"""Where the block scheduler puts the CTAs of a grid of one wave at two CTAs a SM: do the first
S CTAs (S = the SM count, linear with x fastest) get an SM each, and the rest the SMs' second
places? Does CTA L + S share CTA L's SM? And what %nsmid reads beside the SM count. Needs a
CUDA GPU and cupy.

Why: NAME_causal (kernels/attention.cu, `deal_causal_by_cost`) gives, on a grid of one wave,
the first S CTAs the heaviest causal row tiles and the rest the lightest, reading S from
%nsmid, so that each SM runs one of each. A wrong premise costs balance, never a result; this says whether it
holds on the card.

The probe: a kernel with 128 threads and enough dynamic shared memory that an SM holds two of
its CTAs and not three; each CTA stamps %smid and %nsmid and spins long enough that the
whole grid is resident at once; grids (X, Y) of S < X * Y <= 2 S CTAs, as the attention grid
(row tiles, batch * heads).

  python3 bench/placement_probe.py [--grid X,Y ...] [--out FILE]
"""
import argparse
import collections
import json

import cupy as cp

SRC = r"""
extern "C" __global__ void __launch_bounds__(128) where(unsigned* out, long long spin) {
    extern __shared__ unsigned char pad[];
    unsigned smid, nsmid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    asm volatile("mov.u32 %0, %%nsmid;" : "=r"(nsmid));
    const unsigned l = blockIdx.y * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0) {
        pad[0] = (unsigned char)smid;  // the shared memory is used: it sets the occupancy
        out[2 * l] = smid;
        out[2 * l + 1] = nsmid;
    }
    const long long c0 = clock64();
    while (clock64() - c0 < spin) {}
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grid", action="append",
                    help="X,Y (default: 4,64 3,64 8,32 16,16 2,80 and 3,48)")
    ap.add_argument("--out")
    a = ap.parse_args()
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    smem_sm = dev.attributes["MaxSharedMemoryPerMultiprocessor"]
    # two CTAs a SM and not three: just over a third of the SM's shared memory each
    smem = smem_sm // 3 + 1024
    fn = cp.RawModule(code=SRC).get_function("where")
    fn.max_dynamic_shared_size_bytes = smem
    grids = [tuple(int(v) for v in g.split(",")) for g in (a.grid or [
        "4,64", "3,64", "8,32", "16,16", "2,80", "3,48"])]
    report = {"gpu": cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(),
              "sms": sms, "smem_per_cta": smem, "grids": []}
    print(f"{report['gpu']}: {sms} SMs, {smem} B of shared memory a CTA (two a SM)")
    for x, y in grids:
        n = x * y
        out = cp.zeros(2 * n, dtype=cp.uint32)
        fn((x, y), (128,), (out, cp.int64(2_000_000)), shared_mem=smem)
        cp.cuda.runtime.deviceSynchronize()
        o = out.get().reshape(n, 2)
        smid, nsmid = o[:, 0], o[:, 1]
        per_sm = collections.Counter(smid.tolist())
        partner = [int(smid[l] == smid[l - sms]) for l in range(sms, n)]
        first = int(sum(int(smid[l]) == l for l in range(min(n, sms))))
        # NAME_causal's premise on one wave: the first S CTAs get an SM each, the rest the SMs'
        # second places (so every SM's pair is one of the first S and one of the rest)
        first_distinct = len(set(smid[:min(n, sms)].tolist()))
        rest_distinct = len(set(smid[min(n, sms):].tolist()))
        row = {"grid": [x, y], "ctas": n, "nsmid": sorted(set(nsmid.tolist())),
               "max_per_sm": max(per_sm.values()), "sms_used": len(per_sm),
               "partner_same_sm": sum(partner), "partners": len(partner),
               "first_wave_smid_is_l": first, "first_s_distinct_sms": first_distinct,
               "rest_distinct_sms": rest_distinct, "rest": max(0, n - sms)}
        report["grids"].append(row)
        print(f"grid {x:>3} x {y:<3} {n:4d} CTAs  %nsmid {row['nsmid']}  SMs used {len(per_sm)}"
              f"  most on one SM {row['max_per_sm']}  CTA L+S on CTA L's SM: "
              f"{sum(partner)} of {len(partner)}  smid == L in the first S: {first} of "
              f"{min(n, sms)}  distinct SMs: first S {first_distinct} of {min(n, sms)}, the rest "
              f"{rest_distinct} of {max(0, n - sms)}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
