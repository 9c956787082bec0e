#!/usr/bin/env python3
"""Our kernel and PyTorch's cuDNN and FA2 timed alike, as a PyTorch user times them: the same
q, k, v on every call (L2-warm), CUDA graphs of ~2 ms of back-to-back calls, the median of
the replays at a 25% duty cycle (bench/sdpa_bench.py's `measure`, one timer for all three),
the three in turn, three rounds. Needs a CUDA GPU, torch and cupy (bench/kernel_check.py's
loaders).

Why: issue 40's ratio sets the gate's p50 of our kernel (a q of its own per launch, fetched
from HBM: docs/MEASURING.md, "Every launch computes something of its own") against the
harness's cuDNN and FA2 (one q, in L2). bench/like_for_like.py times PyTorch's kernels under
the gate's conditions; this is the other way round, our kernel under the harness's, so the
ratio is taken both ways alike. Our kernel is launched as
kernel_check.py launches it (one tile of NAME_launch's rows per CTA), which is the gate's grid
for the forms without a filling grid (the Hopper `_short_noncausal`, every L4-path form); a
shape whose gate form fills the GPU otherwise is not comparable here.

  python3 bench/warm_alike.py [--ada] --shape B,H,S,D[,causal][,FORM] ... [--out FILE]
"""
import argparse
import json
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_check as kc  # noqa: E402
from kept_probe import parse_shape  # noqa: E402
from sdpa_bench import measure  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ada", action="store_true", help="-DCG_ADA_TILES (the L4 path)")
    ap.add_argument("--shape", action="append", type=parse_shape, required=True,
                    help="B,H,S,D[,causal][,FORM] (repeatable)")
    ap.add_argument("--kdir", default=os.path.join(os.path.dirname(HERE), "kernels"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit("--rounds must be at least 1")
    cc = torch.cuda.get_device_capability()
    arch = f"sm_{cc[0]}{cc[1]}" + ("a" if tuple(cc) == (9, 0) else "")
    kc.KDIR = os.path.abspath(a.kdir)
    mod = kc.Module("attention.cu", arch, ["-DCG_ADA_TILES"] if a.ada else [])
    rows = []
    for (B, H, S, D, causal, form) in a.shape:
        name = f"attention_fwd_f16_d{D}" + (f"_{form}" if form else "")
        ours = kc.Attn(mod, name)
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
        out = torch.empty(B, H, S, D, dtype=torch.float32, device="cuda")
        fns = {"ours": lambda: ours(q, k, v, out, causal),
               "cudnn": kc.sdpa_fn(q, k, v, causal, "cudnn"),
               "flash": kc.sdpa_fn(q, k, v, causal, "flash")}
        us = {t: [] for t in fns}
        for _ in range(a.rounds):
            for t, fn in fns.items():
                us[t].append(measure(fn, 2.0, 30, 0.25)[0])
        med = {t: statistics.median(v) for t, v in us.items()}
        row = {"shape": f"b{B}h{H}s{S}d{D}{'_causal' if causal else ''}", "kernel": name,
               "ours_us": med["ours"], "cudnn_us": med["cudnn"], "flash_us": med["flash"],
               "rounds_us": us, "ratio_cudnn": med["ours"] / med["cudnn"],
               "ratio_flash": med["ours"] / med["flash"]}
        rows.append(row)
        print(f"{row['shape']:22} {name:38} ours {med['ours']:9.2f}  cuDNN {med['cudnn']:9.2f}"
              f"  FA2 {med['flash']:9.2f} µs   / cuDNN {row['ratio_cudnn']:.3f}"
              f"  / FA2 {row['ratio_flash']:.3f}", flush=True)
        del q, k, v, out
        torch.cuda.empty_cache()
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"arch": arch, "ada": a.ada, "gpu": torch.cuda.get_device_name(),
                       "method": "sdpa_bench.measure: graphs of ~2 ms, 30 replays, 25% duty, "
                                 "the same q, k, v every call", "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
