"""Continuing NUTS chains past their end with the step size and diagonal metric they adapted:
no new warmup, no restart.

The transition is Stan's (``base_nuts``: multinomial sampling over the trajectory, biased
progressive sampling between subtrees, the generalized no-U-turn criterion with the two extra
checks across the subtrees' joins, a divergence above an energy error of 1000), run here in
Python on the program's log density and gradient, one chain after another for each draw so
that every chain has the same number of draws wherever a stop ends the run. Each chain starts
from its last draw, so the draws continue its Markov chain: they have the posterior as their
stationary distribution exactly as Stan's own draws do, and ESS and R-hat treat old and new
draws as one chain.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util import deadline
from .._util.seeds import drawn_sequence, int_seed
from ..draws import SAMPLER_COLUMNS, Draws
from ..draws.continuation import WarmStart, extend_draws
from ..errors import InputError, StanlogzError
from ..stan.settings import NutsArgs

#: An energy error above this ends a trajectory as divergent (Stan's ``max_deltaH``).
MAX_DELTA_H = 1000.0

LogDensityGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


@dataclass
class _Point:
    """A phase-space point: position, momentum, log density and its gradient."""

    q: np.ndarray
    p: np.ndarray
    lp: float
    grad: np.ndarray


@dataclass
class Transition:
    """One NUTS transition's draw and its sampler values (Stan's sampler columns)."""

    q: np.ndarray
    lp: float
    grad: np.ndarray
    accept_stat: float
    treedepth: int
    n_leapfrog: int
    divergent: bool
    energy: float


class NutsKernel:
    """Stan's NUTS transition with a fixed ``step_size`` and diagonal ``inv_metric``.

    Parameters
    ----------
    logp_grad : callable
        Log density and gradient at an unconstrained point (``-inf`` where rejected).
    step_size : float
        The adapted step size.
    inv_metric : numpy.ndarray
        The adapted diagonal inverse metric ``(dim,)``.
    max_treedepth : int
        The largest tree depth (Stan's default 10).
    rng : numpy.random.Generator
        The random numbers of the momenta and the multinomial choices.
    """

    def __init__(self, logp_grad: LogDensityGrad, step_size: float, inv_metric: np.ndarray,
                 max_treedepth: int, rng: np.random.Generator) -> None:
        inv = np.asarray(inv_metric, dtype=float)
        if not (math.isfinite(step_size) and step_size > 0):
            raise InputError(f"a continued chain needs a positive step size, got {step_size}")
        if inv.ndim != 1 or not np.all(np.isfinite(inv)) or np.any(inv <= 0):
            raise InputError("a continued chain needs a positive finite diagonal inverse "
                             "metric (its warmup's)")
        self.logp_grad, self.eps, self.inv = logp_grad, float(step_size), inv
        self.sqrt_inv = np.sqrt(inv)
        self.max_depth, self.rng = int(max_treedepth), rng
        self.n_leapfrog = 0
        self.sum_metro = 0.0
        self.divergent = False
        self.ends: tuple[_Point, _Point] | None = None

    def _momentum(self, n: int) -> np.ndarray:
        """A momentum drawn from N(0, M), M the metric (the inverse of ``inv_metric``)."""
        return self.rng.standard_normal(n) / self.sqrt_inv

    def _forward(self) -> bool:
        """The direction of the next doubling: forward with probability 1/2."""
        return bool(self.rng.uniform() > 0.5)

    def _hamiltonian(self, z: _Point) -> float:
        h = -z.lp + 0.5 * float(np.dot(self.inv * z.p, z.p))
        return math.inf if math.isnan(h) else h

    def _leapfrog(self, z: _Point, eps: float) -> _Point:
        p = z.p + 0.5 * eps * z.grad
        q = z.q + eps * self.inv * p
        lp, grad = self.logp_grad(q)
        if not math.isfinite(lp) or not np.all(np.isfinite(grad)):
            return _Point(q, p, -math.inf, np.zeros_like(q))
        return _Point(q, p + 0.5 * eps * grad, float(lp), grad)

    def transition(self, q: np.ndarray, lp: float | None = None,
                   grad: np.ndarray | None = None) -> Transition:
        """One draw from the chain at ``q`` (its log density and gradient, when known)."""
        if lp is None or grad is None:
            lp, grad = self.logp_grad(q)
        p0 = self._momentum(q.size)
        z0 = _Point(np.array(q, dtype=float), p0, float(lp), np.asarray(grad, dtype=float))
        h0 = self._hamiltonian(z0)
        self.n_leapfrog, self.sum_metro, self.divergent = 0, 0.0, False
        fwd = bck = z0  # the two ends of the trajectory
        sample = z0
        rho = p0.copy()
        sharp_ff = sharp_fb = sharp_bf = sharp_bb = self.inv * p0
        p_ff = p_fb = p_bf = p_bb = p0
        log_w = 0.0
        depth = 0
        self.ends = (z0, z0)
        while depth < self.max_depth:
            rho_f = np.zeros_like(rho)
            rho_b = np.zeros_like(rho)
            if self._forward():
                # the trajectory so far becomes the backward part: its inner end, next to
                # the new subtree, is its forward end (Stan's p_bck_fwd = p_fwd_fwd)
                rho_b, p_bf, sharp_bf = rho, p_ff, sharp_ff
                res = self._build(depth, fwd, +1.0, h0)
                valid, end, propose, log_w_sub, rho_f, sharp_fb, sharp_ff, p_fb, p_ff = res
                fwd = end
            else:
                rho_f, p_fb, sharp_fb = rho, p_bb, sharp_bb  # its backward end, likewise
                res = self._build(depth, bck, -1.0, h0)
                valid, end, propose, log_w_sub, rho_b, sharp_bf, sharp_bb, p_bf, p_bb = res
                bck = end
            if not valid:
                break
            depth += 1
            self.ends = (bck, fwd)  # the accepted trajectory's two ends (its span)
            if log_w_sub > log_w or self.rng.uniform() < math.exp(log_w_sub - log_w):
                sample = propose
            log_w = float(np.logaddexp(log_w, log_w_sub))
            rho = rho_b + rho_f
            persist = (_criterion(sharp_bb, sharp_ff, rho)
                       and _criterion(sharp_bb, sharp_fb, rho_b + p_fb)
                       and _criterion(sharp_bf, sharp_ff, rho_f + p_bf))
            if not persist:
                break
        n = max(self.n_leapfrog, 1)
        return Transition(q=sample.q, lp=sample.lp, grad=sample.grad,
                          accept_stat=self.sum_metro / n, treedepth=depth,
                          n_leapfrog=self.n_leapfrog, divergent=self.divergent,
                          energy=self._hamiltonian(sample))

    def _build(self, depth: int, z: _Point, sign: float, h0: float) -> tuple:
        """A subtree of ``2**depth`` leapfrog steps from ``z`` in direction ``sign``: whether
        it is valid, its last point, the point it proposes, its log weight, its summed
        momentum, the sharp momenta and momenta at its first and last points."""
        if depth == 0:
            z1 = self._leapfrog(z, sign * self.eps)
            self.n_leapfrog += 1
            h = self._hamiltonian(z1)
            if h - h0 > MAX_DELTA_H:
                self.divergent = True
            self.sum_metro += 1.0 if h0 - h > 0 else math.exp(h0 - h)
            sharp = self.inv * z1.p
            return (not self.divergent, z1, z1, h0 - h, z1.p.copy(), sharp, sharp, z1.p, z1.p)
        ok, mid, prop_a, w_a, rho_a, sharp_beg, sharp_a_end, p_beg, p_a_end = self._build(
            depth - 1, z, sign, h0)
        if not ok:
            return (False, mid, prop_a, w_a, rho_a, sharp_beg, sharp_a_end, p_beg, p_a_end)
        ok, end, prop_b, w_b, rho_b, sharp_b_beg, sharp_end, p_b_beg, p_end = self._build(
            depth - 1, mid, sign, h0)
        if not ok:
            return (False, end, prop_a, w_a, rho_a, sharp_beg, sharp_end, p_beg, p_end)
        w = float(np.logaddexp(w_a, w_b))
        propose = prop_b if (w_b > w or self.rng.uniform() < math.exp(w_b - w)) else prop_a
        rho = rho_a + rho_b
        persist = (_criterion(sharp_beg, sharp_end, rho)
                   and _criterion(sharp_beg, sharp_b_beg, rho_a + p_b_beg)
                   and _criterion(sharp_a_end, sharp_end, rho_b + p_a_end))
        return (persist, end, propose, w, rho, sharp_beg, sharp_end, p_beg, p_end)


def _criterion(sharp_minus: np.ndarray, sharp_plus: np.ndarray, rho: np.ndarray) -> bool:
    """Stan's no-U-turn criterion: the trajectory still moves apart at both ends."""
    return float(np.dot(sharp_plus, rho)) > 0 and float(np.dot(sharp_minus, rho)) > 0


def continue_chains(
    model: object,
    draws: Draws,
    more: int,
    *,
    seed: int | None = None,
    stop: Callable[[], bool] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Draws, int]:
    """``draws`` with up to ``more`` further draws per chain, each chain continued from its
    last draw with its adapted step size and inverse metric (``draws.step_size``,
    ``draws.inv_metric``) and its maximum tree depth: no new warmup, no restart.

    Parameters
    ----------
    model : StanModel
        The program whose posterior the draws are from (its log density and gradient, and its
        constrained values and generated quantities at the new draws).
    draws : Draws
        NUTS draws with their adapted step size and metric (stanlogz's NUTS or CmdStan's).
    more : int
        Draws per chain to add.
    seed : int, optional
        Seed of the momenta, the multinomial choices and the generated quantities.
    stop : callable, optional
        Asked before each round of one draw per chain; True ends the continuation there, so
        every chain keeps the same number of draws (a time budget's check).
    progress : callable, optional
        Gets one line at the start and one at the end.

    Returns
    -------
    tuple of (Draws, int)
        The old draws followed by the new ones (sampler columns, cost and seconds added up),
        and the draws per chain added.

    Raises
    ------
    InputError
        ``more`` is not a positive count, or the draws carry no adapted step size and metric.
    """
    if not isinstance(more, int | np.integer) or more < 1:
        raise InputError(f"draws to add must be a positive count, got {more!r}")
    chains, n0, dim = draws.unconstrained.shape
    step = None if draws.step_size is None else np.asarray(draws.step_size, dtype=float)
    inv = None if draws.inv_metric is None else np.asarray(draws.inv_metric, dtype=float)
    if step is None or inv is None or step.shape != (chains,) or inv.shape != (chains, dim):
        raise InputError("continuing the chains needs each chain's adapted step size and "
                         "diagonal metric (draws from stanlogz's NUTS or CmdStan)")
    rng = np.random.default_rng(seed)
    start = time.perf_counter()

    def logp_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        try:
            return model.log_density_gradient(x, propto=True, jacobian=True)  # type: ignore[attr-defined]
        except StanlogzError:  # the program rejects the point: a divergence, as in Stan
            return -math.inf, np.full(dim, np.nan)

    depth = int(draws.max_treedepth or 10)
    kernels = [NutsKernel(logp_grad, float(step[c]), inv[c], depth, rng) for c in range(chains)]
    state = [(draws.unconstrained[c, -1].copy(), *logp_grad(draws.unconstrained[c, -1]))
             for c in range(chains)]
    if progress:
        progress(f"continuing {chains} chains by up to {int(more)} draws each (adapted step "
                 "size and metric, no new warmup)")
    unc = np.empty((chains, int(more), dim))
    cols = {k: np.empty((chains, int(more))) for k in SAMPLER_COLUMNS}
    done, leapfrogs = 0, 0
    while done < more and not (stop is not None and stop()):
        for c, kernel in enumerate(kernels):
            t = kernel.transition(*state[c])
            leapfrogs += t.n_leapfrog
            unc[c, done] = t.q
            for key, value in (("lp__", t.lp), ("accept_stat__", t.accept_stat),
                               ("stepsize__", kernel.eps), ("treedepth__", t.treedepth),
                               ("n_leapfrog__", t.n_leapfrog), ("divergent__", t.divergent),
                               ("energy__", t.energy)):
                cols[key][c, done] = float(value)
            state[c] = (t.q, t.lp, t.grad)  # the next transition starts here
        done += 1
    if done == 0:
        return draws, 0
    unc = unc[:, :done]
    constrained = None
    if draws.constrained is not None:
        flat = model.constrain_many(unc.reshape(-1, dim), include_tp=True,  # type: ignore[attr-defined]
                                    include_gq=True, seed=int_seed(drawn_sequence(rng)))
        constrained = np.concatenate([draws.constrained,
                                      flat.reshape(chains, done, -1)], axis=1)
    sampler = dict(draws.sampler)
    for key, value in cols.items():
        if key in sampler:
            sampler[key] = np.concatenate([np.asarray(sampler[key]), value[:, :done]], axis=1)
    sampler = {k: v for k, v in sampler.items() if v.shape[:2] == (chains, n0 + done)}
    seconds = time.perf_counter() - start
    out = dataclasses.replace(
        draws, unconstrained=np.concatenate([draws.unconstrained, unc], axis=1),
        constrained=constrained, sampler=sampler, seconds=draws.seconds + seconds,
        n_gradient_evals=draws.n_gradient_evals + leapfrogs, warnings=list(draws.warnings))
    if progress:
        progress(f"continued the chains by {done} draws each in {seconds:.2f} s")
    return out, done


def more_draws(model: Any, draws: Draws, per_chain: int, settings: NutsArgs | None,
               seed: int | None, progress: Callable[[str], None] | None = None, *,
               reserve: float = 0.0) -> Draws:
    """``draws`` with up to ``per_chain`` more draws per chain: the chains continued with
    their adapted step size and metric where the draws carry them (:func:`continue_chains`;
    under a time budget it stops ``reserve`` seconds before its end), else new NUTS chains
    started at the last draws with a short warmup
    (:func:`~stanlogz.draws.continuation.extend_draws`, e.g. for draws given as an array)."""
    if WarmStart.adapted(draws) is None:  # no positive finite step sizes and metrics
        return extend_draws(model, draws, per_chain, settings=settings, seed=seed,
                            progress=progress)

    def stop() -> bool:
        left = deadline.remaining()
        return left is not None and left < reserve

    return continue_chains(model, draws, per_chain, seed=seed, progress=progress, stop=stop)[0]
