#!/usr/bin/env python3
"""Issue 40's ratios two ways, per shape: ours against cuDNN and FA2 as a PyTorch user times
them (bench/sdpa_bench.py: one q, k, v per shape, L2-warm), and against the same PyTorch
kernels timed under the gate's own conditions (bench/peers_variants.py's `qpool`: a q of its
own per call, refilled before each replay so not L2-warm, an output of its own per call).

Why: the gate gives every timed launch of our kernel a q of its own (DESIGN.md: no launch's
work is worth anything to another), which a short kernel pays for by fetching q from HBM.
Issue 40 defines its ratio against the user-style harness; the `qpool` column says how much
of a short shape's ratio is that method and how much is the kernel. `alone` (the gate's
method for a peer, nothing interleaved, L2-warm q) is printed beside it, so that qpool/alone
is the method's cost to PyTorch's own kernels in the same call.

  python3 bench/like_for_like.py --ours LABEL=R.json [--ours LABEL2=R2.json ...]
                                 --harness H.json --variants V.json [--out OUT.json]

R.json: `ci-gate local --out` (an A/A's one side or a stored-only run: each shape's p50);
LABEL names the kernel path it timed (e.g. hopper, l4-path), the table's first column.
H.json: bench/sdpa_bench.py --out. V.json: bench/peers_variants.py --out (with `qpool`; `alone`
optional). A shape in R.json missing from H.json or V.json prints a dash there.
"""
import argparse
import json
import sys

PEERS = (("cuDNN", "cudnn_us", "torch-sdpa-cudnn"), ("FA2", "flash_us", "torch-sdpa-flash"))


def ours_p50(path):
    """{shape name: p50 µs} of a results file: the A/B's candidate p50, else the summary's."""
    with open(path) as f:
        r = json.load(f)
    out = {}
    for s in r.get("shapes") or []:
        ab = s.get("ab") or {}
        p50 = ab.get("p50_cand") or (s.get("summary") or {}).get("p50")
        if isinstance(p50, (int, float)) and p50 > 0:
            out[str(s.get("name"))] = float(p50)
    return out


def variant_p50(variants, name):
    """{shape: {peer: p50 µs}} of one variant of peers_variants.py's output, {} if absent."""
    v = (variants.get("variants") or {}).get(name) or {}
    out = {}
    for shape, peers in (v.get("shapes") or {}).items():
        out[shape] = {p: row.get("p50_us") for p, row in peers.items()
                      if isinstance(row.get("p50_us"), (int, float)) and row["p50_us"] > 0}
    return out


def ratio(a, b):
    return a / b if a and b else None


def rows(ours, harness, qpool, alone):
    for (label, shape), us in ours.items():
        h = harness.get(shape) or {}
        row = {"path": label, "shape": shape, "ours_us": us}
        for label, hkey, peer in PEERS:
            hv, qv, av = h.get(hkey), (qpool.get(shape) or {}).get(peer), \
                (alone.get(shape) or {}).get(peer)
            row[label] = {"harness_us": hv, "qpool_us": qv, "alone_us": av,
                          "ratio_harness": ratio(us, hv), "ratio_qpool": ratio(us, qv),
                          "method_cost": ratio(qv, av)}
        yield row


def cell(x, fmt):
    return "—" if x is None else fmt.format(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", action="append", required=True)
    ap.add_argument("--harness", required=True)
    ap.add_argument("--variants", required=True)
    ap.add_argument("--out")
    a = ap.parse_args()
    ours = {}
    for spec in a.ours:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            sys.exit(f"--ours {spec!r}: LABEL=PATH")
        ours.update({(label, k): v for k, v in ours_p50(path).items()})
    if not ours:
        sys.exit(f"no shape with a p50 in {', '.join(a.ours)}")
    with open(a.harness) as f:
        harness = {s["name"]: s for s in json.load(f).get("shapes") or []}
    with open(a.variants) as f:
        variants = json.load(f)
    qpool, alone = variant_p50(variants, "qpool"), variant_p50(variants, "alone")
    if not qpool:
        sys.exit(f"{a.variants}: no `qpool` variant with a time")
    table = list(rows(ours, harness, qpool, alone))
    print("ours: the gate's p50; harness: PyTorch as a user times it (L2-warm q); qpool: the same"
          " kernels under the gate's conditions (a q of its own per call); method: qpool / alone")
    print("| path | shape | ours µs | cuDNN harness | cuDNN qpool | / cuDNN harness | / cuDNN qpool |"
          " cuDNN method | FA2 harness | FA2 qpool | / FA2 harness | / FA2 qpool | FA2 method |")
    print("| --- " * 13 + "|")
    for r in table:
        c, f = r["cuDNN"], r["FA2"]
        print(f"| {r['path']} | {r['shape']} | {r['ours_us']:.2f} | "
              + " | ".join(cell(x, "{:.2f}") for x in (c["harness_us"], c["qpool_us"]))
              + f" | {cell(c['ratio_harness'], '{:.3f}')} | {cell(c['ratio_qpool'], '{:.3f}')}"
              + f" | {cell(c['method_cost'], '{:.3f}')} | "
              + " | ".join(cell(x, "{:.2f}") for x in (f["harness_us"], f["qpool_us"]))
              + f" | {cell(f['ratio_harness'], '{:.3f}')} | {cell(f['ratio_qpool'], '{:.3f}')}"
              + f" | {cell(f['method_cost'], '{:.3f}')} |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"rows": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
