#!/usr/bin/env python3
"""Can a host rule tell when the L4 path's causal d64 launches should run NAME_small's tile?
(issue 40, twenty-first session; CPU only, no GPU.)

The measured change of each causal d64 shape when NAME's 128-row tile (two CTAs per SM) is
replaced by NAME_small's 64-row tile (three CTAs per SM), on 132 SMs (the H200) and on 56 (a
green context; an L4 has 58): `bash bench/issue40_device.sh twentyfirst`, bench/l4_sms.py's
medians, docs/PERF.md "2026-12-04 (twenty-first session)". Two models of the grid, each fitted
to all 40 points by a grid search, and how often each gets the sign of a change of more than
1% wrong:

  list      the launch simulated: CTAs in the order the hardware dispatches them (blockIdx.x
            fastest, x = 0 the heaviest causal row tile), each to the SM slot that frees
            first; a CTA costs c per key tile it computes plus a fixed d; NAME's c is 1,
            NAME_small's c and both d are fitted;
  rounds    the host's non-causal model (src/gpu/device.rs, busiest_sm_cost): the busiest
            SM's rounds of CTAs, a pass costing its rows plus a fixed part; NAME_small's row
            cost and fixed part fitted.

  python3 bench/causal_form_fit.py
"""
import heapq
import math

# (batch, heads, seq_len): (main µs, small µs) on 132 SMs, then on 56 SMs
MEASURED = {
    (4, 16, 256): (6.77, 6.84, 12.09, 12.14),
    (4, 16, 384): (13.03, 11.41, 21.36, 19.20),
    (4, 16, 512): (16.36, 16.23, 30.13, 29.56),
    (4, 16, 640): (23.06, 22.91, 41.87, 41.10),
    (4, 16, 768): (30.60, 30.23, 54.95, 55.38),
    (4, 16, 1024): (48.12, 45.95, 87.57, 90.13),
    (4, 16, 1280): (65.43, 66.03, 126.68, 132.01),
    (4, 16, 1536): (87.19, 88.47, 170.47, 182.27),
    (8, 16, 256): (10.16, 11.61, 20.86, 19.15),
    (8, 16, 512): (28.99, 27.70, 54.47, 53.90),
    (8, 16, 768): (52.11, 51.18, 100.90, 103.34),
    (8, 16, 1024): (79.40, 80.54, 161.07, 169.67),
    (16, 16, 512): (50.19, 49.00, 100.65, 101.06),
    (16, 16, 1024): (142.35, 148.52, 306.93, 326.18),
    (2, 16, 1024): (28.58, 27.19, 49.92, 49.08),
    (1, 16, 2048): (51.98, 47.85, 88.64, 88.72),
    (3, 16, 640): (19.33, 18.11, 34.10, 32.67),
    (6, 8, 512): (16.20, 13.25, 25.45, 23.57),
}
KEYS = 64  # keys per K/V tile, both forms
MAIN = (128, 2)  # rows per CTA, CTAs per SM
SMALL = (64, 3)


def list_schedule(b, h, s, form, sms, c, d):
    rows, per_sm = form
    tiles = math.ceil(s / rows)
    slots = [0.0] * (sms * per_sm)
    end = 0.0
    for _ in range(b * h):
        for x in range(tiles):
            q = tiles - 1 - x
            t = c * math.ceil(min((q + 1) * rows, s) / KEYS) + d
            start = heapq.heappop(slots)
            end = max(end, start + t)
            heapq.heappush(slots, start + t)
    return end


def rounds(b, h, s, form, sms, row_cost, fixed):
    rows, per_sm = form
    c = math.ceil(math.ceil(s / rows) * b * h / sms)
    pas = lambda r: r * rows * row_cost + fixed  # noqa: E731
    return (c // per_sm) * pas(per_sm) + (pas(c % per_sm) if c % per_sm else 0)


def score(predict):
    err, wrong = 0.0, 0
    for (b, h, s), (m132, s132, m56, s56) in MEASURED.items():
        for sms, main, small in ((132, m132, s132), (56, m56, s56)):
            pred = predict(b, h, s, SMALL, sms) / predict(b, h, s, MAIN, sms) - 1
            meas = small / main - 1
            err += (pred - meas) ** 2
            wrong += abs(meas) > 0.01 and (pred < 0) != (meas < 0)
    return err, wrong


def main():
    n = 2 * len(MEASURED)
    best = min(
        (score(lambda b, h, s, f, sms: list_schedule(
            b, h, s, f, sms, cs if f == SMALL else 1.0, ds if f == SMALL else dm)), cs, dm, ds)
        for cs in [0.70 + 0.02 * i for i in range(20)]
        for dm in (0, 0.5, 1, 1.5, 2, 3, 4)
        for ds in (0, 0.5, 1, 1.5, 2, 3, 4))
    (err, wrong), cs, dm, ds = best
    print(f"list:   c_small {cs:.2f}, d_main {dm}, d_small {ds}: squared error {err:.3f}, "
          f"sign wrong on {wrong} of {n}")
    best = min(
        (score(lambda b, h, s, f, sms: rounds(
            b, h, s, f, sms, e if f == SMALL else 1.0, fx if f == SMALL else 128)), e, fx)
        for e in [0.80 + 0.02 * i for i in range(30)]
        for fx in range(0, 400, 16))
    (err, wrong), e, fx = best
    print(f"rounds: small row cost {e:.2f}, small fixed part {fx} rows: squared error "
          f"{err:.3f}, sign wrong on {wrong} of {n}")


if __name__ == "__main__":
    main()
