#!/usr/bin/env python3
"""The host's grid rule in Python, for the bench scripts that launch our kernels as the gate
does (bench/l4_sms.py): src/gpu/device.rs `grid_x`, `launch_grid_x` and `cost_of_grid` for a
form that computes one tile at a time (`NAME_tiles_at_once` 1).

A port can drift from the rule it copies, so both are checked against the same vectors,
tests/vectors/launch_grid.json: the Rust rule by its unit test, this port by

  python3 bench/grid_rule.py --self-test      (CI: .ci/run; exit 1 on any difference)
"""
import json
import math
import os
import sys


def cost_of_grid(B, H, S, rows, per_sm, x, pass_rows, sms):
    """`cost_of_grid`: the busiest SM's rows for a form of `rows` rows, one tile at once,
    `per_sm` CTAs a SM held at once, on a grid of x * B * H CTAs of k = ceil(tiles / x) tiles
    each; every pass over the keys costs `pass_rows` more."""
    tiles = math.ceil(S / rows)
    c = math.ceil(x * B * H / sms)
    k = math.ceil(tiles / x)
    full, last = divmod(c, per_sm)
    return full * k * (per_sm * rows + pass_rows) + (k * (last * rows + pass_rows) if last else 0)


def launch_grid_x(B, H, S, causal, rows, per_sm, fill, or_one, sms):
    """`launch_grid_x`: grid_x (fill = NAME_fill as (CTAs a SM, most tiles a CTA), or None),
    then the one-wave cut of an overfilled non-causal grid, then NAME_fill_or_one's one tile a
    CTA where it costs strictly less. A pass costs the form's rows more."""
    tiles = math.ceil(S / rows)
    if not fill:
        return tiles
    fill_per_sm, most = fill
    k = min(max(math.ceil(tiles * B * H / (fill_per_sm * sms)), 1), most)
    x = math.ceil(tiles / k)

    def cost(x):
        return cost_of_grid(B, H, S, rows, per_sm, x, rows, sms)
    slots = fill_per_sm * sms
    if not causal and x * B * H > slots and slots // (B * H):
        k = math.ceil(tiles / (slots // (B * H)))
        if k <= most and cost(math.ceil(tiles / k)) < cost(x):
            x = math.ceil(tiles / k)
    if or_one and not causal and x != tiles and cost(tiles) < cost(x):
        x = tiles
    return x


def self_test(path):
    """Every case of the vectors file through launch_grid_x; the differences printed."""
    cases = json.load(open(path))["cases"]
    bad = 0
    for c in cases:
        fill = tuple(c["fill"]) if c["fill"] else None
        got = launch_grid_x(c["batch"], c["heads"], c["seq_len"], c["causal"], c["rows"],
                            c["ctas_per_sm"], fill, c["fill_or_one"], c["sms"])
        if got != c["x"]:
            bad += 1
            print(f"grid_rule: {c} gives x = {got}")
    print(f"grid_rule: {len(cases) - bad} of {len(cases)} cases as the host's rule")
    return 1 if bad or not cases else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.exit(self_test(os.path.join(here, "..", "tests", "vectors", "launch_grid.json")))
    print(__doc__)
    sys.exit(2)
