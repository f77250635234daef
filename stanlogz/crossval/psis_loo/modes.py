"""PSIS-LOO of a posterior whose chains sit in separated modes: each mode's LOO from its own
chains, weighed by the modes' evidence.

PSIS-LOO takes the draws' mix of modes for the posterior's. NUTS does not move between
separated modes, so the pooled draws weigh the modes by how many chains sat in each, and
where every chain sat in one mode the others are not in the draws at all. On
``stan_models/tests/kfold_far_mode.stan`` (prior modes at 0 and 6) with ten weak observations,
every chain fell to 0 and elpd_loo was 0.08 off with an mcse of 0.004 and no warning.

The posterior is the mixture of its modes, p(theta | y) = sum_m w_m p_m(theta | y), with
w_m = Z_m / Z the share of the evidence in mode m's basin. So

    1 / p(y_i | y_-i) = E[1 / p(y_i | theta)] = sum_m w_m / p_m(y_i | y_-i),

where p_m(y_i | y_-i) = 1 / E_m[1 / p(y_i | theta)] is the LOO predictive computed from mode
m's chains alone (PSIS and moment matching, which weigh its draws, compute exactly that). The
modes are found as the evidence finds them (:func:`~stanlogz.draws.mode_search.search_modes`),
the weights come from each mode's evidence (gbs on its chains:
:func:`~stanlogz.estimators.modewise.modewise_log_z`), and each mode's LOO is
:func:`~.loo.loo` on its chains. Its exact refits and its self-check refit the whole
posterior without y_i, not one mode's part of it, so each mode runs without the self-check
(a note says so); a refit's value there is flagged by the refit's own probe.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..._util.seeds import Stream, stream_int_seed
from ..._util.sum_se import sum_se
from ...draws.core import Draws
from ...draws.mode_search import ModeSearch, chain_subset
from ...errors import StanlogzError, option
from ...estimators.modewise import modewise_log_z
from ...estimators.registry import lookup
from ..elpd.psis import total_mcse
from .result import LooResult, fixed_khat

#: The evidence estimator that weighs the modes
WEIGHT_METHOD = "gbs"

_ONE_MODE: ContextVar[bool] = ContextVar("stanlogz_loo_one_mode", default=False)


@contextmanager
def one_mode_only() -> Iterator[None]:
    """Inside: :func:`~.loo.loo` takes the draws it is given as one mode's (no search)."""
    token = _ONE_MODE.set(True)
    try:
        yield
    finally:
        _ONE_MODE.reset(token)


def in_one_mode() -> bool:
    """Whether :func:`~.loo.loo` runs on one mode's chains (:func:`one_mode_only`)."""
    return _ONE_MODE.get()


def loo_across_modes(one_mode: Callable[[Draws, int], LooResult], model: Any,
                     searched: ModeSearch, seed: int | None
                     ) -> tuple[LooResult | None, str | None]:
    """elpd_loo from the modes of ``searched`` (chains grouped by mode): ``one_mode(draws, k)``
    is the LOO of mode k's chains; the modes' weights are their evidence's shares. Returns
    the combined :class:`~.result.LooResult` (its ``modes`` lists each mode) and None, or,
    where a mode's evidence cannot be estimated (too few draws for its dimension), None and
    the warning for a LOO of the pooled draws, whose Monte Carlo se is then NA."""
    d, groups = searched.draws, searched.groups
    method = lookup(WEIGHT_METHOD)
    if len(groups) > 1:
        try:
            ev = modewise_log_z(lambda u, k: method.run(
                model, u, seed=stream_int_seed(seed, Stream.LOO_MODES, 0, k), options={},
                n_sampling_evals=None, progress=None), d.unconstrained, groups)
        except StanlogzError as e:
            return None, (f"the chains sit in {len(groups)} modes that NUTS does not move "
                          f"between, and their weights could not be estimated ({e}): "
                          "elpd_loo weighs the modes by the chains' counts, and its Monte "
                          f"Carlo se is NA; more {option('draws')} let each mode's evidence "
                          "be estimated")
        modes = ev.diagnostics["modes"]
    else:
        modes = [{"chains": [int(c) + 1 for c in groups[0]], "log_z": float("nan"),
                  "log_z_se": 0.0, "weight": 1.0}]
    parts = [one_mode(chain_subset(d, g), k) for k, g in enumerate(groups)]
    if len(parts) > 1 and any(p.sample_index is not None for p in parts):
        # the time budget ended a mode's pointwise pass: the modes' values are of different
        # observations, and the heaviest mode's estimate stands, its mcse NA
        top = int(np.argmax([m["weight"] for m in modes]))
        why = ("the time budget ended a mode's pointwise pass, so the modes' values cannot be "
               f"combined: elpd_loo is that of the mode with most evidence (weight "
               f"{modes[top]['weight']:.3f}), and its Monte Carlo se is NA; a longer "
               f"{option('time_budget')} combines them")
        res = replace(parts[top], warnings=[why, *parts[top].warnings],
                      mcse_elpd_loo=float("nan"), mcse_na_note=why, draws=d)
        res.modes = _listed(modes, parts)
        return res, None
    res = combine_modes(parts, np.array([m["weight"] for m in modes]),
                        np.array([m["log_z_se"] for m in modes]))
    res.modes = _listed(modes, parts)
    shown = "; ".join(f"chains {', '.join(map(str, m['chains']))}: elpd_loo "
                      f"{m['elpd_loo']:.2f}, weight {m['weight']:.3f}" for m in res.modes)
    notes = [f"the posterior has {len(groups)} modes that NUTS's chains do not move "
             "between; elpd_loo combines each mode's LOO from its own chains, weighed by the "
             f"modes' evidence ({shown}), not by the chains' counts; each mode ran without "
             "the self-check (its refits would leave the mode)"] if len(groups) > 1 else []
    if searched.unsampled:
        why = (f"{searched.unsampled} more mode(s) found by chains from random inits were not "
               "sampled (the time budget holds no other run): elpd_loo holds only the modes "
               f"the chains sat in, and its Monte Carlo se is NA; a longer "
               f"{option('time_budget')} samples them")
        notes.append(why)
        res.mcse_elpd_loo, res.mcse_na_note = float("nan"), why
    res.warnings = notes + [w if len(parts) == 1 else f"mode {k + 1}: {w}"
                            for k, p in enumerate(parts) for w in p.warnings
                            if w not in d.warnings]  # the search's own: said once, above
    res.draws = d
    res.seconds = float(sum(p.seconds for p in parts)) + float(searched.seconds)
    return res, None


def _listed(modes: list[dict[str, Any]], parts: list[LooResult]) -> list[dict[str, Any]]:
    """Each mode's chains, evidence and weight (``modes``) with its LOO's elpd_loo and mcse."""
    return [{**m, "elpd_loo": float(p.elpd_loo), "mcse_elpd_loo": float(p.mcse_elpd_loo)}
            for m, p in zip(modes, parts, strict=True)]


def _mode_variance(p: LooResult, a: np.ndarray) -> float:
    """The Monte Carlo variance of sum_i a_i elpd_i from one mode's LOO ``p``: the PSIS
    values' from every observation's draw influence where the mode kept it (the delta method
    over its draws, with their autocorrelation), else from the bound that holds whatever the
    values' errors' correlation, (sum_i a_i mcse_i)^2; the fixed values' as independent; the
    PSIS bias at the largest share. The mode's own total mcse does not serve: its values'
    errors cancel in their sum (draws that raise one observation's value lower another's),
    and they cancel less in a weighted sum (on ``kfold_far_mode.stan`` the mixture's errors
    were 1.6 times the modes' shares of their totals' errors)."""
    ps = p.psis
    pos = {int(o): j for j, o in enumerate(p.index)}
    fixed = {pos[f.index]: f for f in p.fixed}
    free = [j for j in range(a.size) if j not in fixed]
    if ps is not None and ps.influence is not None and all(j in ps.influence_i for j in free):
        h = np.sum([a[j] * ps.influence_i[j] for j in free], axis=0) if free else None
        v = 0.0 if h is None else total_mcse(h, ps.chains) ** 2
    else:
        mc = np.zeros(a.size) if p.psis_mcse_i is None else np.asarray(p.psis_mcse_i)
        v = float(np.sum(a[free] * mc[free])) ** 2
    v += float(np.sum([(a[j] * f.mcse) ** 2 for j, f in fixed.items()]))
    return v + (float(np.max(a)) * p.mcse_bias) ** 2


def combine_modes(parts: list[LooResult], weights: np.ndarray,
                  log_z_se: np.ndarray) -> LooResult:
    """The LOO of the mixture of modes with ``weights`` (summing to 1) from each mode's LOO
    ``parts``: elpd_i = -log sum_m w_m exp(-elpd_m,i), lppd_i = log sum_m w_m exp(lppd_m,i),
    k-hat the largest of the modes' after their fix-ups. Its Monte Carlo variance adds, per
    mode, that of sum_i a_m,i elpd_m,i (:func:`_mode_variance`; a_m,i is mode m's share of
    1 / p(y_i | y_-i), the derivative of elpd_i in elpd_m,i) and the weights' error from the
    evidence's ses (``log_z_se``): d elpd_loo / d log Z_m = sum_i (w_m - a_m,i)."""
    top = int(np.argmax(weights))
    if len(parts) == 1:
        return replace(parts[0], warnings=list(parts[0].warnings))
    lw = np.log(np.maximum(weights, 1e-300))[:, None]
    e = np.array([p.elpd_i for p in parts])
    elpd_i = -logsumexp(lw - e, axis=0)
    share = np.exp(lw - e + elpd_i)  # a_m,i: mode m's part of 1 / p(y_i | y_-i)
    lppd_i = logsumexp(lw + np.array([p.lppd_i for p in parts]), axis=0)
    psis_i = -logsumexp(lw - np.array([p.psis_elpd_i for p in parts]), axis=0)
    khat = np.max([fixed_khat(p.khat, p.index, p.fixed)[0] for p in parts], axis=0)
    var = 0.0
    for m, p in enumerate(parts):
        var += _mode_variance(p, share[m])
        var += float(np.sum(weights[m] - share[m])) ** 2 * float(log_z_se[m]) ** 2
    base = parts[top]
    na = next((f"mode {m + 1}: {p.mcse_na_reason()}" for m, p in enumerate(parts)
               if not np.isfinite(p.mcse_elpd_loo)), None)
    res = replace(
        base, elpd_loo=float(np.sum(elpd_i)), se=sum_se(elpd_i), p_loo=float(np.sum(lppd_i)
                                                                            - np.sum(elpd_i)),
        elpd_i=elpd_i, psis_elpd_i=psis_i, lppd_i=lppd_i, khat=khat, fixed=[],
        psis_mcse_i=np.sqrt(np.sum((share * np.array([p.mcse_i for p in parts])) ** 2,
                                   axis=0)),
        p_loo_se=sum_se(lppd_i - elpd_i),
        n_samples=int(sum(p.n_samples for p in parts)), verification=None, band=None,
        mcse_psis=math.sqrt(var), mcse_bias=0.0, mcse_elpd_loo=math.sqrt(var),
        mcse_na_note=None, budget_stop=next((p.budget_stop for p in parts
                                             if p.budget_stop is not None), None),
        warnings=[])
    if na is not None:
        res.mcse_elpd_loo, res.mcse_na_note = float("nan"), na
    return res
