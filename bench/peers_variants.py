#!/usr/bin/env python3
"""ci-gate's PyTorch worker (peers/torch_sdpa_worker.py) on its own, once per variant of its
method, on every shape of a config: which factor of the method moves a peer's time (issue 30).

Each variant runs in a worker process of its own (so each starts with an empty cuDNN plan
cache, as a gate run does), driven over the worker's JSON-lines protocol exactly as ci-gate
drives it: hello, then per shape, 3 rounds of every peer (prepare on the first), then release.
Nothing of the kernel runs between the rounds: against the gate's own peer columns (the same
method interleaved with the kernel's pairs) `alone` shows what the interleaving does.

  python3 bench/peers_variants.py configs/pr.yaml --out V.json [--variants alone,legacy,...]

Variants (the worker's `variant` field; see the worker's docstring):
  alone          the gate's method (hello warms every shape first), nothing interleaved
  no-lead-in     without the lead-in spin before each replay (as an independent harness)
  warmup-sizing  the graph sized from direct warm-up calls, no warm-up at hello (the method
                 before issue 30 in this one factor: cuDNN's first call of a shape builds its
                 plan inside the warm-up, which then sizes a one-call graph)
  fresh          every round on fresh buffers behind a spacer, with a new graph
  legacy         the whole method before issue 30: warm-up sizing kept from the first round,
                 fresh buffers every round, float32 randn cast, lead-in; 10 samples a round
  qpool          the kernel's conditions: a q of its own per call, refilled before each
                 replay (not L2-warm), and an output of its own per call, zeroed before it
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import yaml

VARIANTS = {
    "alone": ({}, True, 8),
    "no-lead-in": ({"lead_in": False}, True, 8),
    "warmup-sizing": ({"sizing": "warmup"}, False, 8),
    "fresh": ({"fresh": True}, True, 8),
    "legacy": ({"sizing": "warmup", "fresh": True, "cast": True, "lead_in": True}, False, 10),
    "qpool": ({"qpool": True}, True, 8),
}
# The order ci-gate measures a config's peers in (its canonical order).
PEERS = ["torch-sdpa", "torch-sdpa-flash", "torch-sdpa-cudnn"]
DTYPES = {"float16": "float16", "fp16": "float16", "f16": "float16", "half": "float16",
          "bfloat16": "bfloat16", "bf16": "bfloat16"}


def shape_name(s):
    short = "f16" if DTYPES[str(s["dtype"])] == "float16" else "bf16"
    return (f"b{s['batch']}h{s['heads']}s{s['seq_len']}d{s['head_dim']}"
            f"{'_causal' if s.get('causal', False) else ''}_{short}")


class Worker:
    def __init__(self, script, python_args):
        self.p = subprocess.Popen([sys.executable, *python_args, script], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker exited ({self.p.poll()})")
        return json.loads(line)

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=30)
        except Exception:
            self.p.kill()


def run_variant(script, python_args, name, shapes, peers, m):
    variant, warm, samples = VARIANTS[name]
    w = Worker(script, python_args)
    t = time.perf_counter()
    hello = {"cmd": "hello"}
    if warm:
        hello["warm"] = [{"peer": p, "shape": s} for s in shapes for p in peers]
    ans = w.ask(hello)
    if not ans.get("ok"):
        w.close()
        raise RuntimeError(ans.get("error"))
    out = {"variant": variant, "samples_per_round": samples, "hello_s": time.perf_counter() - t,
           "shapes": {}}
    for i, s in enumerate(shapes):
        rows = {p: {"samples_us": [], "launches": None, "error": None} for p in peers}
        for r in range(3):
            for p in peers:
                row = rows[p]
                if row["error"]:
                    continue
                if r == 0:
                    a = w.ask({"cmd": "prepare", "peer": p, "shape": s, "seed": 20261121 + i,
                               "sets": 1, "sample_ms": m["sample_ms"],
                               "warmup_ms": m["warmup_ms"], "variant": variant})
                    if not a.get("ok"):
                        row["error"] = a.get("error")
                        continue
                    row["launches"] = a["launches"]
                    row["backend"] = a.get("backend")
                a = w.ask({"cmd": "round", "peer": p, "samples": samples,
                           "duty_cycle": m["duty_cycle"]})
                if not a.get("ok"):
                    row["error"] = a.get("error")
                    continue
                row["samples_us"].append(a["samples_us"])
                row["launches"] = a.get("launches", row["launches"])
        w.ask({"cmd": "release"})
        for row in rows.values():
            vals = [v for r in row["samples_us"] for v in r]
            row["p50_us"] = statistics.median(vals) if vals else None
        out["shapes"][shape_name(s)] = rows
    out["seconds"] = time.perf_counter() - t
    w.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("config")
    ap.add_argument("--out", required=True)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--worker", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "peers", "torch_sdpa_worker.py"))
    # The worker runs as ci-gate runs it (isolated: no PYTHON* variables, no user site);
    # the tests' fake torch needs "-u" alone.
    ap.add_argument("--python-args", default="-I -u")
    args = ap.parse_args()
    cfg = yaml.safe_load(open(args.config))
    m = {"sample_ms": 2.0, "warmup_ms": 25.0, "duty_cycle": 0.25}
    m.update({k: float(v) for k, v in (cfg.get("measure") or {}).items() if k in m})
    peers = [p for p in PEERS if p in (cfg.get("peers") or [])] or ["torch-sdpa-flash",
                                                                   "torch-sdpa-cudnn"]
    shapes = [{"batch": int(s["batch"]), "heads": int(s["heads"]), "seq_len": int(s["seq_len"]),
               "head_dim": int(s["head_dim"]), "causal": bool(s.get("causal", False)),
               "dtype": DTYPES[str(s["dtype"])]} for s in cfg.get("shapes") or []]
    res = {"peers": peers, "measure": m, "variants": {}}
    for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
        if name not in VARIANTS:
            sys.exit(f"--variants: unknown variant {name!r} ({', '.join(VARIANTS)})")
        try:
            res["variants"][name] = run_variant(args.worker, args.python_args.split(), name,
                                                shapes, peers, m)
        except Exception as e:  # noqa: BLE001
            res["variants"][name] = {"error": f"{type(e).__name__}: {e}"}
        v = res["variants"][name]
        print(f"{name}: {v.get('seconds', 0):.1f} s {v.get('error') or ''}", flush=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
