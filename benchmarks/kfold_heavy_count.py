"""How many observations kfold's up-front estimate counts as refit on their own
(:func:`stanlogz.crossval.refit.kfold_time.heavy_count`: Pareto k̂ of the weights p(y_i | θ) at
the full fit's draws above ``HEAVY_KHAT``) against the observations the folds did refit
(``KFoldResult.point_refits``), on the same full-data draws; beside them the count of the code
before (PSIS-LOO's k̂ above 0.5, the reverse weights 1 / p(y_i | θ)). Default settings
(4 chains x 1000 + 1000), posteriordb programs of ../shared/corpus where present.

    nice -n 10 python3 -m benchmarks.kfold_heavy_count
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import stanlogz
from stanlogz._util.seeds import Stream, stream_int_seed
from stanlogz.arviz_compat import psislw
from stanlogz.crossval.elpd.psis import relative_efficiency
from stanlogz.crossval.observations.observations import load_observed
from stanlogz.crossval.observations.pointwise import PointwiseLogLik
from stanlogz.crossval.refit import kfold_time
from stanlogz.draws.obtain import obtain_draws
from stanlogz.stan.backend import load_program

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "posteriordb"
# (label, program, data, K, seeds)
CASES = [("roaches Poisson (N = 262)", ROOT / "stan_models/tests/roaches_poisson.stan",
          ROOT / "stan_models/tests/roaches.json", 10, (1, 2))]
for name, k, seeds in (("radon_mn-radon_county_intercept", 5, (1, 2)),
                       ("radon_mn-radon_variable_intercept_slope_noncentered", 10, (1,)),
                       ("earnings-earn_height", 10, (1,)),
                       ("mesquite-logmesquite", 10, (1,)),
                       ("kidiq-kidscore_interaction", 10, (1,))):
    if (CORPUS / name).is_dir():
        CASES.append((name.split("-", 1)[1], CORPUS / name / "model.stan",
                      CORPUS / name / "data.json", k, seeds))


def main() -> None:
    print("| program | K | seed | N | counted now | counted before (PSIS-LOO) | refit |")
    print("|---|---|---|---|---|---|---|")
    for label, program, data, k, seeds in CASES:
        for seed in seeds:
            model = load_program(program, data, backend="auto", seed=1, progress=None)
            model, data_dict, obs = load_observed(model, None, seed=seed)
            full = obtain_draws(model, None, None, seed=stream_int_seed(seed, Stream.NUTS))
            # counted whatever the price (a program without log_lik takes the difference pass)
            now = kfold_time.heavy_count(model, data_dict, obs, full, 0.0, float("inf"))
            pw = PointwiseLogLik(model, data_dict, obs, "auto")
            ll = kfold_time._fold_columns(pw, full, np.arange(obs.n), obs.n)
            _, k_loo = psislw(-ll.T, relative_efficiency(full.unconstrained))
            before = int(np.sum(~(np.asarray(k_loo) <= 0.5)))
            r = stanlogz.kfold(model, k=k, seed=seed, draws=full)
            print(f"| {label} | {k} | {seed} | {obs.n} | {now} | {before} | "
                  f"{len(r.point_refits)} |", flush=True)


if __name__ == "__main__":
    main()
