"""log p(y_i | y₋ᵢ, θ) of any Stan program by normalizing its density over the one data value y_i.

The program's density log p̃(y, θ) (every constant kept) is, as a function of y_i with y₋ᵢ and
θ fixed, the conditional log p(y_i | y₋ᵢ, θ) up to a constant, so

    log p(y_i | y₋ᵢ, θ) = log p̃(y_i, y₋ᵢ, θ) − log ∫ p̃(u, y₋ᵢ, θ) du,

whatever the program's structure: independent terms, a multivariate-normal likelihood, lags or
a recursion through y_i, linked latent states, unnormalized truncations. The observation's own
latent coordinates z_i (parameters indexed by the observation) can be integrated out as well:

    log p(y_i | y₋ᵢ, θ, z₋ᵢ) = log ∫ p̃(y_i, z) dz − log ∫∫ p̃(u, z) du dz,

which leaves weights that do not depend on z_i (integrated LOO; Vehtari et al. 2016). The
integrals are Gaussian ones, exact when the log density is quadratic in (u, z): it is fitted on
a fixed stencil of points (data instances with y_i moved, draws with z_i moved) and checked for
quadraticity at extra points, draw by draw (Bürkner, Gabry & Vehtari 2021 for the Gaussian
non-factorized case). Where it is not quadratic, the latent is kept as a parameter; where it is
not quadratic in y_i either, :class:`NotGaussian` is raised so that callers can refuse with the
routes that work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from ...errors import (
    AmbiguousResponse,
    DataError,
    InputError,
    NotGaussian,
    Route,
    StanlogzError,
    option,
)
from ...stan.code import model_block
from ...stan.program import StanProgram, with_field
from .conditional_source import ColumnsByObservation
from .latents import observation_axes, split_name
from .observations import Observations, lfo_route, recursive_model
from .pointwise import run_all

#: Relative tolerance of the quadraticity check (double-precision log densities of programs
#: with a few hundred terms agree with their quadratic fit to ~1e-10).
QUAD_TOL = 1e-7
#: Most latent coordinates per observation integrated out in closed form.
MAX_LATENT = 3
#: The most values of y_i that :meth:`ConditionalLogLik.log_mass_wide` evaluates the density
#: at (one data instance each); a wider grid is not tried
WIDE_POINTS = 2000
#: How far beyond the observed values and the closed form's centre that grid reaches, in the
#: closed form's largest sd
WIDE_SDS = 12.0


def _sampled(code: str | None, names: list[str]) -> list[str]:
    """The ``names`` that the program's model block uses as observed values (``name ~``,
    ``name[...] ~`` or ``_lpdf(name |``), in the order given."""
    model = model_block(code)
    return [n for n in names if re.search(rf"\b{re.escape(n)}\s*(\[[^\]]*\])?\s*~", model)
            or re.search(rf"_lp[dm]f\(\s*{re.escape(n)}\s*(\[[^\]]*\])?\s*\|", model)]


def _block_routes(code: str | None, obs: Observations) -> tuple[Route, Route]:
    """The refit routes over whole observations, leave-future-out first for a program whose
    model block recurses over them (``x[t - 1]``), K-fold first otherwise; the first training
    set of the leave-future-out route is 90% of the observations."""
    lfo = lfo_route(obs)
    kfold = Route("kfold", {"obs": obs.size_name}, note="over exchangeable observations")
    return (lfo, kfold) if recursive_model(code) else (kfold, lfo)


def response_field(data: Mapping[str, Any], obs: Observations, response: str | None = None,
                   code: str | None = None) -> str:
    """The per-observation data array that holds the observed values: ``response`` when given,
    else ``y`` when it is an observation field, else the only real-valued 1-D one. ``code``
    (the program) picks the example the refusal names: an array the model block samples."""
    if response is not None:
        if response not in obs.fields:
            raise InputError(f"response {response!r} is not an observation array "
                             f"({', '.join(obs.fields)})")
        return response
    if "y" in obs.fields:
        return "y"
    cand = [f for f in obs.fields if np.asarray(data[f]).ndim == 1
            and np.asarray(data[f]).dtype.kind in "iuf"]
    if len(cand) != 1:
        if not cand:
            raise InputError(f"no observation array holds one number per observation "
                             f"({', '.join(obs.fields)}): the pointwise log-likelihood needs a "
                             "log_lik generated quantity with one entry per observation",
                             routes=Route(note="a log_lik generated quantity"))
        sampled = _sampled(code, cand)
        if len(sampled) > 1:
            first, other = _block_routes(code, obs)
            raise InputError(f"the program models several values per observation "
                             f"({', '.join(sampled)}): use {first}, or {other}; PSIS-LOO "
                             "needs a log_lik generated quantity with one entry per observation "
                             "(the sum of its terms, where they separate)", routes=(first, other))
        example = Route(options={"obs_fields": [(sampled or cand)[0]]})
        raise AmbiguousResponse(
            f"cannot tell which observation array holds the observed values "
            f"({', '.join(obs.fields)}); name that array alone with {option('obs_fields')} "
            f"(e.g. {example}), call it y "
            "in the program and data, or add a log_lik generated quantity",
            fields=tuple(obs.fields), example=(sampled or cand)[0], routes=example)
    return cand[0]


def is_integer_valued(model: StanProgram, data: Mapping[str, Any], field: str) -> bool:
    """Whether the program declares the data array ``field`` integer (it rejects a
    non-integer value in it): counts, categories."""
    arr = np.asarray(data[field])
    if arr.dtype.kind == "f" or arr.ndim == 0 or arr.size == 0:
        return False
    moved = arr.astype(float).tolist()
    moved[0] = float(np.ravel(arr)[0]) + 0.5 if arr.ndim == 1 else moved[0]
    try:
        with_field(model, data, field, moved)
    except StanlogzError:
        return True
    return False


def latent_coordinates(model: StanProgram, data: Mapping[str, Any], obs: Observations
                       ) -> list[np.ndarray]:
    """For each observation, the unconstrained coordinates of ``model`` (bound to ``data``)
    indexed by it (parameters with one entry per observation along some axis); empty arrays
    when the program's dimension does not follow the observations."""
    keep = np.arange(1, obs.n)
    try:
        small = model.with_data(obs.subset(data, keep))
    except (DataError, StanlogzError):
        return [np.zeros(0, dtype=int) for _ in range(obs.n)]
    if small.dim == model.dim:
        return [np.zeros(0, dtype=int) for _ in range(obs.n)]
    axes = observation_axes(model, small, obs.n)
    out: list[list[int]] = [[] for _ in range(obs.n)]
    for j, name in enumerate(model.param_unc_names()):
        base, idx = split_name(name)
        if base in axes:
            out[idx[axes[base]] - 1].append(j)
    return [np.asarray(v, dtype=int) for v in out]


@dataclass
class _Stencil:
    """Offsets (in step units) of the quadratic fit in d = 1 + d_z variables (u first)."""

    t: np.ndarray  # (m, d)
    design: np.ndarray  # (m, p)
    pinv: np.ndarray  # (p, m)
    pairs: list[tuple[int, int]]


def _stencil(d: int) -> _Stencil:
    pts = [np.zeros(d)]
    for j in range(d):
        for s in (-1.0, 1.0, -2.0, 2.0):
            e = np.zeros(d)
            e[j] = s
            pts.append(e)
    for j in range(d):
        for k in range(j + 1, d):
            for s in (1.0, -1.0):
                e = np.zeros(d)
                e[j], e[k] = 1.0, s
                pts.append(e)
    t = np.array(pts)
    pairs = [(j, k) for j in range(d) for k in range(j, d)]
    design = np.column_stack([np.ones(len(t)), t, *[t[:, j] * t[:, k] for j, k in pairs]])
    return _Stencil(t, design, np.linalg.pinv(design), pairs)


def _log_gauss(c: np.ndarray, g: np.ndarray, h: np.ndarray) -> np.ndarray:
    """log ∫ exp(c + gᵀt + ½ tᵀHt) dt per row (c (S,), g (S, d), H (S, d, d)); NaN where −H is
    not positive definite (not integrable)."""
    out = np.full(c.shape, np.nan)
    d = g.shape[1]
    if d == 1:  # the usual case, in closed form for all draws at once
        neg = -h[:, 0, 0]
        pos = neg > 0
        out[pos] = (c[pos] + 0.5 * g[pos, 0] ** 2 / neg[pos] + 0.5 * math.log(2 * math.pi)
                    - 0.5 * np.log(neg[pos]))
        return out
    pos = np.all(np.linalg.eigvalsh(-h) > 0, axis=1)
    if not np.any(pos):
        return out
    chol = np.linalg.cholesky(-h[pos])
    w = np.linalg.solve(chol, g[pos][..., None])[..., 0]
    out[pos] = (c[pos] + 0.5 * np.sum(w * w, axis=1) + 0.5 * d * math.log(2 * math.pi)
                - np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), axis=1))
    return out


class ConditionalLogLik(ColumnsByObservation):
    """log p(y_i | y₋ᵢ, θ) (optionally with the observation's latents integrated out) of one
    program and data set at any unconstrained draws, by Gaussian normalization over y_i."""

    def __init__(self, model: StanProgram, data: Mapping[str, Any], obs: Observations,
                 response: str | None = None, integrate_latents: bool = True) -> None:
        self.model, self.data, self.obs = model, dict(data), obs
        self.response = response_field(self.data, obs, response, getattr(model, "code", None))
        if is_integer_valued(model, self.data, self.response):
            raise NotGaussian(f"{model.name}: the observed values {self.response} are integers; "
                              "normalizing the density over one of them needs a sum over its "
                              "support, which is not implemented")
        y = np.asarray(self.data[self.response], dtype=float)
        if y.ndim != 1:
            err = NotGaussian(f"{model.name}: {self.response} has several values per "
                              "observation; the normalization handles one real value each")
            err.several_values = True  # routes.py names K-fold over whole observations first
            raise err
        self.y = y
        spread = float(np.std(y)) if y.size > 1 else 1.0
        self.h_u = 0.25 * spread if spread > 0 else 0.25
        self.latents = (latent_coordinates(model, self.data, obs) if integrate_latents
                        else [np.zeros(0, dtype=int)] * obs.n)
        self.integrated = np.zeros(obs.n, dtype=bool)  # set per observation by columns()

    def _instance(self, i: int, value: float) -> Any:
        """The program with y_i = ``value``; the last observation's instances are kept (moment
        matching asks for one observation's column many times)."""
        cache = self.__dict__.setdefault("_cache", {})
        if cache and next(iter(cache))[0] != i:
            cache.clear()
        if (i, value) not in cache:
            cache[(i, value)] = self._build(i, value)
        return cache[(i, value)]

    def _build(self, i: int, value: float) -> Any:
        arr = self.y.tolist()
        arr[i] = float(value)
        return with_field(self.model, self.data, self.response, arr)

    def _values(self, i: int, unc: np.ndarray, coords: np.ndarray, st: _Stencil, h_z: float,
                step: float | None = None) -> np.ndarray:
        """(S, m) log densities at the stencil points around each draw (the data instances
        evaluated on threads; the observed data's own values computed once per draw set);
        ``step``: the stencil's step in y_i (default ``h_u``)."""
        out = np.empty((unc.shape[0], len(st.t)))
        h_u = self.h_u if step is None else step

        def one(r: int) -> None:
            a = st.t[r, 0]
            x = unc
            if coords.size:
                x = unc.copy()
                x[:, coords] += h_z * st.t[r, 1:]
            try:
                if a == 0 and not np.any(st.t[r, 1:]):
                    out[:, r] = self.base(unc)
                else:
                    inst = self.model if a == 0 else self._instance(i, self.y[i] + a * h_u)
                    out[:, r] = inst.log_density_many(x)
            except StanlogzError:
                out[:, r] = np.nan

        for a in np.unique(st.t[:, 0]):  # build the instances here: the cache is not shared
            if a != 0:
                self._instance(i, self.y[i] + a * h_u)
        run_all(one, range(len(st.t)), unc.shape[0])
        out[~np.isfinite(out)] = np.nan
        return out

    def base(self, unc: np.ndarray) -> np.ndarray:
        """log p̃(y, θ) at the draws ``unc`` (kept for the next call with the same draws)."""
        got = self.__dict__.get("_base")
        if got is not None and got[0].shape == unc.shape and np.array_equal(got[0], unc):
            return got[1]
        out = self.model.log_density_many(unc)
        self._base = (unc.copy(), out)
        return out

    def _fit(self, f: np.ndarray, st: _Stencil) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray]:
        """Quadratic fit per draw: (c, g, H, ok) with ok where the fit is exact."""
        d = st.t.shape[1]
        coef = np.nan_to_num(f) @ st.pinv.T
        resid = f - coef @ st.design.T
        scale = 1.0 + np.nanmax(np.abs(f), axis=1)
        ok = np.all(np.isfinite(f), axis=1) & (np.max(np.abs(np.nan_to_num(resid, nan=np.inf)),
                                                      axis=1) <= QUAD_TOL * scale)
        c, g = coef[:, 0], coef[:, 1:1 + d]
        h = np.zeros((f.shape[0], d, d))
        for q, (j, k) in enumerate(st.pairs):
            v = coef[:, 1 + d + q]
            if j == k:
                h[:, j, j] = 2 * v
            else:
                h[:, j, k] = h[:, k, j] = v
        return c, g, h, ok

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log p(y_i | y₋ᵢ, θ) (the latents of observation i integrated out where the density is
        Gaussian in them) at unconstrained draws ``unc`` ``(S, dim)``."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        coords = self.latents[i]
        if 0 < coords.size <= MAX_LATENT:
            st = _stencil(1 + coords.size)
            f = self._values(i, unc, coords, st, 0.5)
            c, g, h, ok = self._fit(f, st)
            if np.all(ok):
                den = _log_gauss(c, g, h)
                num = _log_gauss(c, g[:, 1:], h[:, 1:, 1:])
                if np.all(np.isfinite(den)) and np.all(np.isfinite(num)):
                    self.integrated[i] = True
                    return num - den - math.log(self.h_u)
        st = _stencil(1)
        f = self._values(i, unc, np.zeros(0, dtype=int), st, 0.0)
        c, g, h, ok = self._fit(f, st)
        if not np.all(ok):
            s = int(np.argmin(ok))
            raise NotGaussian(
                f"{self.model.name}: the log density is not quadratic in "
                f"{self.response}[{i + 1}] (at draw {s + 1}), so p(y_i | y_-i, theta) has no "
                "closed-form normalization")
        den = _log_gauss(c, g, h)
        if not np.all(np.isfinite(den)):
            raise NotGaussian(f"{self.model.name}: the density does not fall off in "
                              f"{self.response}[{i + 1}]: p(y_i | y_-i, theta) is improper")
        self.integrated[i] = False
        return c - den - math.log(self.h_u)

    def log_mass(self, i: int, unc: np.ndarray, coords: np.ndarray) -> np.ndarray:
        """log ∫∫ p̃(u, z) du dz over y_i and the coordinates ``coords`` at each draw (NaN where
        the density is not Gaussian in them)."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        st = _stencil(1 + coords.size)
        f = self._values(i, unc, coords, st, 0.5)
        c, g, h, ok = self._fit(f, st)
        den = _log_gauss(c, g, h) + math.log(self.h_u) + coords.size * math.log(0.5)
        den[~ok] = np.nan
        return den

    def log_mass_wide(self, i: int, unc: np.ndarray) -> np.ndarray | None:
        """log ∫ p̃ du over y_i at each draw ``unc`` ``(S, dim)`` by the trapezoid rule on a
        grid from below every observed value of the response (and the closed form's centre) to
        above them, :data:`WIDE_SDS` of the closed form's sd beyond, at half its smallest sd:
        the density with a second peak (a mixture's other component, ``log_mix``) whose
        closed form, fitted where y_i is, sees one peak and a part of the mass. None where the
        density is not concave in y_i there or the grid needs more than
        :data:`WIDE_POINTS` values."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        st = _stencil(1)
        c, g, h, ok = self._fit(self._values(i, unc, np.zeros(0, dtype=int), st, 0.0), st)
        neg = -h[:, 0, 0]
        if not np.all(np.isfinite(neg) & (neg > 0)):
            return None
        sd = self.h_u / np.sqrt(neg)
        centre = self.y[i] + self.h_u * g[:, 0] / neg
        lo = min(float(np.min(self.y)), float(np.min(centre))) - WIDE_SDS * float(np.max(sd))
        hi = max(float(np.max(self.y)), float(np.max(centre))) + WIDE_SDS * float(np.max(sd))
        n = int(math.ceil((hi - lo) / (0.5 * float(np.min(sd))))) + 1
        if not np.isfinite(hi - lo) or n > WIDE_POINTS:
            return None
        grid = np.linspace(lo, hi, n)
        vals = np.full((unc.shape[0], n), -np.inf)
        for k, value in enumerate(grid):
            try:
                vals[:, k] = self._build(i, float(value)).log_density_many(unc)
            except StanlogzError:
                continue
        vals[~np.isfinite(vals)] = -np.inf
        with np.errstate(divide="ignore"):
            return special.logsumexp(vals, axis=1) + math.log(grid[1] - grid[0])

