#!/usr/bin/env python3
"""CPU model of the key split's arithmetic (bench/variants/ks2.patch), not of its indexing.

Each of a pair of warps walks half of every 64-key tile (32 keys) with its own running
maximum and sum in fp32, p = exp2(s * scale * log2(e) - base) as the kernel computes it, P
rounded to fp16 before P V; after the walk the two partial results merge with weights
exp2(m_half * sl2 - base(max)), a half that saw no key (causal, short rows) weighing 0. The
output is compared with float64 softmax attention on seeded N(0,1) and scaled inputs, causal
and not, from 1 to 1,000 keys. Exit 1 on a relative L2 error over 5e-3 or a non-finite
output. Needs numpy. The kernel itself is checked on a GPU by bench/kernel_check.py --ada.

    python3 bench/key_split_model.py
"""
import numpy as np
rng = np.random.default_rng(7)
def run(S, D, causal, scale_in):
    q = (rng.standard_normal((S, D)) * scale_in).astype(np.float16).astype(np.float32)
    k = (rng.standard_normal((S, D)) * scale_in).astype(np.float16).astype(np.float32)
    v = rng.standard_normal((S, D)).astype(np.float16).astype(np.float32)
    sc = 1 / np.sqrt(D); sl2 = np.float32(sc * 1.4426950408889634)
    s_all = (q @ k.T).astype(np.float32)
    if causal:
        s_all[np.triu_indices(S, 1)] = -np.inf
    halves = []
    for h in range(2):
        m = np.full(S, -np.inf, np.float32); l = np.zeros(S, np.float32); o = np.zeros((S, D), np.float32)
        for n0 in range(h * 32, S, 64):
            s = s_all[:, n0:n0 + 32]
            mx = np.maximum(m, s.max(axis=1))
            base = np.where(mx == -np.inf, 0, mx * sl2).astype(np.float32)
            with np.errstate(invalid='ignore'):
                a = np.exp2(np.where(m == -np.inf, -np.inf, m * sl2 - base)).astype(np.float32)
            p = np.exp2(s * sl2 - base[:, None]).astype(np.float32)
            l = l * a + p.sum(axis=1)
            o = o * a[:, None] + p.astype(np.float16).astype(np.float32) @ v[n0:n0 + 32]
            m = mx
        halves.append((m, l, o))
    (m1, l1, o1), (m2, l2, o2) = halves
    mx = np.maximum(m1, m2)
    base = np.where(mx == -np.inf, 0, mx * sl2)
    a1 = np.exp2(np.where(m1 == -np.inf, -np.inf, m1 * sl2 - base))
    a2 = np.exp2(np.where(m2 == -np.inf, -np.inf, m2 * sl2 - base))
    l = l1 * a1 + l2 * a2
    inv = np.where(l > 0, 1 / np.where(l > 0, l, 1), 0)
    out = (o1 * (a1 * inv)[:, None] + o2 * (a2 * inv)[:, None]).astype(np.float32)
    s64 = (q.astype(np.float64) @ k.T.astype(np.float64)) * sc
    if causal:
        s64[np.triu_indices(S, 1)] = -np.inf
    p64 = np.exp(s64 - s64.max(axis=1, keepdims=True)); p64 /= p64.sum(axis=1, keepdims=True)
    ref = p64 @ v.astype(np.float64)
    return np.linalg.norm(out - ref) / np.linalg.norm(ref), np.isfinite(out).all()
bad = 0
for S in (1, 17, 33, 64, 100, 319, 1000):
    for causal in (False, True):
        for sc in (1.0, 4.0):
            e, fin = run(S, 128, causal, sc)
            ok = fin and e < 5e-3
            bad += not ok
            print(f"S={S:5d} causal={causal!s:5} input scale {sc}: rel_l2 {e:.2e}"
                  + ("" if ok else "  FAIL"))
print("key split model:", "ALL PASSED" if bad == 0 else f"{bad} FAILED")
raise SystemExit(1 if bad else 0)
