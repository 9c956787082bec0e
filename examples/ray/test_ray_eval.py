#!/usr/bin/env python3
"""The Ray example on a local Ray cluster with the simulated GPU (CI, no GPU): three actors,
each with a fake GPU of its own (`ray.init(num_gpus=3)`; 4 logical CPUs, as each actor is
scheduled on one), two screening and one accepting
with a leaderboard, running `ci-gate eval` on simulated kernels (CI_GATE_SIMULATE). Checks that
every candidate gets its line, that the verdicts are the simulated kernels', that a win is
accepted by the accepting actor only, and that each actor had a GPU of its own.

    python3 examples/ray/test_ray_eval.py --ci-gate target/debug/ci-gate
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

CONFIG = """\
name: ray-sim
measure: {cache: hot, samples_per_round: 10, min_rounds: 6, max_rounds: 16, max_wait_s: 2}
eval: {min_speedup: 0.03, min_shapes: 2, timeout_s: 120}
shapes:
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: false, dtype: float16}
  - {batch: 2, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: float16}
  - {batch: 2, heads: 16, seq_len: 2048, head_dim: 128, causal: true, dtype: bfloat16}
"""


def sim(name: str, directive: str) -> str:
    return f"// {name}\n// ci-gate-sim: {directive}\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ci-gate", required=True)
    args = ap.parse_args()
    ci_gate = str(Path(args.ci_gate).resolve())
    # The simulated GPU for every `ci-gate eval` the actors start (never in GitHub Actions).
    os.environ["CI_GATE_SIMULATE"] = "7"
    os.environ.pop("GITHUB_ACTIONS", None)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ray
    import ray_eval

    failures: list[str] = []
    passed = 0

    def check(ok: bool, what: str) -> None:
        nonlocal passed
        if ok:
            passed += 1
        else:
            failures.append(what)
            print(f"FAIL: {what}", file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "eval.yaml").write_text(CONFIG)
        (tmp / "base").mkdir()
        (tmp / "base" / "attention.cu").write_text(sim("base", "factor=1.0"))
        (tmp / "win.cu").write_text(sim("win", "factor=0.9"))
        candidates = [
            {"id": "same-1", "source": sim("s1", "factor=1.0")},
            {"id": "win", "path": str(tmp / "win.cu")},
            {"id": "slow", "source": sim("slow", "factor=1.1")},
            {"id": "wrong", "source": sim("wrong", "parity-fail=*")},
            {"id": "hang", "source": sim("hang", "hang=*")},
            {"id": "same-2", "source": sim("s2", "factor=1.0")},
            {"id": "bad", "source": "\n#include \"/etc/passwd\"\n"},
        ]
        # The actors' processes inherit this environment (CI_GATE_SIMULATE above).
        ray.init(num_cpus=4, num_gpus=3, include_dashboard=False,
                 object_store_memory=80 * 1024 * 1024)
        try:
            opts = argparse.Namespace(ci_gate=ci_gate, config=str(tmp / "eval.yaml"),
                                      base_kernels=str(tmp / "base"),
                                      leaderboard=str(tmp / "board.json"), workers=2,
                                      gpus_per_worker=1.0, batch=2)
            summary = ray_eval.run(opts, iter(candidates), report=lambda l: None)
        finally:
            ray.shutdown()
        lines = {l["id"]: l for l in summary["lines"]}
        check(sorted(lines) == sorted(c["id"] for c in candidates), f"one line per candidate: {sorted(lines)}")
        verdicts = {i: l["verdict"] for i, l in lines.items()}
        expected = {"same-1": "same", "same-2": "same", "win": "faster", "slow": "slower",
                    "wrong": "parity-fail", "hang": "error", "bad": "refused"}
        for i, v in expected.items():
            check(verdicts.get(i) == v, f"{i}: {verdicts.get(i)} (expected {v})")
        win = lines.get("win", {})
        check(win.get("acceptance", {}).get("accepted") is True, f"the win was accepted: {json.dumps(win)[:400]}")
        check(win.get("screening", {}).get("verdict") == "faster", "the win's screening line is kept")
        check(win.get("reference", {}).get("kind") == "base", "the first win is measured against the base")
        board = json.loads((tmp / "board.json").read_text()) if (tmp / "board.json").exists() else {"entries": []}
        check([e["id"] for e in board["entries"]] == ["win"], f"the leaderboard holds the win: {board['entries']}")
        gpus = [p["cuda_visible_devices"] for p in summary["places"]]
        check(len(set(gpus)) == 3 and None not in gpus, f"each actor has a GPU of its own: {gpus}")
        # The screening evaluators saw an error (the hang): exit 1; the accepting one none.
        check(sorted(summary["codes"]) == [0, 0, 1],
              f"evaluator exit codes {summary['codes']}")
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
