#!/usr/bin/env python3
"""Makes tests/golden/: attention inputs and PyTorch's float64 outputs, on a CUDA GPU.

  python3 bench/make_golden.py --out tests/golden     # write the five cases (needs a GPU)
  python3 bench/make_golden.py --check tests/golden   # recompute each case's output from
                                                       # its stored inputs and compare

Each case's q, k, v are drawn N(0, 1) in float32 from a seeded CPU generator (seed SEED + the
case's index), rounded to the case's dtype; the expected output is
torch.nn.functional.scaled_dot_product_attention on the GPU in float64 (scale 1/sqrt(head_dim),
causal masking top-left aligned), stored as float32. `sdpa_gpu_rel_l2_vs_fp64` is PyTorch's own
GPU kernel in the case's dtype against that: the bar the fast kernel must meet
(tests/it/gpu.rs). Layout [batch, heads, seq_len, head_dim], contiguous, little-endian;
q/k/v hold IEEE fp16 or bf16 bit patterns. --check exits 1 if any output differs by more than
one float32 rounding step (2^-23 relative).
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20261127
# (batch, heads, seq_len, head_dim, causal, dtype): odd lengths and both head dims and dtypes.
CASES = [
    (1, 2, 64, 64, False, "float16"),
    (2, 2, 100, 64, True, "float16"),
    (1, 1, 257, 128, False, "float16"),
    (1, 2, 128, 128, True, "bfloat16"),
    (1, 3, 77, 64, False, "bfloat16"),
]
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def name(b, h, s, d, causal, dtype):
    short = {"float16": "f16", "bfloat16": "bf16"}[dtype]
    return f"b{b}h{h}s{s}d{d}{'_causal' if causal else ''}_{short}"


def fp64_output(q, k, v, causal, scale):
    """float64 SDPA on the GPU, rounded to float32 on the host."""
    q, k, v = (t.to("cuda", torch.float64) for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    return out, out.float().cpu()


def save16(t, path):
    t.contiguous().view(torch.int16).numpy().astype("<i2").tofile(path)


def load16(path, dtype, shape):
    bits = torch.from_numpy(np.fromfile(path, dtype="<i2").astype(np.int16))
    return bits.view(DTYPES[dtype]).reshape(shape)


def make(out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    cases = {}
    for i, (b, h, s, d, causal, dtype) in enumerate(CASES):
        n, shape, scale = name(b, h, s, d, causal, dtype), (b, h, s, d), 1.0 / math.sqrt(d)
        g = torch.Generator().manual_seed(SEED + i)
        q, k, v = (torch.randn(shape, generator=g).to(DTYPES[dtype]) for _ in range(3))
        want64, want = fp64_output(q, k, v, causal, scale)
        fast = F.scaled_dot_product_attention(
            q.cuda(), k.cuda(), v.cuda(), is_causal=causal, scale=scale)
        rel = ((fast.double() - want64).norm() / want64.norm()).item()
        for t, suffix in ((q, "q"), (k, "k"), (v, "v")):
            save16(t, out_dir / f"{n}.{suffix}.bin")
        want.numpy().astype("<f4").tofile(out_dir / f"{n}.out_f32.bin")
        cases[n] = {"batch": b, "heads": h, "seq_len": s, "head_dim": d, "causal": causal,
                    "dtype": dtype, "scale": scale, "layout": "BHSD contiguous, little-endian",
                    "seed": SEED + i, "sdpa_gpu_rel_l2_vs_fp64": rel}
        print(f"{n}: PyTorch's {dtype} kernel at {rel:.3e} relative L2 from float64")
    made = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    (out_dir / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    (out_dir / "made_with.json").write_text(json.dumps(made, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {out_dir} ({made['torch']}, {made['gpu']})")


def check(dir_):
    cases, worst = json.loads((dir_ / "cases.json").read_text()), 0.0
    for n, c in cases.items():
        shape = (c["batch"], c["heads"], c["seq_len"], c["head_dim"])
        q, k, v = (load16(dir_ / f"{n}.{t}.bin", c["dtype"], shape) for t in "qkv")
        _, got = fp64_output(q, k, v, c["causal"], c["scale"])
        stored = torch.from_numpy(np.fromfile(dir_ / f"{n}.out_f32.bin", dtype="<f4"))
        diff = ((got.flatten().double() - stored.double()).abs()
                / stored.double().abs().clamp_min(1e-30)).max().item()
        worst = max(worst, diff)
        print(f"{n}: largest relative difference from the stored output {diff:.2e}")
    ok = worst <= 2.0 ** -23
    print(f"{dir_}: {'reproduced' if ok else 'NOT reproduced'} (worst {worst:.2e})")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, help="write the cases here")
    p.add_argument("--check", type=Path, help="recompute and compare the cases here")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("make_golden: no CUDA GPU: the float64 outputs are computed on the GPU")
    if a.out:
        make(a.out)
    if a.check and not check(a.check):
        sys.exit(1)
    if not (a.out or a.check):
        p.error("give --out DIR, --check DIR or both")


if __name__ == "__main__":
    main()
