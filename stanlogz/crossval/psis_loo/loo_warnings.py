"""The warnings of a LOO run: the sampler's, and what the estimates and k-hat values call for."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from ...draws import Draws

if TYPE_CHECKING:
    from .loo import LooResult


def _sampler_warnings(d: Draws) -> list[str]:
    """The sampler's warnings (divergences, R-hat, ESS) on the posterior quantities; the
    log_lik columns are left out (N of them would cost more than the LOO itself)."""
    if d.source != "stanlogz-nuts":
        return []
    if d.constrained is not None:
        keep = [j for j, n in enumerate(d.constrained_names) if not n.startswith("log_lik")]
        d = dataclasses.replace(d, constrained=d.constrained[:, :, keep],
                                constrained_names=[d.constrained_names[j] for j in keep])
    return list(d.summary().warnings)


def _posterior_values(d: Draws) -> np.ndarray:
    """The posterior quantities ArviZ would put in the posterior group (no log_lik)."""
    if d.constrained is None:
        return d.unconstrained
    keep = [j for j, n in enumerate(d.constrained_names) if not n.startswith("log_lik")]
    return d.constrained[:, :, keep] if keep else d.unconstrained


def _warnings(r: LooResult) -> list[str]:
    out = []
    left = r.unfixed_bad()
    if left:
        nums = ", ".join(str(i + 1) for i in left[:10])
        what = ("recompute them by exact refits (--fix exact; fix=\"exact\" in Python)"
                if r.fix == "none" else
                f"the {r.fix} fix-up did not replace them (see the warnings above)")
        out.append(f"{len(left)} observation(s) have Pareto k-hat above {r.threshold:.2f} "
                   f"({nums}): their PSIS values are unreliable; {what}"
                   + _integrated_offer(r))
    for f in r.fixed:
        out.extend(f.warnings)
        if f.se > 0.1:
            out.append(f"observation {f.index + 1}: the fixed value has Monte Carlo se "
                       f"{f.se:.2f}; run more draws for it")
    if abs(r.mcse_bias) > 0.5 * r.mcse_psis and abs(r.mcse_bias) > 0.1:
        out.append(f"PSIS values with k-hat above 0.5 bias elpd_loo by about "
                   f"{r.mcse_bias:+.2f} at {r.n_samples} draws (included in its Monte Carlo "
                   "se): k_threshold=0.5 moment-matches them, or more draws shrink it")
    if r.mcse_elpd_loo > 0.5:
        out.append(f"the Monte Carlo se of elpd_loo is {r.mcse_elpd_loo:.2f}: run more draws "
                   "(it falls as 1/sqrt(draws))")
    if r.sample_index is None and r.pointwise_seconds > 30 and r.n_obs > 5000:
        out.append(f"the pointwise log-likelihood of {r.n_obs} observations took "
                   f"{r.pointwise_seconds:.0f} s: --subsample 1000 (subsample=1000 in Python) "
                   "estimates elpd_loo from 1000 of them with a subsampling se")
    if r.p_loo > 0.4 * r.n_obs and r.n_obs > 10:
        out.append(f"p_loo = {r.p_loo:.1f} is large against {r.n_obs} observations: the model "
                   "may be misspecified or too flexible")
    return out


def _integrated_offer(r: LooResult) -> str:
    """The integrated route, offered when the log-likelihood is conditional on one latent per
    observation (:mod:`..observations.integrated`)."""
    if r.log_lik_source != "log_lik" or r.program is None or r.data is None:
        return ""
    from ...errors import StanlogzError
    from ..observations.conditional import latent_coordinates

    try:
        lat = latent_coordinates(r.program, r.data, r.observations)
    except StanlogzError:
        return ""
    if not all(c.size == 1 for c in lat):
        return ""
    return ("; the program has one latent per observation: --log-lik integrated "
            "(log_lik=\"integrated\") integrates it out instead of conditioning on it")
