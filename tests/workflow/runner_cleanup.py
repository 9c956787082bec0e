#!/usr/bin/env python3
"""Runs .github/runner/job-completed.sh (the persistent runner's job-completed hook) in a
stand-in runner layout and asserts that it removes what a job can leave where the runner's
user writes -- the job's workspace, the downloaded actions and tools, the home directory, the
user's files in the temporary directories -- and keeps the work directory's other entries,
the runner's own .NET files, ci-gate's GPU lock directory and everything outside; and that it refuses to clean when
RUNNER_TEMP, RUNNER_WORKSPACE or HOME are not where a runner puts them.

  python3 tests/workflow/runner_cleanup.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / ".github" / "runner" / "job-completed.sh"


def touch(p: Path) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("x")
    return p


def run(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", str(HOOK)], env={"PATH": "/usr/bin:/bin", **env},
                          capture_output=True, text=True)


def main() -> None:
    failures = []
    with tempfile.TemporaryDirectory() as d:
        t = Path(d)
        work = t / "runner" / "_work"
        home, tmp, outside = t / "home", t / "tmp", t / "outside"
        gone = [
            touch(work / "repo" / "repo" / "kernels" / "attention.cu"),
            touch(work / "repo" / "repo" / ".git" / "config"),
            touch(work / "_actions" / "actions" / "checkout" / "v4" / "dist" / "index.js"),
            touch(work / "_tool" / "Python" / "bin" / "python"),
            touch(home / ".bashrc"),
            touch(home / ".cache" / "torch" / "kernels"),
            touch(tmp / "planted.py"),
            touch(tmp / "pkg" / "__init__.py"),
        ]
        kept = [
            touch(work / "_temp" / "kept-by-the-runner"),
            touch(work / "_PipelineMapping" / "repo" / "PipelineFolder.json"),
            touch(tmp / "clr-debug-pipe-123-in"),
            touch(tmp / "ci-gate-locks-1001" / "GPU-0.lock"),
            touch(outside / "data"),
            touch(t / "runner" / ".env"),
        ]
        env = {"RUNNER_TEMP": str(work / "_temp"), "RUNNER_WORKSPACE": str(work / "repo"),
               "HOME": str(home), "CI_GATE_CLEAN_TMP": str(tmp)}
        r = run(env)
        if r.returncode != 0:
            failures.append(f"the hook failed: {r.stdout}{r.stderr}")
        failures += [f"left behind: {p}" for p in gone if p.exists()]
        failures += [f"removed: {p}" for p in kept if not p.exists()]
        if not (work / "repo").is_dir() or not home.is_dir():
            failures.append("the workspace or home directory itself was removed")

        for what, bad in {
            "RUNNER_TEMP not <work>/_temp": {**env, "RUNNER_TEMP": str(outside)},
            "RUNNER_WORKSPACE outside the work directory": {**env, "RUNNER_WORKSPACE": str(outside)},
            "HOME inside the work directory": {**env, "HOME": str(work / "repo")},
            "RUNNER_TEMP unset": {k: v for k, v in env.items() if k != "RUNNER_TEMP"},
        }.items():
            touch(outside / "data")
            r = run(bad)
            if r.returncode == 0 or not (outside / "data").exists():
                failures.append(f"{what}: not refused (rc={r.returncode}) {r.stdout}{r.stderr}")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)
    print("runner_cleanup: the hook empties the workspace, actions, tools, home and temporary files, "
          "keeps the rest, and refuses a layout that is not a runner's")


if __name__ == "__main__":
    main()
