#!/usr/bin/env python3
"""A model of the mma.sync kernel's causal grids on the SMs, for four orders of its units:
the busiest SM's time with NAME's order ("today": every head's row tiles heaviest first),
with the pairing alone (bench/variants/heavylight.patch: on a grid of one wave at two CTAs a
SM the first S CTAs take the units heaviest first, the rest from the lightest up), with
NAME_causal's `deal_causal_by_cost` (kernels/attention.cu: that pairing on one wave, else the
units heaviest first across the whole grid, rank-major) and with a rejected alternative (odd
heads' row tiles lightest first). No GPU.

The model: CTA L of the grid (x the row tile rank, fastest) is placed as the block scheduler
places it on a grid of one wave (CTA L and L + S on SM L mod S; bench/placement_probe.py checks
this on a card), later CTAs on the SM that frees a slot first. A causal row tile of rank x (x
= 0 the last) costs n - x key tiles. An SM with m resident CTAs runs each at rate eff[m] / m:
`--eff2` (default 1.6) is what two CTAs do together against one alone. At 1.6 the model puts
the L4 path's causal b4h16s512d64 at the non-causal one's time, as the gate measured it on an
H100 (17.18 against 17.74 µs, docs/PERF.md, 2026-12-06). Event-driven, O(CTAs · SMs).

  python3 bench/pair_order_sim.py [--eff2 1.6] [--eff3 1.8]
"""
import argparse

# (name, row tiles, batch * heads, SMs, CTAs a SM): the L4 path's causal d64 and d128 grids
CASES = [
    ("b4h16s512d64 causal, 132 SMs", 4, 64, 132, 2),
    ("b3h16s512d64 causal, 132 SMs", 4, 48, 132, 2),
    ("b2h16s1024d64 causal, 132 SMs", 8, 32, 132, 2),
    ("b1h16s2048d64 causal, 132 SMs", 16, 16, 132, 2),
    ("b8h16s512d64 causal, 132 SMs", 4, 128, 132, 2),
    ("b4h16s2048d64 causal, 132 SMs", 16, 64, 132, 2),
    ("b2h16s4096d128 causal, 132 SMs", 32, 32, 132, 1),
    ("b4h16s512d64 causal, 58 SMs (L4)", 4, 64, 58, 2),
    ("b2h8s512d64 causal, 58 SMs (L4)", 4, 16, 58, 2),
    ("b8h16s512d64 causal, 58 SMs (L4)", 4, 128, 58, 2),
    ("b4h16s2048d64 causal, 58 SMs (L4)", 16, 64, 58, 2),
    ("b2h16s4096d128 causal, 58 SMs (L4)", 32, 32, 58, 1),
]


def unit_of(order, l, n, heads, sms, per_sm):
    """(row tile rank, head) of CTA l under `order`."""
    x, y = l % n, l // n
    ctas = n * heads
    if order in ("paired", "by-cost") and per_sm == 2 and sms < ctas <= 2 * sms:
        r = l if l < sms else ctas - 1 - (l - sms)
        return r // heads, r % heads
    if order == "by-cost":
        return l // heads, l % heads
    if order == "odd-heads-light-first" and y % 2 == 1:
        return n - 1 - x, y
    return x, y


def busiest(order, n, heads, sms, per_sm, eff):
    costs = [n - unit_of(order, l, n, heads, sms, per_sm)[0] for l in range(n * heads)]
    assert sorted(unit_of(order, l, n, heads, sms, per_sm) for l in range(n * heads)) == \
        sorted((x, y) for x in range(n) for y in range(heads)), "not a bijection"
    resident = [[] for _ in range(sms)]
    nxt = 0
    for _ in range(per_sm):  # the first wave: CTA L on SM L mod S
        for s in range(sms):
            if nxt < len(costs):
                resident[s].append(float(costs[nxt]))
                nxt += 1
    t = 0.0
    while any(resident):
        dt = min(min(r) * len(r) / eff[len(r)] for r in resident if r)
        t += dt
        for s, r in enumerate(resident):
            if not r:
                continue
            rate = eff[len(r)] / len(r)
            r[:] = [w - rate * dt for w in r]
            while r and min(r) <= 1e-9:
                r.remove(min(r))
                if nxt < len(costs):
                    r.append(float(costs[nxt]))
                    nxt += 1
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eff2", type=float, default=1.6)
    ap.add_argument("--eff3", type=float, default=1.8)
    a = ap.parse_args()
    eff = {1: 1.0, 2: a.eff2, 3: a.eff3}
    orders = ["today", "paired", "by-cost", "odd-heads-light-first"]
    print(f"{'grid':36s} " + " ".join(f"{o:>22s}" for o in orders) + "   (key tiles; vs today)")
    for name, n, heads, sms, per_sm in CASES:
        t = [busiest(o, n, heads, sms, per_sm, eff) for o in orders]
        cells = [f"{t[0]:22.2f}"] + [f"{v:12.2f} ({v / t[0] - 1:+6.1%})" for v in t[1:]]
        print(f"{name:36s} " + " ".join(cells))


if __name__ == "__main__":
    main()
