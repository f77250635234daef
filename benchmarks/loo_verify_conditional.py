"""Power and false-alarm rate of the conditional route's self-check (issue 44, case 2:
:mod:`stanlogz.crossval.observations.conditional_verify`), and its cost as a share of the run.

Case 2: stan_models/tests/ar_far_innov.stan, an AR(1) series (T 12) whose innovations are
0.9 N(0, σ) + 0.1 N(25, σ), the far component never visited by the data. The route with the
far-mode search as it was before issue 44 (fixed probes only: ``LADDER = 0``, no climbs)
misses the far mode and its values are wrong by more than their error estimates: the check
must flag it ("power", the total's Monte Carlo se NA). The route as it is now finds the mode
and is right: a flag is a false alarm. The data are fixed, the draws new for each seed
(``--chains`` x ``--draws``), ``fix="none"`` so that the answer is PSIS of the route's values
and "error" compares it with PSIS of the closed-form values on the same draws
(:mod:`benchmarks.truths.crossval.truths_far_innov`); the LOO self-check's refits are left
out (``verify`` sets the observations the conditional check takes; the refit check is measured in
:mod:`benchmarks.loo_verify_power`).

    python -m benchmarks.loo_verify_conditional [--seeds 40] [--verify 2] [--search old,new]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import stanlogz.crossval.observations.conditional_integral as CI
import stanlogz.crossval.observations.conditional_search as CS
from benchmarks._common import STAN_MODELS
from benchmarks.truths.crossval import truths_far_innov as F
from stanlogz.crossval.elpd.psis import psis_loo
from stanlogz.crossval.psis_loo import loo as loo_module

PROGRAM = STAN_MODELS / "tests" / "ar_far_innov.stan"


def _old_search() -> dict[str, Any]:
    """Switch the search to what it was before issue 44; returns what to restore."""
    saved = {"LADDER": CS.LADDER, "climb": CI.climb}
    CS.LADDER = 0
    CI.climb = lambda f, pts, *a: ([], 0, np.full(len(pts), -np.inf))
    return saved


def _restore(saved: dict[str, Any]) -> None:
    CS.LADDER, CI.climb = saved["LADDER"], saved["climb"]


def one(data: dict[str, Any], seed: int, verify: int, old: bool, chains: int, draws: int
        ) -> dict[str, Any]:
    """One run: whether the conditional check flagged, its seconds, the run's, the error."""
    spent = {"check": 0.0}
    original = loo_module.conditional_self_check

    def timed(*a, **kw):  # noqa: ANN002, ANN003
        t = time.perf_counter()
        try:
            return original(*a, **kw)
        finally:
            spent["check"] += time.perf_counter() - t

    saved = _old_search() if old else None
    loo_module.conditional_self_check = timed
    no_refits = loo_module.self_check
    loo_module.self_check = lambda verify_, cands, fixed, *a, **kw: (fixed, None)
    try:
        t0 = time.perf_counter()
        r = loo_module.loo(str(PROGRAM), data, obs="T", seed=seed, verify=verify,
                           chains=chains, n_draws=draws, fix="none")
        seconds = time.perf_counter() - t0
    finally:
        loo_module.conditional_self_check = original
        loo_module.self_check = no_refits
        if saved is not None:
            _restore(saved)
    th = r.program.constrain_many(r.draws.flat_unconstrained())  # (S, 2): phi, sigma
    want = F.far_innov_columns(np.array(data["y"]), th, data["w"], data["far"])
    truth = float(psis_loo(want, r.r_eff, chains=chains).elpd_i.sum())  # the same draws
    reason = r.mcse_na_reason() or ""
    return {"seed": seed, "flagged": "conditional route failed" in reason,
            "error": r.elpd_loo - truth, "mcse": r.mcse_elpd_loo, "check": spent["check"],
            "seconds": seconds}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--verify", type=int, default=2)
    ap.add_argument("--search", default="old,new")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--T", type=int, default=12)
    args = ap.parse_args(argv)
    data = F.far_innov_data(args.T, np.random.default_rng(1), w=0.1)
    rows = []
    for search in args.search.split(","):
        runs = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            runs.append(one(data, seed, args.verify, search == "old", args.chains, args.draws))
            print(search, runs[-1], flush=True)
        p = float(np.mean([r["flagged"] for r in runs]))
        err = np.array([r["error"] for r in runs])
        rows.append((search, len(runs), p, np.sqrt(p * (1 - p) / len(runs)),
                     float(np.mean(np.abs(err))),
                     float(np.median([r["check"] / r["seconds"] for r in runs]))))
    print(f"\n{'search':6s} {'runs':>4s} {'flagged':>8s} {'se':>6s} {'mean |error|':>12s} "
          f"{'check share':>11s}")
    for s, n, p, se, e, sh in rows:
        print(f"{s:6s} {n:4d} {p:8.3f} {se:6.3f} {e:12.3f} {sh:11.3f}")


if __name__ == "__main__":
    main()
