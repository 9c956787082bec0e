#!/usr/bin/env python3
"""Runs action.yml's "Check the inputs" step as the runner would and asserts that a
template's placeholders left unfilled are refused before anything is downloaded, built or
run, each with one sentence (one `::error` line, exit 2) naming what to fill in:

  - an all-zero (or any one-character) sha256, a version vX.Y.Z, a repository OWNER/ci-gate;
  - the action itself used at a placeholder: OWNER/ci-gate@<sha>, a ref of forty zeros, or
    the old example SHA 0123456789abcdef0123456789abcdef01234567 (read from
    GITHUB_ACTION_PATH, .../_actions/<owner>/<name>/<ref>);

and that real values pass.

  target/ci-venv/bin/python tests/workflow/action_placeholders.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
REAL_SHA = "4776ade0c1b2d3e4f5a6b7c8d9e0f1a2b3c4d5e6"
REAL_SUM = "9bd1e9586e8d0f61298018b76fc3a4d17800182a287242da058a732937fc3dbf"


def check_step() -> str:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    for s in action["runs"]["steps"]:
        if s.get("name") == "Check the inputs":
            return s["run"]
    sys.exit("FAIL: no step 'Check the inputs' in action.yml")


def run(**over: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "VERSION": "", "SHA256": "", "FAIL_ON_DRIFT": "false",
           "CONFIG": "configs/pr.yaml", "BASELINES": "baselines", "KERNELS": "kernels",
           "OUT": "/tmp/r.json", "COMMAND": "ci", "REASON": "", "PROFILE_DIR": "/tmp/p",
           "PROFILE_SLOWEST": "0", "SHARD": "", "PR": "", "BINARY": "", "REPOSITORY": "",
           "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64",
           "GITHUB_ACTION_PATH": f"/runner/_work/_actions/someone/ci-gate/{REAL_SHA}"}
    env.update(over)
    return subprocess.run(["bash", "-c", check_step()], env=env, capture_output=True, text=True)


def main() -> None:
    failures = []
    zeros40 = "0" * 40
    refused = {
        "sha256 of zeros": dict(VERSION="v0.1.0", SHA256="0" * 64),
        "sha256 of one digit": dict(VERSION="v0.1.0", SHA256="f" * 64),
        "version vX.Y.Z": dict(VERSION="vX.Y.Z", SHA256=REAL_SUM),
        "repository OWNER/ci-gate": dict(VERSION="v0.1.0", SHA256=REAL_SUM, REPOSITORY="OWNER/ci-gate"),
        "action at OWNER/ci-gate": dict(GITHUB_ACTION_PATH=f"/w/_actions/OWNER/ci-gate/{REAL_SHA}"),
        "action at a ref of zeros": dict(GITHUB_ACTION_PATH=f"/w/_actions/someone/ci-gate/{zeros40}"),
        "action at the old example SHA": dict(
            GITHUB_ACTION_PATH="/w/_actions/octo/ci-gate/0123456789abcdef0123456789abcdef01234567"),
    }
    for what, env in refused.items():
        r = run(**env)
        lines = [line for line in r.stdout.splitlines() if line.strip()]
        if r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("::error title=ci-gate action::") \
                or "placeholder" not in lines[0]:
            failures.append(f"{what}: rc={r.returncode}, stdout={r.stdout!r}, stderr={r.stderr!r}")
        else:
            print(f"refused, {what}: {lines[0].split('::', 2)[2]}")
    accepted = {
        "a release, pinned": dict(VERSION="v0.1.0", SHA256=REAL_SUM, REPOSITORY="someone/ci-gate"),
        "built from the action's commit": {},
        "a local action (uses: ./base)": dict(GITHUB_ACTION_PATH="/runner/_work/repo/repo/base"),
    }
    for what, env in accepted.items():
        r = run(**env)
        if r.returncode != 0:
            failures.append(f"{what} was refused: rc={r.returncode}, {r.stdout}{r.stderr}")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)
    print("action_placeholders: every unfilled placeholder is refused in one sentence; real pins pass")


if __name__ == "__main__":
    main()
