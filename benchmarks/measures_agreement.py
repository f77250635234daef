"""Reference values from arviz-stats for stanlogz's LOO predictive measures and LOO-PIT tests,
on shared inputs, stored as a JSON fixture that ``tests/crossval/checks/test_arviz_agreement.py``
checks to 1e-10.

arviz-stats (the ArviZ 1.x line) needs Python ≥ 3.12 and does not install beside ArviZ 0.x,
which stanlogz's 3.11 environment carries; so its numbers are computed once, in a separate
Python 3.12 environment with arviz-stats, by this script, which imports only numpy and
arviz-stats (not stanlogz):

    python3.12 -m venv /tmp/azs && /tmp/azs/bin/pip install arviz-stats
    /tmp/azs/bin/python benchmarks/measures_agreement.py \
        --write benchmarks/data/arviz_stats_reference.json

The inputs are regenerated from fixed seeds by :func:`shared_inputs` (the test recomputes
them and checks their checksums against the fixture, so a change of numpy's generators is
caught rather than mistaken for a disagreement). The fixture in the repository was written
with arviz-stats 1.3.3 (numpy 2.5.5, Python 3.12).

Compared: ``loo_score`` (CRPS and SCRPS, pointwise); ``metrics`` of the LOO predictive mean
(MAE, MSE, RMSE, accuracy, balanced accuracy: estimates, and the se's of MAE, MSE, RMSE and
accuracy, whose formulas stanlogz shares); ``uniformity_test`` (POT and PIET p-values and
per-observation Shapley values). arviz-stats' PRIT p-values are stored too but are not
stanlogz's: arviz-stats 1.3.3 takes 2 min(P(K ≤ k), P(K ≥ k)) where R posterior 1.7, whose
definition stanlogz follows, takes the mid-p value 2 min(m, 1 − m), m = P(K < k) + ½ P(K = k).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def shared_inputs() -> dict[str, np.ndarray]:
    """The inputs of the comparison, from fixed seeds (numpy only).

    ``lw`` and ``lwb`` are the raw leave-one-out importance log ratios −log p(y_i | θ_s) (any
    log weights define the measures; raw ones keep the script free of a PSIS implementation).
    """
    rng = np.random.default_rng(8)
    s, n = 400, 24
    theta = rng.normal(0.4, 0.3, size=s)
    y = rng.normal(0.5, 1.2, size=n) + 5.0
    ll = -0.5 * (y[None] - 5.0 - theta[:, None]) ** 2 - 0.5 * np.log(2 * np.pi)
    yr = 5.0 + theta[:, None] + rng.normal(size=(s, n))
    yb = (rng.uniform(size=n) < 0.5).astype(float)
    lin = rng.normal(0.8 * (2 * yb - 1), 1.5, size=n)
    p = 1 / (1 + np.exp(-(lin[None, :] + rng.normal(0, 0.5, size=(s, n)))))
    llb = np.where(yb[None] == 1, np.log(p), np.log1p(-p))
    pit = rng.beta(1.4, 1.0, size=40)
    return {"y": y, "yr": yr, "lw": -ll, "yb": yb, "p": p, "lwb": -llb, "pit": pit}


def checksums(inputs: dict[str, np.ndarray]) -> dict[str, float]:
    """Sum of each input array (the fixture records them)."""
    return {k: float(np.sum(v)) for k, v in inputs.items()}


def loo_mean(lw: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The self-normalized weighted mean of each column of ``x`` with log weights ``lw``."""
    w = np.exp(lw - lw.max(axis=0))
    return np.sum(w * x, axis=0) / w.sum(axis=0)


def reference() -> dict:
    """arviz-stats' values on :func:`shared_inputs`."""
    import arviz_stats
    from arviz_stats.base import array_stats

    d = shared_inputs()
    out: dict = {"arviz_stats": arviz_stats.__version__, "numpy": np.__version__,
                 "python": sys.version.split()[0], "checksums": checksums(d)}
    n = d["y"].size
    for kind in ("crps", "scrps"):
        out[kind] = [float(np.asarray(array_stats.loo_score(
            d["yr"][:, i][None, :], d["y"][i], d["lw"][:, i][None, :], kind=kind)).ravel()[0])
            for i in range(n)]
    mu = loo_mean(d["lw"], d["yr"])
    for kind in ("mae", "mse", "rmse"):
        est, se = array_stats.metrics(d["y"], mu, kind=kind)
        out[kind] = {"estimate": float(est), "se": float(se)}
    pb = loo_mean(d["lwb"], d["p"])
    for ours, kind in (("acc", "acc"), ("bacc", "acc_balanced")):
        est, se = array_stats.metrics(d["yb"], pb, kind=kind)
        out[ours] = {"estimate": float(est), "se": float(se)}
    for test in ("pot", "piet", "prit"):
        pval, _, shap = array_stats.uniformity_test(d["pit"], method=f"{test}_c")
        out[test] = {"p_value": float(pval), "shapley": np.asarray(shap, float).tolist()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", help="write the reference values to this JSON file")
    a = ap.parse_args()
    try:
        ref = reference()
    except ImportError:
        raise SystemExit("arviz-stats is not importable here: run this under a Python 3.12 "
                         "environment with arviz-stats (module docstring)") from None
    text = json.dumps(ref, indent=1)
    if a.write:
        with open(a.write, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
