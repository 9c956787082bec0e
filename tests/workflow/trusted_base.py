#!/usr/bin/env python3
"""Only the default branch is a trusted base: which jobs of perf-gate.yml (this repository's,
and the template's for other repositories in examples/consumer/) can run, for a pull request
into the default branch, into another branch, into a branch that differs from the default
one only in case, and for pushes to each, whatever any job's outcome.

GitHub decides whether a job runs from its `needs` and its `if:`. This script evaluates every
job's `if:` as GitHub does (a small evaluator of the expression language the workflows use:
contexts, string literals, `==`/`!=` that ignore case as GitHub's do, `&&`/`||` that yield an
operand, `!`, `format()` and the status functions; without a status function `success() &&`
is implied, and success() means every needed job succeeded), and the jobs' `outputs:` from
their steps' outputs. For each event it walks every outcome (success, failure, cancelled) of
every job that runs and every value of the step outputs the jobs read (pass, fail, error,
empty), and asserts:

  - a pull request into another branch, or a push to one: no job runs on the self-hosted GPU
    runner, none that holds a write permission, none that checks anything out; only
    `ci-gate verdict` runs (for the pull request, where it fails: final_check.py);
  - a base that differs only in case (`Main` beside a default `main`), which GitHub's `==`
    lets through: the binary job runs and its first step, the exact check, fails it (that
    step's script is run here for each event and must agree), so again no job on the GPU
    runner, none with a write permission; the binary job of the template runs that step
    through ci-gate-binary.yml, which must hold the same script;
  - a pull request into the default branch and a push to it: the GPU job runs whenever the
    binary job succeeded, and `ci-gate verdict` runs whatever happened;
  - `ci-gate verdict` is never skipped for a pull request (into any branch) or a push to the
    default branch.

Run it with the CI venv's Python (PyYAML): target/ci-venv/bin/python tests/workflow/trusted_base.py
"""

from __future__ import annotations

import itertools
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
REPO = ROOT / ".github" / "workflows" / "perf-gate.yml"
CONSUMER = ROOT / "examples" / "consumer" / ".github" / "workflows" / "perf-gate.yml"
CONSUMER_BINARY = ROOT / "examples" / "consumer" / ".github" / "workflows" / "ci-gate-binary.yml"
CHECK_STEP = "Only the default branch is a trusted base"
REQUIRED_CHECK = "ci-gate verdict"
DEFAULT = "main"
OUTCOMES = ["success", "failure", "cancelled"]
STEP_OUTPUTS = ["pass", "fail", "error", ""]


class Failed(Exception):
    pass


def check(cond: bool, message: str) -> None:
    if not cond:
        raise Failed(message)


# --- GitHub's expression language, as far as the workflows use it -------------------------

TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||[!(),])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*))"
)


def tokenize(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        check(m is not None and m.end() > pos, f"cannot read the expression at {text[pos:]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def to_number(v) -> float:
    """GitHub's coercion of a value to a number."""
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip()
    if s == "":
        return 0.0
    try:
        return float(s)
    except ValueError:
        return math.nan


def truthy(v) -> bool:
    if v is None or v is False or v == "":
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return not (v == 0 or math.isnan(v))
    return True


def equal(a, b) -> bool:
    """`==`: strings compare ignoring case; other types are compared as numbers."""
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    if a is None and b is None:
        return True
    if type(a) is type(b) and not isinstance(a, str):
        return a == b
    x, y = to_number(a), to_number(b)
    return x == y


class Expr:
    """A parsed expression; `evaluate(lookup, status)` with `lookup(path)` for contexts and
    `status(name)` for the status functions."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0
        self.tree = self.parse_or()
        check(self.pos == len(self.tokens), f"trailing tokens in {text!r}")

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        check(tok[0] is not None and (value is None or tok[1] == value), f"expected {value!r} in {self.text!r}")
        self.pos += 1
        return tok

    def parse_or(self):
        left = self.parse_and()
        while self.peek()[1] == "||":
            self.take()
            left = ("or", left, self.parse_and())
        return left

    def parse_and(self):
        left = self.parse_cmp()
        while self.peek()[1] == "&&":
            self.take()
            left = ("and", left, self.parse_cmp())
        return left

    def parse_cmp(self):
        left = self.parse_unary()
        while self.peek()[1] in ("==", "!="):
            op = self.take()[1]
            left = (op, left, self.parse_unary())
        return left

    def parse_unary(self):
        if self.peek()[1] == "!":
            self.take()
            return ("not", self.parse_unary())
        return self.parse_atom()

    def parse_atom(self):
        kind, value = self.take()
        if value == "(":
            inner = self.parse_or()
            self.take(")")
            return inner
        if kind == "str":
            return ("lit", value[1:-1].replace("''", "'"))
        if kind == "num":
            return ("lit", float(value))
        if kind == "name":
            if value in ("true", "false"):
                return ("lit", value == "true")
            if value == "null":
                return ("lit", None)
            if self.peek()[1] == "(":
                self.take("(")
                args = []
                while self.peek()[1] != ")":
                    args.append(self.parse_or())
                    if self.peek()[1] == ",":
                        self.take(",")
                self.take(")")
                return ("call", value, args)
            return ("ctx", value)
        raise Failed(f"unexpected {value!r} in {self.text!r}")

    def evaluate(self, lookup, status):
        def ev(node):
            op = node[0]
            if op == "lit":
                return node[1]
            if op == "ctx":
                return lookup(node[1])
            if op == "not":
                return not truthy(ev(node[1]))
            if op == "and":
                left = ev(node[1])
                return ev(node[2]) if truthy(left) else left
            if op == "or":
                left = ev(node[1])
                return left if truthy(left) else ev(node[2])
            if op in ("==", "!="):
                same = equal(ev(node[1]), ev(node[2]))
                return same if op == "==" else not same
            if op == "call":
                name, args = node[1], [ev(a) for a in node[2]]
                if name in ("always", "success", "failure", "cancelled"):
                    return status(name)
                if name == "format":
                    fmt = str(args[0])
                    for i, a in enumerate(args[1:]):
                        fmt = fmt.replace("{" + str(i) + "}", "" if a is None else str(a))
                    return fmt
                raise Failed(f"function {name}() is not known to this test ({self.text!r})")
            raise Failed(f"cannot evaluate {node!r}")

        return ev(self.tree)

    def has_status_function(self) -> bool:
        return any(k == "name" and v in ("always", "success", "failure", "cancelled") for k, v in self.tokens)


def expression(value) -> Expr:
    text = str(value).strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    return Expr(text)


# --- The jobs, under one event ------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """What a run's `github` context holds, as far as the jobs' conditions read it."""

    label: str
    name: str
    ref: str
    base_ref: str | None
    default_branch: str = DEFAULT

    def github(self, path: str):
        values = {
            "github.event_name": self.name,
            "github.ref": self.ref,
            "github.event.pull_request.base.ref": self.base_ref,
            "github.event.repository.default_branch": self.default_branch,
        }
        check(path in values, f"{path} is not a context this test supplies")
        return values[path]


def order(jobs: dict) -> list[str]:
    """The jobs, each after those it needs."""
    done: list[str] = []
    while len(done) < len(jobs):
        ready = [j for j in jobs if j not in done and all(n in done for n in needs_of(jobs[j]))]
        check(ready, "the jobs' needs form a loop")
        done.append(ready[0])
    return done


def needs_of(job: dict) -> list[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else list(needs)


def step_outputs_read(job: dict) -> list[str]:
    """The `steps.ID.outputs.NAME` the job's outputs read."""
    found = set()
    for expr in (job.get("outputs") or {}).values():
        found.update(re.findall(r"steps\.[A-Za-z0-9_-]+\.outputs\.[A-Za-z0-9_-]+", str(expr)))
    return sorted(found)


def runs(job: dict, event: Event, results: dict, outputs: dict) -> bool:
    """Whether GitHub starts `job`, given the results and outputs of the jobs before it."""
    needs = needs_of(job)

    def lookup(path: str):
        if path.startswith("github."):
            return event.github(path)
        parts = path.split(".")
        if parts[0] == "needs":
            check(parts[1] in needs, f"a condition reads needs.{parts[1]}, which the job does not need")
            if parts[2] == "result":
                return results[parts[1]]
            if parts[2] == "outputs":
                return outputs.get(parts[1], {}).get(parts[3], "")
        if parts[0] == "vars":
            return None
        raise Failed(f"a condition reads {path}, which this test does not supply")

    def status(name: str) -> bool:
        states = [results[n] for n in needs]
        if name == "always":
            return True
        if name == "success":
            return all(s == "success" for s in states)
        if name == "failure":
            return any(s == "failure" for s in states)
        return any(s == "cancelled" for s in states)

    if "if" not in job:
        return status("success")
    cond = expression(job["if"])
    if not cond.has_status_function() and not status("success"):
        return False
    return truthy(cond.evaluate(lookup, status))


def job_outputs(job: dict, step_values: dict) -> dict:
    """The job's outputs, from its steps' outputs (`step_values`: path -> value)."""
    out = {}
    for name, expr in (job.get("outputs") or {}).items():

        def lookup(path: str):
            check(path in step_values, f"an output reads {path}, which this test does not supply")
            return step_values[path]

        value = expression(expr).evaluate(lookup, lambda _: True)
        out[name] = "" if value is None or value is False else str(value)
    return out


def walk(jobs: dict, event: Event, may_succeed) -> list[dict]:
    """Every way the run can go: per job, "skipped" or the outcome it ran to; `may_succeed(job)`
    says whether a job can succeed under this event at all."""
    names = order(jobs)
    runs_seen: list[dict] = []

    def go(i: int, results: dict, outputs: dict) -> None:
        if i == len(names):
            runs_seen.append(dict(results))
            return
        name = names[i]
        job = jobs[name]
        if not runs(job, event, results, outputs):
            go(i + 1, {**results, name: "skipped"}, {**outputs, name: {}})
            return
        reads = step_outputs_read(job)
        for outcome in OUTCOMES:
            if outcome == "success" and not may_succeed(name):
                continue
            for values in itertools.product(STEP_OUTPUTS, repeat=len(reads)):
                step_values = dict(zip(reads, values))
                go(i + 1, {**results, name: outcome}, {**outputs, name: job_outputs(job, step_values)})

    go(0, {}, {})
    return runs_seen


# --- What may run ---------------------------------------------------------------------------


def self_hosted(job: dict) -> bool:
    runs_on = job.get("runs-on", [])
    labels = [runs_on] if isinstance(runs_on, str) else list(runs_on)
    return "self-hosted" in labels


def writes(job: dict) -> bool:
    perms = job.get("permissions")
    check(isinstance(perms, dict), "every job states its permissions")
    return any(str(v) == "write" for v in perms.values())


def checks_out(job: dict) -> bool:
    return any("actions/checkout@" in str(s.get("uses", "")) for s in job.get("steps") or [])


def check_script(steps: list, where: str) -> str:
    """The exact check: `where`'s first step, by name; its script."""
    check(steps and steps[0].get("name") == CHECK_STEP, f"{where}: the first step must be {CHECK_STEP!r}")
    step = steps[0]
    check("if" not in step and "continue-on-error" not in step, f"{where}: {CHECK_STEP!r} must not be skippable")
    env = step.get("env") or {}
    wanted = {
        "EVENT_NAME": "${{ github.event_name }}",
        "REF": "${{ github.ref }}",
        "BASE_REF": "${{ github.event.pull_request.base.ref }}",
        "DEFAULT_BRANCH": "${{ github.event.repository.default_branch }}",
    }
    check({k: str(v).strip() for k, v in env.items()} == wanted, f"{where}: {CHECK_STEP!r} reads {env}")
    return step["run"]


def run_check(script: str, event: Event) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "check.sh"
        path.write_text(script, encoding="utf-8")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "EVENT_NAME": event.name,
            "REF": event.ref,
            "BASE_REF": event.base_ref or "",
            "DEFAULT_BRANCH": event.default_branch,
        }
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)],
            env=env, capture_output=True, text=True, timeout=30,
        )


EVENTS = [
    Event("PR into the default branch", "pull_request", "refs/pull/7/merge", DEFAULT),
    Event("PR into release-x", "pull_request", "refs/pull/7/merge", "release-x"),
    Event("PR into Main (default main)", "pull_request", "refs/pull/7/merge", "Main"),
    Event("PR, default branch unknown", "pull_request", "refs/pull/7/merge", "", ""),
    Event("push to the default branch", "push", f"refs/heads/{DEFAULT}", None),
    Event("push to release-x", "push", "refs/heads/release-x", None),
    Event("push to Main (default main)", "push", "refs/heads/Main", None),
]


def trusted(event: Event) -> bool:
    """The rule, exactly: the base (or the pushed branch) is the default branch."""
    if not event.default_branch:
        return False
    if event.name == "pull_request":
        return event.base_ref == event.default_branch
    return event.ref == f"refs/heads/{event.default_branch}"


def check_run(path: Path, script: str, guarded: str) -> int:
    """Every event and outcome of the workflow at `path`, whose job `guarded` runs the exact
    check `script` first. Returns how many runs were walked."""
    name = str(path.relative_to(ROOT))
    jobs = yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"]
    verdict = [j for j, job in jobs.items() if job.get("name") == REQUIRED_CHECK]
    check(len(verdict) == 1, f"{name}: one job named {REQUIRED_CHECK!r}")
    verdict = verdict[0]
    gpu = [j for j, job in jobs.items() if self_hosted(job)]
    check(gpu == ["gpu"], f"{name}: the self-hosted jobs are {gpu}")
    check(guarded in needs_of(jobs["gpu"]), f"{name}: gpu must need {guarded}")
    walked = 0
    for event in EVENTS:
        label = f"{name}, {event.label}"
        passed = run_check(script, event).returncode == 0
        check(passed == trusted(event), f"{label}: the exact check {'passed' if passed else 'failed'}")
        seen = walk(jobs, event, lambda j: j != guarded or passed)
        walked += len(seen)
        check(seen, f"{label}: no run")
        ran = lambda r: {j for j, res in r.items() if res != "skipped"}  # noqa: E731
        for r in seen:
            started = ran(r)
            if not trusted(event):
                for j in started:
                    job = jobs[j]
                    check(not self_hosted(job), f"{label}: {j} runs on the GPU runner: {r}")
                    check(not writes(job), f"{label}: {j} holds a write permission: {r}")
                    check(j == guarded or not checks_out(job), f"{label}: {j} checks out code: {r}")
                    check(j in (guarded, verdict, "baselines"), f"{label}: {j} runs: {r}")
                    if j == guarded:
                        check(r[j] != "success", f"{label}: {j} succeeded past the exact check")
            elif r.get(guarded) == "success":
                check(r["gpu"] != "skipped", f"{label}: gpu skipped though {guarded} succeeded: {r}")
            gated = event.name == "pull_request" or equal(event.ref, f"refs/heads/{event.default_branch}")
            if gated:
                check(r[verdict] != "skipped", f"{label}: {REQUIRED_CHECK} skipped: {r}")
        # Where nothing is trusted and the names differ in more than case, only the verdict.
        if not trusted(event) and not equal(event.base_ref if event.name == "pull_request" else event.ref,
                                            event.default_branch if event.name == "pull_request" else f"refs/heads/{event.default_branch}"):
            for r in seen:
                check(ran(r) <= {verdict}, f"{label}: {sorted(ran(r))} run")
        if trusted(event):
            check(any(r["gpu"] != "skipped" for r in seen), f"{label}: the GPU job never runs")
    return walked


def main() -> None:
    try:
        repo_jobs = yaml.safe_load(REPO.read_text(encoding="utf-8"))["jobs"]
        repo_script = check_script(repo_jobs["binary"].get("steps") or [], f"{REPO.name} binary")
        consumer_jobs = yaml.safe_load(CONSUMER.read_text(encoding="utf-8"))["jobs"]
        check(
            str(consumer_jobs["binary"].get("uses", "")).startswith("./.github/workflows/ci-gate-binary.yml"),
            "the template's binary job is ci-gate-binary.yml",
        )
        build = yaml.safe_load(CONSUMER_BINARY.read_text(encoding="utf-8"))["jobs"]
        check(list(build) == ["build"], f"ci-gate-binary.yml has the jobs {list(build)}")
        consumer_script = check_script(build["build"].get("steps") or [], "ci-gate-binary.yml build")
        check(repo_script == consumer_script, "the exact check differs between perf-gate.yml and the template's ci-gate-binary.yml")
        # Messages: the base named, plainly; a schedule (nightly, baseline-update call the
        # template's binary workflow too) is not this check's business.
        out = run_check(repo_script, Event("", "pull_request", "refs/pull/1/merge", "release-x"))
        check(
            out.stdout.strip() == "::error title=ci-gate::pull requests into 'release-x' are not gated: only the default branch 'main' is a trusted base",
            out.stdout,
        )
        out = run_check(repo_script, Event("", "pull_request", "refs/pull/1/merge", "x%0A::warning::y"))
        check(out.returncode == 1 and "x%0A" not in out.stdout, out.stdout)
        for name in ("schedule", "workflow_dispatch"):
            out = run_check(repo_script, Event("", name, "refs/heads/main", None, ""))
            check(out.returncode == 0, f"{name}: {out.stdout}{out.stderr}")
        walked = check_run(REPO, repo_script, "binary") + check_run(CONSUMER, consumer_script, "binary")
    except Failed as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"trusted base: {len(EVENTS)} events, {walked} ways the runs can go, in both perf-gate.yml; "
          "no other branch reaches the GPU runner or a write token, and the verdict always reports")


if __name__ == "__main__":
    main()
