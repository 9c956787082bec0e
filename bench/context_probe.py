#!/usr/bin/env python3
"""What a CUDA context of its own for each side would give the gate (SECURITY.md's open item).

Today the kernel under test runs in the one context that also holds the checker's buffers and
the other side's code and data. This probe answers, on the card it runs on, the questions a
context per side depends on, with the driver API alone (ctypes on libcuda, hand-written PTX):

  isolation   a kernel in context B given an address of context A's memory (cuMemAlloc):
              does the read fault, and the write? After B's fault, does A still work?
  vmm         memory mapped by cuMemMap and cuMemSetAccess for the device: can a kernel of
              either context read it (a way to hand a side its outputs without a copy)?
  wait        a stream of A waiting on an event recorded in B (cuStreamWaitEvent across
              contexts): is the order kept?
  switch      a ~20 us spin timed by events, one sample at a time with the host waiting on each
              (as the gate samples): all in one context against alternating between two. The
              events' spans and the host's, median and p95.
  overlap     work of two contexts queued at once: does the time-slicing land inside one
              side's events (why the sides must never have work queued together)?

    python3 bench/context_probe.py [--out probe.json]

Prints one JSON line per question and writes them all to --out. No Rust, no NVRTC, no PyTorch.
"""

import argparse
import ctypes as C
import json
import statistics
import sys
import time

PTX = rb"""
.version 8.0
.target sm_80
.address_size 64

.visible .entry copy_word(.param .u64 src, .param .u64 dst)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.global.u32 %r1, [%rd1];
  st.global.u32 [%rd2], %r1;
  ret;
}

.visible .entry write_word(.param .u64 dst, .param .u32 v)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [dst];
  ld.param.u32 %r1, [v];
  st.global.u32 [%rd1], %r1;
  ret;
}

.visible .entry spin(.param .u64 cycles)
{
  .reg .b64 %rd<5>;
  .reg .pred %p;
  ld.param.u64 %rd1, [cycles];
  mov.u64 %rd2, %clock64;
LOOP:
  mov.u64 %rd3, %clock64;
  sub.u64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p, %rd4, %rd1;
  @%p bra LOOP;
  ret;
}
"""

cu = C.CDLL("libcuda.so.1")
results = []


def name(code):
    s = C.c_char_p()
    cu.cuGetErrorName(code, C.byref(s))
    return s.value.decode() if s.value else str(code)


def ck(code, what):
    if code != 0:
        raise RuntimeError(f"{what}: {name(code)}")


def report(question, **kw):
    row = {"question": question, **kw}
    results.append(row)
    print(json.dumps(row), flush=True)


class Ctx:
    """A context, its module, functions and one stream."""

    def __init__(self, dev, primary=False):
        self.h = C.c_void_p()
        if primary:
            ck(cu.cuDevicePrimaryCtxRetain(C.byref(self.h), dev), "cuDevicePrimaryCtxRetain")
        elif hasattr(cu, "cuCtxCreate_v4"):
            ck(cu.cuCtxCreate_v4(C.byref(self.h), None, 0, dev), "cuCtxCreate_v4")
        else:
            ck(cu.cuCtxCreate_v2(C.byref(self.h), 0, dev), "cuCtxCreate_v2")
        self.use()
        self.mod = C.c_void_p()
        ck(cu.cuModuleLoadData(C.byref(self.mod), C.c_char_p(PTX)), "cuModuleLoadData")
        self.f = {}
        for fn in ("copy_word", "write_word", "spin"):
            h = C.c_void_p()
            ck(cu.cuModuleGetFunction(C.byref(h), self.mod, fn.encode()), fn)
            self.f[fn] = h
        self.stream = C.c_void_p()
        ck(cu.cuStreamCreate(C.byref(self.stream), 1), "cuStreamCreate")  # non-blocking

    def use(self):
        ck(cu.cuCtxSetCurrent(self.h), "cuCtxSetCurrent")

    def alloc(self, n=256):
        self.use()
        p = C.c_uint64()
        ck(cu.cuMemAlloc_v2(C.byref(p), C.c_size_t(n)), "cuMemAlloc")
        ck(cu.cuMemsetD8_v2(p, 0, C.c_size_t(n)), "cuMemsetD8")
        return p.value

    def launch(self, fn, *args):
        """Queues fn(args) on this context's stream; args are (ctypes type, value)."""
        self.use()
        vals = [t(v) for t, v in args]
        ptrs = (C.c_void_p * len(vals))(*[C.cast(C.byref(v), C.c_void_p) for v in vals])
        return cu.cuLaunchKernel(self.f[fn], 1, 1, 1, 1, 1, 1, 0, self.stream, ptrs, None)

    def sync(self):
        self.use()
        return cu.cuStreamSynchronize(self.stream)

    def read_word(self, p):
        self.use()
        v = C.c_uint32()
        code = cu.cuMemcpyDtoH_v2(C.byref(v), C.c_uint64(p), C.c_size_t(4))
        return (v.value if code == 0 else None), name(code)

    def write_host(self, p, value):
        self.use()
        v = C.c_uint32(value)
        ck(cu.cuMemcpyHtoD_v2(C.c_uint64(p), C.byref(v), C.c_size_t(4)), "cuMemcpyHtoD")

    def event(self):
        self.use()
        e = C.c_void_p()
        ck(cu.cuEventCreate(C.byref(e), 0), "cuEventCreate")
        return e


U64, U32 = C.c_uint64, C.c_uint32


def elapsed_ms(a, b):
    ms = C.c_float()
    fn = getattr(cu, "cuEventElapsedTime_v2", None) or cu.cuEventElapsedTime
    ck(fn(C.byref(ms), a, b), "cuEventElapsedTime")
    return ms.value


def isolation(dev):
    a = Ctx(dev, primary=True)
    secret = a.alloc()
    a.write_host(secret, 0xA11CE)
    b = Ctx(dev)
    out_b = b.alloc()
    launch = b.launch("copy_word", (U64, secret), (U64, out_b))
    code = b.sync()
    got, _ = b.read_word(out_b) if code == 0 else (None, None)
    # After B's fault (if any), A's own work.
    out_a = a.alloc()
    a_after = a.launch("copy_word", (U64, secret), (U64, out_a))
    a_code = a.sync()
    a_got, a_read = a.read_word(out_a)
    report(
        "isolation-read",
        launch=name(launch),
        b_sync=name(code),
        b_read=hex(got) if got is not None else None,
        a_after_b=name(a_after) + "/" + name(a_code),
        a_read=hex(a_got) if a_got is not None else a_read,
    )
    c = Ctx(dev)
    launch = c.launch("write_word", (U64, secret), (U32, 0xBAD))
    code = c.sync()
    now, _ = a.read_word(secret)
    report(
        "isolation-write",
        launch=name(launch),
        c_sync=name(code),
        a_word_after=hex(now) if now is not None else None,
        written=(now == 0xBAD),
    )
    # The other direction: the primary context given an address of a created one.
    d = Ctx(dev)
    d_word = d.alloc()
    d.write_host(d_word, 0xD00D)
    e = Ctx(dev)
    out_e = e.alloc()
    e.launch("copy_word", (U64, d_word), (U64, out_e))
    code = e.sync()
    got, _ = e.read_word(out_e) if code == 0 else (None, None)
    report(
        "isolation-read-created",
        e_sync=name(code),
        e_read=hex(got) if got is not None else None,
    )
    return a


class Prop(C.Structure):
    _fields_ = [
        ("type", C.c_int),
        ("requestedHandleTypes", C.c_int),
        ("loc_type", C.c_int),
        ("loc_id", C.c_int),
        ("win32", C.c_void_p),
        ("compression", C.c_ubyte),
        ("rdma", C.c_ubyte),
        ("usage", C.c_ushort),
        ("reserved", C.c_ubyte * 4),
    ]


class Access(C.Structure):
    _fields_ = [("loc_type", C.c_int), ("loc_id", C.c_int), ("flags", C.c_int)]


def vmm(dev, a):
    a.use()
    prop = Prop(type=1, requestedHandleTypes=0, loc_type=1, loc_id=0)
    gran = C.c_size_t()
    ck(cu.cuMemGetAllocationGranularity(C.byref(gran), C.byref(prop), 0), "granularity")
    size = gran.value
    handle = C.c_uint64()
    ck(cu.cuMemCreate(C.byref(handle), C.c_size_t(size), C.byref(prop), C.c_uint64(0)), "cuMemCreate")
    va = C.c_uint64()
    ck(cu.cuMemAddressReserve(C.byref(va), C.c_size_t(size), C.c_size_t(0), C.c_uint64(0), C.c_uint64(0)), "reserve")
    ck(cu.cuMemMap(va, C.c_size_t(size), C.c_size_t(0), handle, C.c_uint64(0)), "cuMemMap")
    acc = Access(loc_type=1, loc_id=0, flags=3)
    ck(cu.cuMemSetAccess(va, C.c_size_t(size), C.byref(acc), C.c_size_t(1)), "cuMemSetAccess")
    a.write_host(va.value, 0x5EED)
    b = Ctx(dev)
    out_b = b.alloc()
    b.launch("copy_word", (U64, va.value), (U64, out_b))
    code = b.sync()
    got, _ = b.read_word(out_b) if code == 0 else (None, None)
    report("vmm-read-from-another-context", b_sync=name(code), b_read=hex(got) if got is not None else None)


def wait(dev, a):
    """B (a fresh context) spins ~2 ms and records an event; A's stream waits on it, then
    runs a short kernel. Ordered if B's event is complete when A's stream is done."""
    b = Ctx(dev)
    ev = b.event()
    b.launch("spin", (U64, 4_000_000))
    b.use()
    ck(cu.cuEventRecord(ev, b.stream), "cuEventRecord")
    a.use()
    t0 = time.perf_counter()
    code = cu.cuStreamWaitEvent(a.stream, ev, 0)
    a.launch("spin", (U64, 1000))
    a_code = a.sync()
    host = (time.perf_counter() - t0) * 1e6
    b.use()
    b_done = cu.cuEventQuery(ev)
    b.sync()
    report("wait-across-contexts", wait=name(code), a_sync=name(a_code), a_host_us=round(host, 1),
           b_event_when_a_done=name(b_done), ordered=(b_done == 0))


def stats(xs):
    xs = sorted(xs)
    return {
        "median": round(statistics.median(xs), 3),
        "p95": round(xs[int(0.95 * (len(xs) - 1))], 3),
        "max": round(xs[-1], 3),
    }


def sample(ctx, cycles):
    s, e = ctx.cached
    ctx.use()
    t0 = time.perf_counter()
    ck(cu.cuEventRecord(s, ctx.stream), "record")
    ck(ctx.launch("spin", (U64, cycles)), "spin")
    ck(cu.cuEventRecord(e, ctx.stream), "record")
    ck(cu.cuEventSynchronize(e), "sync")
    host = (time.perf_counter() - t0) * 1e6
    return elapsed_ms(s, e) * 1e3, host


def switch(dev, a, b, n=400, cycles=40_000):
    for c in (a, b):
        c.cached = (c.event(), c.event())
        for _ in range(20):
            sample(c, cycles)
    for label, order in (("one-context", [a, a]), ("alternating", [a, b]), ("one-context-again", [a, a])):
        ev, host = [], []
        for i in range(n):
            x, h = sample(order[i % 2], cycles)
            ev.append(x)
            host.append(h)
        report("switch", pattern=label, samples=n, events_us=stats(ev), host_us=stats(host))


def overlap(dev, a, b, cycles=4_000_000):
    """B's 2 ms spin and A's 2 ms spin queued together: A's events around its own spin."""
    sa, ea = a.event(), a.event()
    b.launch("spin", (U64, cycles))
    a.use()
    ck(cu.cuEventRecord(sa, a.stream), "record")
    a.launch("spin", (U64, cycles))
    ck(cu.cuEventRecord(ea, a.stream), "record")
    a.sync()
    b.sync()
    one_alone = []
    for _ in range(3):
        x, _h = sample(a, cycles)
        one_alone.append(x)
    report("overlap", a_events_us_with_b_queued=round(elapsed_ms(sa, ea) * 1e3, 1), a_alone_us=[round(x, 1) for x in one_alone])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="context_probe.json")
    args = ap.parse_args()
    ck(cu.cuInit(0), "cuInit")
    dev = C.c_int()
    ck(cu.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
    nm = C.create_string_buffer(128)
    cu.cuDeviceGetName(nm, 128, dev)
    report("device", name=nm.value.decode())
    try:
        a = isolation(dev)
    except Exception as e:  # every question is answered or says why not
        report("isolation", error=str(e))
        a = Ctx(dev, primary=True)
    try:
        vmm(dev, a)
    except Exception as e:
        report("vmm", error=str(e))
    b = Ctx(dev)  # a context no fault above has touched
    for fn, call in (
        ("wait", lambda: wait(dev, a)),
        ("switch", lambda: switch(dev, a, b)),
        ("overlap", lambda: overlap(dev, a, b)),
    ):
        try:
            call()
        except Exception as e:
            report(fn, error=str(e))
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
