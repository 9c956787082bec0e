#!/usr/bin/env python3
"""ci-gate's PyTorch peer: times torch.nn.functional.scaled_dot_product_attention the way a
PyTorch user times it (a CUDA graph of about 2 ms of back-to-back calls, CUDA events around
each replay, the median), a few rounds per shape interleaved with the kernel's pairs.

ci-gate starts this worker (the copy built into the binary) and speaks JSON lines over
stdin/stdout, one answer per request:

  {"cmd": "hello", "warm": [{"peer": P, "shape": S}, ...]}
    -> {"ok": true, "torch": "2.9.0", "cuda": "13.0", "device": "NVIDIA H200",
        "warm_s": 1.2}
    Creates the CUDA context and runs one call of every listed (peer, shape) (cuDNN builds
    its execution plan for a shape on its first call: 25 ms to hundreds of ms), so that ci-gate
    can send this first and read the answer later: it runs beside ci-gate's own compiling.
  {"cmd": "prepare", "peer": "torch-sdpa" | "torch-sdpa-flash" | "torch-sdpa-cudnn",
   "shape": {"batch", "heads", "seq_len", "head_dim", "causal", "dtype": "float16"|"bfloat16"},
   "seed": int, "sets": int, "sample_ms": float, "warmup_ms": float, "variant": {...}}
    -> {"ok": true, "launches": int, "backend": "cudnn" | "flash" | "efficient" | "math" | null}
    Makes q, k, v (standard normal from the seed; `sets` of them rotated for a cold cache),
    runs a few direct calls, sizes a CUDA graph of about sample_ms of back-to-back calls from
    a short graph of the same calls (never from direct calls: where the host is slower than the
    GPU those measure the host, and cuDNN's first call of a shape measures its plan build),
    captures it and replays it twice. The peer's state is kept for the rounds that follow.
  {"cmd": "round", "peer": P, "samples": int, "duty_cycle": float}
    -> {"ok": true, "samples_us": [...], "launches": int}
    `samples` replays of the prepared graph, each bracketed by CUDA events (after a short
    lead-in spin, as ci-gate times its own kernel, unless the variant says otherwise), each
    followed by idle time so the GPU is busy duty_cycle of the time. Times per call, µs.
  {"cmd": "release"} -> {"ok": true}   frees every prepared peer (the end of a shape).
  any failure -> {"ok": false, "error": "..."}

"torch-sdpa" is PyTorch's default backend choice, and `backend` names the backend it chose
(torch._fused_sdp_choice, the function SDPA itself asks; null where this PyTorch lacks it);
"torch-sdpa-flash" forces FlashAttention-2 and "torch-sdpa-cudnn" cuDNN.

`variant` (optional; ci-gate sends none, bench/peers_variants.py does) changes one factor of
the method at a time, to find what moves a peer's time:
  lead_in: false        no lead-in spin before a replay (an independent harness has none);
  sizing: "warmup"      the graph sized from the last batch of direct warm-up calls and kept
                        for later rounds (ci-gate before issue 30);
  fresh: true           every round on fresh q, k, v behind a random-sized spacer, earlier
                        rounds' buffers held, warm-up and a new graph (ci-gate before issue 30);
  cast: true            q, k, v drawn in float32 and cast (ci-gate before issue 30);
  qpool: true           our kernel's conditions: a q of its own for every call (refilled before
                        each replay, so not L2-warm) and an output of its own for every call
                        (zeroed before each replay), k and v shared.
"""
import json
import math
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
# SM cycles of the spin before each timed replay (~50 µs at 2 GHz): the host enqueues the
# replay behind it, so its submission is not timed (src/gpu/measure.rs, LEAD_CYCLES).
LEAD_CYCLES = 100_000
MAX_LAUNCHES = 20_000
# A sizing graph lasts at least this long (µs), so its own start-up is a small part of it.
PROBE_US = 250.0
STATE = {}
HELD = []
HELD_BYTES = [0]

NAMES = {"CUDNN_ATTENTION": "cudnn", "FLASH_ATTENTION": "flash",
         "EFFICIENT_ATTENTION": "efficient", "MATH": "math"}


def backend(peer):
    if peer == "torch-sdpa":
        return None
    if peer == "torch-sdpa-flash":
        return SDPBackend.FLASH_ATTENTION
    if peer == "torch-sdpa-cudnn":
        return SDPBackend.CUDNN_ATTENTION
    raise ValueError(f"unknown peer {peer!r}")


def chosen(which, q, k, v, causal):
    """The backend that runs: the forced one, or the one PyTorch's dispatcher picks."""
    if which is not None:
        return NAMES.get(which.name)
    try:
        picked = torch._fused_sdp_choice(q, k, v, is_causal=causal)
        return NAMES.get(SDPBackend(picked).name)
    except Exception:
        return None


class Forced:
    """The peer's backend forced around a block of calls (or nothing, for the default)."""

    def __init__(self, which):
        self.ctx = sdpa_kernel(which) if which is not None else None

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            return self.ctx.__exit__(*exc)
        return False


def dims_of(s):
    return (int(s["batch"]), int(s["heads"]), int(s["seq_len"]), int(s["head_dim"]))


def hello(req):
    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    t = time.perf_counter()
    torch.zeros(1, device="cuda")
    for item in req.get("warm") or []:
        try:
            s = item["shape"]
            q, k, v = (torch.randn(dims_of(s), device="cuda", dtype=DTYPES[s["dtype"]])
                       for _ in range(3))
            with Forced(backend(item["peer"])):
                F.scaled_dot_product_attention(q, k, v, is_causal=bool(s["causal"]))
            del q, k, v
        except Exception:
            pass  # the peer's own prepare says why, on its shape
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return {"ok": True, "torch": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "warm_s": time.perf_counter() - t}


class Prepared:
    """One peer on one shape: its inputs, its CUDA graph and how it is timed."""

    def __init__(self, req):
        self.req = req
        s = req["shape"]
        self.dims = dims_of(s)
        self.dtype = DTYPES[s["dtype"]]
        self.causal = bool(s["causal"])
        self.which = backend(req["peer"])
        v = req.get("variant") or {}
        self.lead_in = bool(v.get("lead_in", True))
        self.sizing = str(v.get("sizing", "graph"))
        self.fresh = bool(v.get("fresh", False))
        self.cast = bool(v.get("cast", False))
        self.qpool = bool(v.get("qpool", False))
        if self.sizing not in ("graph", "warmup"):
            raise ValueError(f"unknown sizing {self.sizing!r}")
        self.gen = torch.Generator(device="cuda")
        self.gen.manual_seed(int(req["seed"]) & ((1 << 63) - 1))
        self.launches = 0
        self.rounds = 0
        self.graph = None
        self.build()

    # Inputs -------------------------------------------------------------------------------

    def randn(self, dims):
        if self.cast:
            return torch.randn(dims, generator=self.gen, device="cuda",
                               dtype=torch.float32).to(self.dtype)
        return torch.randn(dims, generator=self.gen, device="cuda", dtype=self.dtype)

    def inputs(self):
        """q, k, v sets; with `fresh`, behind a random-sized spacer."""
        self.spacer = None
        if self.fresh:
            n = int(torch.randint(1, 65_537, (1,), generator=self.gen, device="cuda"))
            self.spacer = torch.empty(256 * n, dtype=torch.uint8, device="cuda")
        self.sets = [tuple(self.randn(self.dims) for _ in range(3))
                     for _ in range(max(1, int(self.req.get("sets") or 1)))]
        self.pool = None
        self.outs = []

    def calls(self, n, keep=False):
        """n back-to-back calls, rotating the sets; with the q pool each call reads its own q
        (and with `keep` its output is kept, so each has its own memory)."""
        with Forced(self.which):
            for i in range(n):
                q, k, v = self.sets[i % len(self.sets)]
                if self.pool is not None:
                    q = self.pool[i % self.pool.shape[0]]
                o = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
                if keep:
                    self.outs.append(o)

    # Sizing -------------------------------------------------------------------------------

    def graph_ms(self, n, replays=3):
        """The shortest of `replays` replays of a graph of n calls, ms."""
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.calls(n)
        g.replay()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        best = math.inf
        for _ in range(replays):
            torch.cuda._sleep(LEAD_CYCLES)  # the host's submission is not part of the time
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            best = min(best, e0.elapsed_time(e1))
        del g
        return best

    def size_from_graph(self):
        per = self.graph_ms(2) / 2
        if 2 * per * 1000.0 < PROBE_US:
            n = int(min(max(math.ceil(PROBE_US / 1000.0 / max(per, 1e-6)), 2), 256))
            per = self.graph_ms(n) / n
        return per

    def size_from_warmup(self):
        """ci-gate's sizing before issue 30: direct calls in growing batches for warmup_ms, the
        last batch's time per call (on the worker's side stream)."""
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        spent, batch, per = 0.0, 1, math.inf
        while spent < float(self.req.get("warmup_ms") or 25.0):
            e0.record()
            self.calls(batch)
            e1.record()
            e1.synchronize()
            ms = e0.elapsed_time(e1)
            spent += ms
            per = ms / batch
            batch = min(batch * 2, 256)
        return per

    # The graph ----------------------------------------------------------------------------

    def build(self):
        self.inputs()
        per = None
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            if self.sizing == "warmup":
                per = self.size_from_warmup()
            else:
                self.calls(3)  # a user's warm-up: kernel selection, workspaces, modules
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        # Sized once per shape (ci-gate before issue 30, `fresh` with `warmup` sizing: by its
        # first round, then kept); graph sizing sizes every graph it builds.
        if self.launches <= 0 or self.sizing == "graph":
            if per is None:
                per = self.size_from_graph()
            n = round(float(self.req["sample_ms"]) / max(per, 1e-6))
            self.launches = int(min(max(n, 1), MAX_LAUNCHES))
        if self.qpool:
            self.pool = self.randn((self.launches,) + self.dims)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.calls(self.launches, keep=self.qpool)
        for _ in range(2):
            self.graph.replay()
        torch.cuda.synchronize()

    def release(self, hold):
        """Drops the graph; with `hold` (fresh rounds) keeps the buffers allocated, within a
        quarter of free memory, so the next round lands on memory not used before."""
        self.graph = None
        if hold:
            free, _ = torch.cuda.mem_get_info()
            size = sum(t.numel() * t.element_size() for s in self.sets for t in s)
            size += self.spacer.numel() if self.spacer is not None else 0
            if HELD_BYTES[0] + size <= min(free // 4, 8 << 30):
                HELD.append((self.spacer, self.sets))
                HELD_BYTES[0] += size
        self.sets, self.spacer, self.pool, self.outs = [], None, None, []

    # A round ------------------------------------------------------------------------------

    def round(self, req):
        if self.fresh and self.rounds > 0:
            self.release(hold=True)
            self.build()
        self.rounds += 1
        duty = float(req["duty_cycle"])
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        values = []
        for _ in range(int(req["samples"])):
            began = time.perf_counter()
            if self.pool is not None:  # outside the timed replay: a new q per call, outputs zeroed
                self.pool.normal_(generator=self.gen)
                torch._foreach_zero_(self.outs)
            if self.lead_in:
                torch.cuda._sleep(LEAD_CYCLES)
            e0.record()
            self.graph.replay()
            e1.record()
            e1.synchronize()
            ms = e0.elapsed_time(e1)
            values.append(ms * 1000.0 / self.launches)
            if duty < 1.0:
                idle = ms / duty / 1000.0 - (time.perf_counter() - began)
                if idle > 0:
                    time.sleep(idle)
        return {"ok": True, "samples_us": values, "launches": self.launches}


def prepare(req):
    old = STATE.pop(req["peer"], None)
    if old is not None:
        old.release(hold=False)
    p = Prepared(req)
    STATE[req["peer"]] = p
    q, k, v = p.sets[0]
    return {"ok": True, "launches": p.launches,
            "backend": chosen(p.which, q, k, v, p.causal)}


def round_(req):
    p = STATE.get(req["peer"])
    if p is None or p.graph is None:
        raise RuntimeError(f"{req['peer']} is not prepared")
    return p.round(req)


def release(_req):
    for p in STATE.values():
        p.release(hold=False)
    STATE.clear()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return {"ok": True}


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = None
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "hello":
                ans = hello(req)
            elif cmd == "prepare":
                ans = prepare(req)
            elif cmd == "round":
                ans = round_(req)
            elif cmd == "release":
                ans = release(req)
            else:
                raise ValueError(f"unknown command {cmd!r}")
        except Exception as e:
            ans = {"ok": False, "error": f"{type(e).__name__}: {e}"[:2000]}
            # A peer that failed is not used again before it is prepared anew.
            if isinstance(req, dict):
                STATE.pop(req.get("peer"), None)
        print(json.dumps(ans), flush=True)


if __name__ == "__main__":
    main()
