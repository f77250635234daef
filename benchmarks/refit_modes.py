"""A refit's chains checked from the other side (:mod:`stanlogz.draws.modes`): does K-fold
flag a fold whose training posterior has a mode the full data rule out, how often does the
probe fire on one mode, and what does it cost?

``python3 -m benchmarks.refit_modes PART [--runs R]``, PART one of:

* ``far``: ``stan_models/tests/kfold_far_mode.stan`` (a two-mode prior at 0 and 6; the two
  precise observations of group 1 rule out 0), leave-one-group-out, ``--runs`` seeds, warm
  and cold refits, with the probe and without it (the code before: ``_probed`` returns the
  refit as it is and no R-hat withholds a se): how often group 1's fold is flagged (se NA),
  and the z of the unflagged elpd_kfold against the closed form.
* ``loo``: ``far_mode_one_precise.json`` (one precise observation at 6 rules out the mode at
  0), loo at its defaults, ``--runs`` seeds, the code before and now: how often the self-check
  checks observation 1, how often mcse_elpd_loo is NA, and the z of the unflagged elpd_loo
  against the closed form.
* ``alarms``: K-fold at default settings on programs with one mode (the normal mean, the
  hierarchical regression, roaches as a user writes it, posteriordb's radon county
  intercepts), ``--runs`` seeds each: the refits whose probe fired, how far the probes'
  chains ended beyond the refits' draws, and the probe's share of the refits' gradients.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "stan_models" / "tests"
EX = ROOT / "stan_models" / "examples"


def _tally(answers: list[tuple[float, float]], exact: float) -> tuple[int, str, str]:
    """Of the runs' (estimate, mcse): how many are flagged (mcse NA), and the rms and the
    largest |z| against ``exact`` of the others, as the tables print them."""
    z = [(e - exact) / m for e, m in answers if not math.isnan(m)]
    if not z:
        return len(answers), "-", "-"
    za = np.abs(np.array(z))
    return len(answers) - len(z), f"{math.sqrt(np.mean(za**2)):.1f}", f"{za.max():.1f}"


def _log_z_of(data_file: str) -> Any:
    """log p(y_idx) of the far-mode program on ``data_file``'s observations ``idx``, closed
    form: each of the prior's two normal components is conjugate to the normal observations."""
    from scipy import stats
    from scipy.special import logsumexp

    d = json.loads((TESTS / data_file).read_text())
    y, s = np.array(d["y"]), np.array(d["s"])

    def log_z(idx: np.ndarray) -> float:
        cov = np.diag(s[idx] ** 2) + 0.4**2
        return float(logsumexp([np.log(0.5) + stats.multivariate_normal.logpdf(
            y[idx], np.full(idx.size, m), cov) for m in (0.0, 6.0)]))

    return log_z


def _exact_far() -> float:
    """elpd_kfold of the far-mode program by groups, closed form (a mixture of two conjugate
    normal priors)."""
    log_z = _log_z_of("kfold_far_mode.json")
    g = np.array(json.loads((TESTS / "kfold_far_mode.json").read_text())["g"])
    total = 0.0
    for j in np.unique(g):
        train = np.flatnonzero(g != j)
        total += sum(log_z(np.r_[train, i]) - log_z(train) for i in np.flatnonzero(g == j))
    return total


def far(runs: int, chains: int = 4) -> None:
    import stanlogz
    from stanlogz.crossval.refit import heldout
    from stanlogz.draws import continuation

    exact = _exact_far()
    model = stanlogz.StanModel.from_file(TESTS / "kfold_far_mode.stan",
                                         TESTS / "kfold_far_mode.json")
    real_probed, real_check = continuation._probed, heldout.modes_verdict
    print(f"exact elpd_kfold {exact:.4f}")
    print("| refits | probe | runs | group 1 flagged (se NA) | rms z unflagged | max abs z "
          "unflagged |")
    print("|---|---|---|---|---|---|")
    for warm in (True, False):
        for probe in (False, True):
            if probe:
                continuation._probed, heldout.modes_verdict = real_probed, real_check
            else:  # the code before: no probe, no R-hat check of the refit
                continuation._probed = lambda train, nuts, seed, drawn, *a: drawn
                heldout.modes_verdict = lambda *a, **k: (None, 0.0)
            answers = []
            for seed in range(1, runs + 1):
                r = stanlogz.kfold(model, group="g", k=None, seed=seed, warm_refits=warm,
                                   chains=chains)
                answers.append((r.elpd_kfold, r.mcse))
            flagged, rms, top = _tally(answers, exact)
            print(f"| {'warm' if warm else 'cold'} | {'yes' if probe else 'no (before)'} | "
                  f"{runs} | {flagged} | {rms} | {top} |", flush=True)
    continuation._probed, heldout.modes_verdict = real_probed, real_check


def _exact_loo_one() -> float:
    """elpd_loo of ``far_mode_one_precise.json``, closed form (as :func:`_exact_far`)."""
    log_z = _log_z_of("far_mode_one_precise.json")
    every = np.arange(json.loads((TESTS / "far_mode_one_precise.json").read_text())["N"])
    return sum(log_z(every) - log_z(np.delete(every, i)) for i in every)


def loo_far(runs: int) -> None:
    """loo at its defaults (the self-check on) on one precise observation that rules out a far
    mode: before (the check's slots at random among all, a fix-up refit's se kept whatever
    its chains do) and now (a slot for the most informative observation, the se NA where the
    refit's joined chains disagree)."""
    import dataclasses

    import stanlogz
    from stanlogz.crossval.fixups import fixups
    from stanlogz.crossval.psis_loo import loo as verify  # where loo calls the check's helpers

    exact = _exact_loo_one()
    model = stanlogz.StanModel.from_file(TESTS / "kfold_far_mode.stan",
                                         TESTS / "far_mode_one_precise.json")
    real_cands, real_check = verify.candidates, fixups.modes_verdict

    def no_var(*a: Any) -> Any:
        return [dataclasses.replace(c, var=float("nan")) for c in real_cands(*a)]

    print(f"exact elpd_loo {exact:.4f}")
    print("| code | runs | observation 1 checked | flagged (mcse NA) | rms z unflagged | "
          "max abs z unflagged |")
    print("|---|---|---|---|---|---|")
    for now in (False, True):
        verify.candidates = real_cands if now else no_var
        fixups.modes_verdict = real_check if now else (lambda *a, **k: (None, 0.0))
        checked, answers = 0, []
        for seed in range(1, runs + 1):
            r = stanlogz.loo(model, seed=seed)
            v = r.verification
            checked += bool(v is not None and any(p.index == 0 for p in v.points))
            answers.append((r.elpd_loo, r.mcse_elpd_loo))
        flagged, rms, top = _tally(answers, exact)
        print(f"| {'now' if now else 'before'} | {runs} | {checked} | {flagged} | {rms} | "
              f"{top} |", flush=True)
    verify.candidates, fixups.modes_verdict = real_cands, real_check


def alarms(runs: int) -> None:
    import stanlogz
    from stanlogz.draws import continuation
    from stanlogz.draws.modes import PROBE_CHAINS, PROBE_DRAWS

    radon = Path("/work/shared/corpus/posteriordb/radon_mn-radon_county_intercept")
    cases = [("normal_mean (N = 10), K = 5", EX / "normal_mean.stan",
              EX / "normal_mean.data.json", 5),
             ("hier_regression, K = 5", EX / "hier_regression.stan",
              EX / "hier_regression.data.json", 5),
             ("roaches (N = 262), K = 10", TESTS / "roaches_shape.stan",
              TESTS / "roaches_shape.json", 10)]
    if radon.is_dir():  # counties whose homes are all held out: intercepts at their wide prior
        cases.append(("radon_county_intercept (N = 919), K = 5", radon / "model.stan",
                      radon / "data.json", 5))
    real = continuation.sample
    cost: dict[str, float] = {}

    def counting(model: Any, settings: Any = None, **kw: Any) -> Any:
        d = real(model, settings, **kw)
        probe = (settings is not None and settings.chains == PROBE_CHAINS
                 and settings.draws == PROBE_DRAWS and kw.get("init") is not None)
        key = "probe" if probe else "refit"
        cost[key] = cost.get(key, 0.0) + d.n_gradient_evals
        return d

    real_beyond = continuation.beyond
    seen: list[float] = []

    def recording(refit: Any, probe: Any) -> tuple[float, int]:
        out = real_beyond(refit, probe)
        seen.append(out[0])
        return out

    continuation.sample, continuation.beyond = counting, recording
    print("| program | runs | refits | probes fired | warm refits that did not mix (refit "
          "cold) | probe distance beyond, median (max) | probe share of refit gradients |")
    print("|---|---|---|---|---|---|---|")
    for name, prog, data, k in cases:
        model = stanlogz.StanModel.from_file(prog, data)
        cost.clear()
        seen.clear()
        fired = refits = unmixed = 0
        for seed in range(1, runs + 1):
            r = stanlogz.kfold(model, k=k, seed=seed)
            refits += len(r.folds)
            fired += sum("ended elsewhere" in w for w in r.warnings)
            unmixed += sum("did not mix" in w for w in r.warnings)
        share = cost.get("probe", 0.0) / max(1.0, cost.get("refit", 0.0))
        print(f"| {name} | {runs} | {refits} | {fired} | {unmixed} | {np.median(seen):.2f} "
              f"({max(seen):.2f}) | {share:.3f} |", flush=True)
    continuation.sample, continuation.beyond = real, real_beyond


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["far", "loo", "alarms"])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--chains", type=int, default=4,
                    help="far: the chains of the fits (and so of the probe, at most 4)")
    a = ap.parse_args()
    if a.part == "far":
        far(a.runs, a.chains)
    else:
        {"loo": loo_far, "alarms": alarms}[a.part](a.runs)


if __name__ == "__main__":
    main()
