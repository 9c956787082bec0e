#!/usr/bin/env python3
"""The witness's lead-in, timed by the GPU's own global timer: does it take longer before a
kernel's sample than before the control's? Needs a CUDA GPU, torch and cupy
(bench/kernel_check.py's loaders).

Why: in every run without a base a side's unwitnessed time (the host's span from the lead-in
to the end event, less the events' span) lies 1-8 µs above the witness's control's
(docs/MEASURING.md, "The host's clock witnesses every sample"), and none of six steps in which
a kernel's sample differs from the control's moved it (thirty-fourth session). What was left:
the GPU's state after the kernel's own work. The lead-in spins a fixed number of SM cycles
(src/gpu/measure.rs LEAD_CYCLES), so an SM clock lower after a kernel's work than after the
harness's spins would lengthen it, and no NVML reading between samples would see it. This
probe reproduces the two sequences outside the gate, with the lead-in stamping
%globaltimer and clock64 at its start and end:

  kernel: [idle for a 25% duty cycle] [64 MiB written: the inputs] sync, host clock,
          [lead-in] [start event] [graph of ~2 ms of the kernel] [end event], wait
  control, right after each kernel round: 5 x { sync, host clock, [lead-in] [start]
          [graph of ~2 ms of spins] [end], wait }, back to back

and prints per sequence the median unwitnessed µs, the lead-in's µs by the global timer and
its SM clock (cycles / global-timer ns). If the kernel's lead-in is longer by about the
unwitnessed offset, the clock is what sets the offset.

  python3 bench/leadin_probe.py [--rounds 8] [--shape B,H,S,D[,causal][,FORM]] [--ada]
                                [--out FILE]
"""
import argparse
import json
import os
import statistics
import sys
import time

import cupy as cp
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_check as kc  # noqa: E402
from kept_probe import parse_shape  # noqa: E402

LEAD_CYCLES = 100_000  # src/gpu/measure.rs LEAD_CYCLES
SPIN_SRC = r"""
extern "C" __global__ void stamped_spin(long long cycles, unsigned long long* out) {
    if ((blockIdx.x | threadIdx.x) != 0) return;
    unsigned long long t0, t1;
    long long c0, c1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
    do { asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1)); } while (c1 - c0 < cycles);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (out) { out[0] = t0; out[1] = t1; out[2] = (unsigned long long)(c1 - c0); }
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", type=parse_shape, default=(4, 16, 512, 64, False,
                                                          "short_noncausal"))
    ap.add_argument("--ada", action="store_true")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--samples", type=int, default=10, help="kernel samples a round")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.rounds < 1 or a.samples < 1:
        sys.exit("--rounds and --samples must be at least 1")
    cc = torch.cuda.get_device_capability()
    arch = f"sm_{cc[0]}{cc[1]}" + ("a" if tuple(cc) == (9, 0) else "")
    kc.KDIR = os.path.join(os.path.dirname(HERE), "kernels")
    mod = kc.Module("attention.cu", arch, ["-DCG_ADA_TILES"] if a.ada else [])
    B, H, S, D, causal, form = a.shape
    attn = kc.Attn(mod, f"attention_fwd_f16_d{D}" + (f"_{form}" if form else ""))
    spin = cp.RawKernel(SPIN_SRC, "stamped_spin")
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
    out = torch.empty(B, H, S, D, dtype=torch.float32, device="cuda")
    inputs = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    stamps = cp.zeros(3, dtype=cp.uint64)
    none = np.uint64(0)

    def lead_in():
        with kc.torch_stream():
            spin((1,), (32,), (np.int64(LEAD_CYCLES), np.uint64(stamps.data.ptr)))

    def spin_once(cycles):
        with kc.torch_stream():
            spin((1,), (32,), (np.int64(cycles), none))

    # Each graph ~2 ms, as a 2-ms sample's: the kernel's calls, or spins of ~20 µs.
    g1 = kc.capture(lambda: attn(q, k, v, out, causal), 1)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(5):
        g1.replay()
    e.record()
    e.synchronize()
    n_kernel = max(1, round(2.0 / (s.elapsed_time(e) / 5)))
    g_kernel = kc.capture(lambda: attn(q, k, v, out, causal), n_kernel)
    g_spin = kc.capture(lambda: spin_once(40_000), 100)

    def sample(graph):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        lead_in()
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        host_us = (time.perf_counter() - t0) * 1e6
        ev_us = s.elapsed_time(e) * 1000.0
        st = stamps.get()
        lead_ns = int(st[1]) - int(st[0])
        return {"unwitnessed_us": host_us - ev_us, "lead_in_us": lead_ns / 1000.0,
                "lead_in_mhz": int(st[2]) / lead_ns * 1000.0 if lead_ns > 0 else None,
                "events_us": ev_us}

    rows = {"kernel": [], "control": []}
    for _ in range(a.rounds):
        for _ in range(a.samples):
            time.sleep(0.006)  # the duty cycle's idle time after a ~2 ms sample at 25%
            inputs.zero_()
            rows["kernel"].append(sample(g_kernel))
        for _ in range(5):
            rows["control"].append(sample(g_spin))

    def med(side, key):
        vals = [r[key] for r in rows[side] if r[key] is not None]
        return statistics.median(vals) if vals else None

    summary = {side: {k: med(side, k) for k in ("unwitnessed_us", "lead_in_us",
                                                "lead_in_mhz", "events_us")}
               for side in rows}
    print(f"{torch.cuda.get_device_name()}  {attn.name} b{B}h{H}s{S}d{D}"
          f"{' causal' if causal else ''}  {n_kernel} calls a sample, {a.rounds} rounds")
    for side, m in summary.items():
        print(f"  {side:8} unwitnessed {m['unwitnessed_us']:8.2f} µs   lead-in "
              f"{m['lead_in_us']:7.2f} µs at {m['lead_in_mhz']:7.1f} MHz   events "
              f"{m['events_us']:9.1f} µs  ({len(rows[side])} samples)")
    du = summary["kernel"]["unwitnessed_us"] - summary["control"]["unwitnessed_us"]
    dl = summary["kernel"]["lead_in_us"] - summary["control"]["lead_in_us"]
    print(f"  kernel - control: unwitnessed {du:+.2f} µs, lead-in {dl:+.2f} µs")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "kernel": attn.name,
                       "calls_a_sample": n_kernel, "summary": summary, "samples": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
