#!/usr/bin/env python3
"""FlashAttention-2 at the tile it runs on an L4, timed on any card (issue 40, item 2).

PyTorch's FLASH_ATTENTION backend picks FA2's d128 tile by compute capability: 128 x 64 on
4 warps (64 KiB of shared memory) on sm_80 and sm_90, 128 x 32 (non-causal) and 64 x 64
(causal) only on sm_86/sm_89, the L4's, where two CTAs of the wider tile would not fit in
100 KB. So on an H200 the "FA2" column of the L4 proxy times a tile the L4 never runs. This
script times FA2's own code at both choices, from a build of its source
(bench/fa2/build.sh -> libfa2_tiles.so, bench/fa2/fa2_tiles.cu's entry point), beside
PyTorch's FA2 on the same tensors, with bench/sdpa_bench.py's method (CUDA graphs of about
--replay-ms of back-to-back calls, --samples replays at --duty, the median per call):

  flash_us    PyTorch's FA2 (sdpa_kernel(FLASH_ATTENTION)), as bench/sdpa_bench.py;
  t0_us       the build, FA2's sm_80/sm_90 tile: the calibration (it should read as flash_us:
              the same code, compiled by us);
  t1_us       the build, FA2's sm_86/sm_89 tile: what an L4 runs.

Each build output is checked against PyTorch's (max |diff|) before it is timed; a shape
whose check fails gets no time. head_dim 128, where the tiles differ, and 64, where FA2
has one tile for every card (128 x 128 on 4 warps; only t0 is timed: t1 is the same kernel).

  python3 bench/fa2_tiles.py configs/pr-ada.yaml --lib libfa2_tiles.so --out F.json
"""
import argparse
import ctypes
import json
import os
import sys

import torch
import torch.nn.functional as F
import yaml
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_bench import DTYPES, measure, shape_name  # noqa: E402

# |ours - PyTorch's| allowed of a build's output, by dtype (both are FA2's code; the tiles
# sum in a different order)
TOL = {torch.float16: 2e-2, torch.bfloat16: 6e-2}


def load_fa2(path):
    """libfa2_tiles.so (bench/fa2/build.sh) with fa2_fwd's signature declared."""
    lib = ctypes.CDLL(os.path.abspath(path))
    lib.fa2_fwd.restype = ctypes.c_int
    lib.fa2_fwd.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 5 + [ctypes.c_int] * 4 + [
        ctypes.c_void_p]
    return lib


def fa2_call(lib, tile, causal, q, k, v, o, lse):
    """One call of the build at `tile` (0: FA2's sm_80/sm_90 choice, 1: its sm_86/sm_89 one) on
    [B, H, S, D] q, k, v into o and lse, on the current stream."""
    B, H, S, D = q.shape

    def fn():
        rc = lib.fa2_fwd(tile, int(q.dtype == torch.bfloat16), int(causal), q.data_ptr(),
                         k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), B, H, S, D,
                         torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"fa2_fwd(tile {tile}): CUDA error {rc}")
    return fn


def flash_call(q, k, v, causal):
    """PyTorch's FA2 (sdpa_kernel(FLASH_ATTENTION)) on q, k, v, returning its output."""
    def fn():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return fn


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("config")
    ap.add_argument("--lib", required=True, help="libfa2_tiles.so from bench/fa2/build.sh")
    ap.add_argument("--out", required=True)
    ap.add_argument("--replay-ms", type=float, default=2.0)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--duty", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    lib = load_fa2(args.lib)
    cfg = yaml.safe_load(open(args.config))
    torch.manual_seed(args.seed)
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
           "method": {"replay_ms": args.replay_ms, "samples": args.samples, "duty": args.duty},
           "shapes": []}
    for s in cfg.get("shapes") or []:
        B, H, S, D = (int(s[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
        if D not in (64, 128):
            continue
        causal = bool(s.get("causal", False))
        dt = DTYPES[str(s["dtype"])]
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dt) for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
        row = {"name": shape_name(s)}

        flash = flash_call(q, k, v, causal)
        ref = flash().float()
        row["flash_us"], row["flash_launches"] = measure(flash, args.replay_ms, args.samples,
                                                         args.duty)
        for tile in (0, 1) if D == 128 else (0,):
            fn = fa2_call(lib, tile, causal, q, k, v, o, lse)
            o.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            diff = (o.float() - ref).abs().max().item()
            row[f"t{tile}_maxdiff"] = diff
            if not diff <= TOL[dt]:  # NaN fails too
                row[f"t{tile}_us"] = None
                row[f"t{tile}_error"] = f"output differs from PyTorch's by {diff}"
                continue
            row[f"t{tile}_us"], row[f"t{tile}_launches"] = measure(fn, args.replay_ms,
                                                                   args.samples, args.duty)
        res["shapes"].append(row)
        del q, k, v, o, lse, ref
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"torch {res['torch']} on {res['gpu']}: graphs of ~{args.replay_ms} ms, median of "
          f"{args.samples} replays at {args.duty:.0%} duty")
    print(f"{'shape':30} {'torch FA2 µs':>12} {'t0 µs':>9} {'t0/torch':>8} {'t1 µs':>9} "
          f"{'t1/t0':>6}  max|diff| t0, t1")
    for r in res["shapes"]:
        f0, t0, t1 = r.get("flash_us"), r.get("t0_us"), r.get("t1_us")
        q0 = f"{t0 / f0:8.3f}" if t0 and f0 else f"{'—':>8}"
        q1 = f"{t1 / t0:6.3f}" if t0 and t1 else f"{'—':>6}"
        us = lambda x, w: f"{x:{w}.2f}" if x else f"{'—':>{w}}"  # noqa: E731
        dif = lambda t: f"{r[t]:.1e}" if t in r else "—"  # noqa: E731
        print(f"{r['name']:30} {us(f0, 12)} {us(t0, 9)} {q0} {us(t1, 9)} {q1}  "
              f"{dif('t0_maxdiff')}, {dif('t1_maxdiff')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
