#!/usr/bin/env python3
"""The witness's shifts in results files: a side alone against its control, and the two sides
of an A/B against each other (`measurement.unwitnessed`, docs/MEASURING.md, "The host's clock
witnesses every sample"), with whether NVML read one SM clock before and after every sample of
the shape (`measurement.sm_clock_mhz` [min, max]).

It answers one question from runs already made: does the clock set the offset between a
kernel's unwitnessed time and the control's? Files from one run counted twice (the same
`created_at`) count once.

  python3 bench/control_offset.py RESULTS.json ...        # e.g. a device call's r/*.json
"""
import argparse
import json
import statistics
import sys


def shapes(path):
    """(run, shape, gpu, clock [min, max] or None, unwitnessed) of each shape with a shift."""
    try:
        with open(path, encoding="utf-8") as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{path}: skipped ({e})", file=sys.stderr)
        return
    if not isinstance(r, dict) or not isinstance(r.get("shapes"), list):
        return
    gpu = (r.get("environment") or {}).get("gpu_name", "?")
    for s in r["shapes"]:
        if not isinstance(s, dict):
            continue
        m = s.get("measurement") or {}
        u = m.get("unwitnessed") or {}
        if not isinstance(u, dict) or not isinstance(u.get("shift_us"), (int, float)):
            continue
        clock = m.get("sm_clock_mhz")
        clock = tuple(clock) if isinstance(clock, list) and len(clock) == 2 else None
        yield (r.get("created_at"), s.get("name")), gpu, clock, u


def summary(label, values):
    if not values:
        return f"{label}: none"
    return (f"{label}: {len(values)} shape-runs, {min(values):+.2f} … {max(values):+.2f} µs,"
            f" median {statistics.median(values):+.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+")
    args = ap.parse_args()
    seen = {}
    for path in args.results:
        for key, gpu, clock, u in shapes(path):
            seen[key] = (gpu, clock, u)
    alone = [(c, u) for _, c, u in seen.values() if u.get("control_us") is not None]
    ab = [u["shift_us"] for _, _, u in seen.values() if u.get("base_us") is not None]
    steady = [u["shift_us"] for c, u in alone if c and c[0] == c[1]]
    moved = [u["shift_us"] for c, u in alone if c and c[0] != c[1]]
    print(summary("a side alone against its control", [u["shift_us"] for _, u in alone]))
    print("  " + summary("one SM clock before and after every sample", steady))
    print("  " + summary("the clock read lower at least once", moved))
    print(summary("the candidate against the base (A/B)", ab))
    gpus = sorted({g for g, _, _ in seen.values()})
    print(f"GPUs: {', '.join(gpus) if gpus else 'none'}")
    return 0 if seen else 2


if __name__ == "__main__":
    sys.exit(main())
