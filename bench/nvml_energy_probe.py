#!/usr/bin/env python3
"""How often NVML's total-energy counter and its power readings update, under load and idle.

Run on a GPU machine: `python3 bench/nvml_energy_probe.py [--out FILE]`. Loads the GPU with
back-to-back fp16 matmuls (torch) for ~2 s, polls nvmlDeviceGetTotalEnergyConsumption in a
tight loop, and prints the intervals between changes of the counter, the size of each change,
the power implied, and nvmlDeviceGetPowerUsage's own update interval; then the same idle.
ci-gate sizes its energy windows from this (docs/PERF.md)."""
import ctypes, json, statistics, sys, time

nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
h = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
name = ctypes.create_string_buffer(96)
nvml.nvmlDeviceGetName(h, name, 96)

def energy():
    v = ctypes.c_ulonglong()
    rc = nvml.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(v))
    return v.value if rc == 0 else None

def power():
    v = ctypes.c_uint()
    rc = nvml.nvmlDeviceGetPowerUsage(h, ctypes.byref(v))
    return v.value if rc == 0 else None

def poll(seconds, busy):
    t_end = time.perf_counter() + seconds
    e_changes, p_changes, reads = [], [], 0
    last_e, last_p = energy(), power()
    t0 = time.perf_counter()
    while time.perf_counter() < t_end:
        if busy is not None and busy():
            break
        e, p = energy(), power()
        reads += 1
        t = time.perf_counter()
        if e != last_e:
            e_changes.append((t, e)); last_e = e
        if p != last_p:
            p_changes.append((t, p)); last_p = p
    dt = time.perf_counter() - t0
    return e_changes, p_changes, reads, dt

def summary(label, e_changes, p_changes, reads, dt):
    out = {"label": label, "reads": reads, "read_us": dt / max(reads, 1) * 1e6}
    if len(e_changes) >= 2:
        gaps = [(b[0] - a[0]) * 1e3 for a, b in zip(e_changes, e_changes[1:])]
        steps = [b[1] - a[1] for a, b in zip(e_changes, e_changes[1:])]
        watts = [s / g for s, g in zip(steps, gaps)]
        out["energy_updates"] = len(e_changes)
        out["energy_gap_ms"] = {"median": statistics.median(gaps), "min": min(gaps), "max": max(gaps)}
        out["energy_step_mJ"] = {"median": statistics.median(steps), "min": min(steps), "max": max(steps)}
        out["implied_W"] = {"median": statistics.median(watts), "min": min(watts), "max": max(watts)}
        span = (e_changes[-1][0] - e_changes[0][0])
        out["mean_W_first_to_last_edge"] = (e_changes[-1][1] - e_changes[0][1]) / span / 1e3 * 1e3 / 1e3 if span > 0 else None
        out["gaps_ms_first20"] = [round(g, 3) for g in gaps[:20]]
    else:
        out["energy_updates"] = len(e_changes)
    if len(p_changes) >= 2:
        gaps = [(b[0] - a[0]) * 1e3 for a, b in zip(p_changes, p_changes[1:])]
        out["power_gap_ms"] = {"median": statistics.median(gaps), "min": min(gaps), "max": max(gaps)}
        out["power_mW_first10"] = [p for _, p in p_changes[:10]]
    return out

results = {"gpu": name.value.decode(), "energy_supported": energy() is not None}
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
for _ in range(20):
    a @ b
torch.cuda.synchronize()
results["idle_before"] = summary("idle", *poll(1.0, None))
for secs in (2.0,):
    ev = torch.cuda.Event()
    for _ in range(int(secs / 0.0012)):
        a @ b
    ev.record()
    results["busy"] = summary("busy (8192^3 fp16 matmuls back to back)", *poll(secs + 1, lambda: ev.query()))
    torch.cuda.synchronize()
results["idle_after"] = summary("idle after", *poll(1.0, None))
# Short bursts at 25% duty (2 ms on, 6 ms off), as ci-gate's samples
ev_changes = []
t_end = time.perf_counter() + 1.5
e_changes, p_changes, reads = [], [], 0
last = energy()
t0 = time.perf_counter()
while time.perf_counter() < t_end:
    for _ in range(2):
        a @ b
    torch.cuda.synchronize()
    s = time.perf_counter() + 0.006
    while time.perf_counter() < s:
        e = energy(); reads += 1
        if e != last:
            e_changes.append((time.perf_counter(), e)); last = e
results["duty25"] = summary("25% duty bursts", e_changes, [], reads, time.perf_counter() - t0)
text = json.dumps(results, indent=1)
print(text)
if len(sys.argv) > 2 and sys.argv[1] == "--out":
    open(sys.argv[2], "w").write(text)
