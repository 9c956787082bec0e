#!/usr/bin/env python3
"""How late the host sees a GPU's end event, sample by sample (needs a CUDA GPU, cupy).

Why: on two H100s of 2026-12-06 the witness (src/witness.rs) judged A/As of one kernel and
honest A/Bs with rounds' medians of unwitnessed time 16-60 µs apart, while the medians over
all samples of the two sides lay within 1-2 µs: the host's time past the events came in two
modes, and which mode a round's median fell in moved between rounds. This probe samples as
the gate samples (src/gpu/measure.rs `take_sample`: the GPU idle, the host's clock read, a
lead-in spin, the events around ~2 ms of work, ~1 ms more queued after the end event where
a sample queues its checks, the wait for the end event; idle time to a 25% duty cycle) with
util.cu's spin kernel in place of a kernel under test, and waits for the end event three
ways, in turn: `cudaEventSynchronize` (what the gate does), a busy `cudaEventQuery` loop,
and `cudaEventSynchronize` after the thread yielded its CPU (sleep 0). Per way: percentiles
of the unwitnessed µs (host span - events span), the share of samples more than 10 µs above
the way's median, and the medians of consecutive blocks of 10 samples (what a round's median
is) with their spread.

  python3 bench/wake_probe.py [--samples 300] [--out F.json]
"""
import argparse
import json
import os
import statistics
import sys
import time

import cupy as cp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_check as kc  # noqa: E402

CLOCK_HZ = 2.0e9  # cycles to seconds, about: only the events' span is compared


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=300, help="samples per way of waiting")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    cc = cp.cuda.Device().compute_capability
    arch = f"sm_{cc}" + ("a" if cc == "90" else "")
    util = kc.Module("util.cu", arch)
    spin = util.mod.get_function("spin_cycles")
    stream = cp.cuda.Stream(non_blocking=True)
    start, end = cp.cuda.Event(), cp.cuda.Event()

    def launch(cycles):
        spin((1,), (32,), (cp.int64(int(cycles)),), stream=stream)

    def wait_sync():
        end.synchronize()

    def wait_query():
        while not end.done:
            pass

    def wait_yield():
        time.sleep(0)
        end.synchronize()

    ways = {"event_synchronize": wait_sync, "busy_query": wait_query,
            "yield_then_synchronize": wait_yield}
    rows = {w: [] for w in ways}
    for i in range(a.samples * len(ways)):
        name = list(ways)[i % len(ways)]
        began = time.perf_counter()
        launch(0.2e-3 * CLOCK_HZ)  # the GPU busy up to the wait for idle (inputs, poison)
        stream.synchronize()
        t0 = time.perf_counter()
        launch(50e-6 * CLOCK_HZ)  # the lead-in
        start.record(stream)
        for _ in range(20):  # the replay: 20 launches of ~0.1 ms
            launch(0.1e-3 * CLOCK_HZ)
        end.record(stream)
        launch(1e-3 * CLOCK_HZ)  # the checks, queued after the end event
        ways[name]()
        t1 = time.perf_counter()
        stream.synchronize()
        ms = cp.cuda.get_elapsed_time(start, end)
        rows[name].append((t1 - t0) * 1e6 - ms * 1e3)
        idle = 3 * (time.perf_counter() - began)
        time.sleep(idle)
    out = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "ways": {}}
    print(f"== {out['gpu']}: {a.samples} samples a way, unwitnessed µs")
    for name, u in rows.items():
        med = statistics.median(u)
        q = statistics.quantiles(u, n=100)
        late = sum(1 for x in u if x > med + 10) / len(u)
        blocks = [statistics.median(u[j:j + 10]) for j in range(0, len(u) - 9, 10)]
        out["ways"][name] = {"median": med, "p10": q[9], "p90": q[89], "p99": q[98],
                             "late_share": late, "block_medians": blocks, "samples": u}
        print(f"{name:24} median {med:7.1f}  p10 {q[9]:7.1f}  p90 {q[89]:7.1f}  p99 {q[98]:7.1f}"
              f"  >median+10: {100 * late:5.1f}%  blocks of 10: {min(blocks):.1f} .. "
              f"{max(blocks):.1f}")
    if a.out:
        json.dump(out, open(a.out, "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
