#!/usr/bin/env python3
"""The evolve example in CI, without a GPU:

1. the template is the shipped kernel: for each family its template, without defines,
   compiles with NVRTC (sm_90a for `ws`, sm_89 for `mma`) to the same entries and resources
   as kernels/attention.cu (`ci-gate compile`; where NVRTC is missing and
   CI_GATE_REQUIRE_NVRTC is unset, this part is skipped, and says so);
2. the loop runs on the simulated GPU (CI_GATE_SIMULATE) for a few mutants: every mutant
   gets a verdict line, the control (the template itself) is `same`, mutants only change
   tunables to the values the kernel allows, and the leaderboard is printed.

    python3 examples/evolve/test_evolve.py --ci-gate target/debug/ci-gate
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
import evolve  # noqa: E402

CONFIG = """\
name: evolve-sim
measure: {cache: hot, samples_per_round: 10, min_rounds: 6, max_rounds: 16, max_wait_s: 2}
shapes:
  - {batch: 4, heads: 16, seq_len: 2048, head_dim: 64, causal: false, dtype: float16}
  - {batch: 2, heads: 16, seq_len: 4096, head_dim: 128, causal: true, dtype: float16}
"""

passed = 0
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    global passed
    if ok:
        passed += 1
    else:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def compiled(ci_gate: str, kernels: Path, arch: str) -> list[str] | None:
    """`ci-gate compile` of a directory's attention.cu: its lines after the file name."""
    out = subprocess.run([ci_gate, "compile", "--kernels", str(kernels), "--arch", arch],
                         capture_output=True, text=True)
    if out.returncode != 0:
        if "NVRTC could not be loaded" in out.stderr and not os.environ.get("CI_GATE_REQUIRE_NVRTC"):
            return None
        raise SystemExit(f"ci-gate compile {kernels} {arch} failed:\n{out.stdout}{out.stderr}")
    lines = out.stdout.splitlines()
    start = next(i for i, l in enumerate(lines) if "attention.cu" in l)
    end = next((i for i in range(start + 1, len(lines)) if ".cu " in lines[i]), len(lines))
    return [lines[start].split("attention.cu", 1)[1]] + lines[start + 1:end]


def template_is_the_shipped_kernel(ci_gate: str, tmp: Path) -> None:
    source = (REPO / "kernels" / "attention.cu").read_text()
    for family, arch in [("ws", "sm_90a"), ("mma", "sm_89")]:
        t = evolve.Template(source, family)
        d = tmp / f"template-{family}"
        d.mkdir()
        (d / "attention.cu").write_text(t.text)
        mine = compiled(ci_gate, d, arch)
        if mine is None:
            print(f"SKIPPED: no NVRTC here, the {family} template is not compiled")
            continue
        alone = tmp / f"shipped-{family}"
        alone.mkdir()
        (alone / "attention.cu").write_text(source)
        shipped = compiled(ci_gate, alone, arch)
        check(mine == shipped, f"the {family} template compiles as the shipped kernel for {arch}:\n"
              f"{mine}\nvs\n{shipped}")


def mutations_stay_in_the_kernel_s_rules() -> None:
    source = (REPO / "kernels" / "attention.cu").read_text()
    for family in ("ws", "mma"):
        t = evolve.Template(source, family)
        check(len(t.defaults) > 10, f"{family}: tunables found: {t.defaults}")
        rng, tried = random.Random(3), {()}
        bad = []
        for _ in range(50):
            child = evolve.mutate(t, {}, rng, tried)
            if child is None or not 1 <= len(child) <= 2 or not t.valid(child):
                bad.append(child)
                continue
            for define, value in child.items():
                param = define.rsplit("_", 1)[1]
                if value not in evolve.CHOICES[family][param] or value == t.defaults[define]:
                    bad.append(child)
        check(not bad, f"{family}: 50 mutants of one or two tunables within the kernel's rules: {bad}")
        check(t.valid({}), f"{family}: the shipped values are within the rules")


def loop_runs_on_the_simulated_gpu(ci_gate: str, tmp: Path) -> None:
    (tmp / "sim.yaml").write_text(CONFIG)
    env = dict(os.environ, CI_GATE_SIMULATE="11")
    env.pop("GITHUB_ACTIONS", None)
    out = subprocess.run(
        [sys.executable, str(HERE / "evolve.py"), "--ci-gate", ci_gate, "--config", str(tmp / "sim.yaml"),
         "--kernels", str(REPO / "kernels"), "--candidates", "6", "--population", "3",
         "--minutes", "5", "--leaderboard", str(tmp / "board.json"), "--work", str(tmp / "work")],
        capture_output=True, text=True, env=env, timeout=600)
    print(out.stdout)
    check(out.returncode == 0, f"evolve.py exit {out.returncode}: {out.stderr[-2000:]}")
    lines = out.stdout.splitlines()
    control = [l for l in lines if l.startswith("control ")]
    check(len(control) == 1 and control[0].split()[1] == "same", f"the control is `same`: {control}")
    mutants = [l for l in lines if l.startswith("g")]
    check(len(mutants) == 6, f"six mutants, each with a verdict: {mutants}")
    verdicts = {"faster", "same", "slower", "parity-fail", "refused", "error"}
    check(all(l.split()[1] in verdicts for l in mutants), f"verdicts: {mutants}")
    check(any(l.startswith("6 mutants in 2 generations") for l in lines), "the summary line")
    check(any(l.startswith("leaderboard") for l in lines), "the leaderboard is printed")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ci-gate", required=True)
    args = ap.parse_args()
    ci_gate = str(Path(args.ci_gate).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        mutations_stay_in_the_kernel_s_rules()
        loop_runs_on_the_simulated_gpu(ci_gate, tmp)
        template_is_the_shipped_kernel(ci_gate, tmp)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
