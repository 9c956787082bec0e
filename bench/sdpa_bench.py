#!/usr/bin/env python3
"""An independent harness for PyTorch SDPA on every shape of a ci-gate config: what a PyTorch
user would measure, to check ci-gate's peer columns against (issue 30: within ±3%).

It shares no code with ci-gate's worker (peers/torch_sdpa_worker.py); its method is the
issue's harness: per shape and backend, q, k, v from torch.randn in the shape's dtype, a few
direct calls as warm-up, a CUDA graph of about --replay-ms (2 ms) of back-to-back calls, then
--samples (40) replays, each bracketed by CUDA events on the current stream with no lead-in,
each followed by sleep so the GPU is busy --duty (25%) of the time; the median per call.
The graph's length is found from graphs (a one-call graph, then the graph it suggests, timed
again and re-captured once if it is off by more than 10%), never from direct calls, which
measure the host where it is slower than the GPU.

  python3 bench/sdpa_bench.py configs/pr.yaml --out H.json [--backends default,flash,cudnn]

Backends: `default` (PyTorch's own choice), `flash` (FLASH_ATTENTION forced), `cudnn`
(CUDNN_ATTENTION forced). Writes
  {"torch": "...", "cuda": "...", "gpu": "...", "method": {...},
   "shapes": [{"name": "b2h8s512d64_causal_f16", "default_us": .., "default_launches": ..,
               "flash_us": .., "cudnn_us": .., ...}, ...]}
and prints a table. A backend that cannot run a shape gets null and a "<backend>_error".
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import yaml
from torch.nn.attention import SDPBackend, sdpa_kernel

DTYPES = {"float16": torch.float16, "fp16": torch.float16, "f16": torch.float16,
          "half": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}
BACKENDS = {"default": None, "flash": SDPBackend.FLASH_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION}


def shape_name(s):
    short = "f16" if DTYPES[str(s["dtype"])] == torch.float16 else "bf16"
    return (f"b{s['batch']}h{s['heads']}s{s['seq_len']}d{s['head_dim']}"
            f"{'_causal' if s.get('causal', False) else ''}_{short}")


def captured(fn, n, stream=None):
    """A CUDA graph of n back-to-back calls of fn, captured on `stream` (default: the graph's
    own). A green context's stream must capture its own graph: one captured elsewhere and
    replayed on it runs on every SM (bench/l4_sms.py, 2026-12-04)."""
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream):
        for _ in range(n):
            fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def replay_ms(g, times=5):
    """The median of `times` replays of g, ms (events on the current stream)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(times):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        ts.append(start.elapsed_time(end))
    return statistics.median(ts)


def measure(fn, target_ms, samples, duty, stream=None):
    """(median µs per call, calls per replay) of fn by the harness's method (graphs captured on
    `stream`, see `captured`; replayed on the current stream)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture: plans, workspaces, modules
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    n = max(1, round(target_ms / max(replay_ms(captured(fn, 1, stream)), 1e-4)))
    g = captured(fn, n, stream)
    per = replay_ms(g) / n
    better = max(1, round(target_ms / max(per, 1e-6)))
    if abs(better - n) > 0.1 * n:
        n = better
        del g
        g = captured(fn, n, stream)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(samples):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end)
        ts.append(ms * 1000.0 / n)
        if duty < 1.0:
            time.sleep(ms * (1.0 / duty - 1.0) / 1000.0)
    del g
    return statistics.median(ts), n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("config")
    ap.add_argument("--out", required=True)
    ap.add_argument("--replay-ms", "--min-replay-ms", dest="replay_ms", type=float, default=2.0)
    ap.add_argument("--samples", "--replays", dest="samples", type=int, default=40)
    ap.add_argument("--duty", type=float, default=0.25)
    ap.add_argument("--backends", default="default,flash,cudnn")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in BACKENDS:
            sys.exit(f"--backends: unknown backend {b!r} (default, flash, cudnn)")
    if not 0.0 < args.duty <= 1.0:
        sys.exit("--duty must be in (0, 1]")

    cfg = yaml.safe_load(open(args.config))
    shapes = cfg.get("shapes") or []
    if not shapes:
        sys.exit(f"{args.config}: no shapes")
    torch.manual_seed(args.seed)
    res = {"torch": torch.__version__, "cuda": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(),
           "method": {"replay_ms": args.replay_ms, "samples": args.samples, "duty": args.duty,
                      "lead_in": False, "stat": "median"},
           "shapes": []}
    for s in shapes:
        B, H, S, D = (int(s[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
        causal = bool(s.get("causal", False))
        dt = DTYPES[str(s["dtype"])]
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dt) for _ in range(3))
        row = {"name": shape_name(s)}
        for key in backends:
            backend = BACKENDS[key]

            def fn(backend=backend):
                if backend is None:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            try:
                us, n = measure(fn, args.replay_ms, args.samples, args.duty)
                row[f"{key}_us"], row[f"{key}_launches"] = us, n
            except Exception as ex:  # noqa: BLE001
                torch.cuda.synchronize()
                row[f"{key}_us"] = None
                row[f"{key}_error"] = f"{type(ex).__name__}: {str(ex)[:200]}"
        res["shapes"].append(row)
        del q, k, v
        torch.cuda.empty_cache()

    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"torch {res['torch']} (CUDA {res['cuda']}) on {res['gpu']}: graphs of ~{args.replay_ms} ms, "
          f"median of {args.samples} replays at {args.duty:.0%} duty, no lead-in")
    print(f"{'shape':32}" + "".join(f" {b + ' µs':>12} {'calls':>6}" for b in backends))
    for r in res["shapes"]:
        def cell(b):
            x = r.get(f"{b}_us")
            return (f" {x:12.2f} {r[f'{b}_launches']:6d}" if x is not None
                    else f" {'n/a':>12} {'':>6}")
        print(f"{r['name']:32}" + "".join(cell(b) for b in backends))
    return 0


if __name__ == "__main__":
    sys.exit(main())
