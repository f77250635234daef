"""The conditional log-likelihood log p(y_i | y₋ᵢ, θ) of any program for PSIS-LOO, observation
by observation by the cheapest valid normalization of the program's density over y_i: the
Gaussian closed form (:mod:`.conditional`, the observation's latents integrated out) where the
density is quadratic in y_i, else quadrature over y_i or a sum over its integer support
(:mod:`.conditional_quadrature`). Non-factorized LOO (Bürkner, Gabry & Vehtari 2021) without
user formulas."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import special

from ...errors import DataError, StanlogzError
from ...stan.code import gaussian_variate
from ...stan.program import StanProgram
from .conditional import ConditionalLogLik, NotGaussian, _log_gauss, _stencil
from .conditional_quadrature import MAX_TERMS, NoConditional, QuadratureLogLik
from .conditional_search import search_note
from .conditional_source import ConditionalSourceBase
from .observations import Observations
from .pointwise import run_all

#: Where (in fitted conditional sds from its mode) the Gaussian closed form is checked against
#: the density: a second mode (a hidden Markov model's other state) or a heavier tail there is
#: invisible to the local quadratic fit.
FAR_SDS = (-12.0, -8.0, -4.0, 4.0, 8.0, 12.0)
#: Largest gap between the density and its Gaussian fit at those points, relative to the mode.
FAR_TOL = 1e-7
#: Largest uncertainty (nats) of the fit's prediction at a far point for it to count there.
MAX_SLACK = 1e-2
#: Pointwise evaluations above which the cost line says the pass will take a while (seconds).
SLOW_SECONDS = 30.0


class NonFactorizedSource(ConditionalSourceBase):
    """Pointwise interface (``columns``, ``column``, ``chunks``, ``check``) of log p(y_i | y₋ᵢ,
    θ) by Gaussian normalization where it is exact, else by quadrature or a discrete sum;
    ``method[i]`` says which ("gaussian", "quadrature", "sum", "" before the first call)."""

    def __init__(self, model: StanProgram, data: Mapping[str, Any], obs: Observations,
                 response: str | None = None) -> None:
        self.model, self.data, self.obs = model, dict(data), obs
        self.quad = QuadratureLogLik(model, data, obs, response)
        self.cl: ConditionalLogLik | None = None
        if not self.quad.discrete:
            self.cl = ConditionalLogLik(model, data, obs, response)
        self.method = np.array([""] * obs.n, dtype=object)
        self.checked = True
        #: the trial before the pass: (wall seconds, observations, draws), set by the caller
        #: that ran it (:func:`~stanlogz.crossval.elpd.routes.pointwise_source`)
        self.trial: tuple[float, int, int] | None = None
        #: whether the program's density is quadratic in each observed value by its text
        #: (:func:`~stanlogz.stan.code.gaussian_variate`): the Gaussian closed form then needs
        #: no far checks, only its stencil fit
        code = getattr(model, "code", None)
        self.gaussian_by_text = self.cl is not None and gaussian_variate(
            code, self.quad.response, bounded=True)
        #: whether the value's declaration bounds it (then the closed form is the normal
        #: truncated to the bounds, its stencil inside them)
        self.bounded_by_text = self.gaussian_by_text and not gaussian_variate(
            code, self.quad.response)

    @property
    def discrete(self) -> bool:
        """Whether the observed values are integers (a sum over the support)."""
        return self.quad.discrete

    def gaussian(self, i: int, unc: np.ndarray) -> bool:
        """Whether the Gaussian closed form holds for observation ``i`` at draws ``unc``."""
        return self._gaussian_column(i, np.asarray(unc, dtype=float)
                                     .reshape(-1, self.model.dim)) is not None

    def _gaussian_column(self, i: int, unc: np.ndarray) -> np.ndarray | None:
        """The Gaussian closed form of observation ``i`` where the density is quadratic in y_i
        near it and matches its Gaussian fit far from it (None otherwise); the observation's
        latents integrated out where :class:`ConditionalLogLik` can."""
        cl = self.cl
        if cl is None:
            return None
        if cl.latents[i].size:
            try:
                out = cl.column(i, unc)
            except (NotGaussian, DataError):
                return None
            if cl.integrated[i]:
                return out
        st = _stencil(1)  # the fit in y_i alone, kept for the far check
        bounds = self.quad.bounds(i) if self.bounded_by_text else (None, None)
        step = self._step(i, bounds)
        if step is None:
            return None
        try:
            f = cl._values(i, unc, np.zeros(0, dtype=int), st, 0.0, step)
        except DataError:
            return None
        c, g, h, ok = cl._fit(f, st)
        t = st.t[:, 0]
        resid = f - (c[:, None] + g[:, :1] * t + 0.5 * h[:, 0, :1] * t**2)
        eps = 2.0 * np.maximum(np.nanmax(np.abs(resid), axis=1),
                               1e-14 * (1.0 + np.nanmax(np.abs(f), axis=1)))
        # the curvature must stand out of what the stencil's rounding allows (a value that
        # enters no term has a flat conditional, fitted as a curvature of ~1e-15)
        h_err = 2.0 * eps * float(np.sum(np.abs(st.pinv[2])))
        if not np.all(ok) or not np.all(-h[:, 0, 0] > 10.0 * h_err):
            return None
        if not self.gaussian_by_text and not self._far_ok(i, unc, c, g, h, eps, st.pinv):
            return None
        den = _log_gauss(c, g, h)
        if self.bounded_by_text:  # a normal truncated to the values the program accepts
            den = den + self._log_inside(i, g, h, step, bounds)
        if not np.all(np.isfinite(den)):
            return None
        cl.integrated[i] = False
        return c - den - math.log(step)

    def _step(self, i: int, bounds: tuple[float | None, float | None]) -> float | None:
        """The stencil's step in y_i: ``h_u``, or small enough that the stencil (two steps
        each way) stays inside the declared ``bounds`` of y_i (None when y_i is on a bound:
        the quadrature's case)."""
        cl = self.cl
        assert cl is not None
        lo, hi = bounds
        room = min(np.inf if lo is None else cl.y[i] - lo, np.inf if hi is None else hi - cl.y[i])
        step = min(cl.h_u, room / 2.5)
        return float(step) if step > 0 else None

    def _log_inside(self, i: int, g: np.ndarray, h: np.ndarray, step: float,
                    bounds: tuple[float | None, float | None]) -> np.ndarray:
        """For a value Gaussian by the program's text whose declaration bounds it: the log of
        the fitted Gaussian's mass (``g``, ``h`` per stencil ``step``) inside the declared
        ``bounds`` of y_i, per draw: what normalizing over the values the program accepts
        adds to the closed form (exact: a truncated normal)."""
        lo, hi = bounds
        cl = self.cl
        assert cl is not None
        mode, sd = -g[:, 0] / h[:, 0, 0], 1.0 / np.sqrt(-h[:, 0, 0])
        a = (np.full(mode.shape, -np.inf) if lo is None
             else ((lo - cl.y[i]) / step - mode) / sd)
        b = (np.full(mode.shape, np.inf) if hi is None
             else ((hi - cl.y[i]) / step - mode) / sd)
        # log(Phi(b) - Phi(a)), on the side of the mode where the tails are not both ~1
        upper = a > -b
        big = np.where(upper, special.log_ndtr(-a), special.log_ndtr(b))
        small = np.where(upper, special.log_ndtr(-b), special.log_ndtr(a))
        with np.errstate(divide="ignore", invalid="ignore"):
            return big + np.log1p(-np.exp(small - big))

    def _far_ok(self, i: int, unc: np.ndarray, c: np.ndarray, g: np.ndarray, h: np.ndarray,
                eps: np.ndarray, pinv: np.ndarray) -> bool:
        """Whether the density in y_i agrees with its quadratic fit ``c + g t + h t²/2`` (t in
        stencil steps from y_i) at ``FAR_SDS`` fitted sds from the fitted mode and at the far
        candidates (:meth:`~.conditional_integral.IntegralMixin.far_candidates`: the declared
        bounds, 0, multiples of y_i, the data's range, the ladder y_i ± spread·2^k and the far
        modes climbed from them), for every draw: differences below ``FAR_TOL`` of the
        Gaussian's mass (an excess weighted by its distance from the mode) count as agreement,
        beyond what the fit's own uncertainty explains there (the
        stencil values known to ``eps`` per draw, carried to t by the fit ``pinv``: a very
        wide conditional is extrapolated thousands of steps)."""
        cl = self.cl
        assert cl is not None
        curv, slope = h[:, 0, 0], g[:, 0]
        peak = c - 0.5 * slope**2 / curv
        mode, sd = np.median(-slope / curv), np.median(1.0 / np.sqrt(-curv))
        lo, hi = self.quad.bounds(i)
        far = (self.quad.far_candidates(i, unc, lo, hi) - cl.y[i]) / cl.h_u
        far = far[np.abs(far - mode) > max(np.abs(FAR_SDS)) * sd]  # inside: the sds points
        ts = np.concatenate([mode + sd * np.array(FAR_SDS), far])
        bad = np.zeros(ts.size, dtype=bool)

        def check(j: int) -> None:
            t = ts[j]
            pred = c + slope * t + 0.5 * curv * t**2
            try:
                got = cl._build(i, float(cl.y[i] + t * cl.h_u)).log_density_many(unc)
            except StanlogzError:
                got = np.full(unc.shape[0], -np.inf)
            got = np.where(np.isfinite(got), got, -np.inf)
            slack = eps * float(np.sum(np.abs(np.array([1.0, t, t * t]) @ pinv)))
            with np.errstate(over="ignore"):
                dens = np.exp(got - peak)
                hi, lo = np.exp(pred + slack - peak), np.exp(pred - slack - peak)
            # an excess far out counts by the mass it may hold: its density times its distance
            # from the mode (a generous width), relative to the Gaussian's mass
            width = max(abs(t - mode) / (sd * math.sqrt(2 * math.pi)), 1.0)
            dev = np.maximum((dens - hi) * width, lo - dens)
            # where the fit itself is uncertain by more than MAX_SLACK nats it confirms
            # nothing, unless the point is negligible either way
            blind = (slack > MAX_SLACK) & ((hi > FAR_TOL) | (dens > FAR_TOL))
            bad[j] = np.max(dev) > FAR_TOL or bool(np.any(blind))

        run_all(check, range(ts.size), unc.shape[0])
        return not np.any(bad)

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log p(y_i | y₋ᵢ, θ) at unconstrained draws ``unc`` ``(S, dim)``."""
        unc = np.asarray(unc, dtype=float).reshape(-1, self.model.dim)
        if self.cl is not None and self.method[i] != "quadrature":
            out = self._gaussian_column(i, unc)
            if out is not None:
                self.method[i] = "gaussian"
                return out
        out = self.quad.column(i, unc)
        self.method[i] = "sum" if self.discrete else "quadrature"
        return out

    def expected_seconds(self, n_draws: int, n_obs: int | None = None) -> float | None:
        """The expected seconds of a pass over ``n_obs`` observations (default all) at
        ``n_draws`` draws when observations need quadrature or sums (None when the probe found
        none: the Gaussian closed form is cheap). An observation costs at least the trial's
        wall time per observation plus its nodes' cost at the draws beyond the trial's: the
        trial holds the closed-form check, the far-mode search and the instances' builds,
        which the nodes' price alone left out (a hidden Markov model of 100 steps: 0.9 s an
        observation priced at 400 draws, 3.4 s taken)."""
        numeric = [i for i in range(self.obs.n) if self.method[i] in ("quadrature", "sum")]
        if not numeric:
            return None
        nodes = float(np.mean(self.quad.nodes[numeric]))
        per_obs = self.quad.seconds(nodes, n_draws)
        if self.trial is not None:  # what does not grow with the draws, as the trial took it
            secs, tried, rows = self.trial
            per_obs = max(per_obs, secs / max(tried, 1) + per_obs
                          - self.quad.seconds(nodes, min(rows, n_draws)))
        return (self.obs.n if n_obs is None else n_obs) * per_obs

    def calibrate(self, unc: np.ndarray) -> None:
        """Time the density at many of the draws ``unc`` before the pass, so that its
        expected cost tells a call's fixed cost from its cost per draw."""
        if any(m in ("quadrature", "sum") for m in self.method):
            self.quad.calibrate(unc)

    def cost_line(self, n_draws: int) -> str | None:
        """A progress line with the expected time of the full pass when observations need
        quadrature or sums (None when the probe found none)."""
        secs = self.expected_seconds(n_draws)
        if secs is None:
            return None
        numeric = [i for i in range(self.obs.n) if self.method[i] in ("quadrature", "sum")]
        nodes = float(np.mean(self.quad.nodes[numeric]))
        what = "sum over the support" if self.discrete else "quadrature over y_i"
        slow = " (set STANLOGZ_THREADS to use more cores)" if secs > SLOW_SECONDS else ""
        return (f"conditional log-likelihood by {what}: ~{nodes:.0f} density instances per "
                f"observation x {n_draws} draws, about {secs:.0f} s{slow}")

    def notes(self) -> list[str]:
        """What the numerical normalization did: observations, nodes, the error bound."""
        numeric = np.flatnonzero([m in ("quadrature", "sum") for m in self.method])
        q = self.quad
        searched = search_note(q.search, q._label, q.spread, q.discrete)
        if self.gaussian_by_text and np.any(self.method == "gaussian"):
            searched = (f"{q.response} enters the density only as the variate of normal-family "
                        "statements, so p(y_i | y_-i, theta) is Gaussian in it by the program's "
                        "text: its closed form was fitted and checked at 5 points per value, "
                        "with no far-mode search"
                        + (" (normalized over its declared bounds: a truncated normal)"
                           if self.bounded_by_text else ""))
        if numeric.size == 0:
            return [searched] if searched else []
        err = float(np.max(self.quad.error[numeric]))
        most = int(np.max(self.quad.nodes[numeric]))
        if self.discrete:
            lo = min(self.quad.support[i][0] for i in numeric if i in self.quad.support)
            hi = max(self.quad.support[i][1] for i in numeric if i in self.quad.support)
            n_open = int(np.sum(self.quad.open_ends[numeric]))
            tails = (f"; the {n_open} end(s) not at a declared bound hold tails estimated at "
                     f"{err:.1g} relative by geometric extrapolation of the last terms "
                     "(an estimate, not a bound)"
                     if n_open else "")
            how = (f"summed over the support of {self.quad.response} ({lo:.0f}..{hi:.0f} "
                   f"at most, up to {most} terms; exact to each declared bound within "
                   f"{MAX_TERMS // 2} values{tails})")
        else:
            split = int(np.sum(self.quad.pieces[numeric] > 1))
            modes = (f"; {split} with a second mode far from y_i, integrated on its own"
                     if split else "")
            how = (f"integrated over {self.quad.response} by quadrature (up to {most} nodes"
                   f"{modes}; log error estimated at {err:.1g} from the last two levels and "
                   "the extrapolated tails)")
        return [f"{numeric.size} observation(s) not Gaussian in y_i: p(y_i | y_-i, theta) "
                f"{how}", *([searched] if searched else [])]


__all__ = ["NoConditional", "NonFactorizedSource"]
