"""Whether deleting observations from a program's data gives the program's own held-out model.

Exact held-out values (:mod:`stanlogz.crossval.refit.heldout`, K-fold, the ``exact`` LOO fix) are
log Z(all data) − log Z(the program run without y_V). That is log p(y_V | y_T) of the user's
program only when the program run without y_V (and without the latents that exist only with
y_V) is the full program with y_V and those latents integrated out:

    ∫∫ p̃_full(u, z_V, θ) du dz_V = p̃_T(θ)   for every θ.

Two ways it fails silently: linked latents (a random-walk or AR state, a CAR field: deleting
x_t joins x_{t−1} to x_{t+1} with another variance) and a latent's prior that does not
integrate to one (``vector<lower=0>[N] z; z ~ normal(0, 1)`` without ``T[,]``), plus likelihoods
where y_i enters other terms (a multivariate normal, lags). :func:`check_split` tests the
identity at a few posterior draws, from the program itself: the integral of the density
difference over y_i and the observation's latents must be 1 (Gaussian closed form in y_i, a grid
over one latent coordinate); the cause named comes from whether the difference moves when other
observations' latents move (linked latents), is a constant (an unnormalized prior) or neither.
Where the integral has no closed form (integer or non-Gaussian y_i), a difference that moves with
other observations' latents is refused on its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import special

from ...errors import InputError, Route, SplitError, StanlogzError
from ...stan.program import StanProgram
from .conditional import ConditionalLogLik, NotGaussian, latent_coordinates, response_field
from .latents import coordinate_map
from .observations import Observations

#: Tolerance of the identity in log units (the quadratures are accurate to ~1e-8).
TOL = 1e-5
#: Grid points whose log density is this far below the peak carry no mass (:func:`_grid_mass`).
NEGLIGIBLE = 1e8

def split_route() -> str:
    """The routes of a refused split: PSIS-LOO from the program's own density, or LFO."""
    return (f"{Route('loo')} without exact refits gives PSIS-LOO on p(y_i | y_-i, theta) from "
            f"the program's own density (latents integrated out), and {Route('lfo')} is valid "
            "for time series")


def check_split(model: StanProgram, data: Mapping[str, Any], obs: Observations, i: int,
                x: np.ndarray) -> None:
    """Raise :class:`SplitError` (one line: the cause and the routes that work) when the
    program without observation ``i`` (0-based) is not the program ``model`` (bound to
    ``data``) with y_i and its latents integrated out, tested at the unconstrained draws ``x``
    ``(k, dim)`` of ``model`` (a few posterior draws)."""
    x = np.asarray(x, dtype=float).reshape(-1, model.dim)
    everything = np.arange(obs.n)
    keep = np.setdiff1d(everything, [i])
    try:
        small = model.with_data(obs.subset(data, keep))
    except StanlogzError:
        return  # the refit itself will report why the smaller data are refused
    common = coordinate_map(model, small, everything, keep)
    extra = np.setdiff1d(np.arange(model.dim), common)
    lp_s = small.log_density_many(x[:, common])
    lp_f = model.log_density_many(x)
    what = f"{model.name} without observation {i + 1}"
    linked = _linked(model, small, data, obs, x, common, extra, lp_f - lp_s)
    cl = _response_conditional(model, data, obs)
    mass = None if cl is None else _mass(model, data, obs, i, x, extra, cl)
    if mass is None or not np.all(np.isfinite(mass)):
        # no closed-form integral (integer or non-Gaussian y_i): dependence on other
        # observations' latents is refused on its own (conservatively: a trailing state, valid
        # to delete, is refused too)
        if linked:
            raise SplitError(f"{what} may be another model: {LINKED}; {split_route()}",
                             routes=(Route("loo"), Route("lfo")))
        return
    gap = mass - lp_s
    tol = TOL * (1 + np.max(np.abs(lp_s)))
    if np.max(np.abs(gap)) > tol and not linked and not extra.size:
        # the closed form is fitted where y_i is: a density with a second peak elsewhere (a
        # mixture's other component) passes its test there and loses that peak's mass (log
        # 0.5 on a two-component mixture). A grid over all the observed values measures it
        wide = cl.log_mass_wide(i, x)
        if wide is not None and np.all(np.isfinite(wide)):
            gap = wide - lp_s
    if np.max(np.abs(gap)) > tol:
        g = float(np.mean(gap))
        if linked:
            cause = LINKED
        elif extra.size and np.ptp(gap) < 1e-6:
            cause = ("a latent's prior does not integrate to one (a constrained latent with an "
                     "untruncated prior: add T[,] or the normalizing term)")
        elif _enters_others(model, small, data, obs, i, x, common, lp_f - lp_s):
            cause = ("y_i enters other terms of the density (a multivariate likelihood, lags, "
                     "a recursion)")
        else:  # what was measured, without a guess at why
            cause = ("the terms that y_i and its latents enter do not integrate to one over "
                     "them, by an amount that varies between draws")
        raise SplitError(
            f"{what} is not the program with y_{i + 1} integrated out (they differ by "
            f"{g:+.4g} in log density): {cause}; exact held-out values would be off; "
            f"{split_route()}",
            routes=(Route("loo"), Route("lfo")))


LINKED = ("the latent parameters of the observation are linked to other observations' latents "
          "(a random walk, AR or CAR field), so deleting them with the observation changes "
          "the prior of the rest")


def _enters_others(model: StanProgram, small: Any, data: Mapping[str, Any],
                   obs: Observations, i: int, x: np.ndarray, common: np.ndarray,
                   diff: np.ndarray) -> bool:
    """Whether the density difference (the terms observation ``i`` adds) moves when the other
    observations' responses move: then y_i shares terms with them."""
    try:
        field = response_field(data, obs)
        y = np.asarray(data[field], dtype=float)
        moved = dict(data)
        moved[field] = (y + 0.37 * np.where(np.arange(y.size) == i, 0.0, 1.0)).tolist()
        full2 = model.with_data(moved)
        small2 = small.with_data(obs.subset(moved, np.setdiff1d(np.arange(obs.n), [i])))
    except StanlogzError:
        return False
    d2 = full2.log_density_many(x) - small2.log_density_many(x[:, common])
    return bool(np.max(np.abs(diff - d2)) > TOL * (1 + np.max(np.abs(diff))))


def _linked(model: StanProgram, small: Any, data: Mapping[str, Any], obs: Observations,
            x: np.ndarray, common: np.ndarray, extra: np.ndarray, diff: np.ndarray) -> bool:
    """Whether the density difference moves when other observations' latents move."""
    if not extra.size:
        return False
    others = np.setdiff1d(np.concatenate(latent_coordinates(model, data, obs)), extra)
    if not others.size:
        return False
    x2 = x.copy()
    x2[:, others] += 0.3 * np.where(np.arange(others.size) % 2 == 0, 1.0, -1.0)
    d2 = model.log_density_many(x2) - small.log_density_many(x2[:, common])
    return bool(np.max(np.abs(diff - d2)) > TOL * (1 + np.max(np.abs(diff))))


def _response_conditional(model: StanProgram, data: Mapping[str, Any],
                          obs: Observations) -> ConditionalLogLik | None:
    """The density as a function of one observation's response (its latents held), None when
    y_i is not a real value."""
    try:
        return ConditionalLogLik(model, data, obs, integrate_latents=False)
    except (NotGaussian, InputError):
        return None


def _mass(model: StanProgram, data: Mapping[str, Any], obs: Observations, i: int, x: np.ndarray,
          extra: np.ndarray, cl: ConditionalLogLik | None = None) -> np.ndarray | None:
    """log ∫∫ p̃_full over y_i and the coordinates ``extra`` at each draw; None when y_i is
    not a real value the density is Gaussian in. ``cl``: the program's
    :func:`_response_conditional`, when the caller has it."""
    cl = cl if cl is not None else _response_conditional(model, data, obs)
    if cl is None:
        return None
    if extra.size == 1:
        return _grid_mass(cl, i, x, int(extra[0]))
    return cl.log_mass(i, x, extra)


def _grid_mass(cl: ConditionalLogLik, i: int, x: np.ndarray, coord: int) -> np.ndarray:
    """log ∫∫ p̃(u, z) du dz over y_i (Gaussian closed form) and one latent coordinate (a wide
    trapezoid grid on its unconstrained scale), NaN where not Gaussian in y_i."""
    grid = np.linspace(-15.0, 15.0, 601)
    out = np.empty(x.shape[0])
    for s in range(x.shape[0]):
        pts = np.repeat(x[s:s + 1], grid.size, axis=0)
        pts[:, coord] = x[s, coord] + grid
        inner = cl.log_mass(i, pts, np.zeros(0, dtype=int))
        inner = np.where(np.isfinite(inner), inner, -np.inf)
        # Far out on the grid (a <lower=0> latent at exp(u + 15)) the density is -1e13 and its
        # quadratic fit in y_i is rounding noise that can come out as +1e13 (issue 35 item 3:
        # a wrong cause, "differ by +4.346e+13"). Where the density at the observed y_i is
        # e^-1e8 of its peak the mass is negligible unless y_i sits >14000 sd from its
        # conditional mean there, so those points are dropped. (At e^-1e4 a noise scale near 0
        # dropped real mass: at sigma = 0.017, 140 sd is 2.4, and 1% of a half-normal latent's
        # prior was cut, issue 44. The fit's rounding grows with the drop, measured at sigma
        # 0.02 and 0.002: < 5e-6 in log units within 1e6 of the peak, < 0.08 within 1e8
        # (points 1400+ sd out in the likelihood, the latent's prior small there: < 1e-5 on
        # the log mass), 1e3 and more beyond.)
        lp = cl.model.log_density_many(pts)
        inner[~(lp >= np.max(lp) - NEGLIGIBLE)] = -np.inf
        if not np.any(np.isfinite(inner)):
            out[s] = np.nan
            continue
        out[s] = special.logsumexp(inner) + math.log(grid[1] - grid[0])
    return out
