#!/usr/bin/env python3
"""Writes the hostile input files of tests/it/cli_hostile.rs (run from anywhere; the files are
committed, this script documents how they were made). Each file is a valid results file,
baseline or config except for the one attack its name says."""

import copy
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))

COMMIT = "60c3cd94fedb5dc019cb6e001865c9e0b626c756"


def samples(center, rounds=3, per=5):
    return [[round(center * (1 + 0.001 * ((r * per + i) % 7 - 3)), 6) for i in range(per)]
            for r in range(rounds)]


def summary(rounds):
    """What ci-gate's `Sample::summary` gives of all the rounds' values (a results file's
    summary must be that: the gate checks it against the samples)."""
    xs = sorted(v for r in rounds for v in r)
    n = len(xs)
    mean = math.fsum(xs) / n
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    mid = (xs[(n - 1) // 2] + xs[n // 2]) / 2
    h = 0.9 * (n - 1)  # numpy.quantile, method "linear"
    lo = int(math.floor(h))
    p90 = xs[lo] + (h - lo) * (xs[min(lo + 1, n - 1)] - xs[lo])
    return {"n": n, "p50": mid, "p90": p90, "mean": mean,
            "min": xs[0], "max": xs[-1], "stdev": var ** 0.5}


def tflops(params, p50_us):
    """The shape's FLOPs over its p50, as ci-gate computes them."""
    s = params["seq_len"]
    pairs = s * (s + 1) / 2 if params["causal"] else s * s
    flops = 4.0 * params["batch"] * params["heads"] * pairs * params["head_dim"]
    return flops / (p50_us * 1e-6) / 1e12


ENV = {
    "gpu_name": "NVIDIA H200", "gpu_slug": "nvidia-h200",
    "gpu_uuid": "GPU-a6d29525-452a-8fc9-a497-73e798c1e70f", "compute_capability": "9.0",
    "sm_count": 132, "l2_bytes": 62914560, "driver_version": "580.159.04",
    "cuda_driver_version": "13.0", "nvrtc_version": "13.0",
    "state_before": None, "state_after": None,
}

PARITY = {"max_abs": 8.8e-05, "rel_l2": 1.7e-04, "nan_or_inf": 0, "unwritten": 0,
          "tolerance": {"max_abs": 0.01, "rel_l2": 0.001}, "seed": 20261121}

SHAPES = [
    ({"batch": 1, "heads": 8, "seq_len": 512, "head_dim": 64, "causal": False,
      "dtype": "float16"}, "b1h8s512d64_f16", 10.3),
    ({"batch": 2, "heads": 8, "seq_len": 512, "head_dim": 64, "causal": True,
      "dtype": "float16"}, "b2h8s512d64_causal_f16", 14.1),
]


def results():
    shapes = []
    for params, name, center in SHAPES:
        s = samples(center)
        sm = summary(s)
        shapes.append({
            "name": name, "params": params, "verdict": "no-baseline", "error": None,
            "samples_us": s, "summary": sm, "tflops": tflops(params, sm["p50"]),
            "parity": dict(PARITY),
            "comparison": None,
            "measurement": {"cache": "hot", "launches_per_sample": 180, "rounds": 3,
                            "extra_rounds": 0, "working_set_bytes": 2621440,
                            "wall_s": 1.9, "sm_clock_mhz": [1980, 1980]},
        })
    return {
        "schema_version": 1, "tool_version": "0.1.0", "git_commit": COMMIT,
        "created_at": "2026-11-21T21:15:58Z", "environment": copy.deepcopy(ENV),
        "config": {"name": "pr", "path": "configs/pr.yaml", "hash": "0" * 64},
        # The measuring method (issue 37): results of two methods, or of none, are never
        # compared, so every results file here names the same one.
        "method": {"version": 3, "fingerprint": "m3-0123456789ab"},
        "kernel_source_hash": "f" * 64,
        "gate": {"max_p50_regression": 0.02, "alpha": 0.05, "confidence": 0.95,
                 "bootstrap_resamples": 10000, "min_effect": "small", "seed": 12648430},
        "baseline": None, "shapes": shapes, "passed": True, "warnings": [], "error": None,
    }


def baseline():
    r = results()
    return {
        "schema_version": 1, "gpu_slug": "nvidia-h200", "config": r["config"],
        "provenance": {"commit": COMMIT, "recorded_at": "2026-11-21T21:18:10Z",
                       "reason": "first H200 baseline", "previous_commit": None,
                       "previous_recorded_at": None, "tool_version": "0.1.0",
                       "forced": False},
        "environment": copy.deepcopy(ENV), "kernel_source_hash": "f" * 64,
        "shapes": [{"name": s["name"], "params": s["params"], "cache": "hot",
                    "samples_us": s["samples_us"], "summary": s["summary"],
                    "tflops": s["tflops"], "parity": s["parity"]} for s in r["shapes"]],
    }


def write(name, value):
    path = os.path.join(HERE, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        if isinstance(value, str):
            f.write(value)
        else:
            json.dump(value, f, indent=1, ensure_ascii=False)
            f.write("\n")


MARKDOWN_ATTACK = ("### ✅ ci-gate: PASS\n<details><summary>all good</summary> "
                   "![x](https://evil.example/i.png) <img src=x> @alice cc &#64;octo-org/team "
                   "＠bob see www.evil.example and http://evil.example fixes #1 "
                   "\u202eevil\u2066 [click](https://evil.example)")

TERMINAL_ATTACK = ("\u001b[2J\u001b[31mred\u001b[0m \u001b]8;;https://evil.example\u0007link"
                   "\u001b]8;;\u0007\r\n::error::pwned \u202eevil\u009b31m")


def main():
    write("results-ok.json", results())

    r = results()
    r["git_commit"] = "é" * 13 + "😀"
    write("results-multibyte-commit.json", r)

    b = baseline()
    b["provenance"]["commit"] = "€" * 12 + "x"
    write("baselines-multibyte-commit/nvidia-h200/pr.json", b)

    for name, slug in [("traversal", "../../escaped"), ("absolute", "/tmp/ci-gate-escaped")]:
        r = results()
        r["environment"]["gpu_slug"] = slug
        write(f"results-slug-{name}.json", r)
    r = results()
    r["environment"]["gpu_name"] = "../../escaped"
    r["environment"]["gpu_slug"] = "../../escaped"
    write("results-gpu-name-traversal.json", r)
    r = results()
    r["config"]["name"] = "../../escaped"
    write("results-config-traversal.json", r)

    r = results()
    r["config"]["name"] = "pr` " + MARKDOWN_ATTACK
    write("results-config-markdown.json", r)

    r = results()
    r["warnings"] = [MARKDOWN_ATTACK, TERMINAL_ATTACK]
    write("results-free-text-attacks.json", r)

    b = baseline()
    b["provenance"]["reason"] = TERMINAL_ATTACK
    write("baselines-reason-escapes/nvidia-h200/pr.json", b)

    r = results()
    r["gate"]["bootstrap_resamples"] = 4294967295
    write("results-huge-resamples.json", r)
    write("config-huge-resamples.yaml",
          "name: pr\ngate:\n  bootstrap_resamples: 4294967295\nshapes:\n"
          "  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: float16}\n")

    n = 100_000
    write("config-deep.yaml", "name: pr\nshapes: " + "[" * n + "]" * n + "\n")
    write("results-deep.json", "{\"schema_version\": 1, \"x\": " + "[" * n + "]" * n + "}\n")

    for name, value in [("zero", 0), ("negative", -3.5), ("huge", 1e308), ("tiny", 1e-300)]:
        r = results()
        r["shapes"][1]["samples_us"][2][4] = value
        write(f"results-{name}-sample.json", r)
    r = results()
    r["shapes"][1]["samples_us"].append([])
    write("results-empty-round.json", r)
    r = results()
    r["shapes"][1]["summary"]["p50"] = 1e308
    write("results-huge-summary.json", r)
    # A verdict that passes over the shape's own failed parity record: before 2026-12-07 its
    # comment read "PASS" with "FAIL" in the parity column.
    r = results()
    r["shapes"][1]["parity"]["max_abs"] = 0.5
    write("results-pass-over-failed-parity.json", r)
    r = results()
    r["shapes"][1]["parity"]["rel_l2"] = -1.0
    write("results-negative-parity-error.json", r)
    # Figures derived from the samples that are not theirs: the comment showed a p50 of 5 µs
    # over samples of 14, and `history` recorded it.
    r = results()
    r["shapes"][1]["summary"]["p50"] = 5.0
    write("results-summary-not-of-its-samples.json", r)
    r = results()
    r["shapes"][1]["tflops"] = 900.0
    write("results-tflops-not-of-its-p50.json", r)
    # A verdict its record does not give: an improvement with no comparison at all.
    r = results()
    r["shapes"][1]["verdict"] = "improvement"
    write("results-verdict-not-of-its-record.json", r)

    r = results()
    r["shapes"][0]["verdict"] = "pass\n::error title=ci-gate::all clear"
    write("results-newline-in-verdict.json", r)

    r = results()
    r["shapes"][0]["name"] = "b1h8s512d64_f16\n::error::x"
    write("results-shape-name-mismatch.json", r)


if __name__ == "__main__":
    main()
