"""The prior density of a Stan program, found without changing the program, and prior draws.

Four routes give log p(θ) (constrained scale, no Jacobian) at unconstrained points, tried in
this order:

* ``"lprior"``: a generated quantity or transformed parameter ``lprior``, the log prior density
  (priorsense's convention; Kallioinen et al. 2023);
* ``"zero observations"``: the same compiled library on the data with no observation
  (``N = 0``), whose density is the prior;
* ``"log_lik"``: log p(θ, y) − Σ_i log_lik[i], with the program's ``log_lik`` generated quantity;
* ``"one observation"``: for programs that refuse fewer than r observations (``int<lower=1>
  N``), log p(θ) = log p̃(θ; A) + log p̃(θ; B) − log p̃(θ; A ∪ B) for two disjoint sets A, B of r
  observations (the baseline instances of the density-difference log-likelihood,
  :class:`~stanlogz.crossval.observations.pointwise.PointwiseLogLik`), exact when the data enter
  as independent likelihood terms, which its check verifies.

The prior is sampled by NUTS on the zero-observation instance when there is one; otherwise by an
independence Metropolis–Hastings sampler whose proposal is a multivariate Cauchy adapted to the
prior by importance sampling (a few rounds of population Monte Carlo; Cappé et al. 2004). Only
prior density values are needed, so every route can be sampled; the chains go through the same
effective-sample-size machinery as NUTS draws.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from .. import arviz_compat
from .._util.gpd import KHAT_BAD
from .._util.seeds import Stream, stream_rng
from ..crossval.observations.observations import Observations
from ..crossval.observations.pointwise import PointwiseLogLik, has_log_lik, log_lik_columns
from ..draws import Draws, sample
from ..errors import DataError, InputError, StanlogzError
from ..stan.prior_statements import lprior_expression
from ..stan.program import StanProgram
from ..stan.settings import NutsArgs

ROUTES = ("lprior", "zero observations", "log_lik", "one observation")
#: Proposal draws per adaptation round of the independence sampler's Cauchy.
N_ADAPT = 4000
#: Adaptation rounds (each re-centres and re-scales the Cauchy on the weighted draws).
ADAPT_ROUNDS = 4
#: Warmup steps of each independence chain (it starts at an importance-resampled draw).
IMH_WARMUP = 100
#: Acceptance rate of the independence sampler below which its draws are flagged.
MIN_ACCEPTANCE = 0.1
#: Unconstrained points at which a route's identities are checked.
N_CHECK = 5
#: Largest |log density| whose differences are trusted: a difference of two doubles of size
#: 1e9 is exact to 2^-52 · 1e9 = 2e-7. Beyond it (a scale near 0, a coefficient at 1e6 in the
#: tails of a quadrature or a proposal) the density is taken as 0; such points have a
#: likelihood below e^-1e9, so only prior mass there is lost.
CANCEL_MAX = 1e9


@dataclass
class PriorDensity:
    """log p(θ) of a program on its unconstrained space, by one of :data:`ROUTES`.

    Behaves as a target for the Bayes-factor tools: :meth:`log_density_many` and
    :meth:`log_density` (with the Jacobian of the constraining transform unless told not to) and,
    for the instance routes, :meth:`log_density_gradient`.
    """

    model: StanProgram
    route: str
    instances: tuple[Any, ...] = ()
    gq_columns: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def dim(self) -> int:
        return int(self.model.dim)

    @property
    def name(self) -> str:
        return f"{self.model.name} (prior by {self.route})"

    @property
    def has_gradient(self) -> bool:
        """Whether :meth:`log_density_gradient` is available (the instance routes)."""
        return self.route in ("zero observations", "one observation")

    def log_prior(self, x: np.ndarray) -> np.ndarray:
        """log p(θ) (no Jacobian) at unconstrained rows ``x``; NaN where a difference of
        densities cannot be trusted (:data:`CANCEL_MAX`)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        if self.route == "zero observations":
            return self.instances[0].log_density_many(x, jacobian=False)
        with np.errstate(invalid="ignore"):
            if self.route == "one observation":
                parts = [m.log_density_many(x, jacobian=False) for m in self.instances]
                return _trusted(parts[0] + parts[1] - parts[2], *parts)
            full = self.model.log_density_many(x, jacobian=False)
            if self.route == "lprior":
                return _quantities(self.model, x, full, self.gq_columns)[:, 0]
            return _trusted(full - _quantities(self.model, x, full, self.gq_columns).sum(1),
                            full)

    def log_jacobian(self, x: np.ndarray) -> np.ndarray:
        """log |dθ/dx| of the constraining transform at unconstrained rows ``x`` (the difference
        of a data instance's density with and without it; NaN where untrusted)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        m = self.instances[0] if self.instances else self.model
        with np.errstate(invalid="ignore"):
            jac, plain = m.log_density_many(x), m.log_density_many(x, jacobian=False)
            return _trusted(jac - plain, jac, plain)

    def log_density_many(self, xs: np.ndarray, *, jacobian: bool = True) -> np.ndarray:
        """log p(θ) at unconstrained rows ``xs``, with the log Jacobian when ``jacobian``."""
        with np.errstate(invalid="ignore"):
            lp = self.log_prior(xs)
            return lp + self.log_jacobian(xs) if jacobian else lp

    def log_density(self, x: np.ndarray, *, jacobian: bool = True) -> float:
        """:meth:`log_density_many` at one point."""
        return float(self.log_density_many(np.atleast_2d(x), jacobian=jacobian)[0])

    def log_density_gradient(self, x: np.ndarray, *, jacobian: bool = True
                             ) -> tuple[float, np.ndarray]:
        """log p(θ) and its gradient at ``x`` (instance routes only)."""
        if not self.has_gradient:
            raise InputError(f"the prior by {self.route} has no gradient")
        parts = [m.log_density_gradient(x, jacobian=jacobian) for m in self.instances]
        if len(parts) == 1:
            return parts[0]
        (la, ga), (lb, gb), (lab, gab) = parts
        return la + lb - lab, ga + gb - gab


def _trusted(value: np.ndarray, *terms: np.ndarray) -> np.ndarray:
    """``value`` with NaN where any of the ``terms`` it is a difference of exceeds
    :data:`CANCEL_MAX` in size."""
    big = np.zeros(value.shape, dtype=bool)
    for t in terms:
        big |= ~(np.abs(t) <= CANCEL_MAX)
    return np.where(big, np.nan, value)


def _quantities(model: StanProgram, x: np.ndarray, full: np.ndarray, cols: list[int]
                ) -> np.ndarray:
    """Columns ``cols`` of the transformed parameters and generated quantities at rows ``x``:
    NaN where the density ``full`` is not finite or the quantities cannot be computed (a
    quadrature node where a scale underflows to 0), found by bisecting a failing block."""
    out = np.full((x.shape[0], len(cols)), np.nan)

    def fill(rows: np.ndarray) -> None:
        if rows.size == 0:
            return
        try:
            gq = model.constrain_many(x[rows], include_tp=True, include_gq=True, seed=1)
        except InputError:
            if rows.size > 1:
                fill(rows[: rows.size // 2])
                fill(rows[rows.size // 2:])
            return
        out[rows] = gq[:, cols]

    fill(np.flatnonzero(np.isfinite(full)))
    return out


def _probe(model: StanProgram, seed: int | None) -> np.ndarray:
    """A few unconstrained points at which a route's identities are checked."""
    rng = np.random.default_rng(seed if seed is not None else 0)
    return rng.uniform(-1.5, 1.5, (N_CHECK, model.dim))


def find_prior(model: StanProgram, data: dict[str, Any], observations: Observations, *,
               seed: int | None = None) -> PriorDensity:
    """The first route of :data:`ROUTES` that gives ``model``'s prior density; InputError
    naming every route and what the user can add when none does."""
    names = model.param_names(include_tp=True, include_gq=True)
    n_name = observations.size_name
    probe = _probe(model, seed)
    why: dict[str, str] = {}
    if "lprior" in names:
        prior = PriorDensity(model, "lprior", gq_columns=[names.index("lprior")])
        _check_lprior(prior, data, observations, probe)
        return prior
    why["lprior"] = ("no `lprior` (add `real lprior = ...;`, the log prior density, in "
                     "generated quantities)")
    try:
        inst = model.with_data(observations.subset(data, []))
    except DataError as exc:
        why["zero observations"] = f"it refuses {n_name} = 0 ({_reason(exc)})"
    else:
        if inst.dim == model.dim:
            return PriorDensity(model, "zero observations", instances=(inst,))
        why["zero observations"] = (f"with {n_name} = 0 it has {inst.dim} unconstrained "
                                    f"parameters, not {model.dim}")
    if has_log_lik(model):
        try:
            pw = PointwiseLogLik(model, data, observations, "log_lik")
        except InputError as exc:
            why["log_lik"] = _reason(exc)
        else:
            prior = PriorDensity(model, "log_lik", gq_columns=log_lik_columns(names))
            try:
                gap = pw.compare_log_lik(probe)
            except StanlogzError:  # the quantities fail at a probe point: nothing to compare
                gap = None
            if gap:
                prior.warnings.append(f"{gap.split(':')[0]}: the prior log p(θ, y) − "
                                      "sum(log_lik) is off by as much; keep log_lik's constants "
                                      "(_lpdf, not _lupdf) or add an `lprior`")
            return prior
    else:
        why["log_lik"] = f"no `log_lik` (add `vector[{n_name}] log_lik;` in generated quantities)"
    try:
        pw = PointwiseLogLik(model, data, observations, "difference")
        a, b = pw.bases()
        refs = pw.references()
        ab = model.with_data(observations.subset(data, [*refs[0], *refs[1]]))
        pw.check(probe)
    except StanlogzError as exc:  # refused data, a failed check, or the program's own error
        why["one observation"] = _reason(exc)
    else:
        return PriorDensity(model, "one observation", instances=(a, b, ab))
    detail = "; ".join(f"{k}: {v}" for k, v in why.items())
    expr = lprior_expression(getattr(model, "code", "") or "")
    line = f"`real lprior = {expr};`" if expr else "`real lprior = ...;` (the log prior density)"
    raise InputError(f"{model.name}: no way to its prior density ({detail}); add {line} in "
                     f"generated quantities, or, if the program accepts no observations, "
                     f"declare {n_name} with <lower=0>")


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


#: Stan's refusal of a data value outside its declared bound, with its source location.
_STAN_BOUND = re.compile(r"(?:data for [^,]*, )?variable '(\w+)': \1 is [^,]*, but must be "
                         r"(greater|less) than or equal to ([-+0-9.eE]+)(?: \(in '[^']*'[^)]*\))?")
_STAN_WHERE = re.compile(r"\s*\(in '[^']*', line \d+[^)]*\)")


def _reason(exc: BaseException) -> str:
    """The first line of ``exc`` without Stan's raw text: a refused bound as ``N >= 5``, no
    source location."""
    def bound(m: re.Match[str]) -> str:
        value = float(m.group(3))
        shown = str(int(value)) if value.is_integer() else f"{value:g}"
        return f"its declaration needs {m.group(1)} {'>=' if m.group(2) == 'greater' else '<='} " \
               f"{shown}"

    return _STAN_WHERE.sub("", _STAN_BOUND.sub(bound, _first_line(exc)))


def _check_lprior(prior: PriorDensity, data: dict[str, Any], observations: Observations,
                  probe: np.ndarray) -> None:
    """Warn when lprior + Σ log_lik is not the program's density (a likelihood L = p(θ, y) /
    p(θ) off by a constant moves log Z under likelihood scaling)."""
    if not has_log_lik(prior.model):
        return
    try:
        ll = PointwiseLogLik(prior.model, data, observations, "log_lik").matrix(probe).sum(1)
    except InputError:
        return
    full = prior.model.log_density_many(probe, jacobian=False)
    gap = np.abs(full - prior.log_prior(probe) - ll)
    if np.nanmax(gap) > 1e-6 * (1.0 + np.nanmax(np.abs(full))):
        prior.warnings.append(f"lprior + sum(log_lik) differs from the program's log density "
                              f"by up to {np.nanmax(gap):.3g}: if lprior drops normalizing "
                              "constants, the likelihood-scaled log Z is off by as much per "
                              "unit of power")


# ----------------------------------------------------------------- prior draws
def _weighted_quantiles(x: np.ndarray, w: np.ndarray, qs: tuple[float, ...]) -> np.ndarray:
    """Quantiles ``qs`` of each column of ``x`` ``(n, d)`` under weights ``w`` ``(n,)``."""
    out = np.empty((len(qs), x.shape[1]))
    for j in range(x.shape[1]):
        order = np.argsort(x[:, j])
        cw = np.cumsum(w[order])
        cw /= cw[-1]
        out[:, j] = np.interp(qs, cw, x[order, j])
    return out


def _cauchy(loc: np.ndarray, scale: np.ndarray) -> Any:

    return stats.multivariate_t(loc=loc, shape=np.diag(scale**2), df=1)


def _log_weights(prior: PriorDensity, xs: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        lw = prior.log_density_many(xs) - log_q
    return np.where(np.isfinite(lw), lw, -np.inf)


def sample_prior(prior: PriorDensity, settings: NutsArgs, anchor: np.ndarray, *,
                 seed: Any = None, progress: Any = None) -> Draws:
    """Draws from ``prior``: NUTS on the zero-observation instance, else independence
    Metropolis–Hastings (``settings.chains`` chains of ``settings.draws``) with a Cauchy
    proposal adapted from posterior draws ``anchor`` ``(S, dim)``; its warnings (low acceptance,
    heavy-tailed weights) are in the draws' ``warnings``."""
    if prior.route == "zero observations":
        return sample(prior.instances[0], settings, seed=seed, progress=progress)

    rng = stream_rng(seed, Stream.PROPOSAL)
    anchor = np.atleast_2d(anchor)
    loc = np.median(anchor, axis=0)
    q75, q25 = np.percentile(anchor, [75, 25], axis=0)
    scale = np.maximum(10 * (q75 - q25) / 1.349, 1e-3)  # the prior is wider than the posterior
    for _ in range(ADAPT_ROUNDS):
        dist = _cauchy(loc, scale)
        xs = np.atleast_2d(dist.rvs(size=N_ADAPT, random_state=rng)).reshape(N_ADAPT, -1)
        lw = _log_weights(prior, xs, np.atleast_1d(dist.logpdf(xs)))
        if not np.isfinite(lw).any():
            raise InputError(f"{prior.name}: the prior density is not finite anywhere near the "
                             "posterior draws")
        w = np.exp(lw - lw.max())
        med, hi, lo = _weighted_quantiles(xs, w, (0.5, 0.75, 0.25))
        loc, scale = med, np.maximum(2 * (hi - lo) / 1.349, 1e-6)
    dist = _cauchy(loc, scale)
    chains, n = settings.chains, settings.draws
    total = chains * (IMH_WARMUP + n)
    props = np.atleast_2d(dist.rvs(size=total, random_state=rng)).reshape(total, -1)
    lw = _log_weights(prior, props, np.atleast_1d(dist.logpdf(props)))
    lw = lw.reshape(chains, IMH_WARMUP + n)
    props = props.reshape(chains, IMH_WARMUP + n, -1)
    last = _log_weights(prior, xs, np.atleast_1d(dist.logpdf(xs)))
    p_start = np.exp(last - last.max())
    start = rng.choice(xs.shape[0], size=chains, p=p_start / p_start.sum())
    out = np.empty((chains, n, prior.dim))
    accepted = 0
    log_u = np.log(rng.uniform(size=lw.shape))
    for c in range(chains):
        cur, cur_lw = xs[start[c]], last[start[c]]
        for t in range(IMH_WARMUP + n):
            if log_u[c, t] < lw[c, t] - cur_lw:
                cur, cur_lw = props[c, t], lw[c, t]
                accepted += t >= IMH_WARMUP
            if t >= IMH_WARMUP:
                out[c, t - IMH_WARMUP] = cur
    rate = accepted / (chains * n)
    d = Draws(unconstrained=out, source="array")
    k = khat(lw[np.isfinite(lw)])
    if rate < MIN_ACCEPTANCE or k > KHAT_BAD:
        d.warnings.append(f"prior draws by independence Metropolis-Hastings ({prior.route} "
                          f"route): acceptance {rate:.2f}, weight k-hat {k:.2f}; the prior may "
                          "be improper, multimodal or far from a product of Cauchys; add an "
                          "`lprior` and declare the size variable with <lower=0> for NUTS")
    if progress:
        progress(f"prior draws by independence Metropolis-Hastings: acceptance {rate:.2f}")
    return d


def khat(log_ratios: np.ndarray) -> float:
    """Pareto k̂ of importance ratios exp(``log_ratios``) (any shape, flattened)."""
    lr = np.asarray(log_ratios, dtype=float).ravel()
    if np.ptp(lr) <= 1e-6:
        # weights within a factor 1 + 1e-6 of each other (a density constant over the draws up
        # to quadrature error): bounded, so no tail; a Pareto fit to such noise is meaningless
        return -math.inf
    _, k = arviz_compat.psislw(lr[None, :])
    return float(np.asarray(k).ravel()[0])
