"""Mixture importance sampling as a fix-up of PSIS-LOO (``loo(..., fix="mis")``): the
observations with k̂ above the threshold (the set B) are re-estimated from one HMC run on

    q(θ) ∝ p(θ, y) + Σ_{j∈B} p(θ, y₋ⱼ) = p(θ, y) (1 + Σ_{j∈B} 1 / p(y_j | θ)),

the posterior mixed with the leave-one-out posteriors of B only (Silva & Zanella 2022 restricted
to the points that need it: |B| + 1 density gradients per step instead of N), each component
weighted (c_j = its PSIS p(y_j | y₋ⱼ)) to about equal mass: an influential point's
leave-one-out posterior otherwise takes nearly all of it and the posterior's term rests on a
few draws. With w_s = p(θ_s, y) / q(θ_s), p(y_i | y₋ᵢ) = Σ_s w_s / Σ_s (w_s / p(y_i | θ_s))
(:func:`.mixture.estimates_from_weights`). The other observations keep their PSIS values
and Monte Carlo se.

The Monte Carlo se of elpd_loo adds independent parts: the PSIS values' (the posterior draws)
and the mixture values' (the mixture draws, a separate run), the latter from the summed
per-draw influence over B, since the mixture values share their draws."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..._util.seeds import child_sequence
from ...errors import InputError
from ...stan.settings import NutsArgs
from ..psis_loo.psis import PsisLoo
from .fixups import FixedPoint

#: Key of the mixture values' joint Monte Carlo se in each mis FixedPoint's diagnostics.
SUM_SE = "mis_sum_se"
#: diagnostics key of an exact refit's se part shared with the other refits (log Z(full))
SHARED_SE = "shared_log_z_full_se"


class _Weighted:
    """log q(θ) = log Σ_k c_k p_k(θ) and its gradient, batched over chains (``log_c``: log c_k)."""

    def __init__(self, programs: list[Any], log_c: np.ndarray) -> None:
        self.programs, self.log_c, self.n_evals = programs, np.asarray(log_c, float), 0

    def __call__(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = [m.log_density_gradient_many(xs) for m in self.programs]
        self.n_evals += len(self.programs) * xs.shape[0]
        lp = np.stack([o[0] for o in out]) + self.log_c[:, None]  # (K, chains)
        with np.errstate(invalid="ignore"):
            total = logsumexp(lp, axis=0)
            wts = np.exp(lp - total)
        wts = np.where(np.isfinite(wts), wts, 0.0)
        return total, np.einsum("nk,nkd->kd", wts, np.stack([o[1] for o in out]))


def fixed_variance(fixed: Sequence[FixedPoint]) -> float:
    """The Monte Carlo variance of the sum of the fixed values: each refit's se² (independent
    runs; the part from a log Z(full) shared by evidence-difference refits added linearly)
    plus, once, the squared joint se of the values from the one mixture run."""
    own = [f for f in fixed if SUM_SE not in f.diagnostics]
    shared = [float(f.diagnostics.get(SHARED_SE, 0.0)) for f in own]
    var = sum(max(f.se**2 - c * c, 0.0) for f, c in zip(own, shared, strict=True))
    var += sum(shared) ** 2  # one log Z(full) shared by evidence-difference refits
    joint = [f.diagnostics[SUM_SE] for f in fixed if SUM_SE in f.diagnostics]
    return float(var + (joint[0] ** 2 if joint else 0.0))


def mixture_fixup(pw: Any, d: Any, bad: np.ndarray, ps: PsisLoo, pos: dict[int, int],
                  settings: NutsArgs, seed: Any, progress: Any
                  ) -> tuple[list[FixedPoint], list[str]]:
    """The observations ``bad`` (0-based, k̂ above the threshold) by one mixture run (module
    docstring), with ``settings``' chains, warmup and draws; none are replaced, and a warning
    says why, when the run is unreliable (a term's Pareto k̂ above 0.5 or its
    importance-sampling ESS under 5% of the draws: one too influential observation then
    distorts the mixture for every one)."""
    from .mixture import (
        MIS_ESS_SHARE,
        MIS_K_MAX,
        MIXTURE_STREAM,
        _hmc,
        estimates_from_weights,
    )

    t0 = time.perf_counter()
    bad = np.asarray(bad, dtype=int)
    try:
        minus = [pw.held_out_model(int(i)) for i in bad]
    except InputError as exc:
        return [], [f"{bad.size} observation(s) have Pareto k-hat above the threshold; mixture "
                    f"importance sampling needs the program without each of them ({exc}); use "
                    "--fix exact"]
    model = pw.model
    post = d.flat_unconstrained()
    # equal mass for the posterior and each leave-one-out component: weight c_j =
    # p(y_j | y₋ⱼ) (its PSIS estimate) times the constant the programs' densities drop
    rows = post[np.unique(np.linspace(0, post.shape[0] - 1, min(20, post.shape[0])).astype(int))]
    lp_rows = model.log_density_many(rows)
    ll_rows = pw.columns(bad, rows)
    log_c = np.array([float(np.median(lp_rows - m.log_density_many(rows) - ll_rows[:, j]))
                      + float(ps.elpd_i[pos[int(i)]])
                      for j, (i, m) in enumerate(zip(bad, minus, strict=True))])
    inv_metric = np.maximum(post.var(axis=0), 1e-12)
    k = settings.chains
    rng = np.random.default_rng(child_sequence(seed, MIXTURE_STREAM))
    x0 = post[rng.choice(post.shape[0], size=k, replace=post.shape[0] < k)]
    step = float(np.median(d.step_size)) if d.step_size is not None else 0.5
    if progress:
        progress(f"mixture importance sampling of {bad.size} observation(s) with high k-hat "
                 f"({', '.join(str(i + 1) for i in bad[:10])}): HMC on the posterior mixed with "
                 f"their leave-one-out posteriors, {k} chains x {settings.draws} draws")
    target = _Weighted([model, *minus], np.concatenate([[0.0], log_c]))
    xs, acc, _ = _hmc(target, x0, inv_metric, step, settings.warmup, settings.draws, rng,
                      settings.adapt_delta, settings.max_treedepth)
    flat = xs.reshape(-1, model.dim)
    lps = np.stack([m.log_density_many(flat) for m in (model, *minus)], axis=1)
    log_q = logsumexp(lps + np.concatenate([[0.0], log_c])[None, :], axis=1)
    ll = pw.columns(bad, flat)
    est = estimates_from_weights(lps[:, 0] - log_q, ll, k)
    khat, ess_is = est["khat"][:bad.size], est["ess_is"][:bad.size]
    s_all = ll.shape[0]
    unreliable = (khat > MIS_K_MAX) | (ess_is < max(100.0, MIS_ESS_SHARE * s_all))
    if unreliable.any():
        nums = ", ".join(str(int(bad[j]) + 1) for j in np.nonzero(unreliable)[0][:10])
        return [], [f"mixture importance sampling could not fix observation(s) {nums}: the "
                    f"mixture terms have Pareto k-hat above {MIS_K_MAX} or rest on under "
                    f"{MIS_ESS_SHARE:.0%} of the draws (too influential for one mixture run); "
                    "their PSIS values are kept; use --fix exact"]
    seconds = (time.perf_counter() - t0) / bad.size
    evals = int(target.n_evals // bad.size)
    warns = ([f"mixture HMC accepted {acc:.2f} of its proposals (target "
              f"{settings.adapt_delta:.2f}); run more warmup"]
             if acc < settings.adapt_delta - 0.2 else [])
    diag = {SUM_SE: float(est["mcse"]), "n_mixture_components": int(bad.size + 1),
            "mixture_khat": None, "acceptance": float(acc)}
    return [FixedPoint(int(i), float(est["elpd_i"][j]), float(est["mcse_i"][j]), "mis",
                       float(ps.khat[pos[int(i)]]), float(ps.elpd_i[pos[int(i)]]), evals, 0,
                       seconds, warnings=list(warns), khat_after=float(khat[j]),
                       diagnostics={**diag, "mixture_khat": float(khat[j])})
            for j, i in enumerate(bad)], []
