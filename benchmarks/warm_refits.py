"""Warm-started refits (:func:`stanlogz.draws.continuation.refit_draws`) against cold ones: the
same answer, and how much cheaper?

``python3 -m benchmarks.warm_refits PART [--seeds S] [--runs R] [--backend B]``, PART one of:

* ``bias``: exact held-out values log p(y_V | y_T) (:func:`~stanlogz.crossval.refit.heldout
  .heldout_elpd`) from a cold refit (1000 warmup iterations from random inits) and a warm one
  (chains at the full fit's last draws, ``WARM_REFIT_WARMUP`` warmup iterations), each from
  its own full-data fit (so the two errors are independent), over ``--seeds`` seeds, on three
  programs: the README's wells logistic regression (the 4 observations of highest PSIS k̂,
  one at a time, as loo's fix-ups and self-check refit them), the Gaussian hierarchical
  regression ``hier_regression`` (10 random folds of 3; its truth is in closed form, so each
  value's z against the truth is shown as well) and a centred hierarchical regression with an
  unknown group scale (``hier_tau``, written below: a funnel, 10 random folds of 3);
  ``--programs roaches`` adds the roaches Poisson regression (10 random folds of 3). Per
  program: rms and max |z| of z = (warm − cold) / hypot(mcse) (about 1 and below ~3 when the
  two agree), the median ratio warm/cold of the refits' mcse, gradient evaluations and seconds
  (the median: the evidence difference's se on a Gaussian posterior is ~1e-9, so a mean of
  ratios says nothing).
* ``coverage``: K-fold (``kfold``, K = 5) of the conjugate normal mean on ``--runs`` simulated
  data sets (N = 20), warm and cold, against its closed form
  (:func:`benchmarks.anytime_commands.exact_kfold`): the share of runs whose
  |elpd_kfold − truth| <= 1.96 / 2.58 mcse and the rms of the z scores.
* ``cost``: K-fold (K = 10) wall and CPU seconds on wells' first 302 households and
  ``hier_tau``: cold refits with each held-out observation's density from the whole program
  on T ∪ {i} (main's path before warm refits), warm refits so, and warm refits with loo's
  density-difference term (the default); ``--full-wells`` adds all 3,020 households (cold
  and warm, terms). Then loo with its self-check (``verify=4``) on wells warm and cold (cold:
  the full fit's warm start withheld), on ``--backend``.
* ``latent``: eight schools (one latent per school) leave-one-out by K-fold, warm refits
  (the held-out school's latent dropped from the full fit's last draws) against cold ones,
  ``--seeds`` seeds: each school's z against quadrature, gradients and seconds.
* ``target``: K-fold (K = 5, N = 20) of the normal mean to an mcse target of 0.03 from 2 x 100
  draws per chain (``kfold(mcse_target=...)``), on ``--runs`` data sets: the coverage of the
  stopped-at-target estimates against the closed form, and the draws it took.
* ``warmup``: a refit's gradients and ESS per gradient against the warm warmup's length
  (100-1000 iterations, and cold), one fold of a tenth held out of wells, ``hier_tau`` and
  the roaches Poisson regression (``stan_models/tests/roaches_poisson.stan``).
* ``lfo``: PSIS-LFO (one step ahead, k̂ threshold 0.5, so that it refits) of the conjugate AR(2)
  (``stan_models/examples/ar_nig.stan``) on ``--seeds`` simulated series of 200 from origin
  20, warm and cold refits: refits, gradients per refit, CPU seconds, and elpd_lfo's z
  against the closed form (``benchmarks.truths.crossval.truths.ar_nig_lfo``).

Every part runs at ``nice`` on a shared machine: the seconds are noisy (load average printed).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "stan_models" / "examples"

#: A centred hierarchical regression with an unknown group scale (a funnel in (u, tau)).
HIER_TAU = """
data {
  int<lower=1> N;
  int<lower=1> J;
  array[N] int<lower=1, upper=J> g;
  vector[N] x;
  vector[N] y;
  real<lower=0> sigma;
}
parameters {
  real a;
  real b;
  real<lower=0> tau;
  vector[J] u;
}
model {
  a ~ normal(0, 2);
  b ~ normal(0, 2);
  tau ~ normal(0, 1);
  u ~ normal(0, tau);
  y ~ normal(a + b * x + u[g], sigma);
}
"""


def _load(name: str, backend: str) -> tuple[Any, dict[str, Any]]:
    from stanlogz.stan.backend import load_program

    if name == "wells_302":  # the first 302 households (K-fold's held-out densities cost
        # a whole-program evaluation per held-out observation and draw: O(N^2) at N = 3,020)
        path = EXAMPLES / "wells_logistic.stan"
        full = json.loads((EXAMPLES / "wells.data.json").read_text())
        data = {k: (v[:302] if isinstance(v, list) else v) for k, v in full.items()}
        data["N"] = 302
    elif name == "roaches":  # influential points; its posterior is poorly scaled for a
        # unit metric (a warm refit that re-adapted from it took small steps)
        path = ROOT / "stan_models" / "tests" / "roaches_poisson.stan"
        data = json.loads((ROOT / "stan_models" / "tests" / "roaches.json").read_text())
    elif name == "hier_tau":
        path = Path(os.environ.get("TMPDIR", "/tmp")) / "hier_tau.stan"
        if not path.exists() or path.read_text() != HIER_TAU:
            path.write_text(HIER_TAU)
        data = json.loads((EXAMPLES / "hier_regression.data.json").read_text())
        data = {k: v for k, v in data.items() if k not in ("tau", "s_ab")}
    else:
        path = EXAMPLES / f"{name}.stan"
        data = json.loads((EXAMPLES / f"{'wells' if name == 'wells_logistic' else name}"
                                      ".data.json").read_text())
    return load_program(path, data, backend=backend, seed=1, progress=None), data


def _sets(name: str, model: Any, data: dict[str, Any], obs: Any, full: Any) -> list[np.ndarray]:
    """The held-out sets of ``name``: wells' 4 highest-k̂ observations, else 10 folds of 3."""
    if name == "wells_logistic":
        import stanlogz

        res = stanlogz.loo(model, data, draws=full, fix="none", verify=0, seed=1)
        worst = np.argsort(-np.asarray(res.pareto_k))[:4]
        print(f"  wells: observations {[int(i) + 1 for i in worst]}, k̂ "
              f"{np.round(np.asarray(res.pareto_k)[worst], 2).tolist()}")
        return [np.array([i]) for i in worst]
    perm = np.random.default_rng(7).permutation(obs.n)
    return [perm[3 * j:3 * j + 3] for j in range(10)]


def bias(seeds: int, backend: str,
         programs: tuple[str, ...] = ("wells_logistic", "hier_regression", "hier_tau")
         ) -> None:
    import stanlogz
    from benchmarks.truths.crossval import truths
    from stanlogz.crossval.observations.observations import find_observations
    from stanlogz.crossval.refit.heldout import heldout_elpd

    print(f"load average {os.getloadavg()[0]:.1f}; backend {backend}")
    print("| program | refits | rms z | max abs z | rms z warm vs truth | rms z cold vs truth "
          "| mcse warm/cold | gradients warm/cold | seconds warm/cold |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in programs:
        model, data = _load(name, backend)
        obs = find_observations(data, None, None, model.code)
        z, zt_w, zt_c, r_se, r_g, r_s = [], [], [], [], [], []
        sets = None
        for s in range(seeds):
            fa = stanlogz.sample(model, seed=1000 + s)
            fb = stanlogz.sample(model, seed=2000 + s)
            sets = sets if sets is not None else _sets(name, model, data, obs, fa)
            for v in sets:
                c = heldout_elpd(model, data, obs, v, full_draws=fa, seed=3000 + s,
                                 warm_refits=False, pointwise=False)
                w = heldout_elpd(model, data, obs, v, full_draws=fb, seed=4000 + s,
                                 warm_refits=True, pointwise=False)
                assert w.warm and not c.warm, name
                z.append((w.elpd - c.elpd) / np.hypot(w.mcse, c.mcse))
                if name == "hier_regression":
                    truth = truths.gaussian_heldout(np.asarray(data["y"]),
                                                    truths.hier_regression_cov(data), v)
                    zt_w.append((w.elpd - truth) / w.mcse)
                    zt_c.append((c.elpd - truth) / c.mcse)
                r_se.append(w.mcse / c.mcse)
                r_g.append(w.n_gradient_evals / c.n_gradient_evals)
                r_s.append(w.seconds / c.seconds)
        za = np.asarray(z)

        def rms(a: list[float]) -> str:
            return f"{np.sqrt(np.mean(np.square(a))):.2f}" if a else "-"

        print(f"| {name} | {za.size} | {rms(z)} | {np.max(np.abs(za)):.2f} | {rms(zt_w)} | "
              f"{rms(zt_c)} | {np.median(r_se):.2f} | {np.median(r_g):.2f} | "
              f"{np.median(r_s):.2f} |",
              flush=True)


def coverage(runs: int, backend: str) -> None:
    import stanlogz
    from benchmarks.anytime_commands import exact_kfold
    from stanlogz.stan.backend import load_program

    path = EXAMPLES / "normal_mean.stan"
    base = json.loads((EXAMPLES / "normal_mean.data.json").read_text())
    first = load_program(path, base, backend=backend, seed=1, progress=None)
    print(f"load average {os.getloadavg()[0]:.1f}; backend {backend}; {runs} data sets")
    print("| refits | runs | within 1.96 mcse | within 2.58 mcse | rms z | mean mcse | "
          "gradients per refit |")
    print("|---|---|---|---|---|---|---|")
    rows: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    for r in range(runs):
        rng = np.random.default_rng(50_000 + r)
        y = (rng.normal(0, base["prior_sd"]) + rng.normal(0, base["sigma"], 20)).round(4)
        data = dict(base, N=20, y=y.tolist())
        model = first.with_data(data)
        for warm in (False, True):
            res = stanlogz.kfold(model, data, k=5, seed=r + 1, warm_refits=warm)
            truth = exact_kfold(data, res.fold_of)
            grads = np.mean([f.n_gradient_evals for f in res.folds])
            rows[warm].append(((res.elpd_kfold - truth) / res.mcse, res.mcse, grads))
    for warm, got in rows.items():
        a = np.asarray(got)
        print(f"| {'warm' if warm else 'cold'} | {len(a)} | "
              f"{np.mean(np.abs(a[:, 0]) <= 1.96):.3f} | {np.mean(np.abs(a[:, 0]) <= 2.58):.3f} | "
              f"{np.sqrt(np.mean(a[:, 0] ** 2)):.2f} | {np.mean(a[:, 1]):.4f} | "
              f"{np.mean(a[:, 2]):.0f} |")


def target(runs: int, backend: str) -> None:
    """K-fold to an mcse target: coverage of the stopped-at-target estimates."""
    import stanlogz
    from benchmarks.anytime_commands import exact_kfold
    from stanlogz.stan.backend import load_program

    path = EXAMPLES / "normal_mean.stan"
    base = json.loads((EXAMPLES / "normal_mean.data.json").read_text())
    first = load_program(path, base, backend=backend, seed=1, progress=None)
    print(f"load average {os.getloadavg()[0]:.1f}; backend {backend}; {runs} data sets; "
          "K = 5, N = 20, 2 chains x 100 draws first, mcse target 0.03")
    z, ended, draws, mcse = [], [], [], []
    for r in range(runs):
        rng = np.random.default_rng(70_000 + r)
        y = (rng.normal(0, base["prior_sd"]) + rng.normal(0, base["sigma"], 20)).round(4)
        data = dict(base, N=20, y=y.tolist())
        res = stanlogz.kfold(first.with_data(data), data, k=5, seed=r + 1, chains=2,
                             warmup=200, n_draws=100, mcse_target=0.03)
        z.append((res.elpd_kfold - exact_kfold(data, res.fold_of)) / res.mcse)
        ended.append(res.precision["ended_by"])
        draws.append(res.precision["draws"])
        mcse.append(res.mcse)
    za = np.abs(np.asarray(z))
    print("ended by: " + ", ".join(f"{e} {ended.count(e)}" for e in sorted(set(ended))))
    print("| runs | ended at target | within 1.96 mcse | within 2.58 mcse | rms z | "
          "mean final mcse | median draws per chain |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {runs} | {ended.count('target')} | {np.mean(za <= 1.96):.3f} | "
          f"{np.mean(za <= 2.58):.3f} | {np.sqrt(np.mean(za ** 2)):.2f} | "
          f"{np.mean(mcse):.4f} | {np.median(draws):.0f} |")


def _timed(fn: Any, *args: Any, **kw: Any) -> tuple[Any, float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kw)
    return out, time.perf_counter() - w0, time.process_time() - c0


def cost(backend: str, full_wells: bool) -> None:
    import stanlogz
    from stanlogz.crossval.psis_loo import loo as loo_module
    from stanlogz.crossval.refit import heldout

    real_terms = heldout._factorized
    print(f"load average {os.getloadavg()[0]:.1f}; backend {backend}")
    print("| command | program | refits | held-out densities | wall s | CPU s | "
          "refits' gradients | elpd ± mcse | estimate s |")
    print("|---|---|---|---|---|---|---|---|---|")
    runs = [("wells_302", False, False), ("wells_302", True, False), ("wells_302", True, True),
            ("hier_tau", False, False), ("hier_tau", True, False), ("hier_tau", True, True)]
    if full_wells:  # main's path (cold, whole) would take ~16 min here: not run
        runs += [("wells_logistic", False, True), ("wells_logistic", True, True)]
    loaded: dict[str, Any] = {}
    for name, warm, terms in runs:
        if name not in loaded:
            model, data = _load(name, backend)
            loaded[name] = (model, data, stanlogz.sample(model, seed=11))
        model, data, full = loaded[name]
        heldout._factorized = real_terms if terms else (lambda *a: None)  # type: ignore
        try:
            res, wall, cpu = _timed(stanlogz.kfold, model, data, k=10, seed=5, draws=full,
                                    warm_refits=warm)
        finally:
            heldout._factorized = real_terms
        grads = sum(f.n_gradient_evals for f in res.folds)
        print(f"| kfold K=10 (given full fit: {full.seconds:.1f} s) | {name} | "
              f"{'warm' if warm else 'cold'} | {'terms' if terms else 'whole program'} | "
              f"{wall:.1f} | {cpu:.1f} | {grads} | {res.elpd_kfold:.2f} ± {res.mcse:.3f} | "
              f"{res.estimated_seconds or float('nan'):.1f} |", flush=True)
    model, data = _load("wells_logistic", backend)
    real_of = loo_module.WarmStart.of
    for warm in (False, True):
        loo_module.WarmStart.of = real_of if warm else (lambda *a, **k: None)  # type: ignore
        try:
            res, wall, cpu = _timed(stanlogz.loo, model, data, seed=3, verify=4)
        finally:
            loo_module.WarmStart.of = real_of  # type: ignore[method-assign]
        ver = res.verification
        print(f"| loo verify=4 (self-check {ver.seconds:.1f} s, {ver.status}) | wells | "
              f"{'warm' if warm else 'cold'} | - | {wall:.1f} | {cpu:.1f} | - | "
              f"{res.elpd_loo:.2f} ± {res.mcse_elpd_loo:.3f} | - |", flush=True)


def warmup(backend: str) -> None:
    """Refit efficiency against the warm warmup's length (one fold of a tenth held out)."""
    import stanlogz
    from stanlogz.crossval.observations.observations import find_observations
    from stanlogz.draws import continuation
    from stanlogz.draws.continuation import WarmStart, refit_draws
    from stanlogz.stan.settings import NutsArgs

    print(f"load average {os.getloadavg()[0]:.1f}; backend {backend}")
    print("| program | warmup | gradients | min ess_bulk | ess per 1k gradients | seconds |")
    print("|---|---|---|---|---|---|")
    real = continuation.WARM_REFIT_WARMUP
    for name in ("wells_logistic", "hier_tau", "roaches"):
        model, data = _load(name, backend)
        obs = find_observations(data, None, None, model.code)
        full = stanlogz.sample(model, seed=11)
        held = np.random.default_rng(1).permutation(obs.n)[:max(1, obs.n // 10)]
        train = model.with_data(obs.subset(data, np.setdiff1d(np.arange(obs.n), held)))
        start = WarmStart.of(model, full)
        names = list(model.param_names())
        for w in (0, 100, 150, 200, 300, 1000):
            g, e, t = [], [], []
            for seed in (1, 2):
                continuation.WARM_REFIT_WARMUP = w or real
                try:
                    (d, _), _, sec = _timed(refit_draws, train, NutsArgs(backend=backend),
                                            seed=seed, warm=start if w else None)
                finally:
                    continuation.WARM_REFIT_WARMUP = real
                g.append(d.n_gradient_evals)
                e.append(d.summary(names).to_dataframe()["ess_bulk"].min())
                t.append(sec)
            print(f"| {name} | {w or 'cold (1000)'} | {np.mean(g):.0f} | {np.mean(e):.0f} | "
                  f"{1000 * np.mean(e) / np.mean(g):.1f} | {np.mean(t):.2f} |", flush=True)


def lfo_part(seeds: int, backend: str) -> None:
    from benchmarks.truths.crossval import truths
    from stanlogz.crossval.refit.lfo import lfo
    from stanlogz.stan.load import load_model

    program = ROOT / "stan_models" / "examples" / "ar_nig.stan"
    print("| seed | refits | gradients per refit | CPU s | z warm | z cold |\n"
          "|---|---|---|---|---|---|")
    ratios = []
    for seed in range(1, seeds + 1):
        rng = np.random.default_rng(seed)
        y = np.zeros(200)
        for t in range(2, 200):
            y[t] = 0.5 * y[t - 1] - 0.3 * y[t - 2] + rng.normal(0, 0.7)
        data = {"P": 2, "N": 200, "y": y.round(4).tolist(), "b_scale": 1.0, "a0": 2.0,
                "b0": 1.0}
        truth = truths.ar_nig_lfo(data, 20, 1).sum()
        model = load_model(program, data, backend=backend)
        row = {}
        for warm in (True, False):
            r, _, cpu = _timed(lfo, model, data, min_train=20, ahead=1, seed=seed,
                               k_threshold=0.5, warm_refits=warm)
            row[warm] = (len(r.refits), r.n_gradient_evals / len(r.refits), cpu,
                         (r.elpd_lfo - truth) / r.mcse)
        ratios.append(row[True][1] / row[False][1])
        print(f"| {seed} | {row[True][0]} / {row[False][0]} | {row[True][1]:.0f} / "
              f"{row[False][1]:.0f} | {row[True][2]:.1f} / {row[False][2]:.1f} | "
              f"{row[True][3]:+.2f} | {row[False][3]:+.2f} |", flush=True)
    print(f"median gradients per refit, warm / cold: {np.median(ratios):.2f} (the first fit, "
          "always cold, included)")


def latent(seeds: int, backend: str) -> None:
    """Eight schools (one latent per school), leave-one-out by K-fold (K = 8), warm refits
    (each chain at the full fit's last draw with the held-out school's latent dropped) and
    cold ones (``warm_refits=False``), ``seeds`` seeds each: every school's z against
    quadrature, and the refits' gradients and seconds."""
    import stanlogz
    from benchmarks.truths.crossval import truths

    model, d = _load("eight_schools", backend)
    exact = truths.eight_schools_loo(d)
    print("| refits | seeds | school values | within 1.96 | within 2.58 | rms z | mean z | "
          "elpd_kfold rms z | gradients per refit (median) | seconds per run (median) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for warm in (True, False):
        z, zt, grads, secs = [], [], [], []
        for seed in range(1, seeds + 1):
            t0 = time.perf_counter()
            r = stanlogz.kfold(model, k=8, seed=seed, warm_refits=warm, adapt_delta=0.95)
            secs.append(time.perf_counter() - t0)
            for f in r.folds:
                j = int(f.index[0])
                z.append((f.elpd - exact[j]) / f.mcse)
                grads.append(f.n_gradient_evals)
            zt.append((r.elpd_kfold - exact.sum()) / r.mcse)
        za = np.abs(np.array(z))
        print(f"| {'warm' if warm else 'cold'} | {seeds} | {za.size} | {np.mean(za <= 1.96):.3f} "
              f"| {np.mean(za <= 2.58):.3f} | {np.sqrt(np.mean(za**2)):.2f} | "
              f"{np.mean(z):+.2f} | {np.sqrt(np.mean(np.square(zt))):.2f} | "
              f"{np.median(grads):.0f} | {np.median(secs):.1f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("bias", "coverage", "cost", "warmup", "target", "lfo",
                                         "latent"))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--backend", default="compiled",
                        choices=("compiled", "interpreted"))
    parser.add_argument("--programs", nargs="+",
                        default=["wells_logistic", "hier_regression", "hier_tau"],
                        help="bias: the programs (also: roaches)")
    parser.add_argument("--full-wells", action="store_true",
                        help="cost: K-fold on all 3,020 households too (warm/cold, terms)")
    args = parser.parse_args()
    if args.part == "bias":
        bias(args.seeds, args.backend, tuple(args.programs))
    elif args.part == "coverage":
        coverage(args.runs, args.backend)
    elif args.part == "cost":
        cost(args.backend, args.full_wells)
    elif args.part == "target":
        target(args.runs, args.backend)
    elif args.part == "lfo":
        lfo_part(args.seeds, args.backend)
    elif args.part == "latent":
        latent(args.seeds, args.backend)
    else:
        warmup(args.backend)


if __name__ == "__main__":
    main()
