#!/usr/bin/env python3
"""Runs action.yml's "Download the ci-gate release binary" step (id: download) as the runner
would, against a local release archive served by a fake `gh` on the PATH (`gh release
download` copies the archive from $FAKE_RELEASE_DIR), and asserts that:

  - the archive with the pinned checksum is unpacked and its ci-gate runs (`--version`), and
    the step output `bin` points at it;
  - an archive whose SHA-256 is not the pinned one is refused with exit 2 before it is
    unpacked, and nothing of it is left;
  - a checksum of the wrong form is refused by the "Check the inputs" step.

With ARCHIVE (a ci-gate-<tag>-x86_64-unknown-linux-gnu.tar.gz built as release.yml builds
it) and TAG as arguments it checks that archive; without, it packs a stand-in binary.

Run it with the CI venv's Python (PyYAML):
  target/ci-venv/bin/python tests/workflow/action_download.py [ARCHIVE TAG]
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"

FAKE_GH = """#!/bin/sh
# gh release download TAG --repo HOST/OWNER/NAME --pattern ASSET --dir DIR
tag="$3"; asset=""; dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --pattern) asset="$2"; shift ;;
    --dir) dir="$2"; shift ;;
  esac
  shift
done
echo "fake gh: release ${tag}, asset ${asset}" >&2
cp "$FAKE_RELEASE_DIR/$asset" "$dir/$asset"
"""


def fail(message: str) -> None:
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def step(step_id: str | None = None, name: str | None = None) -> dict:
    with ACTION.open(encoding="utf-8") as f:
        action = yaml.safe_load(f)
    for s in action["runs"]["steps"]:
        if (step_id and s.get("id") == step_id) or (name and s.get("name") == name):
            return s
    fail(f"no step {step_id or name} in action.yml")
    raise AssertionError


def run_download(tmp: Path, release_dir: Path, tag: str, sha256: str) -> subprocess.CompletedProcess:
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    gh = bindir / "gh"
    gh.write_text(FAKE_GH)
    gh.chmod(0o755)
    runner_temp = Path(tempfile.mkdtemp(dir=tmp, prefix="runner-temp-"))
    output = tmp / "github_output"
    output.write_text("")
    env = {
        "PATH": f"{bindir}:/usr/bin:/bin",
        "HOME": str(tmp),
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_ACTION_PATH": str(tmp / "_actions/octo/ci-gate/0123456"),
        "FAKE_RELEASE_DIR": str(release_dir),
        "VERSION": tag,
        "SHA256": sha256,
        "REPOSITORY": "",
        "ACTION_REPOSITORY": "",
    }
    script = step(step_id="download")["run"]
    return subprocess.run(["bash", "-e", "-c", script], env=env, capture_output=True, text=True)


def stand_in_archive(tmp: Path, tag: str) -> Path:
    name = f"ci-gate-{tag}-x86_64-unknown-linux-gnu"
    stage = tmp / "stage" / name
    stage.mkdir(parents=True)
    binary = stage / "ci-gate"
    binary.write_text(f"#!/bin/sh\necho 'ci-gate {tag[1:]}'\n")
    binary.chmod(0o755)
    archive = tmp / f"{name}.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(stage, arcname=name)
    return archive


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if len(sys.argv) == 3:
            archive, tag = Path(sys.argv[1]).resolve(), sys.argv[2]
        else:
            tag = "v0.1.0"
            archive = stand_in_archive(tmp, tag)
        release_dir = tmp / "release"
        release_dir.mkdir()
        shutil.copy(archive, release_dir / archive.name)
        good = hashlib.sha256(archive.read_bytes()).hexdigest()

        ok = run_download(tmp, release_dir, tag, good)
        print(ok.stdout, end="")
        if ok.returncode != 0:
            fail(f"the pinned archive was refused:\n{ok.stdout}{ok.stderr}")
        out = (tmp / "github_output").read_text()
        if f"SHA-256 verified: {good}" not in ok.stdout or "bin=" not in out:
            fail(f"no verification or no output: {ok.stdout} / {out}")
        binary = out.split("bin=", 1)[1].strip()
        if not os.access(binary, os.X_OK):
            fail(f"bin={binary} is not executable")

        bad = run_download(tmp, release_dir, tag, "0" * 64)
        print(bad.stdout, end="")
        if bad.returncode != 2 or "refusing to run it" not in bad.stdout:
            fail(f"a wrong checksum was not refused: rc={bad.returncode}\n{bad.stdout}{bad.stderr}")
        leftovers = list((tmp).glob("runner-temp-*/ci-gate-release.*/*"))
        leftovers = [p for p in leftovers if str(p).startswith(str(tmp)) and "runner-temp" in str(p)]
        # The refused run's directory is removed; only the accepted run's remains.
        if any(str(p).endswith(".tar.gz") and bad.stdout and p.parent.name in bad.stdout for p in leftovers):
            fail("the refused archive was left behind")

        check = step(name="Check the inputs")["run"]
        env = {"PATH": "/usr/bin:/bin", "VERSION": tag, "SHA256": "xyz", "FAIL_ON_DRIFT": "false",
               "CONFIG": "c", "BASELINES": "b", "KERNELS": "k", "OUT": "o", "COMMAND": "ci",
               "REASON": "", "PROFILE_DIR": "p", "PROFILE_SLOWEST": "0", "SHARD": "", "PR": "",
               "BINARY": "", "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64"}
        r = subprocess.run(["bash", "-c", check], env=env, capture_output=True, text=True)
        if r.returncode != 2 or "64 hexadecimal digits" not in r.stdout:
            fail(f"a malformed sha256 was not refused: {r.stdout}{r.stderr}")
        print("action_download: the pinned archive runs, a wrong checksum and a malformed one are refused")


if __name__ == "__main__":
    main()
