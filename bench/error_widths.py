#!/usr/bin/env python3
"""How wide ci-gate's error messages are: runs the binary on many inputs that end in an error
(exit 2) without a GPU (bad configs, hostile results files, bad sample files, missing files,
commands that need a GPU) and counts the `error:` lines wider than 80 columns, the first line
of each message and every line.

  python3 bench/error_widths.py --ci-gate target/debug/ci-gate [--show]

`--show` prints every case's first line with its width. Run from the repository root (the
hostile files of tests/hostile are inputs). Widths are counted in characters (Python's len;
the messages are ASCII but for quoted file text).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 80

GOOD_SHAPE = "  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, causal: true, dtype: float16}\n"

# Config texts, each wrong in one way (compiled with `ci-gate compile --config`, which reads
# the config without a GPU).
CONFIGS = {
    "empty": "",
    "no-shapes": "name: pr\n",
    "unknown-top-key": "name: pr\nshapez: []\n",
    "typo-gate-key": "gate:\n  max_p50_regresion: 0.02\nshapes:\n" + GOOD_SHAPE,
    "min-effect": "gate:\n  min_effect: small\nshapes:\n" + GOOD_SHAPE,
    "alpha-out-of-range": "gate:\n  alpha: 1.5\nshapes:\n" + GOOD_SHAPE,
    "negative-margin": "gate:\n  max_p50_regression: -0.1\nshapes:\n" + GOOD_SHAPE,
    "resamples-huge": "gate:\n  bootstrap_resamples: 100000000\nshapes:\n" + GOOD_SHAPE,
    "typo-measure-key": "measure:\n  min_round: 8\nshapes:\n" + GOOD_SHAPE,
    "rounds-inverted": "measure:\n  min_rounds: 30\n  max_rounds: 8\nshapes:\n" + GOOD_SHAPE,
    "duty-cycle": "measure:\n  duty_cycle: 2\nshapes:\n" + GOOD_SHAPE,
    "cache-mode": "measure:\n  cache: lukewarm\nshapes:\n" + GOOD_SHAPE,
    "typo-parity": "parity:\n  float16: {max_abs: 0.01, rel_l2: 0.001, extra: 1}\nshapes:\n" + GOOD_SHAPE,
    "tolerance-negative": "parity:\n  float16: {max_abs: -1, rel_l2: 0.001}\nshapes:\n" + GOOD_SHAPE,
    "bad-name": "name: ../evil\nshapes:\n" + GOOD_SHAPE,
    "shapes-empty": "shapes: []\n",
    "shape-missing-dtype": "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64}\n",
    "shape-bad-dtype": "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 64, dtype: float8}\n",
    "shape-head-dim": "shapes:\n  - {batch: 1, heads: 8, seq_len: 512, head_dim: 96, dtype: float16}\n",
    "shape-zero-batch": "shapes:\n  - {batch: 0, heads: 8, seq_len: 512, head_dim: 64, dtype: float16}\n",
    "shape-huge-seq": "shapes:\n  - {batch: 1, heads: 8, seq_len: 100000000, head_dim: 64, dtype: float16}\n",
    "shape-twice": "shapes:\n" + GOOD_SHAPE + GOOD_SHAPE,
    "shape-typo": "shapes:\n  - {batch: 1, head: 8, seq_len: 512, head_dim: 64, dtype: float16}\n",
    "peer-unknown": "peers: [torch-sdpa-magic]\nshapes:\n" + GOOD_SHAPE,
    "compile-typo": "compile:\n  defins: {}\nshapes:\n" + GOOD_SHAPE,
    "not-yaml": "shapes: [\n",
    "list-at-top": "- 1\n- 2\n",
    "deep": "a: " + "[" * 40 + "]" * 40 + "\n",
}

# Plain sample files, each wrong in one way (`ci-gate compare FILE GOOD`).
SAMPLES = {
    "samples-empty": "",
    "samples-comment-only": "# nothing\n",
    "samples-text": "32.1\nfast\n",
    "samples-negative": "32.1\n-4\n",
    "samples-zero": "32.1\n0\n",
    "samples-nan": "32.1\nNaN\n",
    "samples-inf": "32.1\ninf\n",
    "samples-one": "32.1\n",
}


def cases(repo: Path) -> list[tuple[str, list[str]]]:
    """The cases, with their input files written under `repo/in/` and named relative to
    `repo` (the messages name a file as it was given: short names keep the widths about the
    messages)."""
    inputs = repo / "in"
    inputs.mkdir()
    out: list[tuple[str, list[str]]] = []
    for name, text in CONFIGS.items():
        (inputs / f"{name}.yaml").write_text(text, encoding="utf-8")
        out.append((f"compile --config {name}", ["compile", "--config", f"in/{name}.yaml"]))
        out.append((f"merge --config {name}", ["merge", "--config", f"in/{name}.yaml", "in/none.json"]))
    shutil.copy(ROOT / "docs" / "examples" / "base.txt", inputs / "base.txt")
    for name, text in SAMPLES.items():
        (inputs / f"{name}.txt").write_text(text, encoding="utf-8")
        out.append((f"compare {name}", ["compare", f"in/{name}.txt", "in/base.txt"]))
    for f in sorted((ROOT / "tests" / "hostile").glob("results-*.json")):
        shutil.copy(f, inputs / f.name)
        if f.name != "results-ok.json":
            out.append((f"compare {f.name}", ["compare", "in/results-ok.json", f"in/{f.name}"]))
            out.append((f"comment {f.name}", ["comment", "--from", f"in/{f.name}", "--fallback", "c.md"]))
    missing = "in/no-such-file.json"
    out += [
        ("compare missing", ["compare", missing, missing]),
        ("compare a directory", ["compare", "in", "in"]),
        ("merge missing", ["merge", "--config", "configs/pr.yaml", missing]),
        ("comment missing", ["comment", "--from", missing]),
        ("history missing", ["history", "--history", missing]),
        ("history append missing", ["history", "append", "--results", missing, "--history", "h.jsonl"]),
        ("history bad since", ["history", "--history", missing, "--since", "yesterday"]),
        ("baseline show missing dir", ["baseline", "show", "--baselines", missing]),
        ("baseline update --from missing", ["baseline", "update", "--from", missing, "--reason", "x", "--baselines", "b"]),
        ("compile missing kernels", ["compile", "--kernels", "in/no-such-dir"]),
        ("compile bad arch", ["compile", "--arch", "sm_12"]),
        ("local without a GPU", ["local", "--no-base"]),
        ("local missing config", ["local", "--config", missing]),
        ("ci without a GPU", ["ci", "--kernels", "kernels", "--out", "r.json"]),
        ("selftest without a GPU", ["selftest"]),
        ("env without a GPU", ["env"]),
        ("sanitize missing config", ["sanitize", "--config", missing]),
        ("bisect unknown commits", ["bisect", "no-such-rev", "also-not"]),
    ]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ci-gate", required=True)
    p.add_argument("--show", action="store_true")
    args = p.parse_args()
    exe = str(Path(args.ci_gate).resolve())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "CI_GATE_", "RUNNER_")) and k != "CI"}
    env.update(NO_COLOR="1")
    env.pop("COLUMNS", None)
    with tempfile.TemporaryDirectory(prefix="error-widths-") as d:
        tmp = Path(d)
        # A repository of its own, so that commands that look for one find it.
        repo = tmp / "repo"
        shutil.copytree(ROOT / "kernels", repo / "kernels")
        shutil.copytree(ROOT / "configs", repo / "configs")
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        errors, first_wide, lines_total, lines_wide, not_errors = 0, 0, 0, 0, []
        for name, argv in cases(repo):
            r = subprocess.run([exe, *argv], cwd=repo, env=env, capture_output=True, text=True,
                               timeout=120)
            lines = [line for line in r.stderr.splitlines() if line.strip()]
            at = next((i for i, line in enumerate(lines) if line.startswith("error:")), None)
            if r.returncode != 2 or at is None:
                not_errors.append(f"{name}: exit {r.returncode}")
                continue
            errors += 1
            # The message: its `error:` line and the indented lines that continue it.
            message = [lines[at]]
            for line in lines[at + 1:]:
                if not line.startswith("  "):
                    break
                message.append(line)
            first = len(message[0])
            first_wide += first > WIDTH
            lines_total += len(message)
            lines_wide += sum(len(line) > WIDTH for line in message)
            if args.show:
                print(f"{first:4} {name}: {message[0][:100]}")
        print(f"{errors} error messages (exit 2): {first_wide} first lines wider than {WIDTH} "
              f"columns; {lines_wide} of their {lines_total} lines")
        if not_errors:
            print("not an error message (left out): " + "; ".join(not_errors))
    sys.exit(0)


if __name__ == "__main__":
    main()
