#!/usr/bin/env python3
"""Plays every outcome of perf-gate.yml's jobs through its final check and asserts that only
an all-pass run passes it.

The check is the job named "ci-gate verdict": the one check admins require (docs/GITHUB.md).
This script reads .github/workflows/perf-gate.yml, takes that job's one step, and runs the
step's `run:` script exactly as the runner does (`bash --noprofile --norc -eo pipefail`),
with the values its `env:` reads from the `needs` and `github` contexts supplied as
environment variables. It plays, for pushes and pull requests (and an event the workflow
does not gate), every combination of

  - each needed job's result: success, failure, cancelled, skipped (a job that hits
    `timeout-minutes` reports failure or cancelled, both played here);
  - merge's `verdict` output: pass, fail, error, and empty (merge never got that far);

and asserts that the check passes exactly when every needed job succeeded (the PR-only
baselines job: skipped on a push, and only then) and the verdict is pass. It also checks the
job's shape: `if: always()` (never skipped), no permissions, no checkout, nothing that could
turn a failure into a success (continue-on-error), and that it reads the result of every job
it needs and the output merge really sets.

Run it with the CI venv's Python (PyYAML): target/ci-venv/bin/python tests/workflow/final_check.py
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "perf-gate.yml"
REQUIRED_CHECK = "ci-gate verdict"
# The jobs the verdict depends on. comment and history report a verdict, they do not make it.
VERDICT_JOBS = {"baselines", "binary", "gpu", "merge"}
REPORTING_JOBS = {"comment", "history"}
RESULTS = ["success", "failure", "cancelled", "skipped"]
VERDICTS = ["pass", "fail", "error", ""]
EVENTS = ["pull_request", "push"]

NEEDS_RESULT = re.compile(r"^\$\{\{\s*needs\.([A-Za-z0-9_-]+)\.result\s*\}\}$")
NEEDS_OUTPUT = re.compile(
    r"^\$\{\{\s*needs\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)\s*\}\}$"
)
EVENT_NAME = re.compile(r"^\$\{\{\s*github\.event_name\s*\}\}$")


def fail(message: str) -> None:
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition: bool, message: str) -> None:
    if not condition:
        fail(message)


def load_workflow() -> dict:
    with WORKFLOW.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def final_job(workflow: dict) -> tuple[str, dict]:
    jobs = workflow["jobs"]
    named = [(k, j) for k, j in jobs.items() if j.get("name") == REQUIRED_CHECK]
    check(len(named) == 1, f"{WORKFLOW.name} must have exactly one job named {REQUIRED_CHECK!r}")
    return named[0]


def check_shape(workflow: dict, job_id: str, job: dict) -> dict:
    """The job cannot be skipped, holds nothing, and needs every job the verdict depends
    on; returns its one step."""
    jobs = workflow["jobs"]
    others = set(jobs) - {job_id}
    check(
        others == VERDICT_JOBS | REPORTING_JOBS,
        f"the workflow's jobs changed ({sorted(others)}): decide whether the verdict depends "
        "on each new one, then update VERDICT_JOBS or REPORTING_JOBS here",
    )
    needs = job.get("needs")
    needs = [needs] if isinstance(needs, str) else list(needs or [])
    check(set(needs) == VERDICT_JOBS, f"{REQUIRED_CHECK} needs {needs}, not {sorted(VERDICT_JOBS)}")
    condition = str(job.get("if", "")).strip()
    # always(), and on every pull request: only pushes to branches other than the default
    # one (which no required check gates) skip it.
    check(
        condition
        in (
            "${{ always() }}",
            "always()",
            "${{ always() && (github.event_name == 'pull_request' || github.ref == format('refs/heads/{0}', github.event.repository.default_branch)) }}",
        ),
        f"{REQUIRED_CHECK} must run whatever happened before (if: always()), not {condition!r}",
    )
    check(job.get("permissions") == {}, f"{REQUIRED_CHECK} must ask for no permissions")
    check("continue-on-error" not in job, f"{REQUIRED_CHECK} must not continue on error")
    check("strategy" not in job, f"{REQUIRED_CHECK} must be one job, not a matrix")
    steps = job.get("steps") or []
    check(len(steps) == 1, f"{REQUIRED_CHECK} must have one step, not {len(steps)}")
    step = steps[0]
    check("uses" not in step, f"{REQUIRED_CHECK} runs no action (no checkout)")
    check("run" in step, f"{REQUIRED_CHECK}'s step must be a run: script")
    check("if" not in step, f"{REQUIRED_CHECK}'s step must not be conditional")
    check("continue-on-error" not in step, f"{REQUIRED_CHECK}'s step must not continue on error")
    check(step.get("shell", "bash") == "bash", f"{REQUIRED_CHECK}'s step runs under bash")
    # The verdict it reads is the one merge really writes.
    merge = jobs["merge"]
    produced = {}
    for name, expr in (merge.get("outputs") or {}).items():
        produced[name] = str(expr).strip()
    check(
        re.fullmatch(r"\$\{\{\s*steps\.merge\.outputs\.verdict\s*\}\}", produced.get("verdict", ""))
        is not None,
        "merge's output `verdict` must be steps.merge.outputs.verdict",
    )
    check(
        any(s.get("id") == "merge" for s in merge.get("steps", [])),
        "merge has no step with id merge",
    )
    for job_name in ("binary", "gpu", "merge"):
        check(
            "continue-on-error" not in jobs[job_name],
            f"job {job_name} must not continue on error (a failure would read as success)",
        )
    return step


def inputs_of(step: dict) -> dict[str, tuple]:
    """What each variable of the step's env: holds: ("result", job), ("output", job, name)
    or ("event",)."""
    inputs = {}
    for var, expr in (step.get("env") or {}).items():
        expr = str(expr).strip()
        if m := NEEDS_RESULT.match(expr):
            inputs[var] = ("result", m.group(1))
        elif m := NEEDS_OUTPUT.match(expr):
            inputs[var] = ("output", m.group(1), m.group(2))
        elif EVENT_NAME.match(expr):
            inputs[var] = ("event",)
        else:
            fail(f"{REQUIRED_CHECK} reads {var} = {expr!r}, which this test cannot supply")
    read = {v[1] for v in inputs.values() if v[0] == "result"}
    check(read == VERDICT_JOBS, f"{REQUIRED_CHECK} must read the result of {sorted(VERDICT_JOBS)}, reads {sorted(read)}")
    outputs = {v[1:] for v in inputs.values() if v[0] == "output"}
    check(outputs == {("merge", "verdict")}, f"{REQUIRED_CHECK} must read merge's verdict, reads {outputs}")
    check(any(v[0] == "event" for v in inputs.values()), f"{REQUIRED_CHECK} must read the event")
    return inputs


def run_step(script: Path, inputs: dict, event: str, results: dict, verdict: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    for var, source in inputs.items():
        if source[0] == "result":
            env[var] = results[source[1]]
        elif source[0] == "output":
            env[var] = verdict
        else:
            env[var] = event
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def should_pass(event: str, results: dict, verdict: str) -> bool:
    """The rule, written independently of the script."""
    wanted_baselines = {"pull_request": "success", "push": "skipped"}.get(event)
    return (
        wanted_baselines is not None
        and results["baselines"] == wanted_baselines
        and results["binary"] == "success"
        and results["gpu"] == "success"
        and results["merge"] == "success"
        and verdict == "pass"
    )


def check_output(out: subprocess.CompletedProcess, label: str) -> None:
    """Every workflow command the script prints is one of its own annotations."""
    for line in (out.stdout + out.stderr).splitlines():
        stripped = line.lstrip()
        if stripped.startswith("::") or "##[" in line:
            check(
                stripped.startswith(f"::error title={REQUIRED_CHECK}::"),
                f"{label}: unexpected workflow command {line!r}",
            )


def main() -> None:
    workflow = load_workflow()
    job_id, job = final_job(workflow)
    step = check_shape(workflow, job_id, job)
    inputs = inputs_of(step)
    jobs = sorted(VERDICT_JOBS)
    played = passed = 0
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "step.sh"
        script.write_text(step["run"], encoding="utf-8")
        for event in EVENTS + ["workflow_dispatch"]:
            for combo in itertools.product(RESULTS, repeat=len(jobs)):
                results = dict(zip(jobs, combo))
                for verdict in VERDICTS:
                    out = run_step(script, inputs, event, results, verdict)
                    label = f"{event} {results} verdict={verdict!r}"
                    check(out.returncode in (0, 1), f"{label}: exit {out.returncode}: {out.stderr}")
                    want = should_pass(event, results, verdict)
                    got = out.returncode == 0
                    check(got == want, f"{label}: the check {'passed' if got else 'failed'}\n{out.stdout}{out.stderr}")
                    if not got:
                        check("::error title=" in out.stdout, f"{label}: failed without saying why")
                    check_output(out, label)
                    played += 1
                    passed += got
        # Values that are not what GitHub sends fail, and are never echoed as commands.
        ok = {"baselines": "success", "binary": "success", "gpu": "success", "merge": "success"}
        for verdict in ["PASS", "pass ", " pass", "pass\n", "pass\n::warning::x", "::stop-commands::t", "passed"]:
            out = run_step(script, inputs, "pull_request", ok, verdict)
            check(out.returncode == 1, f"verdict {verdict!r} passed the check")
            check_output(out, f"verdict {verdict!r}")
        for result in ["Success", "success ", "::error::x", "neutral"]:
            out = run_step(script, inputs, "pull_request", {**ok, "gpu": result}, "pass")
            check(out.returncode == 1, f"gpu result {result!r} passed the check")
            check_output(out, f"gpu result {result!r}")
        # A variable missing altogether (an env: line dropped) fails, it is not read as empty.
        for dropped in inputs:
            env_inputs = {k: v for k, v in inputs.items() if k != dropped}
            out = run_step(script, env_inputs, "pull_request", ok, "pass")
            check(out.returncode != 0, f"without {dropped} the check passed")
    check(passed == 2, f"{passed} combinations passed; exactly one per gated event should")
    print(f"{REQUIRED_CHECK}: {played} combinations of job results and merge verdicts played; "
          f"only the {passed} all-pass ones (pull request, push) passed")


if __name__ == "__main__":
    main()
