"""Held-out observations whose importance weights are heavy-tailed, refit on their own
(:mod:`stanlogz.crossval.refit.heldout_points`): does K-fold's pointwise error bar cover now?

``python3 -m benchmarks.kfold_point_refits PART [--runs R] [--no-point-refits]``, PART one of:

* ``outlier``: the conjugate normal mean (N = 40, σ = 1, μ ~ N(0, 2²)) with the first two
  observations at ±``--shift`` (default 30) held out with two ordinary ones, so the full-data
  posterior sits where the training one does and neither covers the posterior given one far
  observation. ``--runs`` seeds without and with the refits: the z of Σ elpd_i against the
  closed form (rms, mean, how many beyond 3) and the refit counts.
* ``reference``: the roaches Poisson regression as a user might write it (``int<lower=1> N``,
  an unused data array: ``stan_models/tests/roaches_shape.stan``), 10 folds fixed by seed 0,
  and every observation's log p(y_i | y_T(i)) from its own fit on T(i) ∪ {i} and the evidence
  difference (two gbs fits, 4 x 2,500 draws each): written to
  ``benchmarks/data/roaches_kfold_reference.json``. Its check (printed by ``coverage``):
  where an observation's mixture importance weights are light (k̂ ≤ 0.5, not refit) the
  reference against ``kfold``'s importance-sampled value, an independent estimator.
* ``cost``: ``--runs`` K-fold runs as in ``coverage``, each point refit's NUTS and held-out
  densities timed against what kfold's up-front estimate prices
  (``kfold_time.point_refit_seconds``).
* ``coverage``: ``--runs`` K-fold runs (default settings, seeds 1..R) on the same folds
  (``kfold(group="fold", k=None)``): the z of elpd_kfold and of each fold's Σ elpd_i against
  the reference, with the combined se (the run's mcse and the reference's); ``--no-point-refits``
  keeps every observation's importance-sampled value (the code before).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHAPE = ROOT / "stan_models" / "tests" / "roaches_shape.stan"
REFERENCE = ROOT / "benchmarks" / "data" / "roaches_kfold_reference.json"
K = 10


def _roaches() -> tuple[Any, dict]:
    import stanlogz
    from stanlogz.crossval.refit.kfold import make_folds

    data = json.loads(SHAPE.with_suffix(".json").read_text())
    data["fold"] = (make_folds(int(data["N"]), K, np.random.default_rng(0)) + 1).tolist()
    return stanlogz.StanModel.from_file(SHAPE, data), data


def _no_point_refits() -> None:
    """kfold with every observation importance-sampled (the code before the point refits)."""
    from stanlogz.crossval.refit import heldout

    plain = heldout.heldout_elpd

    def without(*args: Any, **kw: Any) -> Any:
        kw.setdefault("point_refits", False)
        return plain(*args, **kw)

    heldout.heldout_elpd = without


def outlier(runs: int, shift: float) -> None:
    from scipy import stats

    import stanlogz
    from stanlogz.crossval.observations.observations import find_observations
    from stanlogz.crossval.refit.heldout import heldout_elpd

    y = np.random.default_rng(0).normal(0.5, 1.0, 40)
    y[0], y[1] = shift, -shift
    d = {"N": 40, "y": y.tolist(), "sigma": 1.0, "prior_sd": 2.0}
    m = stanlogz.StanModel.from_file(ROOT / "stan_models" / "examples" / "normal_mean.stan", d)
    obs = find_observations(d)
    v, t = np.arange(4), np.arange(4, 40)
    prec = 1 / 4 + t.size
    truth = float(stats.norm(y[t].sum() / prec, math.sqrt(1 + 1 / prec)).logpdf(y[v]).sum())
    print("| far pair | point refits | runs | rms z | mean z | abs z > 3 | refits per run |")
    print("|---|---|---|---|---|---|---|")
    for refits in (False, True):
        z, n = [], []
        for seed in range(runs):
            h = heldout_elpd(m, d, obs, v, seed=seed, chains=4, warmup=500, draws=1000,
                             point_refits=refits)
            z.append((h.elpd_i.sum() - truth) / h.elpd_i_mcse)
            n.append(h.refit_observations.size)
        za = np.array(z)
        print(f"| ±{shift:g} | {'yes' if refits else 'no'} | {runs} | "
              f"{math.sqrt(np.mean(za**2)):.2f} | {za.mean():+.2f} | {int(np.sum(abs(za) > 3))} "
              f"| {np.mean(n):.1f} |", flush=True)


def reference() -> None:
    from stanlogz.crossval.observations.observations import find_observations
    from stanlogz.crossval.refit.heldout import SharedEvidence, heldout_elpd
    from stanlogz.draws import sample
    from stanlogz.stan.settings import NutsArgs

    model, data = _roaches()
    obs = find_observations(data, obs="N")
    fold = np.array(data["fold"]) - 1
    nuts = NutsArgs(chains=4, warmup=1000, draws=2500)
    out = {"program": SHAPE.name, "folds": data["fold"], "elpd_i": [None] * obs.n,
           "mcse_i": [None] * obs.n}
    t0 = time.time()
    shared_se = []
    for j in range(K):
        v = np.flatnonzero(fold == j)
        keep = np.setdiff1d(np.arange(obs.n), v)
        d_t = obs.subset(data, keep)
        td = sample(model.with_data(d_t), nuts, seed=1000 + j)
        train = SharedEvidence(2000 + j)
        for i in v:
            with_i = np.union1d(keep, [i])
            d_i = obs.subset(data, with_i)
            di = sample(model.with_data(d_i), nuts, seed=3000 + int(i))
            h = heldout_elpd(model, d_i, find_observations(d_i, obs="N"),
                             [int(np.searchsorted(with_i, i))], full_draws=di, train_draws=td,
                             method="evidence-difference", seed=4000 + int(i),
                             train_evidence=train, pointwise=False)
            out["elpd_i"][int(i)] = h.elpd
            out["mcse_i"][int(i)] = h.mcse
        shared_se.append(float(train.result.log_z_se))
        print(f"fold {j + 1}: {v.size} observations, {time.time() - t0:.0f} s", flush=True)
    # each fold's log Z(T) error is shared by its observations: the sum's se
    e = np.array(out["elpd_i"])
    own = sum(max(m**2 - shared_se[fold[i]] ** 2, 0.0) for i, m in enumerate(out["mcse_i"]))
    out["elpd_kfold"] = float(e.sum())
    out["mcse"] = math.sqrt(own + sum((np.sum(fold == j) * s) ** 2
                                      for j, s in enumerate(shared_se)))
    out["fold_log_z_train_se"] = shared_se
    REFERENCE.write_text(json.dumps(out, indent=1) + "\n")
    print(f"elpd_kfold reference {out['elpd_kfold']:.3f} (mcse {out['mcse']:.4f}); "
          f"written to {REFERENCE.relative_to(ROOT)}")


def _progress(seed: int, r: Any, z: float, seconds: float) -> None:
    """One line per run (the machine's load beside its time)."""
    load = os.getloadavg()[0]
    print(f"seed {seed}: elpd_kfold {r.elpd_kfold:.2f} (mcse {r.mcse:.3f}) z {z:+.2f}, "
          f"{seconds:.1f} s, load {load:.1f}", flush=True)


def coverage(runs: int, point_refits: bool) -> None:
    import stanlogz

    ref = json.loads(REFERENCE.read_text())
    model, data = _roaches()
    if not point_refits:
        _no_point_refits()
    ref_i = np.array(ref["elpd_i"])
    fold = np.array(ref["folds"]) - 1
    z_all, z_fold, light = [], [], []  # light: run − reference where k̂ ≤ 0.5 (not refit)
    for seed in range(1, runs + 1):
        t0 = time.time()
        r = stanlogz.kfold(model, data, group="fold", k=None, seed=seed)
        z_all.append((r.elpd_kfold - ref["elpd_kfold"]) / math.hypot(r.mcse, ref["mcse"]))
        for f in r.folds:
            j = int(fold[f.index[0]])
            z_fold.append((float(np.sum(f.elpd_i)) - ref_i[f.index].sum())
                          / math.hypot(f.elpd_i_mcse, ref["fold_log_z_train_se"][j]
                                       * f.index.size))
            if f.khat_i is not None:
                ok = np.isin(np.arange(f.index.size),
                             np.searchsorted(f.index, f.refit_observations), invert=True)
                light.extend((f.elpd_i[ok] - ref_i[f.index[ok]]).tolist())
        _progress(seed, r, z_all[-1], time.time() - t0)
    d = np.quantile(np.abs(light), [0.5, 0.99, 1.0])
    print("observations not refit: |run − reference| median {:.4f}, 99th percentile {:.4f}, "
          "max {:.4f} nats".format(*d))
    print("| what | point refits | n | within 1.96 | within 2.58 | rms z | mean z |")
    print("|---|---|---|---|---|---|---|")
    for name, z in (("elpd_kfold", z_all), ("fold sums", z_fold)):
        za = np.array(z)
        print(f"| {name} | point refits {'yes' if point_refits else 'no'} | {za.size} | "
              f"{np.mean(abs(za) <= 1.96):.3f} | {np.mean(abs(za) <= 2.58):.3f} | "
              f"{math.sqrt(np.mean(za**2)):.2f} | {za.mean():+.2f} |")


def cost(runs: int) -> None:
    """Point refits' cost against their estimate (``kfold_time.point_refit_seconds``, which
    K-fold's up-front line uses): per refit observation, the NUTS seconds and the held-out
    densities' seconds (the bridge and its fallbacks) of each set's refits, each as a share
    of the full fit's seconds, beside the estimate's NUTS part (``point_refit_seconds``
    without ``POINT_HELDOUT_SHARE``) and ``POINT_HELDOUT_SHARE``."""
    import stanlogz
    from stanlogz.crossval.refit import heldout, heldout_points, kfold_time

    model, data = _roaches()
    got: list[tuple[float, float, float]] = []  # per observation: NUTS, densities, est. NUTS
    real_points, real_draws = heldout.refit_points, heldout_points.refit_draws
    clock = {"nuts": 0.0, "dens": 0.0}

    def timed_draws(*a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        out = real_draws(*a, **kw)
        clock["nuts"] += time.perf_counter() - t
        return out

    def timed_points(estimate: Any, model_: Any, data_: Any, observations: Any, v: Any,
                     rows: Any, full: Any, full_draws: Any, *a: Any, **kw: Any) -> Any:
        def est(*a2: Any, **kw2: Any) -> Any:
            t = time.perf_counter()
            out = estimate(*a2, **kw2)
            clock["dens"] += time.perf_counter() - t
            return out

        clock["nuts"] = clock["dens"] = 0.0
        out = real_points(est, model_, data_, observations, v, rows, full, full_draws, *a,
                          **kw)
        fs = float(full_draws.seconds)
        keep = 1.0 - len(v) / observations.n
        nuts = (kfold_time.point_refit_seconds(full_draws, full.dim, keep)
                - fs * kfold_time.POINT_HELDOUT_SHARE)
        n = max(len(rows), 1)
        got.extend([(clock["nuts"] / n / fs, clock["dens"] / n / fs, nuts / fs)] * len(rows))
        return out

    heldout_points.refit_draws = timed_draws
    heldout.refit_points = timed_points
    try:
        for seed in range(1, runs + 1):
            stanlogz.kfold(model, data, group="fold", k=None, seed=seed)
    finally:
        heldout_points.refit_draws, heldout.refit_points = real_draws, real_points
    share = np.array(got)
    print(f"{len(share)} point refits over {runs} run(s); each a share of the full fit's "
          "seconds (mean, median, 90th percentile):")
    for j, name in enumerate(("NUTS", "held-out densities", "estimated NUTS")):
        print(f"  {name}: {np.mean(share[:, j]):.3f}, {np.median(share[:, j]):.3f}, "
              f"{np.quantile(share[:, j], 0.9):.3f}")
    print(f"  estimated held-out densities (POINT_HELDOUT_SHARE): "
          f"{kfold_time.POINT_HELDOUT_SHARE:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=["outlier", "reference", "coverage", "cost"])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--shift", type=float, default=30.0)
    ap.add_argument("--no-point-refits", action="store_true")
    a = ap.parse_args()
    os.nice(5)
    if a.part == "outlier":
        outlier(a.runs, a.shift)
    elif a.part == "reference":
        reference()
    elif a.part == "cost":
        cost(a.runs)
    else:
        coverage(a.runs, not a.no_point_refits)


if __name__ == "__main__":
    main()
