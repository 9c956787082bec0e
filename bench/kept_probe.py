#!/usr/bin/env python3
"""Two kernel trees timed on N(0,1) inputs and on the gate's input mixture (needs a CUDA GPU,
torch and cupy; bench/kernel_check.py's loaders and timer).

Why: a candidate whose cost depends on its inputs (the kept softmax base of the seventeenth
session, docs/KERNEL_LOG.md, falls back to the exact softmax where a row's maximum moves far)
can win on N(0,1) and lose on the mixture the gate times. This says which, per shape: each
tree's kernel (launched as kernel_check.py launches it: one 64- or 128-row tile per CTA, so
the grid is not the gate's) on the same inputs, CUDA-graph medians, the two trees in turn,
three rounds; the mixture from kernels/util.cu's fill_input_* (seed 7).

  python3 bench/kept_probe.py BASE_KDIR CAND_KDIR [--ada] [--shape B,H,S,D[,causal][,FORM]]...
                               [--out FILE]

--shape replaces the default shapes (FORM: the entry's suffix, e.g. long_noncausal).
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_check as kc  # noqa: E402

HOPPER_SHAPES = [(4, 16, 512, 64, False, ""), (4, 16, 512, 64, True, ""),
                 (8, 16, 512, 64, False, ""), (4, 16, 2048, 64, True, "long"),
                 (4, 16, 2048, 64, False, "")]
ADA_SHAPES = [(2, 16, 4096, 128, False, "long_noncausal"), (2, 16, 4096, 128, True, ""),
              (1, 16, 1000, 128, False, ""), (4, 16, 512, 64, False, "")]


def module(kdir, arch, extra):
    kc.KDIR = kdir
    return kc.Module("attention.cu", arch, extra)


def inputs(umod, B, H, S, D, kind):
    if kind == "randn":
        g = torch.Generator(device="cuda").manual_seed(11)
        return [torch.randn(B, H, S, D, device="cuda", generator=g).half() for _ in range(3)]
    fn = umod.mod.get_function("fill_input_f16")
    out = []
    n = B * H * S * D
    with kc.torch_stream():
        for role in range(3):
            t = torch.empty(B, H, S, D, dtype=torch.float16, device="cuda")
            fn((264,), (256,), (np.uint64(t.data_ptr()), np.uint64(n), np.uint64(7),
                                np.int32(role), np.int32(S), np.int32(D)))
            out.append(t)
    torch.cuda.synchronize()
    return out


def parse_shape(text):
    """"B,H,S,D[,causal][,FORM]" -> (B, H, S, D, causal, FORM)."""
    parts = text.split(",")
    if len(parts) < 4 or not all(p.isdigit() and int(p) > 0 for p in parts[:4]):
        raise argparse.ArgumentTypeError(f"--shape {text!r}: B,H,S,D[,causal][,FORM]")
    rest = parts[4:]
    causal = bool(rest) and rest[0] == "causal"
    if causal:
        rest = rest[1:]
    if len(rest) > 1 or (rest and not rest[0].replace("_", "").isalnum()):
        raise argparse.ArgumentTypeError(f"--shape {text!r}: B,H,S,D[,causal][,FORM]")
    return (*map(int, parts[:4]), causal, rest[0] if rest else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("cand")
    ap.add_argument("--ada", action="store_true", help="-DCG_ADA_TILES (the L4 path)")
    ap.add_argument("--shape", action="append", type=parse_shape, default=None,
                    help="B,H,S,D[,causal][,FORM] (repeatable; replaces the default shapes)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    cc = torch.cuda.get_device_capability()
    arch = f"sm_{cc[0]}{cc[1]}" + ("a" if tuple(cc) == (9, 0) else "")
    extra = ["-DCG_ADA_TILES"] if a.ada else []
    mods = {"base": module(os.path.abspath(a.base), arch, extra),
            "cand": module(os.path.abspath(a.cand), arch, extra)}
    kc.KDIR = os.path.join(os.path.dirname(HERE), "kernels")
    umod = kc.Module("util.cu", arch)
    rows = []
    for (B, H, S, D, causal, form) in (a.shape or (ADA_SHAPES if a.ada else HOPPER_SHAPES)):
        name = f"attention_fwd_f16_d{D}" + (f"_{form}" if form else "")
        kern = {t: kc.Attn(m, name) for t, m in mods.items()}
        for kind in ("randn", "mixture"):
            q, k, v = inputs(umod, B, H, S, D, kind)
            out = torch.empty(B, H, S, D, dtype=torch.float32, device="cuda")
            us = {"base": [], "cand": []}
            for _ in range(3):
                for t in ("base", "cand"):
                    us[t].append(kc.time_fn(lambda t=t: kern[t](q, k, v, out, causal))["us"])
            b, c = statistics.median(us["base"]), statistics.median(us["cand"])
            row = {"shape": f"b{B}h{H}s{S}d{D}{'_causal' if causal else ''}", "kernel": name,
                   "inputs": kind, "base_us": b, "cand_us": c, "delta": c / b - 1}
            rows.append(row)
            print(f"{row['shape']:24} {name:36} {kind:8} base {b:9.2f}  cand {c:9.2f} µs "
                  f" {100 * row['delta']:+6.2f}%", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"arch": arch, "ada": a.ada, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
