#!/usr/bin/env python3
"""The L4 path's two d64 forms, NAME (128 rows, two CTAs a SM) and NAME_small (64 rows, three
a SM), on non-causal grids at an L4's SM count (issue 40 item 2; needs a CUDA GPU with green
contexts, torch, cupy).

Why: the host takes NAME_small only where NAME's grid has fewer CTAs than SMs. Its own
busiest-SM cost (src/gpu/device.rs `busiest_sm_cost`, a pass costing its rows plus NAME's 128)
says that on an L4's 58 SMs b4h16s512d64, a PR shape, would be 6% cheaper on NAME_small: NAME's
256 CTAs leave its busiest SM five (two rounds of two, then one alone), NAME_small's 512 leave
it nine (three full rounds of three). On 56 SMs (the nearest partition an H100 gives) the same
shape rounds differently (ten on NAME_small, one alone), so this script times shapes whose
grids round on 56 SMs as the PR shapes do on 58 (b1h60s512d64 as b4h16s512d64; b2h8s512d64
rounds alike on both), beside the PR shapes themselves and grids where the model wants NAME,
both forms forced, in the partition and on the whole GPU, with bench/sdpa_bench.py's method
(bench/l4_sms.py's partition and timing; the model is l4_sms.py's `d64_form_costs`).
Each form is launched at the L4's occupancy (bench/kernel_check.py `l4_occupancy`).

  python3 bench/small_l4.py [--sms 56] [--shape B,H,S ...] --out F.json
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_check as kc  # noqa: E402
from l4_sms import GreenPartition, d64_form_costs, timed  # noqa: E402

# Model (56 SMs; 58 the same unless said): NAME_small cheaper on the first four (b4h16: only on
# 58), NAME on the last four.
SHAPES = ["1,60,512", "2,8,512", "2,16,512", "4,16,512", "1,56,512", "3,16,512", "8,16,512",
          "2,8,2048"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sms", type=int, default=56)
    ap.add_argument("--shape", action="append", help="B,H,S (d64, fp16, non-causal)")
    ap.add_argument("--kdir", default=os.path.join(os.path.dirname(HERE), "kernels"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--replay-ms", type=float, default=2.0)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--duty", type=float, default=0.25)
    ap.add_argument("--rounds", type=int, default=3, help="each form timed this often, in turn")
    args = ap.parse_args()
    torch.zeros(1, device="cuda")
    part = GreenPartition(args.sms)
    whole = torch.cuda.Stream()
    print(f"green context: {part.sms} of {part.device_sms} SMs", flush=True)
    cc = torch.cuda.get_device_capability()
    arch = f"sm_{cc[0]}{cc[1]}" + ("a" if tuple(cc) == (9, 0) else "")
    kc.KDIR = os.path.abspath(args.kdir)
    mod = kc.Module("attention.cu", arch, ["-DCG_ADA_TILES"])
    forms = {f: kc.Attn(mod, "attention_fwd_f16_d64" + s, l4_occupancy=True)
             for f, s in (("name", ""), ("small", "_small"))}
    res = {"gpu": torch.cuda.get_device_name(), "sms": part.sms,
           "ctas_per_sm": {f: a.ctas_per_sm for f, a in forms.items()}, "shapes": []}
    print(f"CTAs a SM (l4, here, emulated): { {f: a.ctas_per_sm for f, a in forms.items()} }")
    torch.manual_seed(0)
    for spec in args.shape or SHAPES:
        B, H, S = (int(x) for x in spec.split(","))
        q, k, v = (torch.randn(B, H, S, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        with sdpa_kernel(SDPBackend.MATH):
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
        out = torch.empty(B, H, S, 64, device="cuda", dtype=torch.float32)
        row = {"shape": f"b{B}h{H}s{S}d64", "model_56": d64_form_costs(B, H, S, args.sms),
               "model_58": d64_form_costs(B, H, S, 58),
               "model_132": d64_form_costs(B, H, S, part.device_sms)}
        for f, attn in forms.items():
            out.fill_(float("nan"))
            attn(q, k, v, out, False)
            torch.cuda.synchronize()
            row[f + "_maxdiff"] = float((out - ref).abs().max())
        if not all(row[f + "_maxdiff"] <= 2e-2 for f in forms):
            print(f"{row['shape']}: a form differs from SDPA: not timed", flush=True)
            res["shapes"].append(row)
            continue
        for where, stream in (("part", part.stream), ("whole", whole)):
            for f, attn in forms.items():
                row[f"{where}_{f}_us"] = []
            for _ in range(args.rounds):
                for f, attn in forms.items():
                    us = timed(lambda attn=attn: attn(q, k, v, out, False), stream, args)
                    row[f"{where}_{f}_us"].append(us)
        med = {key: sorted(v)[len(v) // 2] for key, v in row.items() if key.endswith("_us")}
        row["median_us"] = med
        res["shapes"].append(row)
        print(f"{row['shape']:16} part NAME {med['part_name_us']:7.2f} small {med['part_small_us']:7.2f}"
              f" ({100 * (med['part_small_us'] / med['part_name_us'] - 1):+5.1f}%; model "
              f"{row['model_56'][0]}/{row['model_56'][1]})  whole NAME {med['whole_name_us']:7.2f}"
              f" small {med['whole_small_us']:7.2f} "
              f"({100 * (med['whole_small_us'] / med['whole_name_us'] - 1):+5.1f}%; model "
              f"{row['model_132'][0]}/{row['model_132'][1]})", flush=True)
        json.dump(res, open(args.out, "w"), indent=1)
    json.dump(res, open(args.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
