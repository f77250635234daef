"""Time and accuracy of leave-one-group-out without refits (``loo --group``) against exact
refits (``kfold --group VAR --k groups``), in one table.

* ``radon``: Minnesota radon (Gelman & Hill 2007; posteriordb's radon_mn data in
  benchmarks/data/radon_mn.json), 919 homes in 85 counties, varying intercepts and a floor
  effect (stan_models/examples/radon_logo.stan); the group integrals are Gaussian, so the
  Laplace value (confirmed by Gauss–Hermite) is used.
* ``poisson``: logo_poisson.stan on 30 simulated groups of 5-7 counts; adaptive Gauss–Hermite.

Each row: one NUTS run on all data (4 x 1000 after 1000 warmup, what ``stanlogz sample``
runs), LOGO on those draws (group values only, then with the observation-level values), and
the exact refits of ``kfold --group VAR --k groups`` (one NUTS refit per group and bridge
sampling: :func:`heldout_many`, what kfold runs per fold), all with the same seed. Times are
CPU seconds of the process (all threads), so that a machine shared with other work does not
skew the ratios; ``--refit-groups K`` refits K evenly spaced groups only and extrapolates the
time to all of them. The last column compares the refit groups' values: the largest
|logo − refit| / sqrt(mcse² + se²) and the summed difference with its se.

``--end-to-end`` times the commands as a user runs them instead, each in a fresh process
(CPU seconds of the child, imports and the program's load included): ``stanlogz sample``,
``stanlogz loo --group`` and the same with ``--no-obs-values``, all ``--backend compiled
--seed 1``, on ``pri`` (benchmarks/data/logo_pri.stan: a Poisson random intercept, 30 groups
of 5 counts, non-centred, a program with ``int<lower=1> n_obs``) and on radon.

    nice python3 -m benchmarks.logo_speed                          # every group refit
    nice python3 -m benchmarks.logo_speed --cases radon --refit-groups 10
    nice python3 -m benchmarks.logo_speed --end-to-end --cases pri,radon
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

import numpy as np

from benchmarks._common import ROOT, STAN_MODELS
from benchmarks.truths.crossval.truths_logo import simulate
from stanlogz.crossval.logo.estimator import logo
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.refit.heldout import heldout_many
from stanlogz.draws import obtain_draws
from stanlogz.stan.model import StanModel


def case(name: str) -> tuple[StanModel, dict, str]:
    """The program, its data and the group variable of a row."""
    if name == "radon":
        data = json.loads((ROOT / "benchmarks" / "data" / "radon_mn.json").read_text())
        return (StanModel.from_file(STAN_MODELS / "examples" / "radon_logo.stan", data), data,
                "county_idx")
    data = simulate("poisson", 30, 5, 3)
    return StanModel.from_file(STAN_MODELS / "tests" / "logo_poisson.stan", data), data, "g"


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(t: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - t[0], time.process_time() - t[1]


def row(name: str, seed: int, refit_groups: int | None) -> str:
    """One table row (seconds as CPU seconds of this process, every thread counted, so that
    a machine shared with other work does not skew the ratios; wall seconds in brackets)."""
    m, data, group = case(name)
    t = _clock()
    d = obtain_draws(m, None, None, seed=seed)
    w_nuts, c_nuts = _since(t)
    t = _clock()
    r = logo(m, data, group=group, draws=d, pointwise_obs=False, seed=seed)
    w_logo, c_logo = _since(t)
    t = _clock()
    logo(m, data, group=group, draws=d, pointwise_obs=True, seed=seed)
    _, c_obs = _since(t)
    how = sorted({g.integration for g in r.groups})
    out = (f"| {name} | {len(r.groups)} | {data['N']} | {c_nuts:.1f} [{w_nuts:.0f}] | "
           f"{c_logo:.1f} [{w_logo:.0f}] ({c_logo / c_nuts:.1f}x) | {c_obs:.1f} "
           f"({c_obs / c_nuts:.1f}x) | {r.elpd_logo:.2f} ± {r.mcse_elpd_logo:.3f} | "
           f"{max(r.khat):.2f} | {','.join(how)} |")
    if refit_groups == 0:
        return out + " - | - | - |"
    g_all = len(r.groups)
    pick = (np.arange(g_all) if refit_groups is None or refit_groups >= g_all else
            np.unique(np.linspace(0, g_all - 1, refit_groups).astype(int)))
    held = [r.groups[j].rows for j in pick]
    t = _clock()
    folds = heldout_many(m, data, find_observations(data, "N"), held, full_draws=d,
                         seed=seed)
    _, c_k = _since(t)
    c_all = c_nuts + c_k * g_all / pick.size  # every group refit, extrapolated if a subset
    diff = np.array([r.groups[j].elpd - f.elpd for j, f in zip(pick, folds, strict=True)])
    se = np.array([math.hypot(r.groups[j].mcse, f.mcse) for j, f in zip(pick, folds,
                                                                        strict=True)])
    z = diff / se
    what = ("all" if pick.size == g_all
            else f"{pick.size} of {g_all}, time x{g_all / pick.size:.1f}")
    return out + (f" {c_all:.0f} ({c_all / c_nuts:.0f}x; {what}) | max abs z "
                  f"{np.max(np.abs(z)):.2f}, sum diff {diff.sum():+.3f} ± "
                  f"{math.sqrt(np.sum(se**2)):.3f} |")


E2E = {"pri": ("benchmarks/data/logo_pri.stan", "benchmarks/data/logo_pri.json", "grp"),
       "radon": ("stan_models/examples/radon_logo.stan", "benchmarks/data/radon_mn.json",
                 "county_idx")}


def _child_cpu(args: list[str]) -> tuple[float, str]:
    """CPU seconds (user + system) of one fresh ``stanlogz`` process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-m", "stanlogz.cli", *args, "--backend", "compiled",
                          "--quiet"], cwd=ROOT, capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, out.stdout)


def end_to_end(name: str, seed: int) -> str:
    """One row of fresh-process CPU seconds: sample, loo --group, loo --group --no-obs-values
    (the program built beforehand, so that no row pays for compiling it)."""
    prog, data, group = E2E[name]
    common = [prog, "--data", data, "--seed", str(seed)]
    _child_cpu(["sample", *common])  # builds the program once (cached for the timed runs)
    c_s, _ = _child_cpu(["sample", *common])
    c_full, out = _child_cpu(["loo", *common, "--group", group, "--json"])
    c_no, _ = _child_cpu(["loo", *common, "--group", group, "--no-obs-values"])
    r = json.loads(out)
    return (f"| {name} | {r['n_groups']} | {r['n_obs']} | {c_s:.1f} | {c_full:.1f} "
            f"({c_full / c_s:.1f}x) | {c_no:.1f} ({c_no / c_s:.1f}x) | "
            f"{r['elpd_logo']:.2f} ± {r['mcse_elpd_logo']:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="poisson,radon")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--refit-groups", type=int, default=None,
                    help="refit this many groups (evenly spaced; default all, 0 none) and "
                    "extrapolate the refit time to every group")
    ap.add_argument("--end-to-end", action="store_true",
                    help="time the commands in fresh processes (cases pri, radon)")
    args = ap.parse_args()
    if args.end_to_end:
        print("| program | groups | N | stanlogz sample CPU s | loo --group | --no-obs-values | "
              "elpd_logo ± mc se |")
        print("|---|---|---|---|---|---|---|")
        for name in args.cases.split(","):
            print(end_to_end(name, args.seed), flush=True)
        return
    print("| program | groups | N | NUTS CPU s [wall] | logo CPU s [wall] | logo + obs values "
          "| elpd_logo ± mc se | max k̂ | integration | refits CPU s (incl. NUTS) | "
          "logo − refit per group |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.cases.split(","):
        print(row(name, args.seed, args.refit_groups), flush=True)


if __name__ == "__main__":
    main()
