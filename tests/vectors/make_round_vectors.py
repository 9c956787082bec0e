#!/usr/bin/env python3
"""Reference vectors for tests/it/rounds_vs_scipy.rs (the round-level margin tests of
src/stats/margin.rs), computed with numpy / scipy, independently of the Rust code.

Re-run (from the repository root):

    python3 -m venv /tmp/sv && /tmp/sv/bin/pip install numpy==2.4.6 scipy==1.17.1
    /tmp/sv/bin/python tests/vectors/make_round_vectors.py   # writes tests/vectors/round_vectors.json

Last run with: Python 3.11.7, numpy 2.4.6, scipy 1.17.1 (the versions actually used are
also written into the JSON's "meta").

Everything is drawn from one numpy Generator with a fixed seed, so re-running with the same
library versions reproduces the file byte for byte. Data values are rounded to 6 decimals and
written as short decimals, so that any JSON reader (serde_json's default float parser
included) reads back exactly the doubles used here. Reference results are written with
Python's shortest round-trip repr; a reader that is not correctly rounded may be 1 ulp off.

A case is a base and a candidate, each a list of rounds (a list of timings), and a margin m.
Per case:
  * "base_medians" / "cand_medians": numpy.median of each round.
  * "paired" (only when both sides have the same number of rounds, >= 2):
    d = log(med_c) - log(med_b);
    p_slower = scipy.stats.ttest_1samp(d, log1p(m),  alternative="greater").pvalue,
    p_faster = scipy.stats.ttest_1samp(d, log1p(-m), alternative="less").pvalue,
    estimate = mean(d), se = std(d, ddof=1)/sqrt(n), df = n - 1.
  * "unpaired": a list of variants, each with the baseline's "process_rounds" (rounds per
    baseline process, in order; [] = one process) and an assumed process spread (sd, df;
    df null = infinite):
      - "welch" (one process, sd 0): p from scipy.stats.ttest_ind(log med_c,
        log med_b + log1p(m), equal_var=False, alternative="greater") and
        ttest_ind(log med_c, log med_b + log1p(-m), equal_var=False, alternative="less");
        estimate = mean(log med_c) - mean(log med_b); se and Welch df by hand in numpy
        (and checked here against the df / confidence interval scipy reports).
      - "spread": by hand in numpy, the formula of the Rust doc of unpaired_margin_test:
        k processes, s_w^2 the pooled within-process variance of the log base medians
        (n_b - k df), var = s_c^2/n_c + s_w^2/n_b + sd^2 (1 + 1/k), Satterthwaite df over
        the three terms (n_c - 1, n_b - k, spread df; a zero or infinite-df term adds 0);
        p_slower = t.sf((est - log1p(m))/se, df), p_faster = t.cdf((est - log1p(-m))/se, df)
        (scipy.stats.norm where the total df is infinite).
  * For every test (paired and each unpaired variant), with its estimate, se and df:
    "interval95" = exp(scipy.stats.t.interval(0.95, df, loc=estimate, scale=se)),
    "lower_bound05" = exp(estimate - t.ppf(0.95, df) se),
    "upper_bound05" = exp(estimate + t.ppf(0.95, df) se),
    "detectable" = exp(log1p(m) + (t.ppf(0.95, df) + t.ppf(0.8, df)) se) - 1
    (the normal law where df is infinite).
  * "process_spread" (cases whose baseline was recorded in k = 2..5 processes): by hand in
    numpy, the method of moments of the Rust doc of process_spread: process means of the log
    round medians, pooled within-process variance s_w^2 (0 when every process has one
    round), r = harmonic mean of the rounds per process,
    sd = sqrt(max(var(means, ddof=1) - s_w^2 / r, 0.001^2)), df = k - 1.

The "stable_*" cases have very stable rounds and an assumed spread (infinite df) that
dominates the variance, so their Satterthwaite df is huge (3e5 .. 1.1e7): the t law far out,
where its quantile is hard to compute accurately (scipy's t.ppf is the reference; the last
one crosses margin.rs's switch to the normal law at df = 1e7).

Zero-variance paired / Welch tests are not included (scipy gives nan there); the one case
with constant round medians checks only spread variants, whose se comes from the spread.
"""

import json
import math
import platform
import sys
from pathlib import Path

import numpy as np
import scipy
from scipy import stats

SEED = 20240612
CONFIDENCE = 0.95
ALPHA = 0.05
POWER = 0.8
MIN_PROCESS_SD = 0.001
OUT = Path(__file__).with_name("round_vectors.json")

rng = np.random.default_rng(SEED)


def q6(x):
    """Round to 6 decimals through the decimal string, so JSON round-trips exactly."""
    return [float(f"{v:.6f}") for v in np.asarray(x, dtype=float)]


def count(per_round):
    """Values in one round: an int, or an inclusive (lo, hi) range drawn per round."""
    if np.isscalar(per_round):
        return int(per_round)
    return int(rng.integers(per_round[0], per_round[1] + 1))


def one_round(median, per_round, rel):
    return q6(median * np.exp(rng.normal(0.0, rel, count(per_round))))


def rounds_of(n_rounds, per_round, median, rel=0.005, drift=0.01, process_rounds=None, process_sd=0.0):
    """Rounds whose medians drift (relative sd `drift`) around `median`; with
    `process_rounds`, consecutive groups of rounds share a process shift (sd `process_sd`)."""
    groups = process_rounds or [n_rounds]
    assert sum(groups) == n_rounds
    out = []
    for g in groups:
        shift = np.exp(rng.normal(0.0, process_sd)) if process_sd > 0 else 1.0
        for _ in range(g):
            out.append(one_round(median * shift * np.exp(rng.normal(0.0, drift)), per_round, rel))
    return out


def paired_rounds(n_rounds, per_round, median, ratio, rel=0.005, drift=0.01, noise=0.005):
    """A/B rounds in one process: both sides of pair i share the round's drift, plus
    independent per-side noise `noise`."""
    base, cand = [], []
    for _ in range(n_rounds):
        common = median * np.exp(rng.normal(0.0, drift))
        base.append(one_round(common * np.exp(rng.normal(0.0, noise)), per_round, rel))
        cand.append(one_round(common * ratio * np.exp(rng.normal(0.0, noise)), per_round, rel))
    return base, cand


def law(df):
    return stats.norm() if math.isinf(df) else stats.t(df)


def bounds(estimate, se, df, m):
    """Interval, one-sided bounds and detectable slowdown of a t (or normal) law."""
    dist = law(df)
    if math.isinf(df):
        lo, hi = stats.norm.interval(CONFIDENCE, loc=estimate, scale=se)
    else:
        lo, hi = stats.t.interval(CONFIDENCE, df, loc=estimate, scale=se)
    t1 = dist.ppf(1 - ALPHA)
    return {
        "interval95": [float(np.exp(lo)), float(np.exp(hi))],
        "lower_bound05": float(np.exp(estimate - t1 * se)),
        "upper_bound05": float(np.exp(estimate + t1 * se)),
        "detectable": float(np.expm1(np.log1p(m) + (t1 + dist.ppf(POWER)) * se)),
    }


def close(a, b, tol=1e-12):
    return abs(a - b) <= tol * max(abs(a), abs(b))


def paired(bl, cl, m):
    d = cl - bl
    n = d.size
    slower = stats.ttest_1samp(d, np.log1p(m), alternative="greater")
    faster = stats.ttest_1samp(d, np.log1p(-m), alternative="less")
    est = float(np.mean(d))
    se = float(np.std(d, ddof=1) / np.sqrt(n))
    df = n - 1
    # The hand-computed se / df must be the ones scipy used.
    assert slower.df == df and close(slower.statistic, (est - np.log1p(m)) / se, 1e-10)
    out = {
        "n": n,
        "estimate": est,
        "se": se,
        "df": float(df),
        "statistic": float(slower.statistic),
        "p_slower": float(slower.pvalue),
        "p_faster": float(faster.pvalue),
    }
    out.update(bounds(est, se, df, m))
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(CONFIDENCE)
    assert close(np.exp(ci.low), out["interval95"][0]) and close(np.exp(ci.high), out["interval95"][1])
    return out


def welch(bl, cl, m):
    nb, nc = bl.size, cl.size
    slower = stats.ttest_ind(cl, bl + np.log1p(m), equal_var=False, alternative="greater")
    faster = stats.ttest_ind(cl, bl + np.log1p(-m), equal_var=False, alternative="less")
    est = float(np.mean(cl) - np.mean(bl))
    vc = np.var(cl, ddof=1) / nc
    vb = np.var(bl, ddof=1) / nb
    se = float(np.sqrt(vc + vb))
    df = float((vc + vb) ** 2 / (vc**2 / (nc - 1) + vb**2 / (nb - 1)))
    assert close(slower.df, df, 1e-10), (slower.df, df)
    assert close(slower.statistic, (est - np.log1p(m)) / se, 1e-10)
    out = {
        "kind": "welch",
        "process_rounds": [],
        "spread_sd": 0.0,
        "spread_df": None,
        "estimate": est,
        "se": se,
        "df": df,
        "p_slower": float(slower.pvalue),
        "p_faster": float(faster.pvalue),
    }
    out.update(bounds(est, se, df, m))
    ci = stats.ttest_ind(cl, bl, equal_var=False).confidence_interval(CONFIDENCE)
    assert close(np.exp(ci.low), out["interval95"][0]) and close(np.exp(ci.high), out["interval95"][1])
    return out


def with_spread(bl, cl, process_rounds, sd, sd_df, m):
    """The Rust doc formula of unpaired_margin_test, by hand (sd_df = inf: assumed)."""
    nb, nc = bl.size, cl.size
    parts = process_rounds or [nb]
    k = len(parts)
    assert sum(parts) == nb and nb > k
    groups = np.split(bl, np.cumsum(parts)[:-1])
    sw2 = sum(float(np.sum((g - np.mean(g)) ** 2)) for g in groups) / (nb - k)
    vc = float(np.var(cl, ddof=1)) / nc
    vb = sw2 / nb
    vp = sd**2 * (1 + 1 / k)
    var = vc + vb + vp
    terms = [(vc, nc - 1), (vb, nb - k), (vp, sd_df)]
    denom = sum(v * v / d for v, d in terms if v > 0 and not math.isinf(d))
    df = var * var / denom if denom > 0 else math.inf
    est = float(np.mean(cl) - np.mean(bl))
    se = math.sqrt(var)
    dist = law(df)
    out = {
        "kind": "spread",
        "process_rounds": list(process_rounds),
        "spread_sd": sd,
        "spread_df": None if math.isinf(sd_df) else float(sd_df),
        "estimate": est,
        "se": se,
        "df": None if math.isinf(df) else float(df),
        "p_slower": float(dist.sf((est - np.log1p(m)) / se)),
        "p_faster": float(dist.cdf((est - np.log1p(-m)) / se)),
    }
    out.update(bounds(est, se, df, m))
    return out


def spread_of(bl, process_rounds):
    k = len(process_rounds)
    groups = np.split(bl, np.cumsum(process_rounds)[:-1])
    means = np.array([np.mean(g) for g in groups])
    n = bl.size
    sw2 = sum(float(np.sum((g - np.mean(g)) ** 2)) for g in groups) / (n - k) if n > k else 0.0
    harmonic = k / np.sum(1.0 / np.asarray(process_rounds, dtype=float))
    between = float(np.var(means, ddof=1) - sw2 / harmonic)
    return {
        "process_rounds": list(process_rounds),
        "between_var": between,
        "floored": between < MIN_PROCESS_SD**2,
        "sd": float(np.sqrt(max(between, MIN_PROCESS_SD**2))),
        "df": float(k - 1),
    }


def make_case(name, base, cand, m, process_rounds=None, spreads=(), do_paired=True, do_welch=True):
    """`spreads`: (sd, df) pairs for extra unpaired variants over `process_rounds`; the
    string "estimated" stands for the process_spread estimate of this very baseline."""
    mb = np.array([np.median(r) for r in base])
    mc = np.array([np.median(r) for r in cand])
    bl, cl = np.log(mb), np.log(mc)
    case = {
        "name": name,
        "margin": m,
        "base": base,
        "cand": cand,
        "base_medians": [float(v) for v in mb],
        "cand_medians": [float(v) for v in mc],
        "paired": None,
        "unpaired": [],
        "process_spread": None,
    }
    if do_paired and len(base) == len(cand) and len(base) >= 2:
        case["paired"] = paired(bl, cl, m)
    if do_welch:
        case["unpaired"].append(welch(bl, cl, m))
    if process_rounds:
        case["process_spread"] = spread_of(bl, process_rounds)
    for sd, sd_df in spreads:
        if sd == "estimated":
            sd, sd_df = case["process_spread"]["sd"], case["process_spread"]["df"]
        case["unpaired"].append(with_spread(bl, cl, process_rounds or [], sd, sd_df, m))
    p = case["paired"]
    print(
        f"{name:34s} m={m:.2f} rounds {len(base):2d}/{len(cand):2d}"
        + (f"  paired p_slow {p['p_slower']:.3e} p_fast {p['p_faster']:.3e}" if p else "")
        + "".join(f"  {u['kind']} p_slow {u['p_slower']:.3e}" for u in case["unpaired"])
    )
    return case


def main():
    cases = []
    inf = math.inf
    assumed = (0.005, inf)

    def add(*a, **kw):
        cases.append(make_case(*a, **kw))

    # --- A/B in one process: paired rounds (equal counts), plus Welch on the same data. ---
    for n_rounds, per_round, ratio, m, drift in [
        (2, 1, 1.00, 0.02, 0.01),
        (2, 2, 1.05, 0.05, 0.01),
        (3, 3, 1.10, 0.02, 0.01),
        (4, (1, 50), 0.93, 0.05, 0.02),
        (5, 7, 0.90, 0.05, 0.01),
        (7, 1, 1.08, 0.02, 0.01),
        (8, 10, 1.02, 0.02, 0.01),
        (10, (1, 50), 1.03, 0.02, 0.01),
        (12, 25, 0.97, 0.02, 0.01),
        (15, 4, 0.99, 0.02, 0.03),
        (20, (2, 12), 1.00, 0.05, 0.01),
        (30, 15, 1.06, 0.05, 0.01),
        (40, 50, 1.01, 0.02, 0.005),
        (40, (1, 50), 0.95, 0.05, 0.01),
    ]:
        pr = per_round if np.isscalar(per_round) else f"{per_round[0]}-{per_round[1]}"
        b, c = paired_rounds(n_rounds, per_round, 9.0, ratio, drift=drift)
        add(f"paired_{n_rounds}x{pr}_r{ratio:.2f}_m{m}", b, c, m, spreads=[assumed])
    # Very clear slow-downs / speed-ups: p far below 1e-9 (relative precision of tiny p).
    b, c = paired_rounds(25, 9, 12.5, 1.10, drift=0.002, noise=0.002)
    add("paired_25x9_clearly_slower", b, c, 0.02)
    b, c = paired_rounds(16, 6, 0.0425, 0.90, drift=0.002, noise=0.002)
    add("paired_16x6_clearly_faster_small_times", b, c, 0.05)
    b, c = paired_rounds(6, 11, 1530.0, 1.021, drift=0.004, noise=0.001)
    add("paired_6x11_near_margin_large_times", b, c, 0.02)

    # --- Stored baseline of one process against a candidate: unpaired, Welch. ---
    for nb, nc, per_round, ratio, m in [
        (2, 40, (1, 50), 1.04, 0.02),
        (40, 2, 5, 0.98, 0.02),
        (3, 17, (1, 9), 0.92, 0.05),
        (9, 6, 8, 1.10, 0.05),
        (25, 30, (10, 40), 1.00, 0.02),
        (11, 4, (1, 3), 1.07, 0.05),
    ]:
        b = rounds_of(nb, per_round, 9.0, drift=0.01)
        c = rounds_of(nc, per_round, 9.0 * ratio, drift=0.01)
        add(f"unpaired_{nb}_vs_{nc}_r{ratio:.2f}_m{m}", b, c, m,
            spreads=[assumed, (0.004, 2.0), (0.003, 4.0)])

    # --- Baselines recorded in k = 2..5 processes: process_spread and spread variants. ---
    for k_rounds, nc, per_round, ratio, m, psd, drift in [
        ([4, 4], 6, 10, 1.03, 0.02, 0.006, 0.004),
        ([5, 5, 5], 10, (5, 30), 0.97, 0.02, 0.005, 0.003),
        ([2, 7, 4], 8, (1, 20), 1.06, 0.05, 0.01, 0.005),
        ([3, 3, 3, 3], 12, 9, 1.01, 0.02, 0.004, 0.004),
        ([6, 2, 5, 3, 4], 20, (2, 50), 0.94, 0.05, 0.008, 0.006),
        ([8, 8, 8, 8, 8], 8, 25, 1.09, 0.05, 0.003, 0.002),
        ([5, 5, 5], 15, 12, 1.00, 0.02, 0.0, 0.01),  # no true spread: the floor applies
        ([1, 3, 2, 2], 5, (1, 6), 1.02, 0.02, 0.007, 0.003),  # a process with one round
    ]:
        nb = sum(k_rounds)
        b = rounds_of(nb, per_round, 9.0, drift=drift, process_rounds=k_rounds, process_sd=psd)
        c = rounds_of(nc, per_round, 9.0 * ratio, drift=drift)
        name = f"procs_{'+'.join(map(str, k_rounds))}_vs_{nc}_r{ratio:.2f}_m{m}"
        add(name, b, c, m, process_rounds=k_rounds,
            spreads=[("estimated", None), assumed, (0.0, inf), (0.004, 2.0)])
    # Process spread only (every process has one round: no within-process variance).
    b = rounds_of(4, 7, 9.0, drift=0.002, process_rounds=[1, 1, 1, 1], process_sd=0.006)
    c = rounds_of(3, 7, 9.1, drift=0.002)
    add("procs_1+1+1+1_spread_only", b, c, 0.02, process_rounds=[1, 1, 1, 1])

    # --- Very stable rounds under the assumed spread: the spread term (infinite df) dominates
    # the variance, so the Satterthwaite df is huge (1e4 .. 1e7) but finite: the t law far
    # out, where the t quantile is hardest to compute accurately. ---
    for n_rounds, drift, sd in [(40, 0.004, 0.005), (40, 0.0025, 0.005), (40, 0.0015, 0.005),
                                (30, 0.0025, 0.01), (20, 0.004, 0.02)]:
        b = rounds_of(n_rounds, 15, 9.0, rel=0.0005, drift=drift)
        c = rounds_of(n_rounds, 15, 9.0 * 1.03, rel=0.0005, drift=drift)
        add(f"stable_{n_rounds}_rounds_drift{drift}_sd{sd}", b, c, 0.02, do_paired=False,
            spreads=[(sd, inf)])

    # --- Constant round medians: se comes from the spread alone; infinite df -> normal law. ---
    b = [[9.0, 9.01, 8.99]] * 3 + [[8.98, 9.0, 9.02, 9.0]] * 3
    c = [[9.3, 9.31, 9.29]] * 4
    add("constant_medians_spread_only", b, c, 0.02, do_paired=False, do_welch=False,
        process_rounds=[3, 3], spreads=[(0.005, inf), (0.02, inf), (0.005, 4.0)])

    doc = {
        "meta": {
            "generator": "tests/vectors/make_round_vectors.py",
            "seed": SEED,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "confidence": CONFIDENCE,
            "alpha": ALPHA,
            "power": POWER,
            "min_process_sd": MIN_PROCESS_SD,
            "cases": len(cases),
            "paired": sum(c["paired"] is not None for c in cases),
            "unpaired": sum(len(c["unpaired"]) for c in cases),
            "process_spread": sum(c["process_spread"] is not None for c in cases),
        },
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, separators=(",", ":"), allow_nan=False) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.1f} kB, {len(cases)} cases)", file=sys.stderr)


if __name__ == "__main__":
    main()
