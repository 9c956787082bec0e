#!/usr/bin/env python3
"""`ci-gate eval` past one host, on Ray: one actor per GPU of the cluster, each owning a
long-lived `ci-gate eval` process, fed a loop's candidates from one driver.

Two tiers, because a leaderboard has one authority:

  * **screening actors** (`--workers N`, `num_gpus=1` each: Ray gives each its GPU through
    CUDA_VISIBLE_DEVICES): `ci-gate eval --against base`, every check of the gate, a verdict
    line per candidate. They take batches (`--batch`), so each evaluator compiles the next
    candidates on its node's CPU while its GPU measures.
  * one **accepting actor** (with `--leaderboard FILE`): `ci-gate eval --leaderboard FILE
    --against best`. Every candidate whose screening meets the seeds' rule is measured again
    there against the current best, confirmed in fresh processes (hot and cold cache) and
    accepted or not; its line is the candidate's final one. The leaderboard file lives on
    that actor's node.

Candidates are JSON lines as `ci-gate eval` reads them (docs/EVAL.md); a `path` is read here,
on the driver, and sent as `source` (the workers may be other machines). Lines come back in
the order they finish; each has its candidate's `id`.

    ray start --head ...                       # or an existing cluster: --address auto
    python3 examples/ray/ray_eval.py --ci-gate /opt/ci-gate/bin/ci-gate \\
        --config configs/eval.yaml --base-kernels kernels --leaderboard board.json < candidates.jsonl

The ci-gate executable, the config and the base kernels must exist at the same paths on every
node (a shared file system, or the same container image). Needs `pip install ray`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Iterator

import ray
from ray.util import ActorPool


@ray.remote
class EvalActor:
    """One `ci-gate eval` process on this actor's GPU: candidate lines in, verdict lines out."""

    def __init__(self, command: list[str]):
        self.command = command
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def where(self) -> dict:
        """The node and the GPU this actor measures on."""
        return {
            "node": ray.util.get_node_ip_address(),
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "pid": self.proc.pid,
        }

    def evaluate(self, candidates: list[dict]) -> list[dict]:
        """Writes the candidates, reads one line for each (ci-gate eval answers every line)."""
        for c in candidates:
            self.proc.stdin.write(json.dumps(c) + "\n")
        self.proc.stdin.flush()
        out = []
        while len(out) < len(candidates):
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"ci-gate eval ended early (exit {self.proc.wait()}): {self.command}")
            out.append(json.loads(line))
        return out

    def close(self) -> int:
        """Ends the evaluator: 0 no candidate errored, 1 one did, 2 it could not run."""
        self.proc.stdin.close()
        self.proc.stdout.read()
        return self.proc.wait()


def inline(candidate: dict) -> dict:
    """The candidate with a `path` read here and sent as `source`."""
    if "path" in candidate:
        c = dict(candidate)
        c["source"] = Path(c.pop("path")).read_text()
        return c
    return candidate


def batches(items: Iterable[dict], size: int) -> Iterator[list[dict]]:
    batch: list[dict] = []
    for item in items:
        batch.append(inline(item))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def eval_command(args: argparse.Namespace, *extra: str) -> list[str]:
    return [args.ci_gate, "eval", "--config", str(Path(args.config).resolve()),
            "--base-kernels", str(Path(args.base_kernels).resolve()), *extra]


def run(args: argparse.Namespace, candidates: Iterable[dict], report=print) -> dict:
    """Evaluates `candidates` on the cluster; `report` gets each final line. Returns a summary:
    the lines, where each actor ran, the evaluators' exit codes."""
    gpus = args.gpus_per_worker
    workers = [EvalActor.options(num_gpus=gpus).remote(eval_command(args, "--against", "base"))
               for _ in range(args.workers)]
    judge = None
    if args.leaderboard:
        board = str(Path(args.leaderboard).resolve())
        judge = EvalActor.options(num_gpus=gpus).remote(
            eval_command(args, "--leaderboard", board, "--against", "best"))
    places = ray.get([w.where.remote() for w in workers + ([judge] if judge else [])])
    lines: list[dict] = []
    sources: dict[str, dict] = {}

    def remembered(items):
        for c in items:
            c = inline(c)
            sources[c["id"]] = c
            yield c

    pool = ActorPool(workers)
    for batch_lines in pool.map_unordered(lambda a, b: a.evaluate.remote(b),
                                          batches(remembered(candidates), args.batch)):
        for line in batch_lines:
            acceptance = line.get("acceptance") or {}
            source = sources.pop(line.get("id"), None)
            if judge is not None and acceptance.get("meets_rule") and source is not None:
                # The screening met the rule against the base: the accepting actor decides.
                final = ray.get(judge.evaluate.remote([source]))[0]
                final["screening"] = {"verdict": line["verdict"], "reason": line["reason"],
                                      "gpu": line.get("gpu")}
                line = final
            lines.append(line)
            report(line)
    codes = ray.get([w.close.remote() for w in workers + ([judge] if judge else [])])
    return {"lines": lines, "places": places, "codes": codes}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ci-gate", default="ci-gate")
    ap.add_argument("--config", default="configs/eval.yaml")
    ap.add_argument("--base-kernels", default="kernels")
    ap.add_argument("--leaderboard", help="an accepting actor keeps this leaderboard")
    ap.add_argument("--workers", type=int, help="screening actors (default: the cluster's GPUs, less one with --leaderboard)")
    ap.add_argument("--gpus-per-worker", type=float, default=1.0)
    ap.add_argument("--batch", type=int, default=4, help="candidates sent to an actor at once")
    ap.add_argument("--address", help="the Ray cluster (default: start a local one)")
    args = ap.parse_args()
    ray.init(address=args.address)
    if args.workers is None:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        args.workers = max(1, gpus - (1 if args.leaderboard else 0))
    candidates = (json.loads(l) for l in sys.stdin if l.strip())
    summary = run(args, candidates, report=lambda l: print(json.dumps(l), flush=True))
    for place in summary["places"]:
        print(f"actor on {place['node']} GPU {place['cuda_visible_devices']}", file=sys.stderr)
    errored = any(c != 0 for c in summary["codes"])
    return 1 if errored else 0


if __name__ == "__main__":
    sys.exit(main())
