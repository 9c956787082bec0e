#!/usr/bin/env python3
"""Reference vectors for tests/it/shift_vs_scipy.rs: the Hodges-Lehmann shift of two samples
of i.i.d. values on the log scale and its exact Mann-Whitney bounds (src/stats/shift.rs), the
decision for sample files of fewer than 30 values a side, computed with numpy / scipy,
independently of the Rust code.

Re-run (from the repository root):

    python3 -m venv /tmp/sv && /tmp/sv/bin/pip install numpy==2.4.6 scipy==1.17.1
    /tmp/sv/bin/python tests/vectors/make_shift_vectors.py   # writes shift_vectors.json

Last run with: Python 3.11.7, numpy 2.4.6, scipy 1.17.1 (also written into the JSON's "meta").

Everything is drawn from one numpy Generator with a fixed seed, so re-running with the same
library versions reproduces the file byte for byte. Values are rounded to 6 decimals and
written as short decimals (serde_json reads back exactly the doubles used here); cases with a
tie anywhere in the pooled log values are redrawn (the exact law assumes none).

Per case (a base and a candidate sample, 2 to 29 values each, lognormal around 10 us, the
candidate shifted by a factor, some with a slow tail):
  * x = log(base), y = log(cand); D = numpy.subtract.outer(y, x).ravel(), sorted;
  * "estimate" = numpy.median(D) (the Hodges-Lehmann shift);
  * "p_greater"[theta] = scipy.stats.mannwhitneyu(y - theta, x, alternative="greater",
    method="exact").pvalue, "p_less"[theta] the same with alternative="less", at thetas
    ln(1.02), ln(0.98), 0, the estimate itself and two random points, none equal to a D;
  * "lower"[a] / "upper"[a], a in 0.005, 0.01, 0.025, 0.05, 0.1: the one-sided bounds
    obtained by inverting scipy's exact test, not from the order-statistic formula: the test
    of "shift <= theta" is run at the midpoints theta_k between consecutive D (and below
    the smallest); the lower bound is D_(k+1) for the largest k whose midpoint it rejects at
    level a (null when it rejects none), the upper bound the mirror image with the test of
    "shift >= theta".

And "binomial": the exact (Clopper-Pearson) 95% interval of k flagged in n,
scipy.stats.binomtest(k, n).proportion_ci(0.95, method="exact"), for src/stats/binomial.rs.
"""

import json
import math
import platform
from pathlib import Path

import numpy as np
import scipy
from scipy import stats

SEED = 20261130
LEVELS = [0.005, 0.01, 0.025, 0.05, 0.1]
OUT = Path(__file__).with_name("shift_vectors.json")

rng = np.random.default_rng(SEED)


def q6(x):
    return [float(f"{v:.6f}") for v in np.asarray(x, dtype=float)]


def sample(n, center, tail):
    v = center * np.exp(rng.normal(0.0, 0.01, n))
    slow = rng.random(n) < tail
    v[slow] *= 1.0 + rng.uniform(0.05, 0.30, slow.sum())
    return q6(v)


def draw(nb, nc, factor, tail):
    while True:
        b = sample(nb, 10.0, 0.1)
        c = sample(nc, 10.0 * factor, tail)
        pooled = np.log(np.array(b + c))
        if len(np.unique(pooled)) == len(pooled):
            return b, c


def p(y, x, theta, alternative):
    return float(stats.mannwhitneyu(y - theta, x, alternative=alternative, method="exact").pvalue)


def case(name, nb, nc, factor, tail):
    b, c = draw(nb, nc, factor, tail)
    x, y = np.log(np.array(b)), np.log(np.array(c))
    d = np.sort(np.subtract.outer(y, x).ravel())
    n = len(d)
    est = float(np.median(d))
    # Midpoints below the smallest, between consecutive, and above the largest difference.
    mids = np.concatenate(([d[0] - 1.0], (d[:-1] + d[1:]) / 2.0, [d[-1] + 1.0]))
    pg = np.array([p(y, x, t, "greater") for t in mids])
    pl = np.array([p(y, x, t, "less") for t in mids])
    lower, upper = {}, {}
    for a in LEVELS:
        # "shift <= theta" rejected at mids[k] (k differences at or below it) means the
        # lower bound lies above mids[k]: the bound is d[k] for the largest such k.
        rej = [k for k in range(n) if pg[k] <= a]
        lower[str(a)] = float(d[max(rej)]) if rej else None
        # "shift >= theta" rejected at mids[k] means the upper bound lies below it: the
        # bound is d[k - 1] for the smallest such k >= 1.
        rej = [k for k in range(1, n + 1) if pl[k] <= a]
        upper[str(a)] = float(d[min(rej) - 1]) if rej else None
    thetas = [math.log1p(0.02), math.log1p(-0.02), 0.0, est]
    thetas += list(rng.uniform(d[0] - 0.01, d[-1] + 0.01, 2))
    thetas = [t for t in thetas if not np.any(d == t)]
    return {
        "name": name,
        "base": b,
        "cand": c,
        "estimate": est,
        "thetas": [float(t) for t in thetas],
        "p_greater": [p(y, x, t, "greater") for t in thetas],
        "p_less": [p(y, x, t, "less") for t in thetas],
        "lower": lower,
        "upper": upper,
    }


cases = []
for nb, nc in [(2, 2), (2, 5), (3, 3), (3, 4), (4, 4), (5, 7), (6, 6), (8, 3), (10, 10)]:
    cases.append(case(f"small {nb}x{nc}", nb, nc, 1.05, 0.1))
for k in range(12):
    nb, nc = int(rng.integers(5, 30)), int(rng.integers(5, 30))
    factor = float(rng.choice([0.97, 1.0, 1.02, 1.03, 1.06]))
    tail = float(rng.choice([0.0, 0.1, 0.3]))
    cases.append(case(f"random {k}: {nb}x{nc}, x{factor}, tail {tail}", nb, nc, factor, tail))
cases.append(case("largest 29x29", 29, 29, 1.025, 0.1))

# The exact (Clopper-Pearson) 95% interval of a count of flagged comparisons
# (src/stats/binomial.rs, selftest's rates): scipy's binomtest(k, n).proportion_ci.
binomial = []
for k, n in [(0, 130), (5, 130), (127, 130), (130, 130), (473, 10000), (9634, 10000), (1, 2),
             (0, 130000), (993, 10000), (49, 780)]:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    binomial.append({"k": k, "n": n, "low": float(ci.low), "high": float(ci.high)})

OUT.write_text(
    json.dumps(
        {
            "meta": {
                "python": platform.python_version(),
                "numpy": np.__version__,
                "scipy": scipy.__version__,
                "seed": SEED,
                "levels": LEVELS,
                "cases": len(cases),
            },
            "cases": cases,
            "binomial": binomial,
        },
        indent=1,
    )
    + "\n"
)
print(f"wrote {OUT} ({len(cases)} cases)")
