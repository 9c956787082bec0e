#!/usr/bin/env python3
"""PyTorch SDPA p50 latency for every shape of a ci-gate config YAML: a cross-check only.

The numbers that count come from ci-gate itself: a config's `peers:` are measured by
peers/torch_sdpa_worker.py with ci-gate's own method, interleaved with the kernel's rounds.
This script times back to back, with no duty cycle and no fresh buffers; on the H200 it read
the default backend 2.5-11% faster at S=512 and 0.6-4% faster on the long shapes, and the
FlashAttention d128 S=4096 shapes 8-13% slower, than the worker did (docs/PERF.md, "PyTorch
in the same run").

  python3 bench/sdpa_bench.py CONFIG.yaml --out sdpa.json [--min-replay-ms 1] [--replays 30]

Reads `shapes:` (a list of {batch, heads, seq_len, head_dim, causal, dtype}) and, for each
shape, times torch.nn.functional.scaled_dot_product_attention with the default backend and
with the FLASH_ATTENTION backend: randn inputs, warm-up, a CUDA graph holding enough
launches that one replay takes >= --min-replay-ms, >= --replays timed replays (CUDA
events), median per launch. Writes
  {"torch": "...", "gpu": "...", "shapes": [{"name": "b2h8s512d64_causal_f16",
                                            "default_us": .., "flash_us": ..}, ...]}
and prints a table. A backend that cannot run a shape gets null and an "*_error" field.
"""
import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F
import yaml
from torch.nn.attention import SDPBackend, sdpa_kernel

DTYPES = {"float16": torch.float16, "fp16": torch.float16, "f16": torch.float16,
          "half": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}


def shape_name(s):
    short = "f16" if DTYPES[s["dtype"]] == torch.float16 else "bf16"
    return (f"b{s['batch']}h{s['heads']}s{s['seq_len']}d{s['head_dim']}"
            f"{'_causal' if s.get('causal', False) else ''}_{short}")


def p50_us(fn, min_replay_ms, replays):
    """Median microseconds per call of fn(), from CUDA-graph replays."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up (kernel selection, workspaces) off the capture
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        fn()
    end.record()
    torch.cuda.synchronize()
    est_ms = max(start.elapsed_time(end) / 10, 1e-4)
    n = max(1, math.ceil(min_replay_ms / est_ms))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(replays):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        ts.append(start.elapsed_time(end) * 1000.0 / n)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("config")
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-replay-ms", type=float, default=1.0)
    ap.add_argument("--replays", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    cfg = yaml.safe_load(open(args.config))
    shapes = cfg.get("shapes") or []
    if not shapes:
        sys.exit(f"{args.config}: no shapes")
    torch.manual_seed(args.seed)
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "shapes": []}
    for s in shapes:
        B, H, S, D = (int(s[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
        causal = bool(s.get("causal", False))
        dt = DTYPES[str(s["dtype"])]
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dt) for _ in range(3))
        row = {"name": shape_name(s)}
        for key, backend in (("default", None), ("flash", SDPBackend.FLASH_ATTENTION)):
            def fn(backend=backend):
                if backend is None:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            try:
                row[f"{key}_us"] = p50_us(fn, args.min_replay_ms, args.replays)
            except Exception as ex:  # noqa: BLE001
                torch.cuda.synchronize()
                row[f"{key}_us"] = None
                row[f"{key}_error"] = f"{type(ex).__name__}: {str(ex)[:200]}"
        res["shapes"].append(row)
        del q, k, v

    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"torch {res['torch']} on {res['gpu']}")
    print(f"{'shape':32} {'default_us':>11} {'flash_us':>11}")
    for r in res["shapes"]:
        def cell(x):
            return f"{x:11.1f}" if x is not None else f"{'n/a':>11}"
        print(f"{r['name']:32} {cell(r['default_us'])} {cell(r['flash_us'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
