#!/usr/bin/env python3
"""The L4 path and FlashAttention-2 on as many SMs as an L4 has (issue 40, item 2; needs a CUDA
GPU with green contexts, CUDA 12.4+, torch, cupy).

Why: the proxy (the L4's code path, `-DCG_ADA_TILES`, on an H100/H200) gives both kernels the
occupancy an L4 gives them but 2.3x its SMs (132 against 58), so a short grid's last wave and
the host's grid-dependent form choices differ from the L4's. A green context (a driver-level
partition of the SMs for one process's streams; it changes no mode, clock or power setting of
the card) runs a stream's work on --sms SMs only. Each kernel is timed twice per shape, on
the whole GPU and inside the partition, with bench/sdpa_bench.py's method (CUDA graphs of
about --replay-ms, --samples replays at --duty, the median per call; the graph replayed on
the timed stream):

  ours        the L4 path's entry as the host picks it for the SM count it runs on (NAME_small
              where NAME's grid has fewer CTAs than SMs or, non-causal d64, where its busiest
              SM costs less than NAME's, NAME_long_noncausal for non-causal
              d128 from NAME_long_noncausal_from to its _to where its busiest SM costs less), launched
              as bench/kernel_check.py launches it, on the grid the host gives it for that SM
              count (one tile a CTA, or for a d64 NAME with NAME_fill the tiles a CTA of
              src/gpu/device.rs launch_grid_x, NAME_fill_or_one included: `*_tiles_per_cta`);
  flash       PyTorch's FA2 (sdpa_kernel(FLASH_ATTENTION));
  t0, t1      with --lib: FA2's own build (bench/fa2/build.sh) at its sm_80/sm_90 tile and at
              the tile it runs on an L4 (d128; at d64 one tile, t0).

First a check that the partition holds: an 8192^3 fp16 matrix product inside it must take
clearly longer than on the whole GPU, at least a quarter of the way from x1 to (all SMs /
--sms) (a partition that does not hold stops the script: exit 2). Outputs are checked
against PyTorch's SDPA in fp32 (max |diff| <= 2e-2 fp16, 6e-2 bf16) before a kernel is timed.

  python3 bench/l4_sms.py configs/pr-ada.yaml [MORE.yaml ...] --sms 56 \\
      [--lib .carry/fa2/libfa2_tiles.so] [--kdir kernels] --out F.json
"""
import argparse
import ctypes
import json
import math
import os
import sys

import cupy as cp
import torch
import torch.nn.functional as F
import yaml
from torch.nn.attention import SDPBackend, sdpa_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_check as kc  # noqa: E402
from fa2_tiles import fa2_call, flash_call, load_fa2  # noqa: E402
from sdpa_bench import DTYPES, measure, shape_name  # noqa: E402
from grid_rule import cost_of_grid, launch_grid_x  # noqa: E402

TOL = {torch.float16: 2e-2, torch.bfloat16: 6e-2}
CU_DEV_RESOURCE_TYPE_SM = 1
CU_GREEN_CTX_DEFAULT_STREAM = 1
CU_STREAM_NON_BLOCKING = 1
RESOURCE_BYTES = 1024  # more than sizeof(CUdevResource) in any CUDA 12.4 ... 13.x header
SM_COUNT_OFFSET = 96   # CUdevResource: type (4 bytes), 92 bytes of padding, then sm.smCount


class GreenPartition:
    """A green context of at least `sms` SMs and a stream in it (driver API through ctypes)."""

    def __init__(self, sms):
        cu = ctypes.CDLL("libcuda.so.1")
        self.cu = cu

        def call(name, *args):
            rc = getattr(cu, name)(*args)
            if rc != 0:
                raise RuntimeError(f"{name} failed: CUresult {rc}")

        call("cuInit", 0)
        dev = ctypes.c_int()
        call("cuDeviceGet", ctypes.byref(dev), torch.cuda.current_device())
        whole = ctypes.create_string_buffer(RESOURCE_BYTES)
        call("cuDeviceGetDevResource", dev, whole, CU_DEV_RESOURCE_TYPE_SM)
        self.device_sms = int.from_bytes(whole.raw[SM_COUNT_OFFSET:SM_COUNT_OFFSET + 4], "little")
        part = ctypes.create_string_buffer(RESOURCE_BYTES)
        rest = ctypes.create_string_buffer(RESOURCE_BYTES)
        groups = ctypes.c_uint(1)
        call("cuDevSmResourceSplitByCount", part, ctypes.byref(groups), whole, rest, 0, sms)
        if groups.value != 1:
            raise RuntimeError(f"cuDevSmResourceSplitByCount gave {groups.value} groups")
        self.sms = int.from_bytes(part.raw[SM_COUNT_OFFSET:SM_COUNT_OFFSET + 4], "little")
        desc = ctypes.c_void_p()
        call("cuDevResourceGenerateDesc", ctypes.byref(desc), part, 1)
        self.ctx = ctypes.c_void_p()
        call("cuGreenCtxCreate", ctypes.byref(self.ctx), desc, dev, CU_GREEN_CTX_DEFAULT_STREAM)
        handle = ctypes.c_void_p()
        call("cuGreenCtxStreamCreate", ctypes.byref(handle), self.ctx, CU_STREAM_NON_BLOCKING, 0)
        self.stream = torch.cuda.ExternalStream(handle.value)


def fill_of(mod, name):
    """(NAME_fill as a tuple or None, NAME_fill_or_one) of an entry."""
    fill = tuple(mod.int_const(name + "_fill", 2)) if mod.has_symbol(name + "_fill") else None
    or_one = (mod.has_symbol(name + "_fill_or_one")
              and mod.int_const(name + "_fill_or_one", 1)[0] == 1)
    return fill, or_one


def d64_form_costs(B, H, S, sms, rows=128, x=None):
    """The host's busiest-SM cost (src/gpu/device.rs `cost_of_grid`, a pass costing its rows
    plus NAME's) of the L4 path's d64 NAME (`rows` rows, two CTAs a SM, on its launched grid
    of x CTAs a head: one tile a CTA where None) and NAME_small (64 rows, three a SM, one
    tile a CTA) on `sms` SMs: (NAME's, NAME_small's)."""
    main = cost_of_grid(B, H, S, rows, 2, x or math.ceil(S / rows), rows, sms)
    return main, cost_of_grid(B, H, S, 64, 3, math.ceil(S / 64), rows, sms)


def pick_entry(mod, D, dtype, B, H, S, causal, sms):
    """The L4 path's entry the host would launch on `sms` SMs and its tiles a CTA
    (src/gpu/device.rs pick_form and launch_grid_x, the mma.sync forms: no NAME_long, no
    NAME_short_noncausal; NAME_fill on the d64 NAME only, two CTAs a SM)."""
    name = f"attention_fwd_{'bf16' if dtype == torch.bfloat16 else 'f16'}_d{D}"
    rows = mod.launch_const(name)[0]
    tiles = math.ceil(S / rows)
    ctas = tiles * B * H
    fill, or_one = fill_of(mod, name)
    x = launch_grid_x(B, H, S, causal, rows, 2, fill, or_one, sms) if D == 64 else tiles
    main = (name, math.ceil(tiles / x))
    if mod.has_symbol(name + "_small") and ctas < sms:
        return name + "_small", 1
    # NAME_causal: every causal launch on NAME. Its kernel tells a grid of one wave from
    # several by %nsmid, the card's SM count, not the green context's: in a partition it pairs
    # by the card's (a tree built with a fixed count, bench/issue40_device.sh's k56, pairs as on
    # an L4).
    if causal and mod.has_symbol(name + "_causal"):
        return name + "_causal", 1
    # NAME_small for a non-causal grid whose busiest SM it makes cheaper (since 2026-12-06,
    # fortieth session)
    if not causal and mod.has_symbol(name + "_small") and rows > 64:
        main_cost, small_cost = d64_form_costs(B, H, S, sms, rows, x)
        if small_cost < main_cost:
            return name + "_small", 1
    lnc = name + "_long_noncausal"
    if not causal and mod.has_symbol(lnc):
        def const(sym):
            return int(cp.ndarray((1,), cp.int32, mod.mod.get_global(sym)).get()[0])
        from_len = const(lnc + "_from")
        to_len = const(lnc + "_to") if mod.has_symbol(lnc + "_to") else S
        # NAME_long_noncausal (two 4-warp CTAs per SM) against NAME (one 8-warp CTA) by the
        # host's busiest-SM cost (device.rs pick_form, for these two geometries: one tile a
        # CTA, a pass costing its rows plus NAME's; never where the split form's last round is
        # not full, c odd above 1): c = CTAs on the busiest SM; a tie keeps NAME (c = 1)
        c = math.ceil(math.ceil(S / rows) * B * H / sms)
        main_cost = c * 2 * rows
        lnc_cost = (c // 2) * 3 * rows + (c % 2) * 2 * rows
        last_alone = c > 2 and c % 2
        if from_len <= S <= to_len and not last_alone and lnc_cost < main_cost:
            return lnc, 1
    return main


def timed(fn, stream, args):
    """sdpa_bench's median µs per call of fn, its graphs captured and replayed on `stream`."""
    with torch.cuda.stream(stream):
        return measure(fn, args.replay_ms, args.samples, args.duty, stream=stream)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--sms", type=int, default=56, help="SMs of the partition (an L4 has 58)")
    ap.add_argument("--lib", default=None, help="libfa2_tiles.so from bench/fa2/build.sh")
    ap.add_argument("--kdir", default=os.path.join(os.path.dirname(HERE), "kernels"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--replay-ms", type=float, default=2.0)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--duty", type=float, default=0.25)
    args = ap.parse_args()
    torch.zeros(1, device="cuda")  # the primary context first (cuGreenCtxCreate retains it)
    part = GreenPartition(args.sms)
    whole = torch.cuda.Stream()  # graphs capture on a non-default stream
    print(f"green context: {part.sms} of {part.device_sms} SMs", flush=True)
    a, b = (torch.randn(8192, 8192, device="cuda", dtype=torch.float16) for _ in range(2))
    mm = {k: timed(lambda: a @ b, s, args) for k, s in (("whole", whole), ("part", part.stream))}
    expect = part.device_sms / part.sms
    print(f"8192^3 fp16: whole {mm['whole']:.1f} µs, partition {mm['part']:.1f} µs "
          f"(x{mm['part'] / mm['whole']:.2f}, expected about x{expect:.2f})", flush=True)
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
           "sms": {"partition": part.sms, "device": part.device_sms}, "matmul_us": mm,
           "method": {"replay_ms": args.replay_ms, "samples": args.samples, "duty": args.duty},
           "shapes": []}
    # Not the full ratio: the whole GPU runs the product at lower clocks (power), and cuBLAS
    # sizes its grid for every SM. A partition that does not hold reads x1.00 (a graph
    # captured off the partition's stream, 2026-12-04); one that holds read x1.78 at 56 SMs.
    if mm["part"] / mm["whole"] < 1 + (expect - 1) / 4:
        print("the partition does not hold: no timing", flush=True)
        json.dump(res, open(args.out, "w"), indent=1)
        return 2
    lib = load_fa2(args.lib) if args.lib else None
    cc = torch.cuda.get_device_capability()
    arch = f"sm_{cc[0]}{cc[1]}" + ("a" if tuple(cc) == (9, 0) else "")
    kc.KDIR = os.path.abspath(args.kdir)
    mod = kc.Module("attention.cu", arch, ["-DCG_ADA_TILES"])
    torch.manual_seed(0)
    for path in args.configs:
        for s in yaml.safe_load(open(path)).get("shapes") or []:
            B, H, S, D = (int(s[k]) for k in ("batch", "heads", "seq_len", "head_dim"))
            causal = bool(s.get("causal", False))
            dt = DTYPES[str(s["dtype"])]
            q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dt) for _ in range(3))
            with sdpa_kernel(SDPBackend.MATH):
                ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                     is_causal=causal)
            out32 = torch.empty(B, H, S, D, device="cuda", dtype=torch.float32)
            o = torch.empty_like(q)
            lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
            row = {"name": shape_name(s)}

            flash = flash_call(q, k, v, causal)
            for where, stream, sms in (("whole", whole, part.device_sms),
                                       ("part", part.stream, part.sms)):
                entry, per_cta = pick_entry(mod, D, dt, B, H, S, causal, sms)
                attn = kc.Attn(mod, entry)
                kernels = {"ours": lambda attn=attn, t=per_cta: attn(q, k, v, out32, causal,
                                                                     tiles_per_cta=t),
                           "flash": flash}
                if lib is not None:
                    for tile in (0, 1) if D == 128 else (0,):
                        kernels[f"t{tile}"] = fa2_call(lib, tile, causal, q, k, v, o, lse)
                row[f"{where}_entry"] = entry
                row[f"{where}_tiles_per_cta"] = per_cta
                for kname, fn in kernels.items():
                    with torch.cuda.stream(stream):
                        got = fn()
                    torch.cuda.synchronize()
                    got = out32 if kname == "ours" else (got if kname == "flash" else o)
                    err = float((got.float() - ref).abs().max())
                    key = f"{where}_{kname}"
                    row[key + "_maxdiff"] = err
                    if not err <= TOL[dt]:
                        print(f"{row['name']}: {key} differs from SDPA by {err:.3g}: not timed")
                        continue
                    row[key + "_us"] = timed(fn, stream, args)
            res["shapes"].append(row)
            cells = []
            for where in ("whole", "part"):
                ours = row.get(f"{where}_ours_us")
                for kname in ("flash", "t0", "t1"):
                    other = row.get(f"{where}_{kname}_us")
                    if ours and other:
                        cells.append(f"{where} /{kname} {ours / other:.2f}")
            print(f"{row['name']:28} ours whole {row.get('whole_ours_us', 0):8.2f} part "
                  f"{row.get('part_ours_us', 0):8.2f} µs  " + "  ".join(cells), flush=True)
            json.dump(res, open(args.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
