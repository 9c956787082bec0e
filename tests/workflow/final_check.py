#!/usr/bin/env python3
"""Plays every outcome of perf-gate.yml's jobs through its final check and asserts that only
an all-pass run of a pull request into the default branch (or of a push to it) passes it.

The check is the job named "ci-gate verdict": the one check admins require (docs/MAINTAINING.md).
This script reads .github/workflows/perf-gate.yml, and the template for other repositories
(examples/consumer/.github/workflows/perf-gate.yml), takes that job's one step, and runs the
step's `run:` script exactly as the runner does (`bash --noprofile --norc -eo pipefail`),
with the values its `env:` reads from the `needs` and `github` contexts supplied as
environment variables. It plays, for pushes and pull requests into the default branch (and an
event the workflow does not gate), every combination of

  - each needed job's result: success, failure, cancelled, skipped (a job that hits
    `timeout-minutes` reports failure or cancelled, both played here);
  - the verdict output (merge's here, the GPU job's in the template): pass, fail, error, and
    empty (it never got that far);

and asserts that the check passes exactly when every needed job succeeded (the PR-only
baselines job: skipped on a push, and only then) and the verdict is pass. Only the default
branch is a trusted base: for a pull request into any other branch (`release-x`, `Main`
beside a default `main`: the comparison is exact, an empty or unknown default branch) the
check fails whatever the jobs did, with one error that names the base branch and the
default one; a name that is not plainly a branch name is not echoed. It also checks the
job's shape: `if: always()` (never skipped), no permissions, no checkout, nothing that could
turn a failure into a success (continue-on-error), and that it reads the result of every job
it needs, the output that job really sets, the event and both branch names.

Run it with the CI venv's Python (PyYAML): target/ci-venv/bin/python tests/workflow/final_check.py
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
REQUIRED_CHECK = "ci-gate verdict"
RESULTS = ["success", "failure", "cancelled", "skipped"]
VERDICTS = ["pass", "fail", "error", ""]
EVENTS = ["pull_request", "push"]
DEFAULT = "main"
# Pull requests into these bases are never gated (the default branch is "main").
UNTRUSTED_BASES = ["release-x", "Main", "main ", "feature/main", ""]


@dataclass(frozen=True)
class Workflow:
    """One perf-gate.yml and what its verdict depends on."""

    path: Path
    # The jobs the verdict depends on, and the ones that only report it.
    verdict_jobs: frozenset[str]
    reporting_jobs: frozenset[str]
    # The job output the verdict reads, and the step output it is.
    verdict_output: tuple[str, str]
    verdict_step: tuple[str, str]
    # The PR-only job the verdict expects skipped on a push (None: there is none).
    pr_only: str | None

    @property
    def name(self) -> str:
        return str(self.path.relative_to(ROOT))


WORKFLOWS = [
    Workflow(
        path=ROOT / ".github" / "workflows" / "perf-gate.yml",
        verdict_jobs=frozenset({"baselines", "binary", "gpu", "merge"}),
        reporting_jobs=frozenset({"comment", "history"}),
        verdict_output=("merge", "verdict"),
        verdict_step=("merge", "verdict"),
        pr_only="baselines",
    ),
    Workflow(
        path=ROOT / "examples" / "consumer" / ".github" / "workflows" / "perf-gate.yml",
        verdict_jobs=frozenset({"binary", "gpu"}),
        reporting_jobs=frozenset({"comment"}),
        verdict_output=("gpu", "verdict"),
        verdict_step=("gate", "verdict"),
        pr_only=None,
    ),
]

NEEDS_RESULT = re.compile(r"^\$\{\{\s*needs\.([A-Za-z0-9_-]+)\.result\s*\}\}$")
NEEDS_OUTPUT = re.compile(
    r"^\$\{\{\s*needs\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)\s*\}\}$"
)
GITHUB_VALUES = {
    "event": re.compile(r"^\$\{\{\s*github\.event_name\s*\}\}$"),
    "base_ref": re.compile(r"^\$\{\{\s*github\.event\.pull_request\.base\.ref\s*\}\}$"),
    "default_branch": re.compile(
        r"^\$\{\{\s*github\.event\.repository\.default_branch\s*\}\}$"
    ),
}
# The job's `if:`: always(), and on every pull request (into any branch: the check must
# report, and fail, for those too) and every push to the default branch.
ALLOWED_IFS = (
    "${{ always() }}",
    "always()",
    "${{ always() && (github.event_name == 'pull_request' || github.ref == format('refs/heads/{0}', github.event.repository.default_branch)) }}",
)


def fail(message: str) -> None:
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition: bool, message: str) -> None:
    if not condition:
        fail(message)


def final_job(wf: Workflow, workflow: dict) -> tuple[str, dict]:
    jobs = workflow["jobs"]
    named = [(k, j) for k, j in jobs.items() if j.get("name") == REQUIRED_CHECK]
    check(len(named) == 1, f"{wf.name} must have exactly one job named {REQUIRED_CHECK!r}")
    return named[0]


def check_shape(wf: Workflow, workflow: dict, job_id: str, job: dict) -> dict:
    """The job cannot be skipped, holds nothing, and needs every job the verdict depends
    on; returns its one step."""
    jobs = workflow["jobs"]
    others = set(jobs) - {job_id}
    check(
        others == wf.verdict_jobs | wf.reporting_jobs,
        f"{wf.name}: the jobs changed ({sorted(others)}): decide whether the verdict depends "
        "on each new one, then update verdict_jobs or reporting_jobs here",
    )
    needs = job.get("needs")
    needs = [needs] if isinstance(needs, str) else list(needs or [])
    check(set(needs) == wf.verdict_jobs, f"{wf.name}: {REQUIRED_CHECK} needs {needs}, not {sorted(wf.verdict_jobs)}")
    condition = str(job.get("if", "")).strip()
    check(
        condition in ALLOWED_IFS,
        f"{wf.name}: {REQUIRED_CHECK} must run whatever happened before (if: always()), not {condition!r}",
    )
    check(job.get("permissions") == {}, f"{wf.name}: {REQUIRED_CHECK} must ask for no permissions")
    check("continue-on-error" not in job, f"{wf.name}: {REQUIRED_CHECK} must not continue on error")
    check("strategy" not in job, f"{wf.name}: {REQUIRED_CHECK} must be one job, not a matrix")
    steps = job.get("steps") or []
    check(len(steps) == 1, f"{wf.name}: {REQUIRED_CHECK} must have one step, not {len(steps)}")
    step = steps[0]
    check("uses" not in step, f"{wf.name}: {REQUIRED_CHECK} runs no action (no checkout)")
    check("run" in step, f"{wf.name}: {REQUIRED_CHECK}'s step must be a run: script")
    check("if" not in step, f"{wf.name}: {REQUIRED_CHECK}'s step must not be conditional")
    check("continue-on-error" not in step, f"{wf.name}: {REQUIRED_CHECK}'s step must not continue on error")
    check(step.get("shell", "bash") == "bash", f"{wf.name}: {REQUIRED_CHECK}'s step runs under bash")
    # The verdict it reads is the one its job really writes.
    out_job, out_name = wf.verdict_output
    step_id, step_output = wf.verdict_step
    producer = jobs[out_job]
    produced = {name: str(expr).strip() for name, expr in (producer.get("outputs") or {}).items()}
    check(
        re.fullmatch(
            r"\$\{\{\s*steps\." + re.escape(step_id) + r"\.outputs\." + re.escape(step_output) + r"\s*\}\}",
            produced.get(out_name, ""),
        )
        is not None,
        f"{wf.name}: {out_job}'s output `{out_name}` must be steps.{step_id}.outputs.{step_output}",
    )
    check(
        any(s.get("id") == step_id for s in producer.get("steps", [])),
        f"{wf.name}: {out_job} has no step with id {step_id}",
    )
    for job_name in wf.verdict_jobs:
        check(
            "continue-on-error" not in jobs[job_name],
            f"{wf.name}: job {job_name} must not continue on error (a failure would read as success)",
        )
    return step


def inputs_of(wf: Workflow, step: dict) -> dict[str, tuple]:
    """What each variable of the step's env: holds: ("result", job), ("output", job, name),
    ("event",), ("base_ref",) or ("default_branch",)."""
    inputs = {}
    for var, expr in (step.get("env") or {}).items():
        expr = str(expr).strip()
        if m := NEEDS_RESULT.match(expr):
            inputs[var] = ("result", m.group(1))
        elif m := NEEDS_OUTPUT.match(expr):
            inputs[var] = ("output", m.group(1), m.group(2))
        elif found := [k for k, r in GITHUB_VALUES.items() if r.match(expr)]:
            inputs[var] = (found[0],)
        else:
            fail(f"{wf.name}: {REQUIRED_CHECK} reads {var} = {expr!r}, which this test cannot supply")
    read = {v[1] for v in inputs.values() if v[0] == "result"}
    check(read == wf.verdict_jobs, f"{wf.name}: {REQUIRED_CHECK} must read the result of {sorted(wf.verdict_jobs)}, reads {sorted(read)}")
    outputs = {v[1:] for v in inputs.values() if v[0] == "output"}
    check(outputs == {wf.verdict_output}, f"{wf.name}: {REQUIRED_CHECK} must read {wf.verdict_output}, reads {outputs}")
    for key in GITHUB_VALUES:
        check(any(v[0] == key for v in inputs.values()), f"{wf.name}: {REQUIRED_CHECK} must read github's {key}")
    return inputs


@dataclass(frozen=True)
class Event:
    name: str
    base_ref: str = ""
    default_branch: str = DEFAULT


def run_step(script: Path, inputs: dict, event: Event, results: dict, verdict: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    for var, source in inputs.items():
        kind = source[0]
        if kind == "result":
            env[var] = results[source[1]]
        elif kind == "output":
            env[var] = verdict
        elif kind == "event":
            env[var] = event.name
        elif kind == "base_ref":
            env[var] = event.base_ref
        else:
            env[var] = event.default_branch
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def trusted(event: Event) -> bool:
    """Only the default branch is a trusted base (exactly: not another case of it)."""
    if event.name == "pull_request":
        return event.default_branch != "" and event.base_ref == event.default_branch
    return event.name == "push"


def should_pass(wf: Workflow, event: Event, results: dict, verdict: str) -> bool:
    """The rule, written independently of the scripts."""
    if not trusted(event):
        return False
    for job in wf.verdict_jobs:
        wanted = "skipped" if job == wf.pr_only and event.name == "push" else "success"
        if results[job] != wanted:
            return False
    return verdict == "pass"


def check_output(out: subprocess.CompletedProcess, label: str) -> None:
    """Every workflow command the script prints is one of its own annotations."""
    for line in (out.stdout + out.stderr).splitlines():
        stripped = line.lstrip()
        if stripped.startswith("::") or "##[" in line:
            check(
                stripped.startswith(f"::error title={REQUIRED_CHECK}::"),
                f"{label}: unexpected workflow command {line!r}",
            )


def untrusted_error(base: str, default: str) -> str:
    """The one error of a pull request into another base (names that are plainly names)."""
    return (
        f"::error title={REQUIRED_CHECK}::pull requests into '{base}' are not gated: "
        f"only the default branch '{default}' is a trusted base"
    )


def play(wf: Workflow, script: Path, inputs: dict) -> tuple[int, int]:
    """Every combination for the gated events and another one; returns (played, passed)."""
    jobs = sorted(wf.verdict_jobs)
    played = passed = 0
    events = [Event("pull_request", DEFAULT), Event("push"), Event("workflow_dispatch")]
    for event in events:
        for combo in itertools.product(RESULTS, repeat=len(jobs)):
            results = dict(zip(jobs, combo))
            for verdict in VERDICTS:
                out = run_step(script, inputs, event, results, verdict)
                label = f"{wf.name}: {event} {results} verdict={verdict!r}"
                check(out.returncode in (0, 1), f"{label}: exit {out.returncode}: {out.stderr}")
                want = should_pass(wf, event, results, verdict)
                got = out.returncode == 0
                check(got == want, f"{label}: the check {'passed' if got else 'failed'}\n{out.stdout}{out.stderr}")
                if not got:
                    check("::error title=" in out.stdout, f"{label}: failed without saying why")
                check_output(out, label)
                played += 1
                passed += got
    # A pull request into any other branch: nothing counts, whatever the jobs did (they are
    # skipped by their if:, or, for a base that differs only in case, fail; played anyway).
    for base in UNTRUSTED_BASES:
        combos = itertools.product(RESULTS, repeat=len(jobs)) if base == "release-x" else [("success",) * len(jobs)]
        for combo in combos:
            results = dict(zip(jobs, combo))
            event = Event("pull_request", base)
            out = run_step(script, inputs, event, results, "pass")
            label = f"{wf.name}: pull request into {base!r} {results}"
            check(out.returncode == 1, f"{label}: exit {out.returncode}\n{out.stdout}{out.stderr}")
            errors = [l for l in out.stdout.splitlines() if l.startswith("::error")]
            if base in ("release-x", "Main", "feature/main"):
                check(errors == [untrusted_error(base, DEFAULT)], f"{label}: {errors}")
            else:
                check(
                    errors
                    == [
                        f"::error title={REQUIRED_CHECK}::pull requests into (empty, or a name with other characters) are not gated: only the default branch 'main' is a trusted base"
                    ],
                    f"{label}: {errors}",
                )
            check_output(out, label)
            played += 1
    # The default branch unknown (no repository in the event): even a base of the same
    # (empty) name is not trusted.
    all_ok = {j: "success" for j in jobs}
    for base in ["", "main"]:
        out = run_step(script, inputs, Event("pull_request", base, ""), all_ok, "pass")
        check(out.returncode == 1, f"{wf.name}: default branch unknown, base {base!r}: passed")
        check("only the default branch (empty, or a name with other characters) is a trusted base" in out.stdout, out.stdout)
        played += 1
    # Names that are not plainly branch names are never echoed, and never as commands.
    for base in ["x%0A::warning::y", "rel\u202eease", "a'b", "b" * 101, "::stop-commands::t"]:
        out = run_step(script, inputs, Event("pull_request", base), all_ok, "pass")
        label = f"{wf.name}: base {base!r}"
        check(out.returncode == 1, f"{label}: passed")
        check(base not in out.stdout + out.stderr, f"{label}: echoed\n{out.stdout}")
        check_output(out, label)
        played += 1
    return played, passed


def play_hostile_values(wf: Workflow, script: Path, inputs: dict) -> None:
    """Values that are not what GitHub sends fail, and are never echoed as commands."""
    ok = {j: "success" for j in wf.verdict_jobs}
    event = Event("pull_request", DEFAULT)
    for verdict in ["PASS", "pass ", " pass", "pass\n", "pass\n::warning::x", "::stop-commands::t", "passed"]:
        out = run_step(script, inputs, event, ok, verdict)
        check(out.returncode == 1, f"{wf.name}: verdict {verdict!r} passed the check")
        check_output(out, f"verdict {verdict!r}")
    for result in ["Success", "success ", "::error::x", "neutral"]:
        out = run_step(script, inputs, event, {**ok, "gpu": result}, "pass")
        check(out.returncode == 1, f"{wf.name}: gpu result {result!r} passed the check")
        check_output(out, f"gpu result {result!r}")
    # A variable missing altogether (an env: line dropped) fails, it is not read as empty.
    for dropped in inputs:
        env_inputs = {k: v for k, v in inputs.items() if k != dropped}
        out = run_step(script, env_inputs, event, ok, "pass")
        check(out.returncode != 0, f"{wf.name}: without {dropped} the check passed")


def main() -> None:
    summary = []
    for wf in WORKFLOWS:
        with wf.path.open(encoding="utf-8") as f:
            workflow = yaml.safe_load(f)
        job_id, job = final_job(wf, workflow)
        step = check_shape(wf, workflow, job_id, job)
        inputs = inputs_of(wf, step)
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "step.sh"
            script.write_text(step["run"], encoding="utf-8")
            played, passed = play(wf, script, inputs)
            play_hostile_values(wf, script, inputs)
        check(passed == 2, f"{wf.name}: {passed} combinations passed; exactly one per gated event should")
        summary.append(f"{wf.name}: {played} played, only the 2 all-pass ones (pull request into the default branch, push) passed")
    print(f"{REQUIRED_CHECK}: " + "; ".join(summary))


if __name__ == "__main__":
    main()
