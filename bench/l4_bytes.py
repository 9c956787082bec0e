#!/usr/bin/env python3
"""What an L4's memory does to issue 40 item 2's ratio: arithmetic, not a measurement.

For each shape of a config (default configs/pr.yaml), the floors of one launch on an L4
(58 SMs, 121 TFLOP/s of dense fp16/bf16 with fp32 accumulation, 300 GB/s of GDDR6, a 48 MB
L2; NVIDIA's L4 data sheet):

* tensor: 4·B·H·S²·D FLOP (causal: the (S+1)/2S of the score matrix a causal launch computes)
  at the full 121 TFLOP/s;
* ours as the gate times it: every timed launch reads a q of its own (a slice of a pool of
  launches × q, hundreds of MiB per sample at these sizes, so from DRAM) and writes an fp32
  output slot of its own (never reused within a sample, so written back), while K and V are
  shared by a sample's launches (read once a sample, not counted): (q + fp32 O) bytes at
  300 GB/s (MEASURING.md, "Every launch computes something of its own");
* FA2 as the independent harness times it (bench/sdpa_bench.py: one q, k, v and one fp16
  output, the same every call): none of it from DRAM where q, k, v and O fit the 48 MB L2
  together, else all of it every call.

Each side's floor is the larger of the two. The last column is the most FA2 may reach of its
own floor's rate for item 2's 0.90x to be possible at all, with ours at its floor (the best
case for us): 0.9 x FA2's floor / ours. Where both are tensor-bound that is 0.90 (FA2 at most
90% of our efficiency); where ours is memory-bound and FA2 not, FA2 must run well below the
tensor peak, which only an L4 can say it does. The cost of the method on the proxy
(an H100's 3.35 TB/s, an H200's 4.8) is measured: MEASURING.md, KERNEL_LOG.md (thirty-fifth
session). Run: python3 bench/l4_bytes.py [--config configs/pr.yaml] [--gbs 300] ...
"""
import argparse
import re
import sys


def shapes(path):
    """The config's shapes, from its `- {batch: …}` lines (stdlib only: no YAML parser)."""
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    for line in lines:
        if not line.strip().startswith("- {"):
            continue
        d = dict(re.findall(r"(\w+):\s*([\w.]+)", line))
        try:
            b, h, s, dim = (int(d[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
        except (KeyError, ValueError):
            sys.exit(f"{path}: a shape line without batch, heads, seq_len and head_dim: {line.strip()}")
        out.append((b, h, s, dim, d.get("causal") == "true", d.get("dtype", "float16")))
    if not out:
        sys.exit(f"{path}: no shapes")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/pr.yaml")
    ap.add_argument("--tflops", type=float, default=121.0, help="dense fp16 TFLOP/s (L4: 121)")
    ap.add_argument("--gbs", type=float, default=300.0, help="DRAM GB/s (L4: 300)")
    ap.add_argument("--l2-mb", type=float, default=48.0, help="L2 MB (L4: 48)")
    a = ap.parse_args()
    mib = 2**20
    print(f"L4 floors: {a.tflops:g} TFLOP/s, {a.gbs:g} GB/s, {a.l2_mb:g} MB of L2 ({a.config})")
    print("| shape | tensor µs | ours: q + fp32 O | ours µs (bound) | FA2: q, k, v, fp16 O | FA2 µs (bound) | 0.90x needs FA2 at most |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for b, h, s, d, causal, dtype in shapes(a.config):
        elems = b * h * s * d
        flop = 4 * b * h * s * s * d * ((s + 1) / (2 * s) if causal else 1.0)
        tensor = flop / (a.tflops * 1e12) * 1e6
        ours_bytes = elems * 2 + elems * 4
        ours_mem = ours_bytes / (a.gbs * 1e9) * 1e6
        fa2_bytes = elems * 2 * 3 + elems * 2
        fa2_mem = 0.0 if fa2_bytes <= a.l2_mb * 1e6 else fa2_bytes / (a.gbs * 1e9) * 1e6
        ours = max(tensor, ours_mem)
        fa2 = max(tensor, fa2_mem)
        bound = lambda mem: "memory" if mem > tensor else "tensor"
        name = f"b{b}h{h}s{s}d{d}{' causal' if causal else ''}{' bf16' if dtype == 'bfloat16' else ''}"
        fa2_where = "in L2" if fa2_mem == 0.0 else "DRAM"
        print(
            f"| {name} | {tensor:.1f} | {ours_bytes / mib:.1f} MiB | {ours:.1f} ({bound(ours_mem)}) "
            f"| {fa2_bytes / mib:.1f} MiB, {fa2_where} | {fa2:.1f} ({bound(fa2_mem)}) | {0.9 * fa2 / ours:.0%} of its floor's rate |"
        )


if __name__ == "__main__":
    main()
