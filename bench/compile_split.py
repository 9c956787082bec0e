#!/usr/bin/env python3
"""How long NVRTC takes to compile kernels/attention.cu for sm_90a whole, and with only some of
its Hopper entries (CPU only, no GPU; NVRTC on the loader path or NVRTC_LIB).

Why: a pull request's cold run spends most of its setup compiling attention.cu (2026-12-04,
twenty-first session: 15.9 s of a 53.8 s verdict on an H200 host, docs/PERF.md), and one
NVRTC program runs on one core. Compiled as several programs at once, each holding part of the
entries, the setup would take about as long as the slowest part. This measures the parts: the
sm_90a block of entries (`CG_ATTN_WS_KERNEL*` invocations) is cut down to those whose name
holds a given string, the rest of the source unchanged, and each cut compiled as a CUBIN with
the gate's options (src/kernel/compile.rs), one after another.

  python3 bench/compile_split.py [--part _d64 --part _d128 ...]
  python3 bench/compile_split.py --threads 1 2 4 8 16   # the whole file, --split-compile=N

With --threads it compiles the whole file once per N, with NVRTC's `--split-compile=N` (N = 1:
without it), which is what the gate does from NVRTC 13 (src/kernel/compile.rs,
MAX_COMPILE_THREADS), and prints the wall time, the CPU time and the peak address space of
this process (the sandboxed child's limit is 8 GiB).
"""
import argparse
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nvrtc_check  # noqa: E402

OPTIONS = ["--std=c++17", "--ptxas-options=-v"]  # src/kernel/compile.rs
BLOCK_START = "#if defined(CG_HAVE_WGMMA) && !defined(CG_ADA_TILES)"
BLOCK_END = "#else\n// Everything else (the L4, plain sm_90, Ampere)"


def entries(block):
    """(start, end) of every CG_ATTN_WS_KERNEL* invocation in `block`, parentheses matched."""
    out = []
    for m in re.finditer(r"^CG_ATTN_WS_KERNEL\w*\(", block, re.M):
        depth = 0
        for q in range(m.end() - 1, len(block)):
            depth += {"(": 1, ")": -1}.get(block[q], 0)
            if depth == 0:
                out.append((m.start(), q + 1))
                break
    return out


def cut(src, keep):
    """`src` with only the sm_90a entries whose text contains `keep` (all for None), and how
    many it kept."""
    i = src.rindex(BLOCK_START)
    j = src.index(BLOCK_END, i)
    block, parts, last, kept = src[i:j], [], 0, 0
    for a, b in entries(block):
        parts.append(block[last:a])
        if keep is None or keep in block[a:b]:
            parts.append(block[a:b])
            kept += 1
        last = b
    parts.append(block[last:])
    return src[:i] + "".join(parts) + src[j:], kept


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kdir", default=os.path.join(os.path.dirname(HERE), "kernels"))
    ap.add_argument("--part", action="append",
                    help="a string an entry's name holds (default: _d64, _d128, f16_d64, "
                         "bf16_d64, f16_d128, bf16_d128)")
    ap.add_argument("--threads", type=int, nargs="+",
                    help="compile the whole file with --split-compile=N for each N instead")
    ap.add_argument("--arch", default="sm_90a")
    args = ap.parse_args()
    src = open(os.path.join(args.kdir, "attention.cu")).read()
    if args.threads:
        return threads(src, args.arch, args.threads)
    parts = args.part or ["_d64", "_d128", "_f16_d64", "_bf16_d64", "_f16_d128", "_bf16_d128"]
    for keep in [None] + parts:
        text, n = cut(src, keep)
        t = time.time()
        ok, _, log = nvrtc_check.compile_cu(text, "sm_90a", OPTIONS, "attention.cu")
        if not ok:
            print(log[-2000:], file=sys.stderr)
            return 1
        print(f"{keep or 'all':12} {n:3} entries  {time.time() - t:6.1f} s", flush=True)
    return 0


def vm_peak_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmPeak:"):
            return int(line.split()[1])
    return 0


def threads(src, arch, counts):
    """The whole file on N threads for each N in `counts`."""
    import resource
    for n in counts:
        extra = [f"--split-compile={n}"] if n > 1 else []
        t, r0 = time.time(), resource.getrusage(resource.RUSAGE_SELF)
        ok, _, log = nvrtc_check.compile_cu(src, arch, OPTIONS + extra, "attention.cu")
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        if not ok:
            print(log[-2000:], file=sys.stderr)
            return 1
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        print(f"{arch} threads {n:3}  {time.time() - t:6.1f} s  cpu {cpu:6.1f} s  "
              f"VmPeak {vm_peak_kb() / 1024:7.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
