"""Power and false-alarm rate of LOO's self-check (:mod:`stanlogz.crossval.psis_loo.verify`)
by record and replay: each run refits EVERY value the check could choose (``verify=N``), keeps
the candidates, their exact values and the draw influence of the PSIS ones, and the run's
answer and Monte Carlo se without the check (``verify=0``, same seed, same draws); the replay
then applies the check's own choice (:func:`~stanlogz.crossval.psis_loo.verify.choose`) and
tests (:func:`~stanlogz.crossval.psis_loo.verify.judge`) to the recorded values, for 200 of
the check's random choices per run. To save refits a run refits every value in the k̂ band
[0.5, threshold], the ``TOP`` of largest log-likelihood variance below it (the check's "most
informative" pick) and ``LOW`` of the others at random: a uniform pick among those is a
uniform pick among all the others, which is how the check picks its random point. Stage 2
runs in the replay where the check would run it (:func:`~stanlogz.crossval.psis_loo.verify.
stage_two_fits`, with the run's recorded refit time and time so far). A row's "flagged"
is the mean over runs of the share of those choices that flag; its binomial se,
sqrt(p (1 − p) / runs), is an upper bound (the
choices averaged within a run only lower the variance). The exact values of a run are those
the live check would get for the same observations (the same refits), so the replay is the
live check's outcome in distribution.

Programs (the data fixed, the draws new per seed; 4 chains x 1000 draws):

* ``case1`` (issue 44, case 1) and ``case1-mild`` (σ = 0.5): :mod:`benchmarks.loo_verify`.
* ``latent-wide``: the same program with σ = 1.5: the ratios' tail index 1/(1 + σ²) = 0.31,
  under 0.5, so PSIS's error bars hold; a flag is a false alarm.
* ``normal_mean`` (outlier moment matched), ``regression``: as in :mod:`benchmarks.loo_verify`.

"total z" is (elpd_loo − exact) / its Monte Carlo se without the check (rms over runs): near 1
where the error bars are right. The cost share of a check of K points is K refits (the run's
mean refit time) over the run without the check plus those refits.

    python -m benchmarks.loo_verify_power record --program case1-mild --seeds 40 --out DIR
    python -m benchmarks.loo_verify_power table DIR [DIR ...] [--k 4] [--full]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

import stanlogz
from benchmarks import loo_verify as B
from stanlogz._util.gpd import KHAT_HEAVY
from stanlogz.crossval.fixups.fixups import FixedPoint
from stanlogz.crossval.observations.checked import critical_z
from stanlogz.crossval.psis_loo import loo as loo_module
from stanlogz.crossval.psis_loo.verify import Candidate, choose, stage_two_fits
from stanlogz.crossval.psis_loo.verify_tests import TOTAL_ALPHA, hints, judge, total_test

CHOICES = 200
#: Values of largest log-likelihood variance below the band refit per run (the check's "most
#: informative" pick is among them)
TOP = 2
#: Values below the band refit per run (at random; the band's are all refit): ``--low``.
LOW = 4


def wide_data() -> dict[str, Any]:
    """selfcheck_latent.stan's data with sigma 1.5 (N 15)."""
    rng = np.random.default_rng(45)
    z = np.abs(rng.normal(size=15))
    y = z + 1.5 * rng.normal(size=15)
    return {"N": 15, "y": [round(float(v), 3) for v in y], "sigma": 1.5}


def _log_z_regression(x: np.ndarray, y: np.ndarray) -> float:
    """log p(y) of regression.stan: given σ, y ~ MVN(0, σ² I + X S X') (α ~ N(0, 2²),
    β ~ N(0, 1)); σ ~ half-normal(0, 1) by quadrature."""
    from scipy import integrate, stats

    xs = np.column_stack([np.ones_like(x), x])
    prior = xs @ np.diag([4.0, 1.0]) @ xs.T

    def dens(sig: float, shift: float) -> float:
        cov = sig**2 * np.eye(y.size) + prior
        return math.exp(stats.multivariate_normal.logpdf(y, np.zeros(y.size), cov)
                        + stats.halfnorm.logpdf(sig) - shift)

    grid = np.linspace(0.05, 5.0, 200)
    logs = [math.log(dens(g, 0.0) + 1e-300) for g in grid]
    shift = max(logs)
    val, _ = integrate.quad(dens, 0.0, np.inf, args=(shift,), epsabs=0, epsrel=1e-11,
                            limit=400, points=None)
    return math.log(val) + shift


def regression_truth(data: dict[str, Any]) -> float:
    """Σ log p(y_i | y₋ᵢ) = Σ (log Z(y) − log Z(y₋ᵢ)) of regression.stan (quadrature)."""
    x, y = np.asarray(data["x"], dtype=float), np.asarray(data["y"], dtype=float)
    full = _log_z_regression(x, y)
    keep = np.ones(y.size, dtype=bool)
    out = 0.0
    for i in range(y.size):
        keep[:] = True
        keep[i] = False
        out += full - _log_z_regression(x[keep], y[keep])
    return out


def programs() -> dict[str, tuple[Path, dict[str, Any], dict[str, Any], float | None]]:
    """name -> (program, data, loo keywords, true elpd_loo or None)."""
    out = B.programs()
    wide = wide_data()
    reg = out["regression"]
    out["regression"] = (*reg[:3], regression_truth(reg[1]))
    out["latent-wide"] = (B.TESTS / "selfcheck_latent.stan", wide, {"log_lik": "log_lik"},
                          B.latent_truth(wide))
    return out


def record(name: str, seed: int, out: Path, low: int = LOW) -> dict[str, Any]:
    """One run: the answer without the check, then every candidate refit; saved to ``out``."""
    program, data, kw, truth = programs()[name]
    t0 = time.perf_counter()
    plain = stanlogz.loo(str(program), data, seed=seed, verify=0, **kw)
    t_plain = time.perf_counter() - t0
    box: dict[str, Any] = {}
    original = loo_module.self_check

    def spy(verify, cands, fixed, refit, **kw2):  # noqa: ANN001, ANN003
        box["cands"] = list(cands)
        psis = np.array([c.index for c in cands if c.route == "psis"], dtype=int)
        box["psis"] = psis
        box["g"] = kw2["influence"](psis) if psis.size else np.zeros((0, 1))
        box["chains"] = kw2["chains"]
        box["elapsed"] = kw2["elapsed"]
        # every value of the band and LOW others at random: a random pick among these is a
        # uniform pick among all the others (what the check's "random" point is)
        band = [c for c in cands if c.khat >= KHAT_HEAVY]
        rest = [c for c in cands if c.khat < KHAT_HEAVY]
        # the check's "most informative" pick (the largest variance below the band; TOP of
        # them, as the band's picks may leave the first to it) is refit as well, and kept out
        # of the random stand-ins
        var = np.array([c.var for c in rest])
        top = [rest[int(j)] for j in np.argsort(-np.nan_to_num(var, nan=-np.inf))[:TOP]]
        box["top"] = [c.index for c in top]
        rest = [c for c in rest if c.index not in box["top"]]
        perm = np.random.default_rng(seed + 7919).permutation(len(rest))[:low]
        some = band + top + [rest[int(j)] for j in perm]
        return original(max(len(some), 1), some, fixed, refit, **kw2)

    loo_module.self_check = spy
    try:
        r = stanlogz.loo(str(program), data, seed=seed, verify="auto", **kw)
    finally:
        loo_module.self_check = original
    v = r.verification
    refs = {p.index: (p.reference, p.reference_se, p.reference_route) for p in v.points
            if p.why != "repair"}
    n_refit = max(len(refs), 1)
    rec = {"program": name, "seed": seed, "truth": truth, "elpd": plain.elpd_loo,
           "mcse": plain.mcse_elpd_loo, "t_plain": t_plain, "elapsed": box["elapsed"],
           "t_refit": (v.seconds - v.repair_seconds) / n_refit, "chains": box["chains"],
           "cands": [[c.index, c.khat, c.route, c.estimate, c.mcse, c.bias, c.var]
                     for c in box["cands"]], "top": box["top"],
           "refs": {str(k): list(x) for k, x in refs.items()},
           "psis": box["psis"].tolist()}
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / f"{name}-{seed}.npy", np.asarray(box["g"], dtype=np.float64))
    with open(out / "runs.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    return rec


def replay(rec: dict[str, Any], g: np.ndarray, k: int, rng: np.random.Generator,
           choices: int = CHOICES) -> dict[str, float]:
    """The share of ``choices`` random choices of ``k`` points that flag (both tests, and the
    max test alone at 5% as before), and the mean number of points checked."""
    # records made before the "most informative" slot hold no variances: the old choice
    cands = [Candidate(int(x[0]), float(x[1]), str(x[2]), float(x[3]), float(x[4]),
                       float(x[5]), float(x[6]) if len(x) > 6 else math.nan)
             for x in rec["cands"]]
    top = set(rec.get("top", []))
    refs = {int(i): FixedPoint(index=int(i), method=x[2], elpd=float(x[0]), mcse=float(x[1]),
                               khat=float("nan"), psis_elpd=float("nan"), n_gradient_evals=0,
                               n_evals=0, seconds=0.0)
            for i, x in rec["refs"].items()}
    row = {int(o): j for j, o in enumerate(rec["psis"])}

    def influence(obs: np.ndarray) -> np.ndarray:
        return g[[row[int(o)] for o in obs]]

    both = old = by_sum = n_pts = stage2 = 0.0
    for _ in range(choices):
        picked = _stand_in(choose(cands, k, rng), cands, refs, rng, top)
        if not picked:
            continue
        ver = judge(picked, refs, influence, int(rec["chains"]))
        # stage 2 as the check decides it: a hint, and the other refits cheap enough
        two = (not (ver.failed or ver.sum_failed) and hints(ver)
               and stage_two_fits(len(cands) - len(picked), rec["t_refit"], rec["elapsed"],
                                  None))
        if two and len(refs) == len(cands):  # every value refit: stage 2 as it runs
            total_test(ver, cands, refs, influence, int(rec["chains"]))
            stage2 += 1
        elif two and rec["truth"] is not None:  # its total against the exact answer
            ver.total_points = [c.index for c in cands]
            ref_var = len(cands) * np.mean([x[1] ** 2 for x in rec["refs"].values()])
            ver.total_z = (rec["elpd"] - rec["truth"]) / math.sqrt(rec["mcse"] ** 2 + ref_var)
            ver.total_critical = critical_z(1, TOTAL_ALPHA)
            stage2 += 1
        both += bool(ver.failed or ver.sum_failed or ver.total_failed)
        by_sum += bool(ver.sum_failed and not ver.failed)
        crit = critical_z(len(ver.points))
        old += any(abs(p.z) > crit for p in ver.points)
        n_pts += len(picked)
    return {"flag": both / choices, "old": old / choices, "sum_only": by_sum / choices,
            "points": n_pts / choices, "stage2": stage2 / choices}


def _stand_in(picked: list[tuple[Candidate, str]], cands: list[Candidate],
              refs: dict[int, FixedPoint], rng: np.random.Generator, top: set[int]
              ) -> list[tuple[Candidate, str]]:
    """The choice with each pick below the band that was not refit replaced by one that was,
    at random among those not picked (the refit ones are a uniform subset of the values
    below the band, so the pick stays uniform among them)."""
    taken = {c.index for c, _ in picked}
    low = [c for c in cands if c.index in refs and c.khat < KHAT_HEAVY and c.index not in taken
           and c.index not in top]
    out = []
    for c, why in picked:
        if c.index not in refs and low:
            c = low.pop(int(rng.integers(len(low))))
        if c.index in refs:
            out.append((c, why))
    return out


def table(folders: list[Path], k: int, seed: int = 0, full: bool = False
          ) -> list[dict[str, Any]]:
    """One row per program: runs, flagged (both tests) with its binomial se, flagged by the
    old rule (max test at 5%), total z rms, cost share of the check. ``full``: only the runs
    that refit every value (needed for ``k`` above 4 where the band is small)."""
    runs: dict[str, list[tuple[dict[str, Any], Path]]] = {}
    for folder in folders:
        for line in (folder / "runs.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if not full or len(rec["refs"]) == len(rec["cands"]):
                runs.setdefault(rec["program"], []).append((rec, folder))
    rng = np.random.default_rng(seed)
    rows = []
    for name, pairs in runs.items():
        recs = [r for r, _ in pairs]
        got = [replay(r, np.load(f / f"{name}-{r['seed']}.npy"), k, rng) for r, f in pairs]
        p = float(np.mean([x["flag"] for x in got]))
        # runs the check passes whose answer is off by more than 3 of its mc se
        off = [abs(r["elpd"] - r["truth"]) > 3 * r["mcse"] if r["truth"] is not None else False
               for r in recs]
        missed = float(np.mean([(1 - x["flag"]) * o for x, o in zip(got, off, strict=True)]))
        zs = [(r["elpd"] - r["truth"]) / r["mcse"] for r in recs if r["truth"] is not None]
        share = [k * r["t_refit"] / (r["t_plain"] + k * r["t_refit"]) for r in recs]
        # with stage 2 where it ran: every candidate refit
        whole = [len(r["cands"]) * r["t_refit"] / (r["t_plain"] + len(r["cands"]) * r["t_refit"])
                 for r in recs]
        mean_share = float(np.mean([x["stage2"] * w + (1 - x["stage2"]) * s_
                                    for x, w, s_ in zip(got, whole, share, strict=True)]))
        rows.append({"program": name, "runs": len(recs), "flagged": p,
                     "se": float(np.sqrt(p * (1 - p) / len(recs))),
                     "old": float(np.mean([x["old"] for x in got])),
                     "sum_only": float(np.mean([x["sum_only"] for x in got])),
                     "points": float(np.mean([x["points"] for x in got])),
                     "total_z_rms": float(np.sqrt(np.mean(np.square(zs)))) if zs else None,
                     "total_z_mean": float(np.mean(zs)) if zs else None,
                     "share": float(np.median(share)), "mean_share": mean_share,
                     "stage2": float(np.mean([x["stage2"] for x in got])), "missed": missed,
                     "off": float(np.mean(off))})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--program", required=True)
    rec.add_argument("--seeds", type=int, default=40)
    rec.add_argument("--first-seed", type=int, default=1)
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--low", type=int, default=LOW)
    tab = sub.add_parser("table")
    tab.add_argument("folders", type=Path, nargs="+")
    tab.add_argument("--k", type=int, default=4)
    tab.add_argument("--full", action="store_true", help="only runs that refit every value")
    args = ap.parse_args(argv)
    if args.cmd == "record":
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            r = record(args.program, seed, args.out, args.low)
            print(args.program, seed, f"{r['t_plain']:.1f}s", f"refit {r['t_refit']:.2f}s",
                  flush=True)
        return
    print(f"{'program':12s} {'runs':>4s} {'flagged':>8s} {'se':>5s} {'max-only@5%':>11s} "
          f"{'by sum':>6s} {'pts':>4s} {'stage 2':>7s} {'total z rms':>11s} {'mean':>6s} "
          f"{'off>3':>5s} {'missed':>6s} {'share':>6s} {'mean share':>10s}")
    for r in table(args.folders, args.k, full=args.full):
        zr = "-" if r["total_z_rms"] is None else f"{r['total_z_rms']:.2f}"
        zm = "-" if r["total_z_mean"] is None else f"{r['total_z_mean']:+.2f}"
        print(f"{r['program']:12s} {r['runs']:4d} {r['flagged']:8.3f} {r['se']:5.3f} "
              f"{r['old']:11.3f} {r['sum_only']:6.3f} {r['points']:4.1f} {r['stage2']:7.2f} "
              f"{zr:>11s} {zm:>6s} {r['off']:5.2f} {r['missed']:6.3f} {r['share']:6.2f} "
              f"{r['mean_share']:10.2f}")


if __name__ == "__main__":
    main()
