#!/usr/bin/env python3
"""Runs action.yml's "Build ci-gate from the action's source" step (id: build) as the runner
would, with a fake `cargo` and `rustup` on the PATH that write down how they were started,
and asserts that:

  - a clean runner builds: Cargo runs in a fresh directory under $RUNNER_TEMP, with a fresh,
    empty CARGO_HOME, none of the variables that steer Cargo or rustc (RUSTC_WRAPPER,
    RUSTFLAGS, CARGO_BUILD_RUSTC_WRAPPER, ...), and the step output `bin` points into it;
  - a Cargo config that Cargo would read (`.cargo/config.toml` or `.cargo/config`, a file,
    a directory or a dangling link, in any directory above the build directory, e.g. the
    runner's home) stops the step with exit 2 before Cargo runs, naming the file;
  - a `.cargo/config.toml` that Cargo would not read (next to the action's source, which is
    not above the build directory) does not stop it.

Run it with the CI venv's Python (PyYAML): target/ci-venv/bin/python tests/workflow/action_build.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"

FAKE_CARGO = """#!/bin/sh
if [ "$1" = --version ]; then echo "cargo 0.0.0 (fake)"; exit 0; fi
{
  echo "cwd=$(pwd -P)"
  echo "args=$*"
  echo "CARGO_HOME=$CARGO_HOME"
  echo "CARGO_TARGET_DIR=$CARGO_TARGET_DIR"
  echo "home_entries=$(ls -A "$CARGO_HOME" | tr '\\n' ' ')"
  env | grep -E '^(RUSTC|RUSTFLAGS|RUSTDOC|CARGO_)' | sed 's/^/env:/'
} > "$FAKE_LOG"
"""

FAKE_RUSTUP = """#!/bin/sh
exit 0
"""


def fail(message: str) -> None:
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition: bool, message: str) -> None:
    if not condition:
        fail(message)


def build_step() -> dict:
    with ACTION.open(encoding="utf-8") as f:
        action = yaml.safe_load(f)
    steps = [s for s in action["runs"]["steps"] if s.get("id") == "build"]
    check(len(steps) == 1, "action.yml must have one step with id: build")
    step = steps[0]
    check(step.get("shell") == "bash", "the build step runs under bash")
    # Everything it reads comes from the runner's own variables, which this test sets.
    check(not step.get("env"), f"the build step's env: changed ({step.get('env')}): supply it here")
    return step


class Runner:
    """A runner's directories: HOME/work/_temp is RUNNER_TEMP, so HOME is above it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.temp = self.home / "work" / "_temp"
        self.source = root / "src"
        self.bin = root / "bin"
        self.log = root / "cargo.log"
        self.output = root / "github_output"
        for d in (self.temp, self.source, self.bin):
            d.mkdir(parents=True)
        (self.source / "Cargo.toml").write_text("[package]\n", encoding="utf-8")
        for name, text in (("cargo", FAKE_CARGO), ("rustup", FAKE_RUSTUP)):
            p = self.bin / name
            p.write_text(text, encoding="utf-8")
            p.chmod(0o755)

    def run(self, script: Path) -> subprocess.CompletedProcess:
        if self.log.exists():
            self.log.unlink()
        env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.home),
            "RUNNER_TEMP": str(self.temp),
            "GITHUB_ACTION_PATH": str(self.source),
            "GITHUB_OUTPUT": str(self.output),
            "FAKE_LOG": str(self.log),
            # What a runner's .env or an earlier step could have left to steer the build.
            "RUSTC_WRAPPER": "/tmp/evil-wrapper",
            "RUSTC_WORKSPACE_WRAPPER": "/tmp/evil-wrapper",
            "RUSTFLAGS": "-C linker=/tmp/evil",
            "CARGO_BUILD_RUSTC_WRAPPER": "/tmp/evil-wrapper",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER": "/tmp/evil",
            "CARGO_HOME": str(self.home / ".cargo"),
        }
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def cargo_log(self) -> dict[str, str]:
        seen = {}
        for line in self.log.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            seen[key] = value
        return seen


def assert_builds(runner: Runner, script: Path, label: str) -> None:
    out = runner.run(script)
    check(out.returncode == 0, f"{label}: exit {out.returncode}\n{out.stdout}{out.stderr}")
    check(runner.log.exists(), f"{label}: cargo build did not run")
    seen = runner.cargo_log()
    cwd = Path(seen["cwd"])
    temp = runner.temp.resolve()
    check(cwd.parent.parent == temp and cwd.name == "cwd", f"{label}: cargo ran in {cwd}")
    check(cwd.parent.name.startswith("ci-gate-build."), f"{label}: not a fresh directory: {cwd}")
    check(Path(seen["CARGO_HOME"]).resolve() == cwd.parent / "cargo-home", f"{label}: CARGO_HOME {seen['CARGO_HOME']}")
    check(seen["home_entries"].strip() == "", f"{label}: CARGO_HOME not empty: {seen['home_entries']}")
    check(
        seen["args"] == f"build --release --locked --manifest-path {runner.source}/Cargo.toml",
        f"{label}: cargo {seen['args']}",
    )
    steering = [k for k in seen if k.startswith("env:")]
    allowed = {"env:CARGO_HOME", "env:CARGO_TARGET_DIR", "env:CARGO_TERM_COLOR"}
    check(
        {k.split("=")[0] for k in steering} <= allowed,
        f"{label}: cargo saw {steering}",
    )
    output = runner.output.read_text(encoding="utf-8")
    check(
        f"bin={seen['CARGO_TARGET_DIR']}/release/ci-gate\n" in output,
        f"{label}: step output {output!r}",
    )


def assert_refused(runner: Runner, script: Path, planted: Path, label: str) -> None:
    out = runner.run(script)
    check(out.returncode == 2, f"{label}: exit {out.returncode}\n{out.stdout}{out.stderr}")
    check(not runner.log.exists(), f"{label}: cargo build ran anyway")
    errors = [l for l in out.stdout.splitlines() if l.startswith("::error title=ci-gate action::")]
    check(len(errors) == 1, f"{label}: {out.stdout}")
    check(str(planted) in errors[0] or str(planted.resolve(strict=False)) in errors[0],
          f"{label}: the error does not name {planted}: {errors[0]}")


def main() -> None:
    step = build_step()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        script = root / "build.sh"
        script.write_text(step["run"], encoding="utf-8")

        runner = Runner(root / "clean")
        assert_builds(runner, script, "a clean runner")
        # A config next to the action's source is not above the build directory: Cargo
        # would not read it, so it does not stop the build.
        (runner.source / ".cargo").mkdir()
        (runner.source / ".cargo" / "config.toml").write_text("[build]\n", encoding="utf-8")
        assert_builds(runner, script, "a config beside the source")

        cases = [
            ("a rustc-wrapper in the runner's home", lambda r: r.home / ".cargo" / "config.toml", "file"),
            ("the old name, .cargo/config, in RUNNER_TEMP", lambda r: r.temp / ".cargo" / "config", "file"),
            ("a config two levels up", lambda r: r.root / ".cargo" / "config.toml", "file"),
            ("a dangling link", lambda r: r.home / "work" / ".cargo" / "config.toml", "link"),
            ("a directory of that name", lambda r: r.home / ".cargo" / "config", "dir"),
        ]
        for i, (label, where, kind) in enumerate(cases):
            runner = Runner(root / f"case{i}")
            planted = where(runner)
            planted.parent.mkdir(parents=True, exist_ok=True)
            if kind == "file":
                planted.write_text('[build]\nrustc-wrapper = "/tmp/evil"\n', encoding="utf-8")
            elif kind == "link":
                planted.symlink_to(runner.root / "nowhere")
            else:
                planted.mkdir()
            assert_refused(runner, script, planted, label)
    print(f"action.yml build step: builds on a clean runner; refuses all {len(cases)} planted Cargo configs, naming them")


if __name__ == "__main__":
    main()
