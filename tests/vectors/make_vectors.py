#!/usr/bin/env python3
"""Reference vectors for tests/it/stats_vs_scipy.rs, computed with numpy / scipy / statsmodels.

Re-run (from the repository root):

    pip install numpy scipy statsmodels
    python3 tests/vectors/make_vectors.py          # writes tests/vectors/stats_vectors.json

Last run with: Python 3.11.7, numpy 2.4.6, scipy 1.17.1, statsmodels 0.15.0
(the versions actually used are also written into the JSON's "meta").

Everything is drawn from one numpy Generator with a fixed seed, so re-running with the same
library versions reproduces the file byte for byte.

Data values are rounded to 6 decimals (1 ps when read as microseconds) and written as short
decimals, so that any JSON reader, including serde_json's default (not correctly-rounded for
17-digit numbers) float parser, reads back exactly the doubles used here.

Per case (statistics of the pooled values of each side):
  * numpy median, quantile(0.9) (method "linear"), mean, std(ddof=1) of base and cand;
  * scipy.stats.mannwhitneyu(cand, base, alternative="greater" / "less") -> U, p, plus the
    method scipy's "auto" rule picks (exact iff no ties and min(n1, n2) <= 8);
  * Cliff's delta by brute force (sign of every pairwise difference, in chunks);
  * percentile bootstrap of median(cand)/median(base), B resamples, ends at the
    (1-c)/2 and (1+c)/2 quantiles, base and cand resampled independently; a side with
    several rounds is resampled hierarchically (rounds with replacement, then values within
    each drawn round with replacement, pooled, numpy median). This is the naive
    resample-and-take-the-median algorithm, independent of the Rust Beta shortcut. The
    bootstrap is re-run with two more numpy seeds; "numpy_spread" is the largest relative
    difference of an interval end between those runs (Monte-Carlo noise), which the Rust
    test's 0.2 % tolerance must comfortably exceed.
Plus Holm-adjusted p-value vectors from statsmodels.stats.multitest.multipletests.
"""

import json
import platform
import sys
from pathlib import Path

import numpy as np
import scipy
import statsmodels
from scipy import stats
from statsmodels.stats.multitest import multipletests

SEED = 20240611
B = 10_000
CONFIDENCE = 0.95
OUT = Path(__file__).with_name("stats_vectors.json")

rng = np.random.default_rng(SEED)


def q6(x):
    """Round to 6 decimals through the decimal string, so JSON round-trips exactly."""
    return [float(f"{v:.6f}") for v in np.asarray(x, dtype=float)]


def lognormal(n, median, rel):
    return q6(median * np.exp(rng.normal(0.0, rel, n)))


def rounds_of(n_rounds, per_round, median, rel, drift):
    """Rounds whose own medians drift by a relative sd `drift` around `median`."""
    out = []
    for _ in range(n_rounds):
        m = median * np.exp(rng.normal(0.0, drift))
        k = per_round if np.isscalar(per_round) else int(rng.integers(per_round[0], per_round[1] + 1))
        out.append(lognormal(k, m, rel))
    return out


def describe(x):
    x = np.asarray(x)
    return {
        "n": int(x.size),
        "median": float(np.median(x)),
        "q90": float(np.quantile(x, 0.9)),
        "mean": float(np.mean(x)),
        "std": float(np.std(x, ddof=1)),
    }


def cliffs_delta_brute(c, b):
    c = np.asarray(c)
    b = np.asarray(b)
    total = 0
    for i in range(0, c.size, 1000):
        total += int(np.sign(c[i : i + 1000, None] - b[None, :]).sum())
    return total / (c.size * b.size)


def boot_medians(rounds, g, reps):
    """`reps` bootstrap medians of one side (hierarchical when it has several rounds)."""
    if len(rounds) == 1:
        x = np.asarray(rounds[0])
        n = x.size
        out = np.empty(reps)
        chunk = max(1, 2_000_000 // n)
        for s in range(0, reps, chunk):
            e = min(reps, s + chunk)
            idx = g.integers(0, n, size=(e - s, n))
            out[s:e] = np.median(x[idx], axis=1)
        return out
    arrays = [np.asarray(r) for r in rounds]
    r = len(arrays)
    out = np.empty(reps)
    for i in range(reps):
        picked = g.integers(0, r, size=r)
        pooled = np.concatenate([arrays[j][g.integers(0, arrays[j].size, size=arrays[j].size)] for j in picked])
        out[i] = np.median(pooled)
    return out


def bootstrap_ci(base_rounds, cand_rounds, g):
    mb = boot_medians(base_rounds, g, B)
    mc = boot_medians(cand_rounds, g, B)
    ratios = mc / mb
    lo, hi = np.quantile(ratios, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return float(lo), float(hi)


def mwu(cand, base, alternative, method):
    r = stats.mannwhitneyu(cand, base, alternative=alternative)
    # Make sure the method label below is the one scipy's "auto" actually used.
    forced = stats.mannwhitneyu(cand, base, alternative=alternative, method=method)
    assert (forced.statistic, forced.pvalue) == (r.statistic, r.pvalue), (method, r, forced)
    return {"u": float(r.statistic), "p": float(r.pvalue)}


def make_case(name, base_rounds, cand_rounds, rust_seed, bootstrap=True):
    base = np.concatenate([np.asarray(r) for r in base_rounds])
    cand = np.concatenate([np.asarray(r) for r in cand_rounds])
    pooled = np.concatenate([cand, base])
    ties = np.unique(pooled).size < pooled.size
    exact = (not ties) and min(cand.size, base.size) <= 8
    method = "exact" if exact else "asymptotic"
    case = {
        "name": name,
        "base": base_rounds,
        "cand": cand_rounds,
        "base_stats": describe(base),
        "cand_stats": describe(cand),
        "mwu_greater": mwu(cand, base, "greater", method),
        "mwu_less": mwu(cand, base, "less", method),
        "mwu_method": method,
        "cliffs_delta": cliffs_delta_brute(cand, base),
        "bootstrap": None,
    }
    if bootstrap:
        seeds = rng.integers(0, 2**63, size=3)
        runs = [bootstrap_ci(base_rounds, cand_rounds, np.random.default_rng(int(s))) for s in seeds]
        lo, hi = runs[0]
        spread = max(
            max(abs(r[0] - lo) / abs(lo), abs(r[1] - hi) / abs(hi)) for r in runs[1:]
        )
        case["bootstrap"] = {
            "resamples": B,
            "confidence": CONFIDENCE,
            "rust_seed": rust_seed,
            "low": lo,
            "high": hi,
            "point": float(np.median(cand) / np.median(base)),
            "numpy_spread": spread,
        }
        print(f"{name:28s} [{lo:.6f}, {hi:.6f}] width {hi - lo:.2e} numpy seed spread {spread:.2e}")
    else:
        print(f"{name:28s} (no bootstrap)")
    return case


def main():
    cases = []
    seed = iter(range(1, 1000))

    def add(name, base, cand, **kw):
        cases.append(make_case(name, base, cand, next(seed), **kw))

    # Same distribution, and shifts both ways (2 % spread, 3 % shift).
    add("equal_200_vs_200", [lognormal(200, 9.0, 0.02)], [lognormal(200, 9.0, 0.02)])
    add("slower_3pct_150_vs_150", [lognormal(150, 9.0, 0.02)], [lognormal(150, 9.27, 0.02)])
    add("faster_3pct_180_vs_120", [lognormal(180, 9.0, 0.02)], [lognormal(120, 8.73, 0.02)])
    add("slight_shift_400_vs_350", [lognormal(400, 9.0, 0.05)], [lognormal(350, 9.05, 0.05)])

    # Small n, no ties: scipy uses the exact distribution. (cand n, base n)
    # No bootstrap here: with <= 8 values the bootstrap median is so discrete that two
    # independent Monte-Carlo runs differ by more than the Rust test's tolerance.
    for nc, nb, shift in [(2, 2, 1.0), (2, 8, 1.1), (8, 2, 1.0), (3, 5, 1.05), (5, 3, 0.95),
                          (4, 7, 1.0), (6, 6, 1.08), (8, 8, 1.0), (8, 8, 1.2), (7, 4, 0.9),
                          (8, 40, 1.03), (40, 6, 1.0)]:
        add(f"exact_{nc}_vs_{nb}_x{shift}", [lognormal(nb, 9.0, 0.05)],
            [lognormal(nc, 9.0 * shift, 0.05)], bootstrap=False)

    # Heavy ties: timings quantised to 10 ns (about 9 levels), and to 4 levels.
    q = lambda x, step: [float(f"{round(v / step) * step:.6f}") for v in x]
    add("ties_10ns_80_vs_60", [q(lognormal(60, 9.0, 0.005), 0.01)], [q(lognormal(80, 9.02, 0.005), 0.01)])
    add("ties_4_levels_50_vs_50", [q(lognormal(50, 9.0, 0.03), 0.25)], [q(lognormal(50, 9.1, 0.03), 0.25)],
        bootstrap=False)
    add("ties_small_6_vs_5", [q(lognormal(5, 9.0, 0.01), 0.1)], [q(lognormal(6, 9.05, 0.01), 0.1)],
        bootstrap=False)

    # Unequal sizes: 7 vs 300 is still exact (min size <= 8, no ties) in scipy.
    add("unequal_7_vs_300", [lognormal(300, 9.0, 0.02)], [lognormal(7, 9.4, 0.02)], bootstrap=False)
    add("unequal_300_vs_7", [lognormal(7, 9.0, 0.02)], [lognormal(300, 9.1, 0.02)], bootstrap=False)
    add("unequal_25_vs_500", [lognormal(500, 9.0, 0.03)], [lognormal(25, 9.1, 0.03)])

    # Outliers: a few huge values (preemption, clock changes) on both sides.
    b = lognormal(120, 9.0, 0.02)
    c = lognormal(110, 9.1, 0.02)
    b[5], b[70], c[3], c[50], c[99] = 450.0, 9000.5, 120.25, 3000.75, 88000.0
    add("outliers_110_vs_120", [b], [c])

    # Every value equal (zero spread).
    add("all_equal_20_vs_15", [[9.0] * 15], [[9.0] * 20])
    add("all_equal_5_vs_5", [[3.25] * 5], [[3.25] * 5])
    # Constant but different.
    add("constant_shift_10_vs_10", [[9.0] * 10], [[9.5] * 10])

    # Multi-round (hierarchical bootstrap): rounds drift by 1 %.
    add("rounds_10x30_vs_12x25", rounds_of(10, 30, 9.0, 0.005, 0.01), rounds_of(12, 25, 9.2, 0.005, 0.01))
    add("rounds_uneven_vs_single", [lognormal(300, 9.0, 0.01)], rounds_of(8, (5, 60), 9.0, 0.005, 0.01))
    add("rounds_single_vs_rounds_faster", rounds_of(6, 40, 9.0, 0.01, 0.005), [lognormal(250, 8.8, 0.01)])
    add("rounds_50x50_vs_50x50", rounds_of(50, 50, 9.0, 0.005, 0.003), rounds_of(50, 50, 9.01, 0.005, 0.003))

    # Realistic timings: lognormal around 9 us, 0.5 % spread, 10,000 vs 10,000.
    add("timing_10k_equal", [lognormal(10_000, 9.0, 0.005)], [lognormal(10_000, 9.0, 0.005)])
    add("timing_10k_slower_0p5pct", [lognormal(10_000, 9.0, 0.005)], [lognormal(10_000, 9.045, 0.005)])

    holm_cases = []
    for p in [
        [0.01, 0.04, 0.03, 0.005],
        [0.2],
        [0.0, 1.0, 0.5, 0.5, 1e-12, 0.049],
        [0.3, 0.3, 0.3, 0.01],
        list(map(float, rng.uniform(0, 0.2, 25))),
        list(map(float, 10 ** rng.uniform(-15, 0, 12))),
    ]:
        adj = multipletests(p, method="holm")[1]
        holm_cases.append({"p": p, "adjusted": [float(v) for v in adj]})

    doc = {
        "meta": {
            "generator": "tests/vectors/make_vectors.py",
            "seed": SEED,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "statsmodels": statsmodels.__version__,
            "resamples": B,
            "confidence": CONFIDENCE,
        },
        "cases": cases,
        "holm": holm_cases,
    }
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.2f} MB, {len(cases)} cases)", file=sys.stderr)


if __name__ == "__main__":
    main()
