"""Exact refits on the interpreter started from the full fit: the same answer, how much cheaper?

``python3 -m benchmarks.interpreted_refits [--obs 4] [--seeds 3] [--warmup 150]`` samples the
README's wells program on the interpreter, then for the ``--obs`` observations with the
highest PSIS k̂ computes the exact held-out elpd_i (:func:`stanlogz.crossval.refit.heldout
.heldout_elpd`) from two refits without observation i: a cold one (CmdStan's 1000 warmup
iterations, as loo's self-check runs today) and a warm one (``--warmup`` iterations, chains
started at the full fit's last draws with its adapted metric and step size:
``run_interpreted_nuts(warm=...)``), over ``--seeds`` seeds. It prints, per refit, the
difference of the two elpd_i in units of their combined Monte Carlo se (|z| > 3 would say the
warm refit is not the same answer) and the seconds of each refit's sampling.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--obs", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=150)
    args = parser.parse_args()

    import stanlogz
    from stanlogz.crossval.observations.observations import find_observations
    from stanlogz.crossval.refit.heldout import heldout_elpd
    from stanlogz.stan.interpreted import InterpretedModel
    from stanlogz.stan.settings import NutsArgs

    stan = ROOT / "stan_models" / "examples" / "wells_logistic.stan"
    data = json.loads((ROOT / "stan_models" / "examples" / "wells.data.json").read_text())
    model = InterpretedModel(stan.read_text(), data, name="wells", stan_file=stan, seed=1)
    obs = find_observations(data, None, None, model.code)
    full = model.nuts(NutsArgs(backend="interpreted"), seed=1)
    res = stanlogz.loo(model, data, backend="interpreted", verify=0, seed=1,
                       fix="none")
    worst = np.argsort(-np.asarray(res.pareto_k))[:args.obs]
    print(f"load average {os.getloadavg()[0]:.1f}; observations {list(worst + 1)} "
          f"(k̂ {np.round(np.asarray(res.pareto_k)[worst], 2).tolist()}), warm warmup "
          f"{args.warmup}")
    print("| obs | seed | elpd_i cold | elpd_i warm | z | s cold | s warm |")
    print("|---|---|---|---|---|---|---|")
    zs = []
    for i in worst:
        keep = np.setdiff1d(np.arange(obs.n), [i])
        train = model.with_data(obs.subset(data, keep))
        for seed in range(1, args.seeds + 1):
            t0 = time.perf_counter()
            cold = train.nuts(NutsArgs(backend="interpreted"), seed=100 + seed)
            t1 = time.perf_counter()
            warm = train.nuts(NutsArgs(warmup=args.warmup, backend="interpreted"),
                              seed=200 + seed, warm=full)
            t2 = time.perf_counter()
            got = [heldout_elpd(model, data, obs, [int(i)], full_draws=full.unconstrained,
                                train_draws=d.unconstrained, seed=seed)
                   for d in (cold, warm)]
            z = (got[1].elpd - got[0].elpd) / np.hypot(got[0].mcse, got[1].mcse)
            zs.append(z)
            print(f"| {i + 1} | {seed} | {got[0].elpd:.4f} ± {got[0].mcse:.4f} | "
                  f"{got[1].elpd:.4f} ± {got[1].mcse:.4f} | {z:+.2f} | {t1 - t0:.1f} | "
                  f"{t2 - t1:.1f} |", flush=True)
    print(f"max |z| {np.max(np.abs(zs)):.2f} over {len(zs)} pairs; rms z "
          f"{np.sqrt(np.mean(np.square(zs))):.2f} (about 1 when the two agree)")


if __name__ == "__main__":
    main()
