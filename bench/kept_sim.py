#!/usr/bin/env python3
"""How often the kept softmax base (bench/variants/kept-base.patch, docs/KERNEL_LOG.md,
seventeenth session) falls back to the exact softmax on the gate's input mixture (CPU, numpy).

The candidate computes, for every key tile after a row's first, p = exp2(s * sl2 - m * sl2)
against the row maximum m it already has, and keeps it only where every lane's partial sum
of the tile's p (a lane holds the columns c with (c // 2) % 4 == lane % 4 of its rows, the
mma/wgmma accumulator layout) is at most 16384 for every row of the warp; otherwise the warp
takes the exact softmax of the tile and m becomes the exact maximum. This counts those
fallbacks: q and k of `slices` (batch, head) slices drawn as kernels/util.cu draws them
(bench/mixture_study.py's generator, one random key per slice, so the classes fall as the
mixture's shares say), rounded to fp16, a softmax scale drawn as a timed launch's (0.8 ...
1.25 times 1/sqrt(d), log-uniform), warps of `rows` rows, tiles of `bn` keys.

Also counted: the tiles where some warp of a group of GROUP warps (default 4: a wgmma
warpgroup, which waits for its slowest warp at every wgmma) falls back.

  python3 bench/kept_sim.py SEQ_LEN HEAD_DIM BN ROWS SLICES [GROUP]
  e.g. python3 bench/kept_sim.py 512 64 128 16 64    (the d64 wgmma kernel at 512 keys)
"""
import sys

import numpy as np

import mixture_study as ms

LIMIT = 16384.0  # CG_KEPT_SUM_MAX in the candidate


def main():
    S, d, bn, rows, slices = (int(x) for x in sys.argv[1:6])
    group = int(sys.argv[6]) if len(sys.argv) > 6 else 4
    failed = {}  # (slice, warp, tile) -> the warp fell back there
    rng = np.random.default_rng(1)
    cols = np.arange(bn)
    lane = (cols // 2) % 4
    for bh in range(slices):
        key = int(rng.integers(1, 2**62))
        q, _ = ms.head_values(key, ms.Q, bh, S, d)
        k, _ = ms.head_values(key, ms.K, bh, S, d)
        q = q.astype(np.float16).astype(np.float64)
        k = k.astype(np.float16).astype(np.float64)
        scale = np.exp(rng.uniform(np.log(0.8), np.log(1.25))) / np.sqrt(d)
        s = (q @ k.T) * scale * 1.4426950408889634  # log2 units
        for w0 in range(0, S, rows):
            warp = s[w0:w0 + rows]
            m = warp[:, :bn].max(1)  # the first tile: exact
            for j in range(1, S // bn):
                t = warp[:, j * bn:(j + 1) * bn]
                p = np.exp2(np.minimum(t - m[:, None], 200.0))
                sums = np.stack([p[:, lane == x].sum(1) for x in range(4)], 1)
                bad = not (sums <= LIMIT).all()
                failed[(bh, w0 // rows, j)] = bad
                if bad:
                    m = np.maximum(m, t.max(1))
    tiles, fallbacks = len(failed), sum(failed.values())
    groups = {}
    for (bh, w, j), bad in failed.items():
        key = (bh, w // group, j)
        groups[key] = groups.get(key, False) or bad
    g_bad = sum(groups.values())
    print(f"seq_len {S}, head_dim {d}, {bn}-key tiles, warps of {rows} rows, {slices} slices: "
          f"the kept base falls back on {fallbacks} of {tiles} tiles after the first "
          f"({100.0 * fallbacks / max(tiles, 1):.1f}%); some warp of a group of {group} on "
          f"{g_bad} of {len(groups)} ({100.0 * g_bad / max(len(groups), 1):.1f}%)")


if __name__ == "__main__":
    main()
