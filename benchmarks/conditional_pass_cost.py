"""Cost of the conditional log-likelihood's pass per observation on a corpus program, and what
the whole pass would take: seconds per observation, data instances built per observation, and
the pass extrapolated to every observation (one process, the machine's threads).

Run: ``python3 -m benchmarks.conditional_pass_cost diamonds --obs 3 [--backend compiled]
[--draws FILE] [--pointwise-draws 400] [--obs-fields eCO2mean]``. Without ``--draws`` the
posterior is sampled first (4 chains x 1,000 draws after 1,000 warmup, seed 1; or
``--warmup``/``--per-chain``), and ``--save-draws FILE`` keeps it for the next run. The same
script run from an older checkout (``PYTHONPATH=<checkout>``) gives the "before" column of
docs/features/nonfactorized-loo.md: it only uses ``load_observed``, ``pointwise_source`` and
``column``, which every release since the conditional route has.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from benchmarks.corpus import CORPUS, posteriors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("posterior", help="a corpus posterior (e.g. diamonds)")
    ap.add_argument("--obs", type=int, default=3, help="observations timed (after a warm one)")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--draws", default=None, help="draws file (stanlogz sample --output)")
    ap.add_argument("--save-draws", default=None)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--per-chain", type=int, default=1000)
    ap.add_argument("--pointwise-draws", type=int, default=None)
    ap.add_argument("--obs-fields", default=None, help="comma-separated, as loo's option")
    args = ap.parse_args()

    from stanlogz.crossval.elpd.routes import pointwise_source
    from stanlogz.crossval.observations.observations import load_observed
    from stanlogz.draws import obtain_draws
    from stanlogz.stan.settings import NutsArgs

    folder = posteriors(CORPUS, [args.posterior])[0]
    fields = args.obs_fields.split(",") if args.obs_fields else None
    model, data, obs = load_observed(str(folder / "model.stan"), str(folder / "data.json"),
                                     obs_fields=fields, backend=args.backend)
    settings = NutsArgs(chains=4, warmup=args.warmup, draws=args.per_chain)
    d = obtain_draws(model, args.draws, settings, seed=1)
    if args.save_draws:
        d.to_inference_data().to_netcdf(args.save_draws)
    unc = d.flat_unconstrained()
    if args.pointwise_draws:
        per = -(-args.pointwise_draws // d.n_chains)
        rows = np.unique(np.linspace(0, d.n_draws - 1, per).round().astype(int))
        unc = d.unconstrained[:, rows].reshape(-1, d.dim)
    pw = pointwise_source(model, data, obs, "conditional", unc[:3])
    built = [0]
    real = type(model).with_data

    def counting(self, data):  # every data instance goes through with_data
        built[0] += 1
        return real(self, data)

    type(model).with_data = counting
    pw.column(0, unc)  # the first observation pays the one-time costs (bounds, timings)
    built[0] = 0
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    for i in range(1, 1 + args.obs):
        pw.column(i, unc)
    wall = (time.perf_counter() - t0) / args.obs
    cpu = (time.process_time() - cpu0) / args.obs
    out = {"posterior": folder.name, "backend": type(model).__name__, "draws": unc.shape[0],
           "observations": obs.n, "s_per_obs": round(wall, 3), "cpu_s_per_obs": round(cpu, 3),
           "instances_per_obs": built[0] / args.obs,
           "method": sorted(set(str(m) for m in getattr(pw, "method", [])[1:1 + args.obs])),
           "pass_min": round(wall * obs.n / 60, 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
