#!/usr/bin/env python3
"""Device-side check and timing of kernels/*.cu (needs a CUDA GPU, torch and cupy).

What it does, in one process:
  1. compiles attention.cu / reference.cu / util.cu with NVRTC for the device's own arch
     (ctypes, as bench/nvrtc_check.py; the cubin is loaded with cupy.RawModule) and reads
     each kernel's NAME_launch constant from the module;
  2. golden cases (tests/golden or --golden): fast kernels (head_dim 64/128) and
     the reference kernel against the float64 expected output;
  3. random randn cases (odd seq_len, both dtypes, both head_dims, causal or not,
     batch/heads > 1) against float64 attention on the same upcast inputs: relative L2,
     max abs error, PyTorch's own fp16/bf16 error on the same inputs for comparison;
     the output is poisoned with NaN (plus guard zones before/after) to prove every
     element is written exactly where it should, and every case runs twice and must be
     bitwise identical;
  4. util kernels: fill_normal determinism / moments / launch-shape independence,
     fill_u32, spin_cycles;
  5. timing of the fast kernels vs torch SDPA (default backend, FLASH_ATTENTION, and
     CUDNN_ATTENTION where available) on the target shapes: a CUDA graph of N launches
     (N = 1 ms / single-launch estimate, clamped to 20..400), warm-up, median of 25 replays,
     microseconds per launch and TFLOP/s (FLOPs = 4*B*H*S^2*D, halved for causal); ours is
     timed twice to show the spread; optional tile variants (--variants, fp16).
Prints a compact table at the end; --out writes everything as JSON.

  python3 bench/kernel_check.py [--golden DIR] [--variants [--l4-occupancy]] [--ada]
                                [--no-timing] [--cubin-dir DIR] [--ptx-probe FILE.ptx]
                                [--out FILE]
"""
import argparse
import ctypes
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np
import torch
import torch.nn.functional as F
import cupy as cp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nvrtc_check as nv  # noqa: E402

KDIR = os.path.join(os.path.dirname(HERE), "kernels")
NAN_BITS = 0x7FC00000
GUARD_BITS = 0x7FC0DEAD
GUARD = 4096  # floats of guard zone on each side of every output

FAST = {("f16", 64): "attention_fwd_f16_d64", ("f16", 128): "attention_fwd_f16_d128",
        ("bf16", 64): "attention_fwd_bf16_d64", ("bf16", 128): "attention_fwd_bf16_d128"}
REF = {"f16": "attention_ref_f16", "bf16": "attention_ref_bf16"}
TDT = {"f16": torch.float16, "bf16": torch.bfloat16}
# pass bars (relative L2 vs float64): PyTorch's own GPU kernel lands near 2.7e-4 (fp16)
# and 2e-3 (bf16); the fp32 reference must be near fp32 rounding.
BAR_FAST = {"f16": 1e-3, "bf16": 8e-3}
BAR_REF = 2e-5

FAILS = []


def log(*a):
    print(*a, flush=True)


def fail(msg):
    FAILS.append(msg)
    log("FAIL:", msg)


# ------------------------------------------------------------------ build / launch

class Module:
    def __init__(self, fn, arch, extra=(), cubin_dir=None):
        self.fn = fn
        if cubin_dir:  # prebuilt elsewhere (e.g. by another NVRTC version): load as is
            path = os.path.join(cubin_dir, f"{fn}.{arch}.cubin")
            self.mod = cp.RawModule(path=path)
            self.ptxas, self.compile_s = {}, 0.0
            with open(path, "rb") as f:
                self.cubin = f.read()
            return
        src = open(os.path.join(KDIR, fn)).read()
        t0 = time.time()
        ok, cubin, clog = nv.compile_cu(src, arch, list(extra), fn)
        self.compile_s = time.time() - t0
        if not ok:
            raise RuntimeError(f"NVRTC failed for {fn} {arch} {extra}:\n{clog}")
        self.ptxas = nv.parse_ptxas(clog)
        self.cubin = cubin
        h = hashlib.sha1(cubin).hexdigest()[:12]
        path = os.path.join(tempfile.gettempdir(), f"cg_{fn}_{arch}_{h}.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        self.mod = cp.RawModule(path=path)
        self.fn = fn

    def has_symbol(self, name):
        """Whether the cubin defines `name` (a whole NUL-delimited string of its string table),
        as the Rust side looks up NAME_small, NAME_long, NAME_long_noncausal,
        NAME_short_noncausal, NAME_causal and NAME_tma."""
        return (b"\0" + name.encode() + b"\0") in self.cubin

    def launch_const(self, name):
        return self.int_const(name + "_launch", 3)

    def int_const(self, symbol, n):
        """The n ints of an `extern "C" __constant__ int symbol[n]`."""
        arr = cp.ndarray((n,), cp.int32, self.mod.get_global(symbol))
        return [int(x) for x in arr.get()]


def torch_stream():
    return cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)


# ------------------------------------------------------------------ TMA (kernels/README.md)

class TensorMap(ctypes.Structure):
    """A CUtensorMap: 128 opaque bytes, passed by value after the eight arguments."""
    _fields_ = [("opaque", ctypes.c_uint64 * 16)]


_libcuda = None


def libcuda():
    global _libcuda
    if _libcuda is None:
        _libcuda = ctypes.CDLL("libcuda.so.1")
    return _libcuda


def encode_tensor_map(t):
    """Layout 1 of kernels/README.md for a contiguous [B, H, S, D] 16-bit tensor: a 3-D map
    {D, S, B*H}, box {64, 64, 1}, UINT16, 128-byte swizzle, L2 promotion 256 B, zero fill
    (the same call ffi::encode_tensor_map makes)."""
    B, H, S, D = t.shape
    m = TensorMap()
    dims = (ctypes.c_uint64 * 3)(D, S, B * H)
    strides = (ctypes.c_uint64 * 2)(D * 2, S * D * 2)
    box = (ctypes.c_uint32 * 3)(64, 64, 1)
    elem = (ctypes.c_uint32 * 3)(1, 1, 1)
    # UINT16 = 1, INTERLEAVE_NONE = 0, SWIZZLE_128B = 3, L2_PROMOTION_L2_256B = 3, OOB fill 0
    rc = libcuda().cuTensorMapEncodeTiled(ctypes.byref(m), 1, 3, ctypes.c_void_p(t.data_ptr()),
                                          dims, strides, box, elem, 0, 3, 3, 0)
    if rc != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed: CUresult {rc}")
    return m


def launch_with_maps(fn, grid, block, smem, scalars, maps):
    """cuLaunchKernel with the eight ABI arguments and the three tensor maps by value (cupy's
    argument packing has no 128-byte structs)."""
    vals = [ctypes.c_uint64(int(x)) if isinstance(x, np.uint64) else
            ctypes.c_int32(int(x)) if isinstance(x, np.int32) else
            ctypes.c_float(float(x)) for x in scalars] + list(maps)
    params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p)
                                              for v in vals])
    func = getattr(fn, "kernel", fn)  # cupy's RawKernel wraps a cuda.function.Function
    rc = libcuda().cuLaunchKernel(ctypes.c_void_p(func.ptr), grid[0], grid[1], grid[2],
                                  block[0], block[1], block[2], smem,
                                  ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                                  params, None)
    if rc != 0:
        raise RuntimeError(f"cuLaunchKernel failed: CUresult {rc}")


# Per-SM limits of the L4 (sm_89) and of this GPU, for --l4-occupancy.
L4 = {"smem": 100 * 1024, "threads": 1536, "ctas": 24, "regs": 65536}
HOPPER = {"smem": 228 * 1024, "threads": 2048, "ctas": 32, "regs": 65536}
RESERVED_SMEM = 1024  # per CTA, on both
MAX_SMEM_PER_CTA = 227 * 1024


def ctas_per_sm(lim, regs, threads, smem):
    """Resident CTAs per SM from shared memory, threads, registers (warp-granular, 256-register
    units) and the CTA cap."""
    warps = (threads + 31) // 32
    regs_per_warp = ((regs or 255) * 32 + 255) // 256 * 256
    return max(0, min(lim["smem"] // (smem + RESERVED_SMEM), lim["threads"] // threads,
                      lim["regs"] // (regs_per_warp * warps), lim["ctas"]))


class Attn:
    """One attention kernel, launched exactly as the Rust side will launch it. With
    l4_occupancy, extra dynamic shared memory caps the CTAs per SM at what the L4 would run
    (a proxy for the L4 on this GPU: occupancy matches, SM count, clocks and the tensor rate
    per SM do not)."""

    def __init__(self, module, name, l4_occupancy=False):
        self.name = name
        self.fn = module.mod.get_function(name)
        self.rows, self.threads, self.smem = module.launch_const(name)
        self.tma = module.has_symbol(name + "_tma")
        # NAME_fill = {CTAs per SM, most tiles a CTA}: the grids of several tiles a CTA that
        # the host may launch (check_fill_grids)
        self.fill = (module.int_const(name + "_fill", 2) if module.has_symbol(name + "_fill")
                     else None)
        self.ptxas = module.ptxas.get(name, {})
        self.launch_smem = self.smem
        if l4_occupancy:
            regs = self.ptxas.get("regs")
            n_l4 = ctas_per_sm(L4, regs, self.threads, self.smem)
            n_here = ctas_per_sm(HOPPER, regs, self.threads, self.smem)
            if 0 < n_l4 < n_here:
                self.launch_smem = min(MAX_SMEM_PER_CTA, HOPPER["smem"] // n_l4 - RESERVED_SMEM)
            self.ctas_per_sm = {"l4": n_l4, "here": n_here,
                                "emulated": ctas_per_sm(HOPPER, regs, self.threads,
                                                        self.launch_smem)}
        if self.launch_smem > 48 * 1024:
            self.fn.max_dynamic_shared_size_bytes = self.launch_smem

    def __call__(self, q, k, v, out, causal, tiles_per_cta=1):
        B, H, S, D = q.shape
        tiles = (S + self.rows - 1) // self.rows
        # grid.x = ceil(tiles / k), from which the kernel finds k again (kernels/README.md,
        # "Filling the GPU"); one tile a CTA unless asked
        grid = ((tiles + tiles_per_cta - 1) // max(1, tiles_per_cta), B * H, 1)
        args = (np.uint64(q.data_ptr()), np.uint64(k.data_ptr()), np.uint64(v.data_ptr()),
                np.uint64(out.data_ptr()), np.int32(S), np.int32(D),
                np.float32(1.0 / math.sqrt(D)), np.int32(1 if causal else 0))
        if self.tma:
            maps = [encode_tensor_map(t) for t in (q, k, v)]
            launch_with_maps(self.fn, grid, (self.threads, 1, 1), self.launch_smem, args, maps)
            return
        with torch_stream():
            self.fn(grid, (self.threads, 1, 1), args, shared_mem=self.launch_smem)


class AtTiles:
    """An entry with NAME_fill launched at k tiles a CTA (grid.x = ceil(tiles / k), k at most
    the tiles of a head), as the host's fill grids launch it."""

    def __init__(self, attn, k):
        self.attn, self.k, self.name = attn, k, f"{attn.name} k={k}"

    def __call__(self, q, k, v, out, causal):
        tiles = (q.shape[2] + self.attn.rows - 1) // self.attn.rows
        self.attn(q, k, v, out, causal, tiles_per_cta=min(self.k, max(1, tiles)))


def fill_grids(entries):
    """For the entries of {key: Attn} that declare NAME_fill: {k: {key: AtTiles}} for k = 2, 3
    and their most tiles a CTA (the grids the host may launch besides one tile a CTA)."""
    out = {}
    for key, a in entries.items():
        if a.fill:
            for k in sorted({t for t in (2, 3, a.fill[1]) if 2 <= t <= a.fill[1]}):
                out.setdefault(k, {})[key] = AtTiles(a, k)
    return out


def check_fill_grids(entries, ref, results, seed, section):
    """check_random on every fill grid of `entries` (fill_grids), causal and not: a CTA's
    second and later units (their loads requested by the unit before) must be as right as its
    first (random_cases' longer lengths have 3 to 33 tiles a head)."""
    for k, at_k in fill_grids(entries).items():
        check_random(at_k, ref, results, seed=seed + k, ref_kernel_too=False,
                     section=f"{section}-k{k}")


def check_fill_forms(forms, ref, results):
    """check_fill_grids for each of {name: {key: Attn}}, its own seeds and sections."""
    for i, (name, entries) in enumerate(forms.items()):
        check_fill_grids(entries, ref, results, seed=90 + 10 * i, section=f"rand-fill-{name}")


# ------------------------------------------------------------------ numerics helpers

def ref64(q, k, v, causal):
    """float64 attention on the upcast inputs, [B,H,S,D]."""
    D = q.shape[-1]
    S = q.shape[-2]
    q64, k64, v64 = q.double(), k.double(), v.double()
    s = (q64 @ k64.transpose(-1, -2)) * (1.0 / math.sqrt(D))
    if causal:
        mask = torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v64


def rel_l2(x, ref):
    x = x.double()
    return float(torch.linalg.vector_norm(x - ref) / torch.linalg.vector_norm(ref))


def max_abs(x, ref):
    return float((x.double() - ref).abs().max())


def run_checked(kern, q, k, v, causal):
    """Launch into a NaN-poisoned buffer with guard zones; check coverage, bounds and
    run-to-run bitwise determinism. Returns (out fp32 [B,H,S,D], problems list)."""
    n = q.numel()
    problems = []
    outs = []
    for _ in range(2):
        buf = torch.empty(n + 2 * GUARD, dtype=torch.float32, device="cuda")
        bi = buf.view(torch.int32)
        bi.fill_(GUARD_BITS - 2**32 if GUARD_BITS >= 2**31 else GUARD_BITS)
        bi[GUARD:GUARD + n].fill_(NAN_BITS)
        out = buf[GUARD:GUARD + n]
        kern(q, k, v, out, causal)
        torch.cuda.synchronize()
        g = torch.cat([bi[:GUARD], bi[GUARD + n:]])
        if not bool((g == GUARD_BITS).all()):
            problems.append("wrote outside the output")
        nan = int(torch.isnan(out).sum())
        if nan:
            problems.append(f"{nan} output elements unwritten/NaN")
        outs.append(out.clone())
    if not torch.equal(outs[0].view(torch.int32), outs[1].view(torch.int32)):
        problems.append("two runs differ bitwise (race?)")
    return outs[0].view(q.shape), problems


# ------------------------------------------------------------------ timing

def capture(fn, n):
    """A CUDA graph of n back-to-back calls of fn (which enqueues on torch's current stream),
    after one call on a side stream (as PyTorch asks before a capture)."""
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        for _ in range(n):
            fn()
    return g


def time_fn(fn, min_replay_ms=1.0, reps=25):
    """Median microseconds per launch of fn() (which enqueues one launch on torch's current
    stream), from CUDA-graph replays of N launches (N so that one replay >= min_replay_ms).
    Falls back to plain back-to-back launches if capture fails."""
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(5):
        fn()
    e.record()
    torch.cuda.synchronize()
    est_ms = max(s.elapsed_time(e) / 5, 1e-3)
    n = int(min(400, max(20, math.ceil(min_replay_ms / est_ms))))
    mode = "graph"
    try:
        run = capture(fn, n).replay
        for _ in range(3):
            run()
    except Exception as ex:  # noqa: BLE001
        mode = f"stream ({type(ex).__name__})"
        torch.cuda.synchronize()

        def run():
            for _ in range(n):
                fn()
        run()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s.record()
        run()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1000.0 / n)
    ts.sort()
    return {"us": statistics.median(ts), "min_us": ts[0], "max_us": ts[-1], "n": n,
            "mode": mode}


def flops(B, H, S, D, causal):
    f = 4.0 * B * H * S * S * D
    return f / 2 if causal else f


def sdpa_fn(q, k, v, causal, backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if backend == "default":
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    be = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]

    def f():
        with sdpa_kernel(be):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return f


# ------------------------------------------------------------------ sections

def check_golden(gdir, fast, ref, results):
    meta = json.load(open(os.path.join(gdir, "cases.json")))
    for name, c in meta.items():
        dt = "bf16" if c["dtype"] == "bfloat16" else "f16"
        B, H, S, D = c["batch"], c["heads"], c["seq_len"], c["head_dim"]

        def load(sfx):
            a = np.fromfile(os.path.join(gdir, f"{name}.{sfx}.bin"), dtype=np.int16)
            return torch.from_numpy(a).cuda().view(TDT[dt]).view(B, H, S, D)
        q, k, v = load("q"), load("k"), load("v")
        exp = torch.from_numpy(
            np.fromfile(os.path.join(gdir, f"{name}.out_f32.bin"), dtype=np.float32)
        ).cuda().view(B, H, S, D).double()
        kerns = [("ref", ref[dt])]
        if (dt, D) in fast:
            kerns.insert(0, ("fast", fast[(dt, D)]))
        for kind, kern in kerns:
            out, probs = run_checked(kern, q, k, v, c["causal"])
            e = rel_l2(out, exp)
            bar = BAR_REF if kind == "ref" else BAR_FAST[dt]
            r = {"section": "golden", "case": name, "kernel": kern.name, "rel_l2": e,
                 "max_abs": max_abs(out, exp), "torch_rel_l2": c["sdpa_gpu_rel_l2_vs_fp64"],
                 "problems": probs, "ok": (not probs) and e <= bar}
            results.append(r)
            if not r["ok"]:
                fail(f"golden {name} {kern.name}: rel_l2 {e:.3e} {probs}")


RANDOM_S = [1, 7, 63, 65, 100, 129, 257, 1000, 2049]


def random_cases():
    cases = []
    for S in RANDOM_S:
        for D in (64, 128):
            for causal in (False, True):
                for dt in ("f16", "bf16"):
                    B, H = (1, 2) if S >= 1000 else (2, 3)
                    cases.append((B, H, S, D, causal, dt))
    return cases


def by_cost_cases():
    """Grids on which NAME_causal deals its units out of blockIdx order (kernels/attention.cu,
    deal_causal_by_cost): one wave with a second CTA on some SM (about 1.5 128-row CTAs a SM of
    this GPU: the heaviest paired with the lightest) and several waves (about 3.5 a SM:
    heaviest first across the grid), with an odd tail, 4, 8 and 16 row tiles, both dtypes, d64
    and d128, and one non-causal launch each (the form must be right for either mask)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cases = []
    for per_sm in (1.5, 3.5):
        for S, D, dt, causal in ((333, 64, "f16", True), (512, 64, "bf16", True),
                                 (1000, 64, "f16", True), (2048, 64, "bf16", True),
                                 (512, 64, "f16", False), (333, 128, "bf16", True),
                                 (1000, 128, "f16", True), (512, 128, "f16", False)):
            tiles = (S + 127) // 128
            H = max(1, round(per_sm * sms / tiles))
            cases.append((1, H, S, D, causal, dt))
    return cases


def check_random(fast, ref, results, seed=1234, ref_kernel_too=True, section="random",
                 cases=None):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    for (B, H, S, D, causal, dt) in cases or random_cases():
        if (dt, D) not in fast:  # a kernel form that only some head_dims have
            continue
        q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=gen, dtype=torch.float32)
                   .to(TDT[dt]) for _ in range(3))
        r64 = ref64(q, k, v, causal)
        t_out = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
        t_err = rel_l2(t_out, r64)
        kerns = [("fast", fast[(dt, D)])]
        if ref_kernel_too:
            kerns.append(("ref", ref[dt]))
        for kind, kern in kerns:
            out, probs = run_checked(kern, q, k, v, causal)
            e = rel_l2(out, r64)
            bar = BAR_REF if kind == "ref" else BAR_FAST[dt]
            name = f"b{B}h{H}s{S}d{D}{'_causal' if causal else ''}_{dt}"
            r = {"section": section, "case": name, "kernel": kern.name, "rel_l2": e,
                 "max_abs": max_abs(out, r64), "torch_rel_l2": t_err, "problems": probs,
                 "ok": (not probs) and e <= bar and math.isfinite(e)}
            results.append(r)
            if not r["ok"]:
                fail(f"{section} {name} {kern.name}: rel_l2 {e:.3e} {probs}")


def check_ref_extra(ref, results):
    """Reference kernel at head_dims other than 64/128 (it takes any 1..256)."""
    gen = torch.Generator(device="cuda").manual_seed(99)
    for (B, H, S, D, causal, dt) in [(1, 2, 300, 32, True, "f16"), (1, 2, 200, 80, False, "bf16"),
                                     (1, 1, 129, 256, True, "f16"), (1, 1, 3000, 96, False, "f16")]:
        q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=gen).to(TDT[dt])
                   for _ in range(3))
        r64 = ref64(q, k, v, causal)
        out, probs = run_checked(ref[dt], q, k, v, causal)
        e = rel_l2(out, r64)
        name = f"b{B}h{H}s{S}d{D}{'_causal' if causal else ''}_{dt}"
        r = {"section": "ref-any-d", "case": name, "kernel": ref[dt].name, "rel_l2": e,
             "max_abs": max_abs(out, r64), "torch_rel_l2": None, "problems": probs,
             "ok": (not probs) and e <= BAR_REF}
        results.append(r)
        if not r["ok"]:
            fail(f"ref-any-d {name}: rel_l2 {e:.3e} {probs}")


def check_util(umod, info):
    res = {}
    stream = None
    # the gate's inputs (issue 37's mixture, kernels/util.cu): role 0 (q) of a [64, 1024, 64]
    # tensor; its values are not N(0, 1), so only what holds for any draw is asserted
    fn16 = umod.mod.get_function("fill_input_f16")
    fnbf = umod.mod.get_function("fill_input_bf16")
    shape_args = (np.int32(0), np.int32(1024), np.int32(64))
    fu32 = umod.mod.get_function("fill_u32")
    spin = umod.mod.get_function("spin_cycles")
    n = 1 << 22
    with torch_stream():
        a = torch.empty(n, dtype=torch.float16, device="cuda")
        b = torch.empty(n, dtype=torch.float16, device="cuda")
        c = torch.empty(n, dtype=torch.float16, device="cuda")
        fn16((264,), (256,), (np.uint64(a.data_ptr()), np.uint64(n), np.uint64(42)) + shape_args)
        fn16((7,), (128,), (np.uint64(b.data_ptr()), np.uint64(n), np.uint64(42)) + shape_args)
        fn16((264,), (256,), (np.uint64(c.data_ptr()), np.uint64(n), np.uint64(43)) + shape_args)
        x = torch.empty(n, dtype=torch.bfloat16, device="cuda")
        fnbf((264,), (256,), (np.uint64(x.data_ptr()), np.uint64(n), np.uint64(42)) + shape_args)
        u = torch.zeros(1000, dtype=torch.int32, device="cuda")
        fu32((3,), (64,), (np.uint64(u.data_ptr()), np.uint64(999), np.uint32(0x7FC00000)))
    torch.cuda.synchronize()
    af = a.float()
    res["f16_same_seed_other_grid_equal"] = bool(torch.equal(a.view(torch.int16), b.view(torch.int16)))
    res["f16_other_seed_differs"] = float((a != c).float().mean())
    res["f16_mean"], res["f16_std"] = float(af.mean()), float(af.std())
    res["f16_max_abs"] = float(af.abs().max())
    res["f16_finite"] = bool(torch.isfinite(af).all())
    xf = x.float()
    res["bf16_mean"], res["bf16_std"] = float(xf.mean()), float(xf.std())
    # bf16 and f16 of the same seed come from the same fp32 samples: they differ by rounding
    # (bf16 keeps 8 significant bits), relative to each value's magnitude
    res["bf16_vs_f16_maxdiff"] = float(((xf - af).abs() / af.abs().clamp(min=1.0)).max())
    res["fill_u32_ok"] = bool((u[:999] == 0x7FC00000).all()) and int(u[999]) == 0
    # spin_cycles: time 2e6 cycles
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch_stream():
        spin((1,), (1,), (np.int64(1000),))
    torch.cuda.synchronize()
    ms = []
    for cyc in (2_000_000, 4_000_000):
        s.record()
        with torch_stream():
            spin((4,), (32,), (np.int64(cyc),))
        e.record()
        torch.cuda.synchronize()
        ms.append(s.elapsed_time(e))
    res["spin_2M_ms"], res["spin_4M_ms"] = ms
    res["spin_implied_GHz"] = 2e6 / ((ms[1] - ms[0]) * 1e6) if ms[1] > ms[0] else None
    ok = (res["f16_same_seed_other_grid_equal"] and res["f16_other_seed_differs"] > 0.9
          and res["f16_finite"] and res["fill_u32_ok"] and res["f16_std"] > 0.5
          and res["bf16_vs_f16_maxdiff"] < 0.01 and ms[1] > ms[0])
    res["ok"] = bool(ok)
    if not ok:
        fail(f"util: {res}")
    info["util"] = res


TIMING_SHAPES = [(1, 8, 512, 64), (2, 8, 512, 64), (4, 16, 512, 64), (8, 16, 512, 64),
                 (4, 16, 2048, 64), (2, 16, 4096, 128)]


def timing(fast, variants, results, backends):
    gen = torch.Generator(device="cuda").manual_seed(7)
    for dt in ("f16", "bf16"):
        for (B, H, S, D) in TIMING_SHAPES:
            for causal in (False, True):
                q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=gen).to(TDT[dt])
                           for _ in range(3))
                out = torch.empty(B, H, S, D, dtype=torch.float32, device="cuda")
                name = f"b{B}h{H}s{S}d{D}{'_causal' if causal else ''}_{dt}"
                fl = flops(B, H, S, D, causal)
                row = {"shape": name, "flop": fl}
                kern = fast[(dt, D)]
                # correctness on the timed shape too
                o, probs = run_checked(kern, q, k, v, causal)
                row["rel_l2"] = rel_l2(o, ref64(q, k, v, causal))
                row["problems"] = probs
                if probs or row["rel_l2"] > BAR_FAST[dt]:
                    fail(f"timing-shape {name}: rel_l2 {row['rel_l2']:.3e} {probs}")
                row["ours"] = time_fn(lambda: kern(q, k, v, out, causal))
                for be in backends:
                    try:
                        row[be] = time_fn(sdpa_fn(q, k, v, causal, be))
                    except Exception as ex:  # noqa: BLE001
                        row[be] = {"error": f"{type(ex).__name__}: {str(ex)[:120]}"}
                # same kernel timed again after the others: run-to-run spread of the method
                row["ours_rep"] = time_fn(lambda: kern(q, k, v, out, causal))
                if dt == "f16":
                    for vn, vk in variants.items():
                        if f"_d{D}_" not in vn:
                            continue
                        row.setdefault("variants", {})[vn] = time_fn(
                            lambda vk=vk: vk(q, k, v, out, causal))
                results.append(row)
                us = row["ours"]["us"]
                log(f"  {name:28} ours {us:9.1f} us {fl / us / 1e6:7.1f} TF/s  " + "  ".join(
                    f"{be} {row[be]['us']:9.1f}" if "us" in row[be] else f"{be} n/a"
                    for be in backends))


def nvsmi():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,"
                               "clocks.max.sm,clocks.mem,power.draw,temperature.gpu",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except Exception as ex:  # noqa: BLE001
        return f"nvidia-smi failed: {ex}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--golden", default=None)
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--cubin-dir", default=None,
                    help="load FILE.cu.<arch>.cubin from here instead of compiling (from "
                         "bench/nvrtc_check.py --emit, e.g. built with another NVRTC)")
    ap.add_argument("--ptx-probe", default=None, metavar="PTX",
                    help="try to load this PTX file with the driver and report the result")
    ap.add_argument("--ada", action="store_true",
                    help="also check attention.cu built with -DCG_ADA_TILES (the sm_86/89 tiles)")
    ap.add_argument("--l4-occupancy", action="store_true",
                    help="launch the variants with extra dynamic shared memory so that each runs "
                         "as many CTAs per SM as it would on an L4 (sm_89 candidate sweep)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    info = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "torch": torch.__version__,
            "cupy": cp.__version__, "gpu": torch.cuda.get_device_name(),
            "nvidia_smi_start": nvsmi(), "nvrtc": nv.nvrtc_version(), "nvrtc_lib": nv._lib[1]}
    cc = torch.cuda.get_device_capability()
    # as the Rust side: compute capability 9.0 compiles for sm_90a (wgmma kernels)
    arch = f"sm_{cc[0]}{cc[1]}" + ("a" if tuple(cc) == (9, 0) else "")
    info["arch"] = arch
    log(json.dumps(info))

    if args.ptx_probe:
        try:
            m = cp.RawModule(path=args.ptx_probe)
            m.get_function("attention_fwd_f16_d64")
            info["ptx_probe"] = "loaded OK"
        except Exception as ex:  # noqa: BLE001
            info["ptx_probe"] = f"{type(ex).__name__}: {str(ex)[:200]}"
        log(f"PTX probe {args.ptx_probe}: {info['ptx_probe']}")
    cd = args.cubin_dir
    info["cubin_dir"] = cd
    amod = Module("attention.cu", arch, cubin_dir=cd)
    rmod = Module("reference.cu", arch, cubin_dir=cd)
    umod = Module("util.cu", arch, cubin_dir=cd)
    fast = {key: Attn(amod, name) for key, name in FAST.items()}
    ref = {dt: Attn(rmod, name) for dt, name in REF.items()}
    # The optional forms (kernels/README.md, "Small grids, long sequences"), checked on the
    # random cases whatever their grid: NAME_small, NAME_long, NAME_long_noncausal,
    # NAME_short_noncausal and NAME_causal where the module has them (the last also on grids
    # of one wave and of several, where its order of units differs from NAME's).
    forms = {sfx: {key: Attn(amod, f"{name}_{sfx}") for key, name in FAST.items()
                   if amod.has_symbol(f"{name}_{sfx}")}
             for sfx in ("small", "long", "long_noncausal", "short_noncausal",
                         "causal")}
    info["kernels"] = {a.name: {"launch": [a.rows, a.threads, a.smem], "ptxas": a.ptxas,
                                "tma": a.tma}
                       for a in list(fast.values()) + list(ref.values())
                       + [a for f in forms.values() for a in f.values()]}
    variants = {}
    if args.variants:
        vmod = Module("attention.cu", arch, ["-DCI_GATE_VARIANTS"])
        for vn in sorted(k for k in vmod.ptxas if k.startswith("attnv_")):
            variants[vn] = Attn(vmod, vn, l4_occupancy=args.l4_occupancy)
            info["kernels"][vn] = {"launch": [variants[vn].rows, variants[vn].threads,
                                              variants[vn].smem], "ptxas": variants[vn].ptxas}
            if args.l4_occupancy:
                info["kernels"][vn]["ctas_per_sm"] = variants[vn].ctas_per_sm
    fast_ada = None
    if args.ada:
        adamod = Module("attention.cu", arch, ["-DCG_ADA_TILES"])
        fast_ada = {key: Attn(adamod, name) for key, name in FAST.items()}
        # and the L4's optional forms (the d128 split-pipeline tile, NAME_long_noncausal;
        # NAME_causal)
        ada_forms = {key: Attn(adamod, f"{name}_long_noncausal") for key, name in FAST.items()
                     if adamod.has_symbol(f"{name}_long_noncausal")}
        ada_causal = {key: Attn(adamod, f"{name}_causal") for key, name in FAST.items()
                      if adamod.has_symbol(f"{name}_causal")}
        for a in (list(fast_ada.values()) + list(ada_forms.values())
                  + list(ada_causal.values())):
            info["kernels"]["ada:" + a.name] = {"launch": [a.rows, a.threads, a.smem],
                                                "ptxas": a.ptxas}
    for kn, kv in info["kernels"].items():
        log(f"  {kn:36} launch {kv['launch']}  ptxas {kv['ptxas']}"
            + (f"  CTAs/SM {kv['ctas_per_sm']}" if "ctas_per_sm" in kv else ""))

    results = []
    gdir = args.golden or next((d for d in (os.path.join(os.path.dirname(HERE), "tests", "golden"),
                                            os.path.join(os.path.dirname(HERE), "golden"))
                                  if os.path.isdir(d)), None)
    sections = [("golden", lambda: check_golden(gdir, fast, ref, results) if gdir else
                 log("no golden dir")),
                ("random", lambda: check_random(fast, ref, results)),
                ("random-small", lambda: check_random(forms["small"], ref, results, seed=99,
                                                      ref_kernel_too=False,
                                                      section="rand-small")),
                ("random-long", lambda: check_random(forms["long"], ref, results, seed=98,
                                                     ref_kernel_too=False,
                                                     section="rand-long")),
                ("random-long-noncausal", lambda: check_random(
                    forms["long_noncausal"], ref, results, seed=97, ref_kernel_too=False,
                    section="rand-long-noncausal")),
                ("random-short-noncausal", lambda: check_random(
                    forms["short_noncausal"], ref, results, seed=96, ref_kernel_too=False,
                    section="rand-short-noncausal")),
                ("random-causal", lambda: check_random(
                    forms["causal"], ref, results, seed=95, ref_kernel_too=False,
                    section="rand-causal", cases=random_cases() + by_cost_cases())),
                ("random-fill", lambda: check_fill_forms(
                    {"main": fast, "long": forms["long"],
                     "long-noncausal": forms["long_noncausal"]}, ref, results)),
                ("ref-any-d", lambda: check_ref_extra(ref, results)),
                ("util", lambda: check_util(umod, info))]
    if fast_ada:
        sections.append(("random-ada", lambda: check_random(
            fast_ada, ref, results, seed=4321, ref_kernel_too=False, section="rand-ada")))
        sections.append(("random-ada-fill", lambda: check_fill_grids(
            fast_ada, ref, results, seed=4330, section="rand-ada-fill")))
        sections.append(("random-ada-long-noncausal", lambda: check_random(
            ada_forms, ref, results, seed=4322, ref_kernel_too=False,
            section="rand-ada-long-noncausal")))
        sections.append(("random-ada-causal", lambda: check_random(
            ada_causal, ref, results, seed=4323, ref_kernel_too=False,
            section="rand-ada-causal", cases=random_cases() + by_cost_cases())))
    if variants:
        def vcheck():
            for vn, vk in variants.items():
                D = 64 if "_d64_" in vn else 128
                gen = torch.Generator(device="cuda").manual_seed(5)
                for S in (1, 7, 65, 257, 1000, 2049):
                    for causal in (False, True):
                        q, k, v = (torch.randn(2, 3, S, D, device="cuda", generator=gen)
                                   .half() for _ in range(3))
                        o, probs = run_checked(vk, q, k, v, causal)
                        e = rel_l2(o, ref64(q, k, v, causal))
                        ok = (not probs) and e <= BAR_FAST["f16"]
                        results.append({"section": "variant", "case": f"s{S}d{D}{'_causal' if causal else ''}",
                                        "kernel": vn, "rel_l2": e, "max_abs": None,
                                        "torch_rel_l2": None, "problems": probs, "ok": ok})
                        if not ok:
                            fail(f"variant {vn} S={S} causal={causal}: {e:.3e} {probs}")
        sections.append(("variants", vcheck))
    for sname, f in sections:
        t0 = time.time()
        try:
            f()
        except Exception:  # noqa: BLE001
            fail(f"section {sname} crashed:\n{traceback.format_exc()}")
        log(f"[{sname}] {time.time() - t0:.1f}s")

    # reference kernel speed on the biggest target shape
    try:
        B, H, S, D = 2, 16, 4096, 128
        q, k, v = (torch.randn(B, H, S, D, device="cuda").half() for _ in range(3))
        out = torch.empty(B, H, S, D, device="cuda")
        ref["f16"](q, k, v, out, False)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        ref["f16"](q, k, v, out, False)
        e.record()
        torch.cuda.synchronize()
        info["ref_ms_b2h16s4096d128"] = s.elapsed_time(e)
        log(f"reference kernel [2,16,4096,128] non-causal: {info['ref_ms_b2h16s4096d128']:.1f} ms")
    except Exception:  # noqa: BLE001
        fail(f"ref timing crashed:\n{traceback.format_exc()}")

    timings = []
    if not args.no_timing:
        backends = ["default", "flash", "cudnn"]
        t0 = time.time()
        try:
            timing(fast, variants, timings, backends)
        except Exception:  # noqa: BLE001
            fail(f"timing crashed:\n{traceback.format_exc()}")
        log(f"[timing] {time.time() - t0:.1f}s")
    info["nvidia_smi_end"] = nvsmi()

    if args.out:
        with open(args.out, "w") as f:
            json.dump({"info": info, "checks": results, "timing": timings, "fails": FAILS}, f,
                      indent=1)

    # ---------------- compact tables
    log("\n== correctness (rel L2 vs float64; torch = PyTorch's own kernel on the same inputs)")
    by = {}
    for r in results:
        key = (r["section"], r["kernel"])
        by.setdefault(key, []).append(r)
    for (sec, kn), rs in by.items():
        worst = max(rs, key=lambda r: r["rel_l2"] if math.isfinite(r["rel_l2"]) else 1e9)
        tw = [r["torch_rel_l2"] for r in rs if r["torch_rel_l2"] is not None]
        log(f"{sec:9} {kn:36} n={len(rs):3} ok={sum(r['ok'] for r in rs):3}  worst "
            f"{worst['rel_l2']:.2e} ({worst['case']})  median {statistics.median(r['rel_l2'] for r in rs):.2e}"
            + (f"  torch median {statistics.median(tw):.2e}" if tw else ""))
    for r in results:
        if r["section"] == "golden":
            log(f"  golden {r['case']:28} {r['kernel']:26} rel_l2 {r['rel_l2']:.3e} "
                f"max_abs {r['max_abs']:.2e} (torch {r['torch_rel_l2']:.2e}) {'ok' if r['ok'] else 'FAIL'}")
    if timings:
        log("\n== timing: median us per launch (CUDA graph replays), TFLOP/s")
        log(f"{'shape':28} {'ours':>9} {'again':>9} {'TF/s':>6} {'default':>9} {'flash':>9} "
            f"{'cudnn':>9} {'flash/ours':>10}")
        for t in timings:
            def us(x):
                return t[x]["us"] if x in t and "us" in t[x] else float("nan")
            o = us("ours")
            log(f"{t['shape']:28} {o:9.1f} {us('ours_rep'):9.1f} {t['flop'] / o / 1e6:6.1f} {us('default'):9.1f} "
                f"{us('flash'):9.1f} {us('cudnn'):9.1f} {us('flash') / o:10.2f}")
        if any("variants" in t for t in timings):
            log("\n== variants (fp16): us per launch")
            vnames = sorted({vn for t in timings for vn in t.get("variants", {})})
            for vn in vnames:
                cells = [f"{t['shape'].replace('_f16', '')}:{t['variants'][vn]['us']:.1f}"
                         for t in timings if vn in t.get("variants", {})]
                log(f"{vn:34} " + " ".join(cells))
            log("shipped                            " + " ".join(
                f"{t['shape'].replace('_f16', '')}:{t['ours']['us']:.1f}" for t in timings
                if t["shape"].endswith("_f16")))
    log(f"\n{'ALL CHECKS PASSED' if not FAILS else str(len(FAILS)) + ' FAILURE(S)'}")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
