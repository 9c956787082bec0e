#!/usr/bin/env python3
"""Does a green context's SM partition hold for work launched from PyTorch and cupy? (A probe,
2026-12-04, twentieth session, call 4; needs a CUDA GPU, torch, cupy.) An 8192^3 fp16 product
timed by CUDA events (a) launched directly into the partition's stream, (b) as a CUDA graph
captured on that stream, (c) with the green context made current (cuCtxPushCurrent; it
refused, CUresult 201, so (c)'s later steps, the L4 path's b2h16s4096d128 kernel included,
ran in the primary context on every SM). Its answer shaped bench/l4_sms.py: a graph must be
captured on the partition's own stream.

  python3 bench/green_probe.py
"""
import ctypes, sys, os, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import l4_sms as L

def ev_time(fn, stream, n=20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        fn(); torch.cuda.synchronize()
        ts = []
        for _ in range(5):
            s.record(); 
            for _ in range(n): fn()
            e.record(); e.synchronize(); ts.append(s.elapsed_time(e) * 1000 / n)
    return statistics.median(ts)

torch.zeros(1, device="cuda")
p = L.GreenPartition(56)
print("sms", p.sms, p.device_sms, flush=True)
a, b = (torch.randn(8192, 8192, device="cuda", dtype=torch.float16) for _ in range(2))
whole = torch.cuda.current_stream()
mm = lambda: a @ b
print("(a) direct: whole", ev_time(mm, whole), "green stream", ev_time(mm, p.stream), flush=True)
try:
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=p.stream):
        for _ in range(10): mm()
    print("(b) graph captured on green stream, replay on it:", ev_time(g.replay, p.stream, 2) / 10, flush=True)
except Exception as ex:
    print("(b) failed", type(ex).__name__, ex, flush=True)
try:
    ctx = ctypes.c_void_p()
    rc = p.cu.cuCtxFromGreenCtx(ctypes.byref(ctx), p.ctx); print("cuCtxFromGreenCtx", rc)
    rc = p.cu.cuCtxPushCurrent(ctx); print("push", rc, flush=True)
    st = ctypes.c_void_p()
    rc = p.cu.cuStreamCreate(ctypes.byref(st), 1); print("cuStreamCreate in green ctx", rc, flush=True)
    s2 = torch.cuda.ExternalStream(st.value)
    print("(c) green current, direct on default torch stream:", ev_time(mm, torch.cuda.current_stream()),
          "on its new stream", ev_time(mm, s2), "on green stream", ev_time(mm, p.stream), flush=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s2):
        for _ in range(10): mm()
    print("(c) graph on its stream:", ev_time(g.replay, s2, 2) / 10, flush=True)
    import kernel_check as kc
    kc.KDIR = os.path.abspath("kernels")
    mod = kc.Module("attention.cu", "sm_90a", ["-DCG_ADA_TILES"])
    attn = kc.Attn(mod, "attention_fwd_f16_d128_long_noncausal")
    q, k, v = (torch.randn(2, 16, 4096, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty(2, 16, 4096, 128, device="cuda", dtype=torch.float32)
    f = lambda: attn(q, k, v, o, False)
    print("(c) ours on green-ctx stream", ev_time(f, s2, 5), flush=True)
    rc = p.cu.cuCtxPopCurrent(ctypes.byref(ctx)); print("pop", rc)
    print("(c) ours after pop, whole", ev_time(f, whole, 5), flush=True)
except Exception:
    import traceback; traceback.print_exc()
