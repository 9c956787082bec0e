#!/usr/bin/env python3
"""ci-gate's PyTorch peer: times torch.nn.functional.scaled_dot_product_attention the way
ci-gate times its own kernel, one round per request, so the two can be interleaved.

ci-gate starts this worker (the copy built into the binary) and speaks JSON lines over
stdin/stdout. Requests and answers:

  {"cmd": "hello"}
    -> {"ok": true, "torch": "2.9.0", "cuda": "13.0", "device": "NVIDIA H200"}
  {"cmd": "round", "peer": "torch-sdpa" | "torch-sdpa-flash" | "torch-sdpa-cudnn",
   "shape": {"batch", "heads", "seq_len", "head_dim", "causal", "dtype": "float16"|"bfloat16"},
   "seed": int, "sets": int, "launches": int (0: size the graph now),
   "sample_ms": float, "samples": int, "warmup_ms": float, "duty_cycle": float}
    -> {"ok": true, "samples_us": [...], "launches": int,
        "backend": "cudnn" | "flash" | "efficient" | "math" | null}
  any failure -> {"ok": false, "error": "..."}

A round, as ci-gate's own (src/gpu/measure.rs): a random-sized spacer and fresh Q, K, V
(standard normal from the seed) so the round lands on new memory, earlier rounds' buffers held
(at most a quarter of free memory, 8 GiB); warm-up by direct calls in growing batches for
warmup_ms, whose last batch sizes a CUDA graph of about sample_ms of calls (or `launches`);
then `samples` replays, each after a short lead-in spin and bracketed by CUDA events, each
followed by idle time so the GPU is busy duty_cycle of the time. Times are per call, in us.
"torch-sdpa" is PyTorch's default backend choice, and the answer names the backend it chose
(torch._fused_sdp_choice, the function SDPA itself asks; null where this PyTorch lacks it);
"torch-sdpa-flash" forces FlashAttention-2 and "torch-sdpa-cudnn" cuDNN.
"""
import json
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except Exception as e:  # no PyTorch: say so once, and ci-gate leaves the peers out
    print(json.dumps({"ok": False, "error": f"PyTorch cannot be imported: {e}"}), flush=True)
    sys.exit(3)

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
HELD = []
HELD_BYTES = [0]
LEAD_CYCLES = 100_000


def backend(peer):
    if peer == "torch-sdpa":
        return None
    if peer == "torch-sdpa-flash":
        return SDPBackend.FLASH_ATTENTION
    if peer == "torch-sdpa-cudnn":
        return SDPBackend.CUDNN_ATTENTION
    raise ValueError(f"unknown peer {peer!r}")


NAMES = {"CUDNN_ATTENTION": "cudnn", "FLASH_ATTENTION": "flash",
         "EFFICIENT_ATTENTION": "efficient", "MATH": "math"}


def chosen(which, q, k, v, causal):
    """The backend that runs: the forced one, or the one PyTorch's dispatcher picks."""
    if which is not None:
        return NAMES.get(which.name)
    try:
        picked = torch._fused_sdp_choice(q, k, v, is_causal=causal)
        return NAMES.get(SDPBackend(picked).name)
    except Exception:
        return None


def round_(req):
    s = req["shape"]
    dtype = DTYPES[s["dtype"]]
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(int(req["seed"]) & ((1 << 63) - 1))
    spacer = torch.empty(256 * int(torch.randint(1, 65_537, (1,), generator=gen, device=dev)),
                         dtype=torch.uint8, device=dev)
    dims = (s["batch"], s["heads"], s["seq_len"], s["head_dim"])
    sets = []
    for _ in range(max(1, int(req["sets"]))):
        q, k, v = (torch.randn(dims, generator=gen, device=dev, dtype=torch.float32).to(dtype)
                   for _ in range(3))
        sets.append((q, k, v))
    causal = bool(s["causal"])
    which = backend(req["peer"])
    ctx = (lambda: sdpa_kernel(which)) if which is not None else None
    nxt = [0]

    def call():
        q, k, v = sets[nxt[0] % len(sets)]
        nxt[0] += 1
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def run(n):
        if ctx is None:
            for _ in range(n):
                call()
        else:
            with ctx():
                for _ in range(n):
                    call()

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        spent, batch, per_call = 0.0, 1, float("inf")
        while spent < float(req["warmup_ms"]):
            e0.record(stream)
            run(batch)
            e1.record(stream)
            e1.synchronize()
            ms = e0.elapsed_time(e1)
            spent += ms
            per_call = ms / batch
            batch = min(batch * 2, 256)
        launches = int(req.get("launches") or 0)
        if launches <= 0:
            launches = int(min(max(round(float(req["sample_ms"]) / max(per_call, 1e-6)), 1), 20_000))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            run(launches)
        graph.replay()
        stream.synchronize()
        values = []
        duty = float(req["duty_cycle"])
        for _ in range(int(req["samples"])):
            torch.cuda._sleep(LEAD_CYCLES)
            e0.record(stream)
            graph.replay()
            e1.record(stream)
            e1.synchronize()
            ms = e0.elapsed_time(e1)
            values.append(ms * 1000.0 / launches)
            if duty < 1.0:
                time.sleep(ms * (1.0 / duty - 1.0) / 1000.0)
    # Hold this round's buffers so the next lands elsewhere, within a quarter of free memory.
    free, _ = torch.cuda.mem_get_info()
    size = sum(t.numel() * t.element_size() for qkv in sets for t in qkv) + spacer.numel()
    if HELD_BYTES[0] + size <= min(free // 4, 8 << 30):
        HELD.append((spacer, sets))
        HELD_BYTES[0] += size
    del graph
    q, k, v = sets[0]
    return {"ok": True, "samples_us": values, "launches": launches,
            "backend": chosen(which, q, k, v, causal)}


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            if req.get("cmd") == "hello":
                if not torch.cuda.is_available():
                    raise RuntimeError("torch.cuda.is_available() is False")
                ans = {"ok": True, "torch": torch.__version__, "cuda": torch.version.cuda,
                       "device": torch.cuda.get_device_name(0)}
            elif req.get("cmd") == "round":
                ans = round_(req)
            else:
                raise ValueError(f"unknown command {req.get('cmd')!r}")
        except Exception as e:
            ans = {"ok": False, "error": f"{type(e).__name__}: {e}"[:2000]}
        print(json.dumps(ans), flush=True)


if __name__ == "__main__":
    main()
