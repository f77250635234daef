"""Whether a refit's chains found one posterior or several: a warm-started refit's probe, and
the split R-hat that judges it.

A warm-started refit (:func:`~stanlogz.draws.continuation.refit_draws`) starts every chain at
the full-data fit's last draws. Where the training data leave a mode that the full data rule
out, those chains never see it, and their R-hat cannot tell: on a two-mode prior whose second
mode one precise observation rules out, warm K-fold was 2.7 nats off with an mcse of 0.008
and no warning.

A **probe** of :data:`PROBE_CHAINS` chains (no more than the refit's own) from Stan's random
inits (uniform on (-2, 2), unconstrained), with the adapted step size and metric, runs
:data:`~stanlogz.draws.continuation.WARM_REFIT_WARMUP` warmup iterations and
:data:`PROBE_DRAWS` draws. Where a probe chain's median ends beyond the range of all the warm
chains' draws (by :data:`PROBE_BEYOND` of their sd, on any parameter: :func:`beyond`), the
probe goes on by :data:`PROBE_MORE`
iterations (a chain on its way to the posterior gets there, one in another mode stays) and is
compared again; if it still disagrees, the chains ended in different places, and the refit is
run cold as well, its chains joined to the warm ones. A cold refit is probed the same way
from the full fit's last draws. If the two sets found different modes, the joined chains'
R-hat says so to whoever reads them (:func:`~stanlogz.crossval.refit.heldout.heldout_elpd`
withholds the held-out value's se); if the probe had only not converged yet, they agree and
the draws are twice as many.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from scipy import stats

from ..errors import Route

#: Split R-hat above which a refit's chains (1,000 draws each at the defaults) are taken to
#: have ended in different places: their se is then withheld (converged chains give about
#: 1.00, sd near 0.002)
RHAT_MODES = 1.1
#: The level at which the chains' held-out values are found to differ (:func:`values_alike`:
#: chains in modes alike by a symmetry are then flagged this often, the conservative side:
#: their se is withheld) ...
ALIKE_ALPHA = 0.001
#: ... and the batches of each chain its Monte Carlo se is read from.
ALIKE_BATCHES = 20
#: A probe's chain whose median ends more than this many of the refit's sds beyond the range
#: of all the refit's draws is elsewhere (:func:`beyond`): a far mode gives tens of sds
#: (benchmarks/refit_modes.py); split R-hat over the probe's short chains, tried first, fired
#: on one-mode programs (1.1: chains of 50 draws; 1.5 and more: a county whose homes were all
#: held out, its intercept wandering through its wide prior in warm and probe chains alike)
PROBE_BEYOND = 0.5
#: Iterations by which a probe that disagrees goes on (its step size and metric as adapted)
#: before it is compared again: a chain still on its way from a random init gets there, a
#: chain in another mode stays
PROBE_MORE = 150
#: The probe's chains (at most; never more than the refit's own, :func:`probe_chains`) and
#: draws per chain (after its warmup)
PROBE_CHAINS = 4
PROBE_DRAWS = 50


def probe_chains(chains: int) -> int:
    """The probe's chains for a refit of ``chains`` chains: :data:`PROBE_CHAINS`, or fewer
    where the refit has fewer. A cold refit of that many chains from random inits is what a
    warm one replaces, so as many probe chains from random inits find what it would; more
    would cost a one-chain run more than half again."""
    return max(1, min(PROBE_CHAINS, int(chains)))


def split_rhat(x: np.ndarray) -> Any:
    """Split R-hat of series shaped ``(chains, n)`` (a float) or ``(chains, n, k)`` (one per
    column): every chain cut in two halves, between-half against within-half variance (1 when
    the halves agree; NaN if too short, inf where the halves are constant but differ)."""
    x = np.asarray(x, dtype=float)
    scalar = x.ndim == 2
    if scalar:
        x = x[..., None]
    h = x.shape[1] // 2
    if h < 2:
        out = np.full(x.shape[2], np.nan)
    else:
        halves = np.concatenate([x[:, :h], x[:, h:2 * h]])
        w = np.mean(np.var(halves, axis=1, ddof=1), axis=0)
        b = h * np.var(np.mean(halves, axis=1), axis=0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.sqrt(((h - 1) / h * w + b / h) / w)
        out = np.where(w > 0, out, np.where(b == 0, 1.0, np.inf))
    return float(out[0]) if scalar else out


def max_rhat(unconstrained: np.ndarray) -> float:
    """The largest split R-hat over the parameters of draws ``(chains, n, dim)`` (NaN with one
    chain of fewer than 4 draws)."""
    r = split_rhat(unconstrained)
    return float(np.max(r)) if np.size(r) and not np.all(np.isnan(r)) else float("nan")


def disagreeing(unconstrained: np.ndarray, what: str, value: str) -> str | None:
    """The warning for draws ``(chains, draws, dim)`` whose chains ended in different places
    (largest split R-hat above :data:`RHAT_MODES`: a refit's probe found another mode and its
    chains were joined, or cold chains split between modes), None when they agree. NUTS does
    not weight the modes, so ``value`` (what is computed from ``what``'s draws) is unreliable
    and no Monte Carlo se given them holds: the caller reports it as NA."""
    return modes_verdict(unconstrained, what, value)[0]


def modes_verdict(unconstrained: np.ndarray, what: str, value: str,
                  quantity: np.ndarray | None = None) -> tuple[str | None, float]:
    """:func:`disagreeing`'s warning, and the se to add in quadrature where there is none:
    ``(warning, spread)``.

    ``quantity`` ``(chains, draws)``: the held-out log-likelihood at those draws, whose
    log-mean-exp ``value`` estimates. Where the parameters' chains disagree but every chain's
    estimate of the value agrees with the others within their Monte Carlo errors
    (:func:`values_alike`), modes that differ only by a symmetry (topic labels swapped in a
    mixture or LDA; posteriordb ldaK2: parameter R-hat 6.5-6.9) give it one value whatever
    their weights: no warning. NUTS does not weight the modes (the pooled draws weight them
    by their chains' counts), and modes alike within the chains' errors may still differ by
    about those errors, so ``spread`` is half the range of the chains' values
    (:func:`weights_spread`): the value under any weighting of the modes the chains found
    lies within that range."""
    r = max_rhat(unconstrained)
    if not r > RHAT_MODES:
        return None, 0.0
    if quantity is not None:
        v, se = chain_values(quantity)
        if values_alike(v, se):
            return None, weights_spread(v)
    return (f"{what}: its chains disagree (split R-hat {r:.2f} > {RHAT_MODES}): the "
            "posterior may have modes that NUTS does not move between, so "
            f"{value} is unreliable and its Monte Carlo se NA; sample that posterior "
            f"({Route('sample')}) to see its modes, or reparameterize"), 0.0


def weights_spread(v: np.ndarray) -> float:
    """The se to add for the modes' unknown weights, given the chains' values ``v``: half
    their range. The value under any weights of the modes lies between the modes' values; the
    pooled estimate lies between them too, so half the range at 1.96 reaches from it to
    either end. The chains' spread beyond their own errors (the rule before) reads 0 about
    half the time where the modes differ by one chain's se, and the pooled value, weighted
    3:1 where the posterior weights 0.28:0.72, was then off by 1.7 of its se
    (benchmarks/modes_spread_coverage.py)."""
    return float(0.5 * (np.max(v) - np.min(v)))


def chain_values(quantity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each chain's log-mean-exp of ``quantity`` ``(chains, draws)`` and its Monte Carlo se
    (the delta method on the mean of exp(quantity), its se from ``ALIKE_BATCHES`` batch
    means, which hold the chain's autocorrelation): ``(values, ses)``, NaN where a chain has
    too few draws or a value that is not finite."""
    q = np.asarray(quantity, dtype=float)
    c, n = q.shape
    b = min(ALIKE_BATCHES, n // 2)
    if b < 2 or not np.all(np.isfinite(q)):
        return np.full(c, np.nan), np.full(c, np.nan)
    top = np.max(q, axis=1, keepdims=True)
    w = np.exp(q - top)
    mean = w.mean(axis=1)
    batches = w[:, :b * (n // b)].reshape(c, b, -1).mean(axis=2)
    se = batches.std(axis=1, ddof=1) / np.sqrt(b) / mean
    return np.log(mean) + top[:, 0], se


def values_alike(v: np.ndarray, se: np.ndarray) -> bool:
    """Whether the chains' estimates ``v`` of the held-out value, with their Monte Carlo
    errors ``se`` (:func:`chain_values`), agree: the chi-squared test of one value across the
    chains at level ``ALIKE_ALPHA``. It reads the value itself, not the term's R-hat: chains a
    fifth of the term's sd apart pass R-hat's 1.01, yet move a value four of its se (a
    helper's review); here they are some five se apart per chain, and flagged."""
    if v.size < 2 or not (np.all(np.isfinite(v)) and np.all(se > 0)):
        return False
    w = 1.0 / se**2
    centre = np.sum(w * v) / np.sum(w)
    stat = float(np.sum(w * (v - centre) ** 2))
    return stat <= float(stats.chi2.ppf(1.0 - ALIKE_ALPHA, v.size - 1))


def beyond(refit: np.ndarray, probe: np.ndarray) -> tuple[float, int]:
    """How far the probe's chains ended outside the refit's draws: over the parameters and the
    probe's chains ``probe`` ``(chains, n, dim)``, the largest distance of a chain's median of
    its last half beyond the range of all of the refit's draws ``refit`` (``(chains, n,
    dim)``), in the refit's sds (0 inside), and the parameter where it is largest. A chain that
    converged to the refit's posterior has its median inside the range of thousands of draws;
    one in another mode sits outside it; one mixing slowly through a wide posterior (a group's
    latent whose data were held out) stays inside, where R-hat over short chains would call it
    elsewhere."""
    flat = refit.reshape(-1, refit.shape[-1])
    lo, hi = flat.min(axis=0), flat.max(axis=0)
    sd = flat.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    med = np.median(probe[:, probe.shape[1] // 2:], axis=1)  # (chains, dim)
    out = np.maximum(np.maximum(med - hi, lo - med), 0.0) / sd
    j = int(np.argmax(np.max(out, axis=0)))
    return float(np.max(out)), j


def random_inits(dim: int, chains: int, rng: np.random.Generator) -> np.ndarray:
    """Stan's default inits on the unconstrained scale: uniform on (-2, 2), ``(chains, dim)``."""
    return rng.uniform(-2.0, 2.0, size=(chains, dim))


def join_chains(a: Any, b: Any, warning: str) -> Any:
    """The :class:`~stanlogz.draws.Draws` ``a`` and ``b`` (same draws per chain) as one run of
    their chains together, costs added, with ``warning``."""
    n = min(a.n_draws, b.n_draws)
    constrained = None
    if a.constrained is not None and b.constrained is not None \
            and a.constrained.shape[2] == b.constrained.shape[2]:
        constrained = np.concatenate([a.constrained[:, :n], b.constrained[:, :n]])
    sampler = {k: np.concatenate([v[:, :n], b.sampler[k][:, :n]])
               for k, v in a.sampler.items()
               if k in b.sampler and np.ndim(v) >= 2 and np.ndim(b.sampler[k]) >= 2}

    def both(x: Any, y: Any) -> Any:
        if x is None or y is None:
            return None
        return np.concatenate([np.atleast_1d(x), np.atleast_1d(y)])

    return replace(
        a, unconstrained=np.concatenate([a.unconstrained[:, :n], b.unconstrained[:, :n]]),
        constrained=constrained,
        constrained_names=list(a.constrained_names) if constrained is not None else [],
        sampler=sampler,
        step_size=both(a.step_size, b.step_size),
        inv_metric=both(a.inv_metric, b.inv_metric),
        seconds=float(a.seconds + b.seconds),
        n_gradient_evals=int(a.n_gradient_evals + b.n_gradient_evals),
        warnings=list(a.warnings) + [w for w in b.warnings if w not in a.warnings] + [warning])
