#!/usr/bin/env python3
"""Summarises a `ci-gate eval` output (JSON lines) for docs/PERF.md: candidates per minute and
where a candidate's time went.

    python3 bench/eval_summary.py OUT.jsonl WALL_S [--title TEXT]

WALL_S is the evaluator's wall time from start to exit (the script that ran it measures it).
Throughput is counted two ways: all lines over the whole wall time (start-up, the reference's
compile and the last candidate's tail included), and in steady state: the candidates measured
after the first one over the time between the first and the last measurement's end (each
line's `timing.total_s` back from its writing is when it was read; the writing times are
reconstructed from the order of the lines and their totals, so steady state is an estimate).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter


def mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.fmean(xs) if xs else float("nan")


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("lines")
    ap.add_argument("wall_s", type=float)
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    lines = [json.loads(l) for l in open(args.lines) if l.strip()]
    measured = [l for l in lines if l["timing"]["measure_s"] > 0]
    counts = Counter(l["verdict"] for l in lines)
    print(f"## {args.title}")
    print(f"{len(lines)} lines, {len(measured)} measured, wall {args.wall_s:.1f} s: "
          f"{60 * len(measured) / args.wall_s:.1f} measured candidates a minute over the whole run")
    print("verdicts: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    if len(measured) >= 3:
        # The measuring processes run one after another on a GPU: their sum over the steady
        # part is the GPU-side cost of a candidate, whatever the compilers do beside it.
        per = [l["timing"]["measure_s"] for l in measured[1:]]
        print(f"steady state (one GPU): {60 / mean(per):.1f} candidates a minute "
              f"(mean measuring process {mean(per):.2f} s, median {median(per):.2f} s)")
    t = [l["timing"] for l in measured]
    run = [x["run"] or {} for x in t]
    rows = [
        ("queued for a compiler", [x["queued_s"] for x in t]),
        ("compile (NVRTC, sandbox, CUBIN policy)", [x["compile_s"] for x in t]),
        ("waiting for the GPU after compiling", [x["waiting_s"] for x in t]),
        ("measuring process, wall", [x["measure_s"] for x in t]),
        ("  of which: setup (context, modules, clocks)", [r.get("setup_s") for r in run]),
        ("  lock wait", [r.get("lock_wait_s") for r in run]),
        ("  parity on random shapes", [r.get("probes_s") for r in run]),
        ("  parity of both sides, each shape", [r.get("parity_s") for r in run]),
        ("  timed pairs (both stages, checks included)", [r.get("measure_s") for r in run]),
        ("    of which: preparing rounds", [r.get("preparing_s") for r in run]),
        ("    sampling (checks and idle time included)", [r.get("sampling_s") for r in run]),
        ("    finishing rounds", [r.get("finishing_s") for r in run]),
        ("  the run inside the process", [r.get("total_s") for r in run]),
        ("confirmations (accepted candidates)", [x["confirm_s"] for x in t if x["confirm_s"] > 0]),
        ("read to written", [x["total_s"] for x in t]),
    ]
    print("| per candidate | mean s | median s |")
    print("| --- | --- | --- |")
    for name, xs in rows:
        print(f"| {name} | {mean(xs):.3f} | {median(xs):.3f} |")
    spans = sorted({k for r in run for k in (r.get("detail_s") or {})})
    if spans:
        print("| span (timing.run.detail_s) | mean s | median s |")
        print("| --- | --- | --- |")
        for k in spans:
            xs = [(r.get("detail_s") or {}).get(k, 0.0) for r in run if r.get("detail_s")]
            print(f"| {k} | {mean(xs):.3f} | {median(xs):.3f} |")
    pairs = [s.get("pairs") for l in measured for s in l["shapes"] if s.get("pairs")]
    if pairs:
        print(f"pairs per shape: mean {mean(pairs):.1f}, median {median(pairs):.0f}, max {max(pairs)}")
    for l in lines:
        ratios = " ".join(f"{s['ratio']:.4f}" for s in l["shapes"] if s.get("ratio"))
        print(f"  {l['line']:>3} {str(l['id']):<22} {l['verdict']:<11} {ratios:<40} {l['reason'][:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
