#!/usr/bin/env python3
"""Per-kernel resources and instruction counts of kernels/attention.cu, compiled with NVRTC
exactly as the gate compiles it (src/gpu/compile.rs: `--gpu-architecture=<target>
--std=c++17 --ptxas-options=-v`), for sm_89, sm_90 and sm_90a; no GPU needed.

For every kernel function of the cubin it reports:
  * registers, stack frame, spill stores / loads (bytes) and static shared memory, from
    ptxas' own report (`--ptxas-options=-v`, printed into the NVRTC program log);
  * registers, stack frame and static shared memory again from the cubin's ELF
    (EIATTR_REGCOUNT and EIATTR_FRAME_SIZE in `.nv.info`, the size of `.nv.shared.<fn>`,
    which on sm_90 also holds the 1 KiB the hardware reserves), checked against ptxas;
  * the dynamic shared memory from the kernel's NAME_launch constant;
  * the number of SASS instructions (`.text.<fn>` size / 16 bytes), a hash of the SASS bytes
    and, with nvdisasm on hand (pip install nvidia-cuda-nvdisasm), the SASS opcode histogram;
  * the PTX instructions by opcode (nvrtcGetPTX of the same compilation).
With --order, for each wgmma kernel whether the softmax of a step runs before the wait for the
previous P V or after it (ptxas decides, whatever the source's order: docs/KERNEL.md).
With --base-kdir, also whether the whole attention.cu cubin and PTX of each architecture are
byte-identical between the two trees. A WARNING (and exit 1) for every function whose wgmma's
ptxas serialised (its C7510-C7515 "Potential Performance Loss" notes: every wgmma waited for
before the next; on an H200 that made the kernels 14-48% slower, 2026-12-03). Whether ptxas
does so changes between versions (NVRTC 13.0 and 13.5 disagreed on the same source): check
with the device's version too (--lib, e.g. from pip install "nvidia-cuda-nvrtc==13.0.*").
With the SASS, also a WARNING (and exit 1) for every function with a WARPSYNC.COLLECTIVE ...
ENDCOLLECTIVE sequence: a warp-synchronous instruction behind a branch on a value ptxas cannot
prove warp-uniform (the short d64 form with its unit index taken from the warp number: 20 of
them, about 5% slower on an H100 than the form mended, 2026-12-07). --require-sass exits 2 where nvdisasm is missing or
gives no SASS of some function (CI: pip install "nvidia-cuda-nvdisasm==13.5.37").

The cubin compiled with `--ptxas-options=-v` is checked to match the one the gate's options
alone give in every ELF section but the tool-info note, which records the options (-v only
reports).

  python3 bench/kernel_resources.py [--kdir kernels] [--arch sm_89 ...] [-D NAME ...]
      [--json OUT.json]                       # one source tree
  python3 bench/kernel_resources.py --base-kdir .carry/kernels-prerefactor --kdir kernels
      [--json OUT.json] [--opcodes]           # before / after, side by side, with the
                                              # differences; exit 1 if any resource differs

The base tree comes from git, e.g. the kernels before the shared helpers (issue 20):
  mkdir -p .carry/kernels-prerefactor && git archive 1ebfa78:kernels | tar -x -C .carry/kernels-prerefactor

Needs libnvrtc (pip install nvidia-cuda-nvrtc==13.5.37; found as bench/nvrtc_check.py finds
it, or NVRTC_LIB=/path/libnvrtc.so.13).
"""
import argparse
import collections
import ctypes
import glob
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nvrtc_check as nc  # noqa: E402  (the project's NVRTC-through-ctypes helpers)

GATE_OPTIONS = ["--std=c++17", "--ptxas-options=-v"]  # src/gpu/compile.rs OPTIONS, after --gpu-architecture
ARCHS = ["sm_89", "sm_90", "sm_90a"]


def compile_full(src, arch, opts, name="attention.cu"):
    """-> (cubin, ptx, log) for one compilation with the given options (raises on error)."""
    L = nc.lib()
    prog = ctypes.c_void_p()
    r = L.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None)
    if r != 0:
        raise RuntimeError("nvrtcCreateProgram: " + L.nvrtcGetErrorString(r).decode())
    allo = [f"--gpu-architecture={arch}"] + list(opts)
    arr = (ctypes.c_char_p * len(allo))(*[o.encode() for o in allo])
    rc = L.nvrtcCompileProgram(prog, len(allo), arr)
    n = ctypes.c_size_t()
    L.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value + 1)
    L.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    if rc != 0:
        L.nvrtcDestroyProgram(ctypes.byref(prog))
        raise RuntimeError(f"{name} {' '.join(allo)}: " + L.nvrtcGetErrorString(rc).decode()
                           + "\n" + log)
    sz = ctypes.c_size_t()
    L.nvrtcGetCUBINSize(prog, ctypes.byref(sz))
    b = ctypes.create_string_buffer(sz.value)
    L.nvrtcGetCUBIN(prog, b)
    cubin = b.raw
    ptx = None
    if L.nvrtcGetPTXSize(prog, ctypes.byref(sz)) == 0 and sz.value > 1:
        b = ctypes.create_string_buffer(sz.value)
        if L.nvrtcGetPTX(prog, b) == 0:
            ptx = b.value.decode()
    L.nvrtcDestroyProgram(ctypes.byref(prog))
    return cubin, ptx, log


# ---------------------------------------------------------------- cubin ELF

EIATTR_FRAME_SIZE = 0x11
EIATTR_MAX_STACK_SIZE = 0x23  # (not always present)
EIATTR_REGCOUNT = 0x2F


def elf_sections(cubin):
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not an ELF64 cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    secs = []
    for i in range(shnum):
        (nm, typ, flags, addr, off, size, link, info, align, entsize) = struct.unpack_from(
            "<IIQQQQIIQQ", cubin, shoff + i * shentsize)
        secs.append(dict(name_i=nm, type=typ, off=off, size=size, link=link, info=info,
                         entsize=entsize))
    stroff = secs[shstrndx]["off"]
    for s in secs:
        end = cubin.index(b"\0", stroff + s["name_i"])
        s["name"] = cubin[stroff + s["name_i"]:end].decode()
    return secs


def elf_symbols(cubin, secs):
    """index -> name of every symbol in .symtab"""
    out = {}
    for s in secs:
        if s["type"] != 2:
            continue
        stroff = secs[s["link"]]["off"]
        for j in range(s["size"] // s["entsize"]):
            name_i, info, other, shndx, value, ssize = struct.unpack_from(
                "<IBBHQQ", cubin, s["off"] + j * s["entsize"])
            end = cubin.index(b"\0", stroff + name_i)
            out[j] = cubin[stroff + name_i:end].decode()
    return out


def nv_info_attrs(data):
    """Parse an .nv.info section: list of (attr, value bytes)."""
    i, out = 0, []
    while i + 2 <= len(data):
        fmt, attr = data[i], data[i + 1]
        i += 2
        if fmt == 0x01:  # EIFMT_NVAL
            out.append((attr, b""))
        elif fmt == 0x02:  # EIFMT_BVAL
            out.append((attr, data[i:i + 1]))
            i += 1
        elif fmt == 0x03:  # EIFMT_HVAL
            out.append((attr, data[i:i + 2]))
            i += 2
        elif fmt == 0x04:  # EIFMT_SVAL: u16 size, then payload
            n, = struct.unpack_from("<H", data, i)
            i += 2
            out.append((attr, data[i:i + n]))
            i += n
        else:
            break
    return out


def elf_resources(cubin):
    """kernel -> {regs_elf, frame_elf, smem_elf, sass_insts, sass_sha}"""
    secs = elf_sections(cubin)
    syms = elf_symbols(cubin, secs)
    res = {}
    for s in secs:
        if s["name"].startswith(".text."):
            fn = s["name"][len(".text."):]
            text = cubin[s["off"]:s["off"] + s["size"]]
            res[fn] = dict(regs_elf=None, frame_elf=None, smem_elf=0,
                           sass_insts=s["size"] // 16,
                           sass_sha=hashlib.sha256(text).hexdigest()[:16])
    for s in secs:
        if s["name"].startswith(".nv.shared.") and s["name"][len(".nv.shared."):] in res:
            res[s["name"][len(".nv.shared."):]]["smem_elf"] = s["size"]
    for s in secs:
        if s["name"] != ".nv.info":
            continue
        for attr, val in nv_info_attrs(cubin[s["off"]:s["off"] + s["size"]]):
            if attr in (EIATTR_FRAME_SIZE, EIATTR_REGCOUNT) and len(val) == 8:
                sym, v = struct.unpack("<II", val)
                fn = syms.get(sym)
                if fn in res:
                    if attr == EIATTR_FRAME_SIZE:
                        res[fn]["frame_elf"] = v
                    else:
                        res[fn]["regs_elf"] = v
    return res


def same_code(a, b):
    """Two cubins alike in every section but the tool-info note (which records the options)."""
    sa, sb = elf_sections(a), elf_sections(b)
    if [s["name"] for s in sa] != [s["name"] for s in sb]:
        return False
    for x, y in zip(sa, sb):
        if x["name"] == ".note.nv.tkinfo":
            continue
        if a[x["off"]:x["off"] + x["size"]] != b[y["off"]:y["off"] + y["size"]]:
            return False
    return True


# ---------------------------------------------------------------- SASS (nvdisasm)

def find_nvdisasm():
    p = shutil.which("nvdisasm")
    if p:
        return p
    try:
        import nvidia
        for root in nvidia.__path__:
            hits = glob.glob(os.path.join(root, "**", "bin", "nvdisasm"), recursive=True)
            if hits:
                return hits[0]
    except ImportError:
        pass
    # next to libnvrtc (same wheel layout: nvidia/cu13/lib, nvidia/cu13/bin)
    lib_path = nc._lib[1] if nc._lib else ""
    cand = os.path.join(os.path.dirname(os.path.dirname(lib_path)), "bin", "nvdisasm")
    return cand if os.path.isfile(cand) else None


_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


def sass_instructions(cubin, nvdisasm):
    """kernel -> [SASS instruction text, in order], or {} without nvdisasm."""
    if not nvdisasm:
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([nvdisasm, "-c", f.name], capture_output=True, text=True)
    if out.returncode != 0:
        return {}
    return parse_sass(out.stdout)


def parse_sass(listing):
    """kernel -> [SASS instruction text, in order], from `nvdisasm -c`'s listing."""
    res, cur = {}, None
    for line in listing.splitlines():
        m = re.match(r"\s*\.text\.([A-Za-z_0-9]+):", line)
        if m:
            cur = m.group(1)
            res[cur] = []
            continue
        if cur is None:
            continue
        m = _SASS_LINE.search(line)
        if m:
            res[cur].append(line[m.start(1):].split(";")[0].strip())
    return res


# A WARPSYNC.COLLECTIVE ... ENDCOLLECTIVE sequence is what ptxas emits around a
# warp-synchronous instruction (a shuffle, a vote) that it cannot prove the whole warp reaches
# together: the sign of a branch on a value it does not see as warp-uniform. Beside it go R2UR
# moves of per-thread values into the uniform registers that wgmma descriptors, TMA loads and
# mbarrier operations read. The short d64 form with its unit index taken from the warp number
# (variants/indn, 2026-12-07, docs/KERNEL_LOG.md) had 20 of them and ran about 5% slower than
# the same form mended (indun); the shipped kernels have none.
COLLECTIVE_END = "ENDCOLLECTIVE"


def sass_opcodes(insts):
    """kernel -> Counter(opcode base -> n), from sass_instructions()."""
    return {k: collections.Counter(i.split()[0].split(".")[0] for i in v) for k, v in insts.items()}


def softmax_order(insts):
    """(code sites whose softmax follows the wait for the previous P V, sites whose softmax
    runs before it) in a wgmma kernel's SASS, or None where it has no such site. A site is a
    `WARPGROUP.DEPBAR.LE gsb0, 0x1` (S_j landed while P_{j-1} V_{j-1} may run): its softmax
    runs before that P V's wait when the site's first `MUFU.EX2` comes before the next
    `WARPGROUP.DEPBAR.LE gsb0, 0x0`. ptxas moved that wait above the softmax in every shipped
    entry (2026-12-03), whatever the source's order: docs/KERNEL.md."""
    after = before = 0
    pending = False
    for i in insts:
        if i.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x1"):
            pending = True
        elif pending and i.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x0"):
            after += 1
            pending = False
        elif pending and i.startswith("MUFU.EX2"):
            before += 1
            pending = False
    return (after, before) if after + before else None


# ---------------------------------------------------------------- PTX

def ptx_opcodes(ptx):
    """kernel -> Counter(full opcode with modifiers -> n), for each .entry: the statements of
    its body (split at ';', so one-line inline-asm blocks and instructions written over
    several lines count once each), less labels, directives and braces."""
    res = {}
    text = re.sub(r"//[^\n]*", "", ptx)
    for m in re.finditer(r"\.entry\s+([A-Za-z_0-9]+)", text):
        name = m.group(1)
        start = text.index("{", text.index(")", m.end()))  # the body, after the parameters
        depth, i = 0, start
        while True:
            ch = text[i]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        # statements: a '{' that starts a statement opens a scope (inline asm blocks), one
        # inside a statement opens an operand list (vector / wgmma operands)
        stmts, buf, operand = [], [], 0
        for ch in text[start + 1:i]:
            if ch == "{" and not operand and not re.sub(r"^[$A-Za-z_0-9]+:", "",
                                                         "".join(buf).strip()).strip():
                continue
            if ch == "}" and not operand:
                continue
            if ch == "{":
                operand += 1
            elif ch == "}":
                operand -= 1
            if ch == ";" and not operand:
                stmts.append("".join(buf))
                buf = []
            else:
                buf.append(ch)
        c = collections.Counter()
        for st in stmts:
            st = st.strip()
            while True:  # leading labels
                lm = re.match(r"^[$A-Za-z_0-9]+:\s*", st)
                if not lm:
                    break
                st = st[lm.end():]
            if not st or st.startswith("."):
                continue
            st = re.sub(r"^@!?%[A-Za-z_0-9]+\s+", "", st)  # predicate guard
            c[st.split()[0]] += 1
        res[name] = c
    return res


# ---------------------------------------------------------------- one source tree

MODULES = {}  # (kdir, arch, file) -> (sha256 of the cubin, sha256 of the PTX)


_SERIAL = re.compile(r"\((C75\d\d)\) Potential Performance Loss: wgmma\.mma_async instructions are "
                     r"serialized due to (.*?) (?:in|for) the function '([^']+)'")


def wgmma_serialised(log):
    """-> {kernel: "C75xx: reason"} for each function whose wgmma's ptxas serialised (every
    wgmma waited for before the next: on an H200 a kernel 14-48% slower, 2026-12-03). Which
    code does it is version-dependent: check with the NVRTC the device has as well."""
    return {m.group(3): f"{m.group(1)}: {m.group(2)}" for m in _SERIAL.finditer(log)}


def self_test():
    """The checks' parsers on messages and SASS as ptxas and nvdisasm write them: both
    wordings of the serialisation note (C7512 says "for the function", which the check once
    missed), and the softmax order of a step either way. Exit 1 on a miss."""
    notes = (
        "ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are "
        "serialized due to insufficient register resources for the function 'k_for'\n"
        "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are "
        "serialized due to non wgmma instructions defining accumulator registers of a wgmma "
        "between start and end of the pipeline stage in the function 'k_in'\n"
        "ptxas info    : Used 128 registers, used 1 barriers")
    serial = wgmma_serialised(notes)
    step = ["WARPGROUP.ARRIVE", "HGMMA.64x128x16.F32 R24, gdesc[UR32], RZ, !UPT",
            "WARPGROUP.DEPBAR.LE gsb0, 0x1"]
    after = step + ["FMNMX R17, R24, R25, !PT", "WARPGROUP.DEPBAR.LE gsb0, 0x0", "MUFU.EX2 R24, R24"]
    before = step + ["MUFU.EX2 R24, R24", "WARPGROUP.DEPBAR.LE gsb0, 0x0"]
    checks = [
        (set(serial) == {"k_for", "k_in"}, f"both wordings of the serialisation note: {serial}"),
        (serial.get("k_for", "").startswith("C7512: insufficient register"), "the C7512 reason"),
        (softmax_order(after) == (1, 0), f"the wait before the softmax: {softmax_order(after)}"),
        (softmax_order(before) == (0, 1), f"the softmax before the wait: {softmax_order(before)}"),
        (softmax_order(after + before) == (1, 1), "two sites"),
        (softmax_order(["MUFU.EX2 R1, R1"]) is None, "no wgmma step"),
    ]
    listing = (
        "        .text.k_col:\n"
        "        /*3ed0*/                   WARPSYNC.COLLECTIVE R0, `(.L_x_611) ;\n"
        ".L_x_2153:\n"
        "        /*3ee0*/                   SHFL.BFLY P1, R36, R41, R2, R27 ;\n"
        "        /*3ef0*/                   ENDCOLLECTIVE ;\n"
        ".L_x_611:\n"
        "        .text.k_plain:\n"
        "        /*0010*/              @!P0 SHFL.BFLY PT, R3, R2, 0x1, 0x1f ;\n")
    ops = sass_opcodes(parse_sass(listing))
    checks += [
        (ops.get("k_col", {}).get(COLLECTIVE_END) == 1, f"a collective sequence: {ops.get('k_col')}"),
        (COLLECTIVE_END not in ops.get("k_plain", {}) and ops.get("k_plain", {}).get("SHFL") == 1,
         f"a predicated shuffle, no sequence: {ops.get('k_plain')}"),
    ]
    for ok, what in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
    return 0 if all(ok for ok, _ in checks) else 1


def measure(kdir, archs, defines, nvdisasm, files=("attention.cu",)):
    """-> {arch: {kernel: {...}}}"""
    out = {}
    for arch in archs:
        out[arch] = {}
        for fn in files:
            src = open(os.path.join(kdir, fn)).read()
            opts = GATE_OPTIONS + [f"-D{d}" for d in defines]
            cubin, ptx, _ = compile_full(src, arch, opts, fn)
            verbose = [] if "--ptxas-options=-v" in opts else ["--ptxas-options=-v"]
            cubin_v, _, log = compile_full(src, arch, opts + verbose, fn)
            MODULES[(kdir, arch, fn)] = (hashlib.sha256(cubin).hexdigest(),
                                         hashlib.sha256((ptx or "").encode()).hexdigest())
            ptxas = nc.parse_ptxas(log)
            serial = wgmma_serialised(log)
            elf = elf_resources(cubin)
            consts = nc.launch_constants(cubin)
            insts = sass_instructions(cubin, nvdisasm)
            sass = sass_opcodes(insts)
            ptxc = ptx_opcodes(ptx) if ptx else {}
            for k in sorted(set(ptxas) | set(elf)):
                p = ptxas.get(k, {})
                e = elf.get(k, {})
                r = dict(
                    file=fn,
                    regs=p.get("regs"), stack=p.get("stack"), spill_st=p.get("spill_st"),
                    spill_ld=p.get("spill_ld"), smem_static=p.get("smem"),
                    launch=list(consts[k]) if k in consts else None,
                    regs_elf=e.get("regs_elf"), frame_elf=e.get("frame_elf"),
                    smem_elf=e.get("smem_elf"),
                    sass_insts=e.get("sass_insts"), sass_sha=e.get("sass_sha"),
                    sass_ops=dict(sorted(sass.get(k, {}).items())),
                    ptx_ops=dict(sorted(ptxc.get(k, {}).items())),
                    ptx_insts=sum(ptxc.get(k, {}).values()),
                    cubin_same_with_v=same_code(cubin, cubin_v),
                    wgmma_serialised=serial.get(k),
                    softmax_order=softmax_order(insts.get(k, [])),
                )
                # consistency: what the ELF says must be what ptxas said
                # (on sm_90 the ELF's .nv.shared.<fn> also holds the 1 KiB the hardware
                # reserves per CTA, which ptxas does not count)
                r["elf_agrees"] = (r["regs"] == r["regs_elf"] and
                                   (r["frame_elf"] is None or r["stack"] == r["frame_elf"]) and
                                   r["smem_elf"] - r["smem_static"] in (0, 1024))
                out[arch][k] = r
    return out


RES_KEYS = ["regs", "spill_st", "spill_ld", "stack", "smem_static", "launch"]


def fmt_row(r):
    dyn = r["launch"][2] if r["launch"] else "-"
    return (f"{r['regs']:>4} {str(r['spill_st']) + '/' + str(r['spill_ld']):>7} {r['stack']:>5} "
            f"{r['smem_static']:>6} {dyn:>6} {r['sass_insts']:>6} {r['ptx_insts']:>6}")


def print_one(res):
    print(f"{'arch':6} {'kernel':32} {'regs':>4} {'spill':>7} {'stack':>5} {'smem':>6} "
          f"{'dyn':>6} {'SASS':>6} {'PTX':>6}  sass-sha")
    for arch, ks in res.items():
        for k, r in ks.items():
            print(f"{arch:6} {k:32} {fmt_row(r)}  {r['sass_sha']}")


def ops_diff(a, b):
    keys = sorted(set(a) | set(b))
    return {k: (a.get(k, 0), b.get(k, 0)) for k in keys if a.get(k, 0) != b.get(k, 0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kdir", default=os.path.join(os.path.dirname(HERE), "kernels"))
    ap.add_argument("--base-kdir", default=None, help="compare against this source tree")
    ap.add_argument("--arch", action="append", help="default: sm_89, sm_90, sm_90a")
    ap.add_argument("-D", dest="defines", action="append", default=[],
                    help="extra define (e.g. CI_GATE_VARIANTS, CG_ADA_TILES)")
    ap.add_argument("--lib", default=None, help="path to libnvrtc.so")
    ap.add_argument("--json", default=None, help="write the full measurements here")
    ap.add_argument("--opcodes", action="store_true",
                    help="print every PTX / SASS opcode count that differs")
    ap.add_argument("--order", action="store_true",
                    help="for each wgmma kernel: at how many code sites the softmax of tile j "
                         "follows the wait for P_{j-1} V_{j-1}, and at how many it runs before it")
    ap.add_argument("--require-sass", action="store_true",
                    help="exit 2 where nvdisasm is not found or gives no SASS (the "
                         "collective-sequence check needs the SASS)")
    ap.add_argument("--self-test", action="store_true",
                    help="check the parsers of ptxas' notes and of the SASS, then exit (no NVRTC)")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    archs = args.arch or ARCHS
    nc.lib(args.lib)
    nvdisasm = find_nvdisasm()
    if args.require_sass and not nvdisasm:
        print("nvdisasm not found (pip install nvidia-cuda-nvdisasm): the SASS checks cannot run",
              file=sys.stderr)
        return 2
    print(f"NVRTC {nc.nvrtc_version()} from {nc._lib[1]}; options: --gpu-architecture=<arch> "
          f"{' '.join(GATE_OPTIONS)}{''.join(' -D' + d for d in args.defines)}")
    print(f"nvdisasm: {nvdisasm or 'not found (no SASS opcode histogram)'}")
    after = measure(args.kdir, archs, args.defines, nvdisasm)
    no_sass = [f"{a} {k}" for a, ks in after.items() for k, r in ks.items() if not r["sass_ops"]]
    if args.require_sass and no_sass:  # nvdisasm failed: the check would pass on nothing
        print(f"no SASS from {nvdisasm} for: {', '.join(no_sass)}", file=sys.stderr)
        return 2
    bad = 0
    for arch, ks in after.items():
        for k, r in ks.items():
            if not r["elf_agrees"]:
                print(f"NOTE {arch} {k}: ELF and ptxas disagree: {r}")
            if not r["cubin_same_with_v"]:
                print(f"NOTE {arch} {k}: the cubin with --ptxas-options=-v differs from the gate's")
            if r.get("wgmma_serialised"):
                print(f"WARNING {arch} {k}: ptxas serialised its wgmma's ({r['wgmma_serialised']})")
                bad += 1
            if r["sass_ops"].get(COLLECTIVE_END):
                print(f"WARNING {arch} {k}: {r['sass_ops'][COLLECTIVE_END]} WARPSYNC.COLLECTIVE ... "
                      f"ENDCOLLECTIVE sequence(s) in its SASS: a branch on a value ptxas cannot "
                      f"prove warp-uniform (take it from lane 0 by a shuffle)")
                bad += 1
            if args.order and r.get("softmax_order"):
                a, b = r["softmax_order"]
                print(f"ORDER {arch} {k}: the softmax follows the previous P V's wait at {a} "
                      f"code site(s), runs before it at {b}")
    if not args.base_kdir:
        print_one(after)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"kdir": args.kdir, "nvrtc": nc.nvrtc_version(), "results": after}, f,
                          indent=1)
        return 1 if bad else 0
    before = measure(args.base_kdir, archs, args.defines, nvdisasm)
    print(f"\nbase = {args.base_kdir}, candidate = {args.kdir}; each cell base -> candidate "
          f"(one value when equal)\n")
    print(f"{'arch':6} {'kernel':32} {'regs':>9} {'spill st/ld':>11} {'stack':>7} "
          f"{'smem st+dyn':>15} {'SASS insts':>11} {'PTX insts':>11}  SASS bytes")

    def cell(a, b, w):
        s = str(a) if a == b else f"{a}->{b}"
        return f"{s:>{w}}"

    for arch in archs:
        for k in sorted(set(before[arch]) | set(after[arch])):
            a, b = before[arch].get(k), after[arch].get(k)
            if a is None or b is None:
                print(f"{arch:6} {k:32} only in {'candidate' if a is None else 'base'}")
                bad += 1
                continue
            sp = lambda r: f"{r['spill_st']}/{r['spill_ld']}"  # noqa: E731
            sm = lambda r: f"{r['smem_static']}+{r['launch'][2] if r['launch'] else '-'}"  # noqa: E731
            print(f"{arch:6} {k:32} {cell(a['regs'], b['regs'], 9)} {cell(sp(a), sp(b), 11)} "
                  f"{cell(a['stack'], b['stack'], 7)} {cell(sm(a), sm(b), 15)} "
                  f"{cell(a['sass_insts'], b['sass_insts'], 11)} "
                  f"{cell(a['ptx_insts'], b['ptx_insts'], 11)}  "
                  f"{'identical' if a['sass_sha'] == b['sass_sha'] else 'differ'}")
            if any(a[x] != b[x] for x in RES_KEYS):
                bad += 1
            if args.opcodes:
                d = ops_diff(a["ptx_ops"], b["ptx_ops"])
                if d:
                    print(f"         PTX opcodes (base, candidate): {d}")
                d = ops_diff(a["sass_ops"], b["sass_ops"])
                if d:
                    print(f"         SASS opcodes (base, candidate): {d}")
    print()
    for arch in archs:
        a, b = MODULES[(args.base_kdir, arch, "attention.cu")], MODULES[(args.kdir, arch, "attention.cu")]
        print(f"{arch:6} attention.cu module: cubin {'identical' if a[0] == b[0] else 'differs'}, "
              f"PTX {'identical' if a[1] == b[1] else 'differs'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"base_kdir": args.base_kdir, "kdir": args.kdir,
                       "nvrtc": nc.nvrtc_version(), "base": before, "candidate": after}, f,
                      indent=1)
    print()
    print("resources identical" if bad == 0 else
          f"{bad} kernel(s) with different resources (registers, spills, stack, shared memory "
          f"or launch constants)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
