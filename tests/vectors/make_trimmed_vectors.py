#!/usr/bin/env python3
"""Reference vectors for tests/it/trimmed_vs_scipy.rs: the gate's trimmed-mean (Yuen) margin
tests and its bootstraps (src/stats/margin.rs, src/stats/bootstrap.rs), computed with numpy /
scipy, independently of the Rust code.

Re-run (from the repository root):

    python3 -m venv /tmp/sv && /tmp/sv/bin/pip install numpy==2.4.6 scipy==1.17.1
    /tmp/sv/bin/python tests/vectors/make_trimmed_vectors.py   # writes trimmed_vectors.json

Last run with: Python 3.11.7, numpy 2.4.6, scipy 1.17.1 (also written into the JSON's "meta").

Everything is drawn from one numpy Generator with a fixed seed, so re-running with the same
library versions reproduces the file byte for byte. Data values are rounded to 6 decimals and
written as short decimals (serde_json reads back exactly the doubles used here).

Per case (a base and a candidate, each a list of rounds; a margin m; a trim gamma):
  * "trimmed" (paired cases): d = log(median(cand_i)) - log(median(base_i)) per pair;
      g = int(gamma * n), h = n - 2 g;
      trimmed mean  = scipy.stats.trim_mean(d, gamma);
      winsorized    = scipy.stats.mstats.winsorize(d, limits=(gamma, gamma));
      winsorized_var = numpy.var(winsorized, ddof=1);
      se = sqrt((n - 1) winsorized_var / (h (h - 1))), df = h - 1;
      p_slower = t.sf((tm - log1p(m)) / se, df), p_faster = t.cdf((tm - log1p(-m)) / se, df),
    and the same one-sample test through scipy itself:
      scipy.stats.ttest_ind(d - log1p(m), zeros(n), equal_var=False, trim=gamma,
                            alternative="greater")
    (a zero-variance second sample leaves Yuen's one-sample t with df h - 1), whose statistic,
    df and p must agree with the hand computation (asserted here).
  * "unpaired" (gamma, one baseline process, no spread): scipy.stats.ttest_ind(log med_c,
    log med_b + log1p(m), equal_var=False, trim=gamma, alternative="greater") (and "less"
    with log1p(-m)); estimate = trim_mean(c) - trim_mean(b); se and df by hand (Yuen–Welch),
    asserted equal to scipy's.
  * "spread" (baselines of k processes, an assumed spread sd with df): by hand, the formula
    of the Rust doc of unpaired_margin_test_trimmed: per process its trimmed mean T_p (a
    process of fewer than 3 rounds keeps all), T_b = sum r_p T_p / n_b; residuals b_i - T_p(i)
    winsorized together (g_b = int(gamma n_b)), SS_w their sum of squared deviations;
    d_b = SS_w / (h_b max(h_b - k, 1)); var = d_c + d_b + sd^2 (1 + 1/k), Satterthwaite df
    over (h_c - 1, max(h_b - k, 1), spread df).
  * "process_spread": by hand, the doc formula of process_spread_trimmed.
  * Every test also has "interval95", "lower_bound05", "upper_bound05" and "detectable"
    (exp(log1p(m) + (t.ppf(0.95) + t.ppf(0.8)) se) - 1).

Bootstraps:
  * "pairs_bootstrap" cases (A/B rounds, 16 to 30 pairs): B = 400 resamples of pair indices
    drawn here with numpy (written out); per resample the ratio
    numpy.median(concatenate(cand rounds of the drawn pairs)) /
    numpy.median(concatenate(base rounds of the drawn pairs)); the interval is
    numpy.quantile(ratios, [0.025, 0.975]) (method "linear"), the bounds the 0.05 and 0.95
    quantiles. Given the same indices the Rust code must give the same ratios and ends.
  * "median_bootstrap" cases (i.i.d. values, 30 to 5,000 a side, optionally a process spread
    sd): the naive percentile bootstrap of median(cand)/median(base) with numpy's generator
    (both sides resampled with replacement; with a spread, each ratio times exp(sd sqrt(2) Z)),
    B = 20,000, three seeds; "low", "high" (95% interval), "lower05", "upper05" (one-sided
    bounds) from the first seed and "spread", the largest relative difference of any of them
    between the seeds (Monte-Carlo noise). The Rust bootstrap draws differently (exact Beta
    order statistics, ChaCha8), so it is compared within a multiple of that noise.
"""

import json
import math
import platform
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy
from scipy import stats
from scipy.stats import mstats

SEED = 20261119
CONFIDENCE = 0.95
ALPHA = 0.05
POWER = 0.8
MIN_PROCESS_SD = 0.001
PAIRS_B = 400
MEDIAN_B = 20_000
OUT = Path(__file__).with_name("trimmed_vectors.json")

rng = np.random.default_rng(SEED)


def q6(x):
    return [float(f"{v:.6f}") for v in np.asarray(x, dtype=float)]


def close(a, b, tol=1e-10):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-300)


def one_round(median, n, rel):
    return q6(median * np.exp(rng.normal(0.0, rel, n)))


def paired_rounds(n_pairs, per_round, median, ratio, throttled=0.0, noise=0.004):
    """A/B pairs sharing a drifting level; a share `throttled` of rounds 3-8% slower."""
    base, cand = [], []
    level = median
    for _ in range(n_pairs):
        level *= np.exp(rng.normal(0.0, 0.002))
        sides = []
        for r in (1.0, ratio):
            lv = level * r * np.exp(rng.normal(0.0, noise))
            if rng.random() < throttled:
                lv *= 1.0 + rng.uniform(0.03, 0.08)
            sides.append(one_round(lv, per_round, 0.01))
        base.append(sides[0])
        cand.append(sides[1])
    return base, cand


def process_rounds_of(groups, per_round, median, process_sd, drift=0.003):
    out = []
    for g in groups:
        shift = np.exp(rng.normal(0.0, process_sd))
        for _ in range(g):
            out.append(one_round(median * shift * np.exp(rng.normal(0.0, drift)), per_round, 0.01))
    return out


def law(df):
    return stats.norm() if math.isinf(df) else stats.t(df)


def bounds(estimate, se, df, m):
    dist = law(df)
    q = dist.ppf(0.5 + CONFIDENCE / 2)
    t1 = dist.ppf(1 - ALPHA)
    return {
        "interval95": [float(np.exp(estimate - q * se)), float(np.exp(estimate + q * se))],
        "lower_bound05": float(np.exp(estimate - t1 * se)),
        "upper_bound05": float(np.exp(estimate + t1 * se)),
        "detectable": float(np.expm1(np.log1p(m) + (t1 + dist.ppf(POWER)) * se)),
    }


def yuen_summary(x, gamma):
    x = np.asarray(x, dtype=float)
    n = x.size
    g = int(gamma * n)
    h = n - 2 * g
    tm = float(stats.trim_mean(x, gamma))
    w = np.asarray(mstats.winsorize(x, limits=(gamma, gamma)), dtype=float)
    wv = float(np.var(w, ddof=1))
    se2 = (n - 1) * wv / (h * (h - 1))
    return {"n": n, "g": g, "h": h, "mean": tm, "winsorized_var": wv, "se2": se2}


def paired(bl, cl, m, gamma):
    d = cl - bl
    y = yuen_summary(d, gamma)
    se = math.sqrt(y["se2"])
    df = y["h"] - 1
    dist = stats.t(df)
    ts = (y["mean"] - np.log1p(m)) / se
    p_slower = float(dist.sf(ts))
    p_faster = float(dist.cdf((y["mean"] - np.log1p(-m)) / se))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = stats.ttest_ind(d - np.log1p(m), np.zeros(d.size), equal_var=False, trim=gamma,
                             alternative="greater")
    assert close(float(sc.statistic), ts, 1e-9), (sc, ts)
    assert close(float(sc.df), df, 1e-12), (sc.df, df)
    assert abs(float(sc.pvalue) - p_slower) < 1e-12, (sc.pvalue, p_slower)
    out = {
        "trim": gamma,
        "summary": y,
        "estimate": y["mean"],
        "se": se,
        "df": float(df),
        "statistic": ts,
        "p_slower": p_slower,
        "p_faster": p_faster,
    }
    out.update(bounds(y["mean"], se, df, m))
    return out


def unpaired_yuen(bl, cl, m, gamma):
    yb, yc = yuen_summary(bl, gamma), yuen_summary(cl, gamma)
    est = yc["mean"] - yb["mean"]
    var = yb["se2"] + yc["se2"]
    se = math.sqrt(var)
    df = var ** 2 / (yb["se2"] ** 2 / (yb["h"] - 1) + yc["se2"] ** 2 / (yc["h"] - 1))
    slower = stats.ttest_ind(cl, bl + np.log1p(m), equal_var=False, trim=gamma,
                             alternative="greater")
    faster = stats.ttest_ind(cl, bl + np.log1p(-m), equal_var=False, trim=gamma,
                             alternative="less")
    assert close(float(slower.df), df, 1e-9), (slower.df, df)
    assert close(float(slower.statistic), (est - np.log1p(m)) / se, 1e-9)
    out = {
        "kind": "yuen-welch",
        "trim": gamma,
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
    return out


def with_spread(bl, cl, process_rounds, sd, sd_df, m, gamma):
    nb = bl.size
    parts = process_rounds or [nb]
    k = len(parts)
    groups = np.split(bl, np.cumsum(parts)[:-1])
    centres = []
    for g in groups:
        if g.size - 2 * int(gamma * g.size) >= 2:
            centres.append(float(stats.trim_mean(g, gamma)))
        else:
            centres.append(float(np.mean(g)))
    tb = sum(len(g) * c for g, c in zip(groups, centres)) / nb
    resid = np.concatenate([g - c for g, c in zip(groups, centres)])
    gb = int(gamma * nb)
    hb = nb - 2 * gb
    w = np.asarray(mstats.winsorize(resid, limits=(gamma, gamma)), dtype=float)
    ss = float(np.sum((w - np.mean(w)) ** 2))
    df_b = max(hb - k, 1)
    vb = ss / (hb * df_b)
    yc = yuen_summary(cl, gamma)
    vc = yc["se2"]
    vp = sd ** 2 * (1 + 1 / k)
    var = vc + vb + vp
    terms = [(vc, yc["h"] - 1), (vb, df_b), (vp, sd_df)]
    denom = sum(v * v / d for v, d in terms if v > 0 and not math.isinf(d))
    df = var * var / denom if denom > 0 else math.inf
    est = yc["mean"] - tb
    se = math.sqrt(var)
    dist = law(df)
    out = {
        "kind": "spread",
        "trim": gamma,
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


def spread_of(bl, process_rounds, gamma):
    k = len(process_rounds)
    groups = np.split(bl, np.cumsum(process_rounds)[:-1])
    centres, factors, ss = [], [], 0.0
    for g in groups:
        r = g.size
        gg = int(gamma * r)
        if gg > 0 and r - 2 * gg >= 2:
            y = yuen_summary(g, gamma)
            centres.append(y["mean"])
            ss += y["winsorized_var"] * (r - 1)
            factors.append((r - 1) / (y["h"] * (y["h"] - 1)))
        else:
            centres.append(float(np.mean(g)))
            ss += float(np.sum((g - np.mean(g)) ** 2))
            factors.append(1.0 / r)
    n = bl.size
    within = ss / (n - k) if n > k else 0.0
    between = float(np.var(centres, ddof=1) - within * np.mean(factors))
    return {
        "trim": gamma,
        "process_rounds": list(process_rounds),
        "floored": between < MIN_PROCESS_SD ** 2,
        "sd": float(np.sqrt(max(between, MIN_PROCESS_SD ** 2))),
        "df": float(k - 1),
    }


def medians(rounds):
    return np.array([np.median(r) for r in rounds])


def pairs_bootstrap(base, cand):
    n = len(base)
    idx = rng.integers(0, n, size=(PAIRS_B, n))
    ratios = []
    for row in idx:
        c = np.median(np.concatenate([cand[i] for i in row]))
        b = np.median(np.concatenate([base[i] for i in row]))
        ratios.append(float(c / b))
    r = np.array(ratios)
    q = np.quantile(r, [0.025, 0.975, 0.05, 0.95])
    return {
        "indices": idx.tolist(),
        "ratios": ratios,
        "low": float(q[0]),
        "high": float(q[1]),
        "lower05": float(q[2]),
        "upper05": float(q[3]),
        "pooled": float(np.median(np.concatenate(cand)) / np.median(np.concatenate(base))),
    }


def median_bootstrap(b, c, sd, seed):
    g = np.random.default_rng(seed)
    b, c = np.asarray(b), np.asarray(c)
    mb = np.median(b[g.integers(0, b.size, size=(MEDIAN_B, b.size))], axis=1)
    mc = np.median(c[g.integers(0, c.size, size=(MEDIAN_B, c.size))], axis=1)
    r = mc / mb
    if sd > 0:
        r = r * np.exp(sd * math.sqrt(2.0) * g.standard_normal(MEDIAN_B))
    return np.quantile(r, [0.025, 0.975, 0.05, 0.95])


def main():
    paired_cases, unpaired_cases, pairs_cases, median_cases = [], [], [], []
    trims = [0.1, 0.2, 0.25]

    # --- A/B pairs: the one-sample Yuen test, several trims, with throttled rounds. ---
    for n, per, ratio, m, thr in [
        (2, 5, 1.02, 0.02, 0.0), (3, 5, 1.00, 0.02, 0.0), (4, 7, 1.03, 0.02, 0.0),
        (5, 10, 1.025, 0.02, 0.1), (8, 10, 1.02, 0.02, 0.0), (8, 10, 1.03, 0.02, 0.25),
        (9, 3, 0.97, 0.02, 0.1), (10, 10, 1.05, 0.05, 0.0), (12, 1, 1.00, 0.02, 0.0),
        (16, 10, 1.025, 0.02, 0.1), (20, 25, 0.95, 0.02, 0.05), (24, 10, 1.02, 0.02, 0.05),
        (24, 10, 1.03, 0.02, 0.2), (31, 8, 1.01, 0.05, 0.1), (40, 50, 1.001, 0.02, 0.02),
    ]:
        b, c = paired_rounds(n, per, 9.0, ratio, throttled=thr)
        bl, cl = np.log(medians(b)), np.log(medians(c))
        tests = [paired(bl, cl, m, t) for t in trims if n - 2 * int(t * n) >= 2]
        paired_cases.append({"name": f"paired_{n}x{per}_r{ratio}_thr{thr}", "margin": m,
                             "base": b, "cand": c, "tests": tests})
        print(f"paired {n:2d}: " + " ".join(f"g={t['summary']['g']} p={t['p_slower']:.3e}"
                                           for t in tests))

    # --- Unpaired: Yuen–Welch (scipy), and with processes and a spread (by hand). ---
    for groups, nc, ratio, m, psd in [
        ([2], 2, 1.03, 0.02, 0.0), ([6], 8, 1.02, 0.02, 0.0), ([24], 8, 1.03, 0.02, 0.0),
        ([10], 24, 0.97, 0.02, 0.0), ([3, 3, 3], 8, 1.02, 0.02, 0.004),
        ([8, 8, 8, 8, 8], 24, 1.03, 0.02, 0.003), ([8, 8, 8, 8, 8], 8, 1.00, 0.02, 0.001),
        ([5, 9, 6], 12, 1.04, 0.05, 0.006), ([1, 3, 2, 2], 5, 1.02, 0.02, 0.005),
        ([8] * 8, 24, 1.025, 0.02, 0.002),
    ]:
        b = process_rounds_of(groups, 10, 9.0, psd)
        c = process_rounds_of([nc], 10, 9.0 * ratio, 0.0)
        bl, cl = np.log(medians(b)), np.log(medians(c))
        tests = []
        spreads = []
        for t in trims:
            if len(groups) == 1:
                if bl.size - 2 * int(t * bl.size) >= 2 and cl.size - 2 * int(t * cl.size) >= 2:
                    tests.append(unpaired_yuen(bl, cl, m, t))
            else:
                spreads.append(spread_of(bl, groups, t))
            if bl.size - 2 * int(t * bl.size) >= 2 and cl.size - 2 * int(t * cl.size) >= 2:
                pr = groups if len(groups) > 1 else []
                for sd, sd_df in [(0.005, math.inf), (0.002, 4.0), (0.0, math.inf)]:
                    tests.append(with_spread(bl, cl, pr, sd, sd_df, m, t))
        unpaired_cases.append({"name": f"unpaired_{'+'.join(map(str, groups))}_vs_{nc}_r{ratio}",
                               "margin": m, "base": b, "cand": c, "tests": tests,
                               "process_spread": spreads})
        print(f"unpaired {groups} vs {nc}: {len(tests)} tests, {len(spreads)} spreads")

    # --- Pairs bootstrap of the pooled p50 (exact, given the indices). ---
    for n, per, ratio in [(16, 10, 1.02), (20, 7, 1.0), (24, 10, 1.035), (30, 4, 0.98)]:
        b, c = paired_rounds(n, per, 9.0, ratio, throttled=0.05)
        case = {"name": f"pairs_{n}x{per}_r{ratio}", "base": b, "cand": c}
        case.update(pairs_bootstrap(b, c))
        pairs_cases.append(case)
        print(f"pairs bootstrap {n}: [{case['low']:.5f}, {case['high']:.5f}]")

    # --- Percentile bootstrap of the ratio of medians (i.i.d. values). ---
    for nb, nc, ratio, tail, sd in [(30, 30, 1.0, 0.1, 0.0), (50, 80, 1.03, 0.1, 0.0),
                                    (200, 200, 1.004, 0.29, 0.0), (500, 400, 1.03, 0.0, 0.0),
                                    (1000, 1000, 1.01, 0.1, 0.01), (5000, 3000, 0.98, 0.05, 0.003)]:
        def values(n, center, tail_share):
            x = center * np.exp(rng.normal(0.0, 0.01, n))
            slow = rng.random(n) < tail_share
            x[slow] *= 1.0 + rng.uniform(0.05, 0.30, slow.sum())
            return q6(x)
        b = values(nb, 10.0, 0.1)
        c = values(nc, 10.0 * ratio, tail)
        runs = [median_bootstrap(b, c, sd, s) for s in (1, 2, 3)]
        first = runs[0]
        spread = max(abs(r[i] - first[i]) / first[i] for r in runs[1:] for i in range(4))
        median_cases.append({
            "name": f"values_{nb}_vs_{nc}_r{ratio}_tail{tail}_sd{sd}",
            "base": b, "cand": c, "process_sd": sd, "resamples": MEDIAN_B,
            "point": float(np.median(c) / np.median(b)),
            "low": float(first[0]), "high": float(first[1]),
            "lower05": float(first[2]), "upper05": float(first[3]),
            "spread": float(spread),
        })
        print(f"median bootstrap {nb}/{nc}: [{first[0]:.5f}, {first[1]:.5f}] noise {spread:.2e}")

    doc = {
        "meta": {
            "generator": "tests/vectors/make_trimmed_vectors.py",
            "seed": SEED,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "confidence": CONFIDENCE,
            "alpha": ALPHA,
            "power": POWER,
            "min_process_sd": MIN_PROCESS_SD,
            "paired_tests": sum(len(c["tests"]) for c in paired_cases),
            "unpaired_tests": sum(len(c["tests"]) for c in unpaired_cases),
            "process_spreads": sum(len(c["process_spread"]) for c in unpaired_cases),
            "pairs_bootstraps": len(pairs_cases),
            "median_bootstraps": len(median_cases),
        },
        "paired": paired_cases,
        "unpaired": unpaired_cases,
        "pairs_bootstrap": pairs_cases,
        "median_bootstrap": median_cases,
    }
    OUT.write_text(json.dumps(doc, separators=(",", ":"), allow_nan=False) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.1f} kB)", file=sys.stderr)


if __name__ == "__main__":
    main()
