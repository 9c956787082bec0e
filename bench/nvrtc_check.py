#!/usr/bin/env python3
"""Compile every kernels/*.cu with NVRTC (through ctypes) for sm_89, sm_90 and sm_90a and print
per-kernel registers / shared memory / stack / spills from ptxas (--ptxas-options=-v).

Needs only libnvrtc (e.g. `pip install nvidia-cuda-nvrtc`); no GPU, no CUDA headers.
Exits non-zero on any compile error, any '#include' in a kernel source, a missing
NAME_launch constant, or any spill / stack frame in the shipped attention kernels.

  python3 bench/nvrtc_check.py [--arch sm_89 --arch sm_90 --arch sm_90a] [--variants] [--lib PATH]

Also importable: compile_cu(src, arch, extra_opts) -> (cubin_bytes, log).
"""
import argparse
import ctypes
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KDIR = os.path.join(os.path.dirname(HERE), "kernels")
SOURCES = ["attention.cu", "reference.cu", "util.cu"]
ATTN_ABI = [
    "attention_fwd_f16_d64", "attention_fwd_f16_d128",
    "attention_fwd_bf16_d64", "attention_fwd_bf16_d128",
    "attention_ref_f16", "attention_ref_bf16",
]
UTIL_KERNELS = ["fill_input_f16", "fill_input_bf16", "fill_u32", "spin_cycles"]

_lib = None


def find_nvrtc(explicit=None):
    cands = []
    if explicit:
        cands.append(explicit)
    if os.environ.get("NVRTC_LIB"):
        cands.append(os.environ["NVRTC_LIB"])
    try:
        import nvidia  # namespace package of the pip wheels
        for p in nvidia.__path__:
            cands += sorted(glob.glob(os.path.join(p, "**", "libnvrtc.so*"), recursive=True),
                            reverse=True)
    except ImportError:
        pass
    for root in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        if root:
            cands += sorted(glob.glob(os.path.join(root, "lib64", "libnvrtc.so*")), reverse=True)
    cands += ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for c in cands:
        if "builtins" in os.path.basename(c) or c.endswith(".alt.so"):
            continue
        try:
            return ctypes.CDLL(c), c
        except OSError:
            continue
    raise SystemExit("libnvrtc not found (pip install nvidia-cuda-nvrtc, or set NVRTC_LIB)")


def lib(explicit=None):
    global _lib
    if _lib is None:
        _lib = find_nvrtc(explicit)
        l = _lib[0]
        l.nvrtcGetErrorString.restype = ctypes.c_char_p
    return _lib[0]


def nvrtc_version():
    maj, mnr = ctypes.c_int(), ctypes.c_int()
    lib().nvrtcVersion(ctypes.byref(maj), ctypes.byref(mnr))
    return f"{maj.value}.{mnr.value}"


def compile_cu(src, arch="sm_90", extra_opts=(), name="kernel.cu"):
    """Compile CUDA source text to a cubin. Returns (ok, cubin_bytes_or_None, log)."""
    L = lib()
    prog = ctypes.c_void_p()
    r = L.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None)
    if r != 0:
        return False, None, "nvrtcCreateProgram: " + L.nvrtcGetErrorString(r).decode()
    opts = [f"--gpu-architecture={arch}", "--ptxas-options=-v"] + list(extra_opts)
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = L.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    L.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value + 1)
    L.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    cubin = None
    if rc == 0:
        sz = ctypes.c_size_t()
        if L.nvrtcGetCUBINSize(prog, ctypes.byref(sz)) == 0 and sz.value:
            b = ctypes.create_string_buffer(sz.value)
            L.nvrtcGetCUBIN(prog, b)
            cubin = b.raw
        else:
            log += "\n(no CUBIN produced)"
            rc = -1
    else:
        log = "nvrtcCompileProgram: " + L.nvrtcGetErrorString(rc).decode() + "\n" + log
    L.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc == 0, cubin, log


def compile_ptx(src, arch="compute_90", extra_opts=(), name="kernel.cu"):
    """Compile CUDA source text to PTX (virtual arch). Returns (ok, ptx_text_or_None, log)."""
    L = lib()
    prog = ctypes.c_void_p()
    r = L.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None)
    if r != 0:
        return False, None, "nvrtcCreateProgram: " + L.nvrtcGetErrorString(r).decode()
    opts = [f"--gpu-architecture={arch}"] + list(extra_opts)
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = L.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    L.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value + 1)
    L.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    ptx = None
    if rc == 0:
        sz = ctypes.c_size_t()
        L.nvrtcGetPTXSize(prog, ctypes.byref(sz))
        b = ctypes.create_string_buffer(sz.value)
        L.nvrtcGetPTX(prog, b)
        ptx = b.value.decode()
    L.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc == 0, ptx, log


_FN = re.compile(r"Compiling entry function '([^']+)'")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(.*)")


def parse_ptxas(log):
    """-> {kernel: {regs, smem, cmem0, stack, spill_st, spill_ld}}"""
    res, cur = {}, None
    for line in log.splitlines():
        m = _FN.search(line)
        if m:
            cur = m.group(1)
            res[cur] = {"regs": None, "smem": 0, "stack": 0, "spill_st": 0, "spill_ld": 0}
            continue
        if cur is None:
            continue
        m = _STACK.search(line)
        if m:
            res[cur].update(stack=int(m.group(1)), spill_st=int(m.group(2)),
                            spill_ld=int(m.group(3)))
        m = _USED.search(line)
        if m:
            res[cur]["regs"] = int(m.group(1))
            sm = re.search(r"(\d+) bytes smem", m.group(2))
            if sm:
                res[cur]["smem"] = int(sm.group(1))
    return res


def elf_symbols(cubin):
    """{name: bytes} for every sized data symbol of an ELF64 cubin (e.g. the __constant__
    NAME_launch arrays), read straight from the section that holds it."""
    import struct
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        return {}
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    out = {}
    for (_, stype, _, _, off, size, link, _, _, entsize) in secs:
        if stype != 2:  # SHT_SYMTAB
            continue
        stroff = secs[link][4]
        for j in range(size // entsize):
            name_i, info, _, shndx, value, ssize = struct.unpack_from("<IBBHQQ", cubin, off + j * entsize)
            if ssize == 0 or shndx == 0 or shndx >= shnum or (info & 0xF) != 1:  # STT_OBJECT
                continue
            end = cubin.index(b"\0", stroff + name_i)
            name = cubin[stroff + name_i:end].decode()
            sec = secs[shndx]
            if sec[1] == 8:  # SHT_NOBITS: no initial data
                continue
            out[name] = cubin[sec[4] + value: sec[4] + value + ssize]
    return out


def launch_constants(cubin):
    """NAME -> (rows, threads, dyn_smem) from the NAME_launch constants in a cubin."""
    import struct
    res = {}
    for name, data in elf_symbols(cubin).items():
        if name.endswith("_launch") and len(data) == 12:
            res[name[:-len("_launch")]] = struct.unpack("<3i", data)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--arch", action="append", help="default: sm_89, sm_90 and sm_90a (the Hopper wgmma kernels)")
    ap.add_argument("--variants", action="store_true", help="also build -DCI_GATE_VARIANTS")
    ap.add_argument("--std", default=None, help="extra -std=... (e.g. c++11) to test dialects")
    ap.add_argument("--lib", default=None, help="path to libnvrtc.so")
    ap.add_argument("--kdir", default=KDIR)
    ap.add_argument("--emit", default=None, metavar="DIR",
                    help="write FILE.cu.<arch>.cubin per arch and FILE.cu.compute_90.ptx to DIR")
    args = ap.parse_args()
    archs = args.arch or ["sm_89", "sm_90", "sm_90a"]
    lib(args.lib)
    print(f"NVRTC {nvrtc_version()} from {_lib[1]}")
    errors = 0
    rows = []
    for fn in SOURCES:
        path = os.path.join(args.kdir, fn)
        src = open(path).read()
        if re.search(r"^\s*#\s*include", src, re.M):
            print(f"ERROR {fn}: contains #include")
            errors += 1
        extra_sets = [[]]
        if args.variants and fn == "attention.cu":
            extra_sets.append(["-DCI_GATE_VARIANTS"])
        for arch in archs:
            for extra in extra_sets:
                opts = list(extra) + ([f"-std={args.std}"] if args.std else [])
                ok, cubin, log = compile_cu(src, arch, opts, fn)
                tag = f"{fn} {arch} {' '.join(opts)}".strip()
                if not ok:
                    print(f"ERROR compiling {tag}:\n{log}")
                    errors += 1
                    continue
                warn = [l for l in log.splitlines() if "warning" in l.lower()]
                for w in warn:
                    print(f"WARNING {tag}: {w}")
                info = parse_ptxas(log)
                consts = launch_constants(cubin)
                if args.emit and not opts:
                    os.makedirs(args.emit, exist_ok=True)
                    with open(os.path.join(args.emit, f"{fn}.{arch}.cubin"), "wb") as f:
                        f.write(cubin)
                for kname in sorted(info):
                    if extra and not kname.startswith("attnv_"):
                        continue  # variants build: only report the variants
                    r = info[kname]
                    c = consts.get(kname)
                    rows.append((arch, kname, r, "{%d, %d, %d}" % c if c else "-", len(cubin)))
                    shipped = kname.startswith("attention_fwd_")
                    if shipped and (r["spill_st"] or r["spill_ld"] or r["stack"]):
                        print(f"ERROR {arch} {kname}: stack {r['stack']} B, spills "
                              f"{r['spill_st']}/{r['spill_ld']} B")
                        errors += 1
                expected = (ATTN_ABI + UTIL_KERNELS)
                for kname in expected:
                    in_file = (fn == "attention.cu" and kname.startswith("attention_fwd")) or \
                              (fn == "reference.cu" and kname.startswith("attention_ref")) or \
                              (fn == "util.cu" and kname in UTIL_KERNELS)
                    if in_file and not extra and kname not in info:
                        print(f"ERROR {arch}: kernel {kname} missing from {fn}")
                        errors += 1
                    if in_file and not extra and kname in ATTN_ABI and kname not in consts:
                        print(f"ERROR {arch}: {kname}_launch constant missing from the {fn} cubin")
                        errors += 1
                # dynamic shared memory per block: 99 KiB on sm_86/89/120 (the L4), 227 KiB on
                # sm_80/90 (A100, H100, H200)
                smem_max = 99 * 1024 if arch in ("sm_86", "sm_89", "sm_120") else 227 * 1024
                for kname, (rows_, thr, smem) in consts.items():
                    if kname in info and (thr > 1024 or smem > smem_max or rows_ < 1):
                        print(f"ERROR {arch}: {kname}_launch = {{{rows_}, {thr}, {smem}}} out of range "
                              f"(threads <= 1024, dyn smem <= {smem_max // 1024} KiB for {arch})")
                        errors += 1
    if args.emit:
        for fn in SOURCES:
            ok, ptx, log = compile_ptx(open(os.path.join(args.kdir, fn)).read(), "compute_90")
            if ok:
                with open(os.path.join(args.emit, f"{fn}.compute_90.ptx"), "w") as f:
                    f.write(ptx)
            else:
                print(f"ERROR compiling {fn} to PTX:\n{log}")
                errors += 1
        print(f"wrote cubins/PTX to {args.emit}")
    print()
    print(f"{'arch':6} {'kernel':34} {'regs':>4} {'smem(static)':>12} {'stack':>5} "
          f"{'spill st/ld':>11}  launch{{rows,threads,dyn_smem}}")
    for arch, k, r, c, _ in rows:
        print(f"{arch:6} {k:34} {r['regs'] if r['regs'] is not None else '?':>4} {r['smem']:>12} "
              f"{r['stack']:>5} {str(r['spill_st']) + '/' + str(r['spill_ld']):>11}  {c}")
    print()
    print("OK" if errors == 0 else f"{errors} ERROR(S)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
