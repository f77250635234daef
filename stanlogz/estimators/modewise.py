"""log Z of a posterior whose chains sit in separated modes: each mode's evidence from its own
chains, summed (:mod:`stanlogz.draws.mode_search` finds the modes and groups the chains).

A bridge (or any estimator here) run on one mode's chains estimates the mass of the
unnormalized density in that mode's basin, Z_m: its proposal, fitted to those draws, puts
next to none of its mass in another basin, and its draws are from the posterior restricted
to the basin. Z is the sum of the Z_m, so the modes' weights come from their evidence, not
from how many chains sat in each. The Monte Carlo errors of the modes' estimates are
independent (separate chains and proposals): the se of log Z is that of a sum of
exponentials, sqrt(sum_m (Z_m / Z)^2 se_m^2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from scipy.special import logsumexp

from ..draws.core import Draws
from ..draws.mode_search import ModeSearch, chain_groups, search_modes
from ..errors import option
from ..stan.program import StanProgram
from ..stan.settings import NutsArgs
from .base import EvidenceResult


def estimate_by_modes(model: StanProgram, drawn: Draws, settings: NutsArgs, seed: int | None,
                      estimate: Callable[[np.ndarray, tuple[int, ...]], EvidenceResult], *,
                      probe: bool = True) -> tuple[EvidenceResult, Draws, list[np.ndarray]]:
    """log Z from the fit ``drawn``: its chains grouped by mode, after a search for modes they
    do not reach where ``probe`` (:func:`~stanlogz.draws.mode_search.search_modes`: the
    evidence asks for it on stanlogz's own NUTS draws; other fits' chains are grouped only).
    One mode: ``estimate(draws, ())`` on all the draws;
    several: :func:`modewise_log_z`, ``estimate(draws, (k,))`` on mode k's. Returns the
    result, the draws (with the chains sampled in modes found) and the groups."""
    found = (search_modes(model, drawn, settings, seed) if probe
             else ModeSearch(drawn, chain_groups(drawn.unconstrained)))
    d = found.draws
    if len(found.groups) < 2 and not found.unsampled:
        res = estimate(d.unconstrained, ())
    else:
        res = modewise_log_z(lambda u, k: estimate(u, (k,)), d.unconstrained, found.groups,
                             found.unsampled)
    if found.budget_skipped:
        res.warnings.append("the time budget left no room to search for modes the chains do "
                            "not reach: log Z holds the modes they sat in; a longer "
                            f"{option('time_budget')} runs the search")
    if found.n_gradient_evals:
        res.diagnostics["mode_search"] = {"found": found.found, "unsampled": found.unsampled,
                                          "probe_evals": found.n_gradient_evals,
                                          "probe_seconds": found.seconds}
    return res, d, found.groups


def modewise_log_z(estimate: Callable[[np.ndarray, int], EvidenceResult], unc: np.ndarray,
                   groups: Sequence[np.ndarray], unsampled: int = 0) -> EvidenceResult:
    """log Z as the log of the sum of the modes' evidence: ``estimate(draws, k)`` is the
    estimator run on mode k's draws ``(chains, n, dim)`` (the chains ``groups[k]`` of
    ``unc``). The result is the estimate of the mode with most mass, with the total's log Z
    and se, the costs summed, each mode's value in ``diagnostics["modes"]``, and a warning
    that names the modes (and any found but not sampled: ``unsampled``, whose mass is missing,
    so log Z is then low)."""
    parts = [estimate(unc[np.asarray(g)], k) for k, g in enumerate(groups)]
    log_z = np.array([r.log_z for r in parts], dtype=float)
    se = np.array([r.log_z_se for r in parts], dtype=float)
    total = float(logsumexp(log_z))
    share = np.exp(log_z - total)
    total_se = float(math.sqrt(np.sum((share * se) ** 2)))
    top = int(np.argmax(log_z))
    modes = [{"chains": [int(c) + 1 for c in g], "log_z": float(r.log_z),
              "log_z_se": float(r.log_z_se), "weight": float(w)}
             for g, r, w in zip(groups, parts, share, strict=True)]
    shown = "; ".join(f"chains {', '.join(map(str, m['chains']))}: {m['log_z']:.4f} +- "
                      f"{m['log_z_se']:.2g} (weight {m['weight']:.3f})" for m in modes)
    warnings = [f"the posterior has {len(groups)} modes that NUTS's chains do not move "
                f"between; log Z is the log of the sum of each mode's evidence, estimated "
                f"from its own chains ({shown}), not of the chains' mix of modes"]
    if unsampled:
        warnings.append(f"{unsampled} more mode(s) found by chains from random inits were not "
                        "sampled (the time budget holds no other run): their mass is missing, "
                        f"so log Z is low; a longer {option('time_budget')} samples them")
    for k, r in enumerate(parts):
        warnings.extend(f"mode {k + 1}: {w}" for w in r.warnings
                        if not w.startswith("chains disagree on log Z"))
    diagnostics = {**parts[top].diagnostics, "modes": modes, "modes_unsampled": int(unsampled)}
    return replace(parts[top], log_z=total, log_z_se=total_se,
                   n_draws=int(sum(r.n_draws for r in parts)),
                   n_evals=int(sum(r.n_evals for r in parts)),
                   seconds=float(sum(r.seconds for r in parts)), diagnostics=diagnostics,
                   warnings=warnings, log_z_df=None)

