#!/usr/bin/env python3
"""An evolutionary loop over the shipped attention kernel's tiles, fed to `ci-gate eval`.

The shipped kernel's configurations are macro calls in kernels/attention.cu, e.g.

    CG_ATTN_WS_KERNEL_DYN(attention_fwd_f16_d64, 64, 128, 2, 1, false, true, false, 2, 232, 4)

whose parameters are named by the macro's definition (`NAME, D, BN, ST, NC, BF16, INTRA, PP,
MINB, CREG, NSUB`). This script turns the source into a template in which every tunable
argument of every shipped call is a compile define with the shipped value as its default
(`#ifndef EV_WS_D64_BN` / `#define EV_WS_D64_BN 128`), so that the template without defines
is the shipped kernel, and a candidate is the template with a few defines changed:

  * tiles: keys per tile (BN), rows per CTA (BM, mma.sync), warps (NW), 16-row blocks per
    warp (MI), Q in registers (QREG);
  * pipelines: stages (ST), consumer warpgroups (NC), ping-pong (PP), softmax/PV overlap
    (INTRA), sub-tiles per CTA (NSUB);
  * occupancy: CTAs per SM (MINB), consumer registers (CREG).

It runs one long-lived `ci-gate eval --leaderboard FILE` (measuring against the best so far),
submits a generation of mutants of the current best at a time, reads their verdicts, and
prints the leaderboard at the end. Candidates that do not compile, fail parity or are refused
are simply verdicts: the evaluator judges, the loop only proposes. Mutations the kernel rules
out outright (the register file, rows = warps x 16 x blocks) are not proposed.

Usage (on a GPU host; docs/EVAL.md):

    python3 examples/evolve/evolve.py --ci-gate target/release/ci-gate \\
        --config configs/eval.yaml --minutes 5 --leaderboard evolve-board.json

Python 3.9+, standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

# The shipped calls' macro families: `ws` is Hopper's warp-specialised kernel (sm_90a: H100,
# H200), `mma` the mma.sync kernel (the L4, plain sm_90, Ampere).
FAMILIES = {
    "ws": ("CG_ATTN_WS_KERNEL_DYN", "CG_ATTN_WS_KERNEL_N", "CG_ATTN_WS_KERNEL"),
    "mma": ("CG_ATTN_KERNEL",),
}

# The values each tunable parameter may take, per family.
CHOICES = {
    "ws": {
        "BN": ["64", "128"],
        "ST": ["2", "3"],
        "NC": ["1", "2"],
        "INTRA": ["true", "false"],
        "PP": ["true", "false"],
        "MINB": ["1", "2", "3"],
        "CREG": ["152", "168", "184", "200", "216", "232", "240"],
        "NSUB": ["1", "2", "4"],
    },
    "mma": {
        "BM": ["64", "128"],
        "BN": ["32", "48", "64"],
        "NW": ["4", "8"],
        "MI": ["1", "2"],
        "QREG": ["true", "false"],
        "ST": ["2", "3"],
        "MINB": ["1", "2", "3"],
    },
}

CALL = re.compile(r"^(CG_ATTN_\w+)\((attention_fwd_(f16|bf16)_(d\d+\w*)),\s*(.*)\)\s*$")
DEFINITION = re.compile(r"^#define\s+(CG_ATTN_\w+)\(([^)]*)\)")


class Template:
    """The kernel source with every tunable argument of the shipped calls made a define."""

    def __init__(self, source: str, family: str):
        self.family = family
        macros = {m.group(1): [p.strip() for p in m.group(2).split(",")]
                  for m in map(DEFINITION.match, source.splitlines()) if m}
        self.defaults: dict[str, str] = {}
        lines = source.splitlines(keepends=True)
        seen: dict[tuple[str, str], int] = {}
        changed = 0
        for i, line in enumerate(lines):
            m = CALL.match(line.rstrip("\n"))
            if not m or m.group(1) not in FAMILIES[family]:
                continue
            macro, name, dtype, rest, args = m.groups()
            params = macros.get(macro)
            values = [a.strip() for a in args.split(",")]
            if not params or len(params) != len(values) + 1:
                raise SystemExit(f"{macro}: its definition's parameters do not match the call {name}")
            count = seen.get((dtype, rest), 0) + 1
            seen[(dtype, rest)] = count
            key = f"EV_{family.upper()}_{rest.upper()}" + (f"_{count}" if count > 1 else "")
            out = []
            for param, value in zip(params[1:], values):
                if param in CHOICES[family]:
                    define = f"{key}_{param}"
                    if self.defaults.setdefault(define, value) != value:
                        raise SystemExit(f"{define}: the f16 and bf16 calls differ ({value})")
                    out.append(define)
                else:
                    out.append(value)
            lines[i] = f"{macro}({name}, {', '.join(out)})\n"
            changed += 1
        if not changed:
            raise SystemExit(f"no shipped {family} call (attention_fwd_*) found in the kernel source")
        head = ["// examples/evolve: the shipped calls' tunables, each defaulting to its shipped value\n"]
        for define, value in self.defaults.items():
            head += [f"#ifndef {define}\n", f"#define {define} {value}\n", "#endif\n"]
        self.text = "".join(head + lines)

    def groups(self) -> dict[str, dict[str, str]]:
        """Tunables by call (`EV_WS_D64`): {param: define}."""
        out: dict[str, dict[str, str]] = {}
        for define in self.defaults:
            key, param = define.rsplit("_", 1)
            out.setdefault(key, {})[param] = define
        return out

    def valid(self, values: dict[str, str]) -> bool:
        """Rules the kernel states outright: the register file and the rows of a CTA."""
        for key, params in self.groups().items():
            v = {p: values.get(d, self.defaults[d]) for p, d in params.items()}
            if self.family == "ws":
                nc, minb, creg = int(v.get("NC", 1)), int(v.get("MINB", 1)), int(v.get("CREG", 232))
                if minb * 128 * (nc * creg + 24) > 65536:
                    return False
                if v.get("PP") == "true" and nc != 2:
                    return False
            else:
                if int(v["BM"]) != int(v["NW"]) * 16 * int(v["MI"]):
                    return False
        return True


def mutate(template: Template, parent: dict[str, str], rng: random.Random, tried: set) -> dict | None:
    """A mutant of `parent` (defines → values) with one or two parameters changed, valid and
    not tried before; None when none is found in a few hundred tries."""
    choices = CHOICES[template.family]
    defines = list(template.defaults)
    for _ in range(500):
        child = dict(parent)
        for define in rng.sample(defines, k=min(len(defines), rng.choice([1, 1, 2]))):
            param = define.rsplit("_", 1)[1]
            current = child.get(define, template.defaults[define])
            child[define] = rng.choice([c for c in choices[param] if c != current] or [current])
        child = {d: v for d, v in child.items() if v != template.defaults[d]}
        key = tuple(sorted(child.items()))
        if key not in tried and template.valid(child):
            tried.add(key)
            return child
    return None


class Evaluator:
    """One long-lived `ci-gate eval`: lines in, lines out."""

    def __init__(self, command: list[str]):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def evaluate(self, candidates: list[dict]) -> list[dict]:
        for c in candidates:
            self.proc.stdin.write(json.dumps(c) + "\n")
        self.proc.stdin.flush()
        out = []
        while len(out) < len(candidates):
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"ci-gate eval ended early (exit {self.proc.wait()})")
            out.append(json.loads(line))
        return out

    def close(self) -> int:
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        if rest.strip():
            print(rest, file=sys.stderr)
        return self.proc.wait()


def summary(line: dict) -> str:
    ratios = " ".join(f"{s['ratio']:.3f}" if s.get("ratio") else "-" for s in line.get("shapes", []))
    a = line.get("acceptance") or {}
    mark = " ACCEPTED #%d" % a["rank"] if a.get("accepted") else ""
    return f"{line['id']:<14} {line['verdict']:<11} {ratios:<28}{mark}  {line['reason'][:90]}"


def print_leaderboard(path: Path, template: Template) -> list[dict]:
    if not path.exists():
        print("leaderboard: empty (nothing beat the base under the rule)")
        return []
    entries = json.loads(path.read_text())["entries"]
    print(f"leaderboard {path} ({len(entries)} accepted; each against the one before it):")
    chain: dict[str, float] = {}
    for e in entries:
        ratios = {s["name"]: s["ratio"] for s in e["shapes"] if s.get("ratio")}
        for name, r in ratios.items():
            chain[name] = chain.get(name, 1.0) * r
        changed = [d for d in e["defines"] if d.split("=")[0] in template.defaults] or ["(source)"]
        print(f"  #{e['rank']} {e['id']}: {' '.join(changed)}")
        for name, r in ratios.items():
            print(f"      {name:<32} x{r:.3f} vs its reference, x{chain[name]:.3f} vs the base "
                  f"(product of the accepted steps' ratios) on {e['gpu']['name']}")
    return entries


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ci-gate", default="ci-gate", help="the ci-gate executable")
    ap.add_argument("--config", default="configs/eval.yaml")
    ap.add_argument("--kernels", default="kernels", help="the base kernels directory")
    ap.add_argument("--family", choices=sorted(FAMILIES), default="ws",
                    help="which shipped calls to tune: ws (H100/H200) or mma (L4, plain sm_90)")
    ap.add_argument("--leaderboard", default="evolve-board.json")
    ap.add_argument("--work", default="evolve-work", help="where the template is written")
    ap.add_argument("--population", type=int, default=4, help="mutants per generation")
    ap.add_argument("--candidates", type=int, default=1000, help="stop after this many")
    ap.add_argument("--minutes", type=float, default=5.0, help="stop after this long")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--devices", help="passed to ci-gate eval --devices")
    ap.add_argument("--eval-arg", action="append", default=[], help="another ci-gate eval argument")
    args = ap.parse_args()

    source = (Path(args.kernels) / "attention.cu").read_text()
    template = Template(source, args.family)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    template_path = (work / f"template-{args.family}.cu").resolve()
    template_path.write_text(template.text)
    print(f"{len(template.defaults)} tunables in {len(template.groups())} shipped calls: "
          + ", ".join(f"{d}={v}" for d, v in template.defaults.items()))

    command = [args.ci_gate, "eval", "--config", args.config, "--base-kernels", args.kernels,
               "--leaderboard", args.leaderboard, "--against", "best"] + args.eval_arg
    if args.devices:
        command += ["--devices", args.devices]
    evaluator = Evaluator(command)
    rng = random.Random(args.seed)
    tried: set = {()}
    deadline = time.monotonic() + 60 * args.minutes
    started = time.monotonic()
    # The control: the template without defines is the shipped kernel.
    results = evaluator.evaluate([{"id": "control", "path": str(template_path)}])
    print(summary(results[0]))
    counts: dict[str, int] = {}
    submitted, generation = 0, 0
    parent: dict[str, str] = {}
    while time.monotonic() < deadline and submitted < args.candidates:
        generation += 1
        batch = []
        for i in range(min(args.population, args.candidates - submitted)):
            child = mutate(template, parent, rng, tried)
            if child is None:
                break
            batch.append({"id": f"g{generation}-{i}", "path": str(template_path),
                          "defines": [f"{d}={v}" for d, v in sorted(child.items())]})
        if not batch:
            print("no untried mutation is left")
            break
        submitted += len(batch)
        for line in evaluator.evaluate(batch):
            counts[line["verdict"]] = counts.get(line["verdict"], 0) + 1
            print(summary(line))
            a = line.get("acceptance") or {}
            if a.get("accepted"):
                parent = dict(d.split("=", 1) for d in line["defines"])
    code = evaluator.close()
    minutes = (time.monotonic() - started) / 60
    print(f"{submitted} mutants in {generation} generations, {minutes:.1f} min "
          f"({submitted / max(minutes, 1e-9):.1f} a minute): "
          + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    print_leaderboard(Path(args.leaderboard), template)
    # ci-gate eval exits 1 when a candidate errored (a mutant that does not compile is one):
    # the loop itself succeeded unless the evaluator could not run.
    return 0 if code in (0, 1) and results[0]["verdict"] != "error" else 1


if __name__ == "__main__":
    sys.exit(main())
