#!/usr/bin/env python3
"""Compares ci-gate's peer columns with an independent harness (issue 30), and the worker's
variants with both: per shape and peer, the gate's µs, the harness's µs and their difference;
then each variant's difference from the harness, and the calls per replay.

  python3 bench/peers_compare.py R.json H.json [V.json] [--wall SECONDS] [--label TEXT]

R.json: `ci-gate local --out` with peers; H.json: bench/sdpa_bench.py; V.json:
bench/peers_variants.py. The last line is "max |diff| X%" (gate against harness).
"""
import argparse
import json
import sys

HARNESS_KEY = {"torch-sdpa": "default", "torch-sdpa-flash": "flash", "torch-sdpa-cudnn": "cudnn"}
SHORT = {"torch-sdpa": "SDPA", "torch-sdpa-flash": "FA2", "torch-sdpa-cudnn": "cuDNN"}


def pct(a, b):
    return None if a is None or b is None or b <= 0 else (a / b - 1.0) * 100.0


def cell(x, width=8, fmt="{:+.1f}"):
    return f"{'—':>{width}}" if x is None else f"{fmt.format(x):>{width}}"


def timing_line(r, wall, label):
    t = r.get("timing") or {}
    parts = [f"{k[:-2]} {t.get(k, 0):.1f}" for k in
             ("lock_wait_s", "setup_s", "probes_s", "parity_s", "measure_s", "peers_s",
              "drift_s", "energy_s")]
    s = f"{label}: total {t.get('total_s', 0):.1f} s"
    if wall is not None:
        s += f" (wall {wall:.1f} s)"
    s += " — " + ", ".join(parts) + f" (of peers: start {t.get('peers_start_s', 0):.1f})"
    others = t.get("other_processes") or []
    if others:
        s += f"; OTHER GPU PROCESSES: {others}"
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gate")
    ap.add_argument("harness")
    ap.add_argument("variants", nargs="?")
    ap.add_argument("--wall", type=float)
    ap.add_argument("--label", default="gate")
    a = ap.parse_args()
    r = json.load(open(a.gate))
    h = json.load(open(a.harness))
    v = json.load(open(a.variants)) if a.variants else {"variants": {}}
    env = r.get("environment") or {}
    print(f"GPU {env.get('gpu_name')} ({env.get('gpu_uuid')}), {(r.get('peers') or {}).get('runtime')}; "
          f"harness: torch {h.get('torch')} on {h.get('gpu')}, {h.get('method')}")
    print(timing_line(r, a.wall, a.label))
    verdicts = {}
    for s in r.get("shapes", []):
        verdicts[s["verdict"]] = verdicts.get(s["verdict"], 0) + 1
    print(f"verdicts: {verdicts}; passed: {r.get('passed')}; warnings: {len(r.get('warnings', []))}")
    for w in r.get("warnings", []):
        print(f"  warning: {w}")
    launches = {(l["shape"], l["peer"]): l["launches"]
                for l in (r.get("peers") or {}).get("launches", [])}
    harness = {row["name"]: row for row in h.get("shapes", [])}
    variants = {k: x for k, x in v.get("variants", {}).items() if "shapes" in x}
    for k, x in v.get("variants", {}).items():
        if "error" in x:
            print(f"variant {k} failed: {x['error']}")
    names = list(variants)
    print()
    print("diff %: against the harness (positive: slower than the harness). calls: per replay, "
          "gate / harness" + (" / " + " / ".join(names) if names else ""))
    head = (f"{'shape':32} {'peer':6} {'gate µs':>9} {'harn µs':>9} {'diff %':>7} {'ours×':>6}"
            + "".join(f" {n[:10]:>10}" for n in names) + "   calls")
    print(head)
    diffs = []
    for s in r.get("shapes", []):
        ours = (s.get("summary") or {}).get("p50")
        for p in s.get("peers", []):
            peer = p["peer"]
            key = HARNESS_KEY.get(peer)
            hrow = harness.get(s["name"], {})
            hus = hrow.get(f"{key}_us")
            gus = p.get("p50_us")
            d = pct(gus, hus)
            if d is not None:
                diffs.append((abs(d), s["name"], peer))
            ratio = ours / gus if ours and gus else None
            vcells = []
            calls = [str(launches.get((s["name"], peer), "?")), str(hrow.get(f"{key}_launches", "?"))]
            for n in names:
                row = variants[n]["shapes"].get(s["name"], {}).get(peer) or {}
                vcells.append(cell(pct(row.get("p50_us"), hus), 10))
                calls.append(str(row.get("launches", "?")))
            err = p.get("error") or hrow.get(f"{key}_error")
            print(f"{s['name']:32} {SHORT.get(peer, peer):6} {cell(gus, 9, '{:.2f}')} {cell(hus, 9, '{:.2f}')} "
                  f"{cell(d, 7)} {cell(ratio, 6, '{:.2f}')}" + "".join(vcells) + "   " + "/".join(calls)
                  + (f"   ({err[:60]})" if err else ""))
    if not diffs:
        print("max |diff| n/a (no shape has both a gate and a harness time)")
        return 1
    worst = max(diffs)
    print(f"max |diff| {worst[0]:.1f}% ({worst[1]} {SHORT.get(worst[2], worst[2])}; "
          f"{sum(1 for d in diffs if d[0] <= 3.0)}/{len(diffs)} within ±3%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
