"""Power-scaling sensitivity of log Z, elpd_loo and the posterior to the prior and likelihood.

The prior is scaled as p(θ)^α renormalized and the likelihood as p(y | θ)^β (Kallioinen et
al. 2023), so log Z(α) = log ∫ p^α L / ∫ p^α stays a proper evidence and log Z(β) is the power
posterior's normalizer ∫ p L^β. Both come from one posterior fit, one prior fit (NUTS on the
program's zero-observation instance, or independence Metropolis–Hastings on the prior density
of :mod:`.prior_density`) and importance sampling:

* log Z(α) = log Z + log E_post[p^(α−1)] − (c(α) − c(1)), with c(α) = log ∫ p^α estimated by
  importance sampling from a multivariate Cauchy around the prior draws (reweighting the prior
  draws instead has infinite variance for every α <= 1/2, since E_prior[p^(2α−2)] = ∫ p^(2α−1));
* log Z(β) = log Z + log E_post[L^(β−1)];
* d log Z/dα = E_post[log p] − E_prior[log p], d log Z/dβ = E_post[log L] at α = β = 1;
* elpd_loo of the scaled model is PSIS-LOO with ratios p^(α−1)/p(y_i|θ) (or
  L_{−i}^(β−1)/p(y_i|θ)) predicting y_i by the unscaled p(y_i | θ); its derivative is
  Σ_i E_post[g_i] − E_loo,i[g_i] with g_i = log p (prior) or log L − log p(y_i|θ).

Standard errors are delta-method Monte Carlo errors with the MCMC effective sample size (plus
log Z's own se for the values). When a posterior reweighting's Pareto k̂ is above the threshold,
log Z at that scale is recomputed by SMC on the power-scaled target (``refit``); elpd_loo is
refused (NaN with a warning) when its k̂ is above 0.5, where the ratios have infinite variance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .._util.gpd import KHAT_HEAVY
from .._util.seeds import Stream, stream_int_seed, stream_rng
from ..arviz_compat import psislw
from ..crossval.elpd.psis import k_threshold
from ..crossval.observations.pointwise import PointwiseLogLik
from ..densities.target import FunctionTarget
from ..draws.checks import normalization_warnings
from ..errors import InputError, Route
from ..estimators import lookup
from ..stan.program import ProgramLike
from ..stan.settings import NutsArgs
from .common import (
    Program,
    chains_of,
    linearized_se,
    log_mean_exp_se,
    mean_se,
    posterior_and_prior,
    value_se,
)

SCALES = (0.5, 2.0)
#: Fewest posterior draws (chains x draws) accepted.
MIN_DRAWS = 200
#: Draws of the Cauchy proposal for the prior's normalizer ∫ p^α.
N_PROPOSAL = 20000
#: Scaled derivative of a posterior mean or sd (in posterior sds per unit log α) above which a
#: parameter counts as sensitive (our scale; priorsense uses 0.05 on its CJS distance).
SENSITIVITY_THRESHOLD = 0.1


def _key(a: float) -> str:
    return f"{a:g}"


@dataclass
class Scaled:
    """One quantity under one power-scaling: derivative at 1 (w.r.t. log α) and values."""

    derivative: float
    derivative_se: float
    at: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"derivative": self.derivative, "derivative_se": self.derivative_se,
                "at": {k: dict(v) for k, v in self.at.items()}}


@dataclass
class SensitivityResult:
    """Power-scaling sensitivity of one program (see :func:`sensitivity`).

    Attributes
    ----------
    model : str
        The program's name.
    log_z, log_z_se, elpd_loo, elpd_loo_se : float
        The values at α = β = 1 and their se.
    quantities : dict
        Per quantity (``"log_z"``, ``"elpd_loo"``) and component (``"prior"``,
        ``"likelihood"``): the derivative in the log of the power with its se, and the values
        at each scale.
    params : list of dict
        Per parameter: posterior mean and sd, their derivatives, and a diagnosis.
    curves : dict
        log Z and elpd_loo over a grid of α.
    prior_route : str
        Where the prior density came from.
    warnings : list of str
        What to do about problems found.
    """

    model: str
    log_z: float
    log_z_se: float
    elpd_loo: float
    elpd_loo_se: float
    quantities: dict[str, dict[str, Scaled]]
    params: list[dict[str, Any]]
    curves: dict[str, Any]
    n_draws: int
    method: str
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    prior_route: str = ""

    def table(self) -> list[list[Any]]:
        """Rows: quantity, scaling, derivative ± se and the values at each scale."""
        rows = []
        for q, by in self.quantities.items():
            for power, s in by.items():
                row = [q, power, f"{s.derivative:.3f} ± {s.derivative_se:.3f}"]
                row += [f"{v['value']:.3f} ± {v['se']:.3f}" for v in s.at.values()]
                rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "method": self.method,
                               "prior_route": self.prior_route,
                               "n_draws": self.n_draws, "seconds": self.seconds}
        base = {"log_z": (self.log_z, self.log_z_se), "elpd_loo": (self.elpd_loo,
                                                                   self.elpd_loo_se)}
        for q, by in self.quantities.items():
            out[q] = {"value": base[q][0], "se": base[q][1],
                      **{p: s.to_dict() for p, s in by.items()}}
        out["params"] = self.params
        out["curves"] = self.curves
        out["warnings"] = list(self.warnings)
        return out


def scaled_target(prog: Program, alpha: float, beta: float) -> FunctionTarget:
    """The unnormalized density α·log p(θ) + log|J| + β·log L(θ) on the unconstrained space."""
    m, p = prog.model, prog.prior

    def many(xs: np.ndarray) -> np.ndarray:
        lpn, lpj = p.log_density_many(xs, jacobian=False), p.log_density_many(xs)
        return alpha * lpn + (lpj - lpn) + beta * (m.log_density_many(xs) - lpj)

    def f(x: np.ndarray) -> float:
        return float(many(np.atleast_2d(x))[0])

    def grad(x: np.ndarray) -> np.ndarray:
        _, gn = p.log_density_gradient(x, jacobian=False)
        _, gj = p.log_density_gradient(x)
        _, gm = m.log_density_gradient(x)
        return alpha * gn + (gj - gn) + beta * (gm - gj)

    # the lprior and log_lik routes are generated quantities, without a gradient: finite
    # differences (FunctionTarget's fallback)
    return FunctionTarget(m.dim, f, grad if p.has_gradient else None, many)


def _loo_scaled(ll: np.ndarray, extra: np.ndarray, chains: int) -> tuple[float, float, float]:
    """elpd_loo with log ratios ``extra − ll`` ((S, N) each), its se and the largest k̂."""
    s = ll.shape[0]
    lw, k = psislw((extra - ll).T)  # (N, S), normalized
    e = logsumexp(lw + ll.T, axis=1)
    w = np.exp(lw)
    infl = (s * w * (np.exp(ll.T - e[:, None]) - 1.0)).sum(axis=0)
    return float(e.sum()), linearized_se(chains_of(infl, chains)), float(np.max(k))


def _loo_derivative(ll: np.ndarray, g: np.ndarray, chains: int) -> tuple[float, float]:
    """Σ_i E_post[g_i] − E_loo,i[g_i] and its se (``g`` is (S, N))."""
    s = ll.shape[0]
    lw, _ = psislw(-ll.T)
    w = np.exp(lw)  # (N, S)
    e_loo = np.sum(w * g.T, axis=1)
    e_post = g.mean(axis=0)
    infl = ((g - e_post) - s * w.T * (g - e_loo)).sum(axis=1)
    return float(np.sum(e_post - e_loo)), linearized_se(chains_of(infl, chains))


def _param_rows(names: Sequence[str], theta: np.ndarray, lp: np.ndarray, lik: np.ndarray
                ) -> list[dict[str, Any]]:
    """Per-parameter mean, sd and the scaled derivatives of mean and sd (priorsense-like)."""
    rows = []
    for j, name in enumerate(names):
        t = theta[:, j]
        mu, sd = float(t.mean()), float(t.std())
        # "variable" and the diagnosis labels are priorsense's (powerscale_sensitivity); its
        # "prior" / "likelihood" columns are CJS distances, not these derivatives, so not reused
        row: dict[str, Any] = {"variable": name, "name": name, "mean": mu, "sd": sd}
        sens = {}
        for power, g in (("prior", lp), ("likelihood", lik)):
            gc = g - g.mean()
            d_mean = float(np.mean((t - mu) * gc))
            d_var = float(np.mean(((t - mu) ** 2 - sd**2) * gc))
            scale = sd if sd > 0 else 1.0
            row[f"{power}_dmean"] = d_mean / scale
            row[f"{power}_dsd"] = d_var / (2 * scale * scale)
            sens[power] = max(abs(row[f"{power}_dmean"]), abs(row[f"{power}_dsd"]))
        pr, li = sens["prior"] >= SENSITIVITY_THRESHOLD, sens["likelihood"] >= \
            SENSITIVITY_THRESHOLD
        row["diagnosis"] = ("potential prior-data conflict" if pr and li else
                            "potential strong prior / weak likelihood" if pr else "-")
        rows.append(row)
    return rows


def sensitivity(
    model: ProgramLike,
    data: Any = None,
    *,
    settings: NutsArgs | None = None,
    method: str = "gbs",
    scales: Sequence[float] = SCALES,
    obs: str | None = None,
    refit: bool = True,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
    **nuts: Any,
) -> SensitivityResult:
    """Power-scaling sensitivity of log Z, elpd_loo and the posterior means and sds of a Stan
    program to its prior (p^α renormalized) and its likelihood (L^β).

    ``model`` is a ``.stan`` path or :class:`~stanlogz.stan.model.StanModel`, ``data`` a dict or
    JSON path; its prior density comes from an ``lprior`` quantity, its zero-observation
    instance, its ``log_lik`` or one-observation instances (the route is in ``prior_route``; see
    :mod:`stanlogz.bayes_factors.prior_density`). ``settings`` (or NUTS
    keywords such as ``draws=``) drive both the posterior and the prior fit; ``method`` is the
    evidence estimator of log Z at α = β = 1; ``scales`` the α and β at which values are given.

    Parameters
    ----------
    model : str, Path or StanModel
        The program whose prior and likelihood are power-scaled (a ``.stan`` file or a built
        :class:`~stanlogz.StanModel`).
    data : dict or str, optional
        Its data (a dict or a Stan JSON file), for the posterior and the prior fit.
    settings : NutsArgs, optional
        Settings of the posterior and prior NUTS runs.
    method : str, default "gbs"
        The evidence estimator of log Z at α = β = 1.
    scales : sequence of float, default (0.5, 2.0)
        The powers α and β (positive, not 1) at which values are given.
    obs : str, optional
        The observation count variable (inferred when omitted).
    refit : bool, default True
        Where reweighting is unreliable (Pareto k̂ too high), recompute log Z at that scale
        by SMC on the power-scaled target.
    seed : int, optional
        Random seed.
    progress : callable, optional
        Called with one line of text per step.
    **nuts
        Sampler keywords (``chains``, ``warmup``, ``draws``, ``adapt_delta``,
        ``max_treedepth``).

    Returns
    -------
    SensitivityResult
        ``log_z`` and ``elpd_loo`` with their se, ``quantities`` (per quantity and
        component, the derivative in log α or log β and the values at ``scales``), the
        posterior means and sds with their derivatives and a diagnosis (``params``), the
        ``curves`` over α, the ``prior_route`` and ``warnings``.

    Raises
    ------
    InputError
        Scales that are not positive or equal 1, too few posterior draws, or a prior density
        that is not finite near its draws.

    See Also
    --------
    stanlogz.savage_dickey : a Bayes factor whose sensitivity this checks.
    stanlogz.calibrate : how often a Bayes factor misleads.

    Examples
    --------
    The executed tutorial :doc:`/tutorials/defensible_bayes_factor` compares two programs'
    sensitivity. Of the shipped normal-mean program, whose log Z is −13.275816 in closed form
    (run from the repository root):

    >>> import stanlogz
    >>> s = stanlogz.sensitivity("stan_models/examples/normal_mean.stan",
    ...                          "stan_models/examples/normal_mean.data.json", seed=1,
    ...                          chains=2, warmup=300, draws=500)
    >>> s.prior_route, [p["name"] for p in s.params], sorted(s.quantities["log_z"])
    ('log_lik', ['mu'], ['likelihood', 'prior'])
    >>> bool(abs(s.log_z - (-13.275816)) < 5 * s.log_z_se)  # a z-test: fails with P < 1e-6
    True
    """
    import time

    t0 = time.perf_counter()
    scales = [float(a) for a in scales]
    if not scales or any(not (a > 0 and math.isfinite(a)) or a == 1.0 for a in scales):
        raise InputError(f"scales must be positive numbers other than 1, got {scales}")
    lookup(method).options({})
    settings = NutsArgs.of(settings, **nuts)
    if settings.chains * settings.draws < MIN_DRAWS:
        raise InputError(f"sensitivity needs at least {MIN_DRAWS} posterior draws (chains x "
                         f"draws) for its importance weights and their k-hat, got "
                         f"{settings.chains} x {settings.draws}")
    prog, d_post, d_prior = posterior_and_prior(model, data, obs, settings, seed=seed,
                                                progress=progress)
    say = progress or (lambda _m: None)
    chains = d_post.n_chains
    x, z = d_post.flat_unconstrained(), d_prior.flat_unconstrained()
    lp, lik = prog.log_prior(x), prog.log_lik(x)
    lp_prior = prog.log_prior(z)
    pw = PointwiseLogLik(prog.model, prog.data, prog.observations)
    pw.check(x[:: max(1, x.shape[0] // 20)])
    ll = pw.matrix(x)
    say(f"estimating log Z with {method}")
    ev = lookup(method).run(prog.model, d_post.unconstrained,
                            seed=stream_int_seed(seed, Stream.ESTIMATOR),
                            n_sampling_evals=d_post.n_gradient_evals)
    warnings = (list(ev.warnings) + normalization_warnings(prog.model, d_post)
                + prog.prior.warnings + d_prior.warnings)
    thr = k_threshold(x.shape[0])
    pc, prc = chains_of(lp, chains), chains_of(lp_prior, d_prior.n_chains)
    lc = chains_of(lik, chains)

    q_draws, log_q = cauchy_proposal(z, stream_rng(seed, Stream.PROPOSAL))
    with np.errstate(invalid="ignore", over="ignore"):
        q_lp = prog.log_prior(q_draws)  # once: a generated quantity on some routes
        q_prior = q_lp + prog.log_jacobian(q_draws)

    def prior_norm(a: float) -> tuple[float, float, float]:
        """c(α) − c(1) = log ∫p^α − log ∫p by importance sampling from a multivariate Cauchy,
        with its se and the k̂ of the ∫p^α weights."""
        with np.errstate(invalid="ignore"):
            lj = q_prior - q_lp  # log Jacobian
            lw_a = _zero_where_undefined(a * (q_prior - lj) + lj - log_q)
            lw_1 = _zero_where_undefined(q_prior - log_q)
        va, _, ka = log_mean_exp_se(lw_a[None, :])
        v1_, _, k1_ = log_mean_exp_se(lw_1[None, :])
        infl = np.exp(lw_a - va) - np.exp(lw_1 - v1_)
        return va - v1_, linearized_se(infl[None, :]), max(ka, k1_)

    def refit_log_z(a: float, b: float, i: int) -> tuple[float, float]:
        say(f"SMC on the power-scaled target (alpha={a:g}, beta={b:g})")
        # the draws are the unscaled posterior's, only a start for SMC's base: its check that
        # runs back from them match the forward runs assumes draws of the scaled target (on
        # normal_mean at beta = 0.5 it withheld the se and the mixed estimate was 0.037 off)
        num = lookup("smc").run(scaled_target(prog, a, b), d_post.unconstrained,
                                seed=stream_int_seed(seed, Stream.ROUTE, i),
                                options={"reverse": False})
        if b == 1.0 and a == 1.0:
            return num.log_z, num.log_z_se
        if a == 1.0:  # likelihood scaling: the prior's normalizer is unchanged
            return num.log_z, num.log_z_se
        # the prior's normalizer by SMC misses heavy tails: keep the Cauchy importance sampling
        v2, s2, _ = prior_norm(a)
        return num.log_z - v2, math.hypot(num.log_z_se, s2)

    def log_z_at(a: float, power: str, i: int) -> dict[str, Any]:
        if power == "prior":
            v1, s1, k1 = log_mean_exp_se((a - 1) * pc)
            v2, s2, k2 = prior_norm(a)
            k = max(k1, k2)
            value, se = ev.log_z + v1 - v2, math.sqrt(ev.log_z_se**2 + s1**2 + s2**2)
        else:
            v1, s1, k = log_mean_exp_se((a - 1) * lc)
            value, se = ev.log_z + v1, math.hypot(ev.log_z_se, s1)
        out = {"value": value, "se": se, "khat": k, "how": "reweighting"}
        if not k <= thr:
            if refit:
                args = (a, 1.0) if power == "prior" else (1.0, a)
                v, s = refit_log_z(*args, i)
                out.update(value=v, se=s, how="smc refit")
            else:
                out.update(value=math.nan, se=math.nan, how="refused")
                warnings.append(f"log Z at {power} power {a:g}: Pareto k-hat {k:.2f} > "
                                f"{thr:.2f}, reweighting unreliable; allow refit")
        return out

    d_prior_mean = mean_se(pc), mean_se(prc)
    log_z: dict[str, Scaled] = {
        "prior": Scaled(d_prior_mean[0][0] - d_prior_mean[1][0],
                        math.hypot(d_prior_mean[0][1], d_prior_mean[1][1])),
        "likelihood": Scaled(*mean_se(lc)),
    }
    base_elpd, base_se, base_k = _loo_scaled(ll, np.zeros_like(ll), chains)
    if base_k > thr:
        warnings.append(f"PSIS-LOO has Pareto k-hat up to {base_k:.2f} > {thr:.2f}: elpd_loo "
                        f"and its sensitivities are unreliable; see {Route('loo')}, which "
                        "fixes such observations")
    g_lik = lik[:, None] - ll
    elpd: dict[str, Scaled] = {
        "prior": Scaled(*_loo_derivative(ll, np.broadcast_to(lp[:, None], ll.shape), chains)),
        "likelihood": Scaled(*_loo_derivative(ll, g_lik, chains)),
    }
    for i, a in enumerate(scales):
        for j, power in enumerate(("prior", "likelihood")):
            log_z[power].at[_key(a)] = log_z_at(a, power, 2 * i + j)
            extra = (a - 1) * (np.broadcast_to(lp[:, None], ll.shape) if power == "prior"
                               else g_lik)
            v, s, k = _loo_scaled(ll, extra, chains)
            entry = {"value": v, "se": s, "khat": k, "how": "reweighting"}
            if power == "likelihood" and a <= 0.5:
                # ratios L^(β−1) / p(y_i|θ)^β: E_post of their square is ∫ p L^(2β−1) /
                # p(y_i|θ)^(2β), infinite for β <= 1/2 whenever p(y_i|θ) decays faster than
                # the prior (the benchmark measured 40% coverage of ±2 se even at k-hat <= 0.5)
                entry.update(value=math.nan, se=math.nan, how="refused")
                warnings.append(f"elpd_loo at likelihood power {a:g}: reweighting has infinite "
                                "variance for powers <= 1/2; fit the scaled program and run "
                                f"{Route('loo')}")
            elif k > min(thr, KHAT_HEAVY):  # the benchmark: 82% at ±2 se above
                entry.update(value=math.nan, se=math.nan, how="refused")
                warnings.append(f"elpd_loo at {power} power {a:g}: Pareto k-hat {k:.2f} > "
                                f"{min(thr, KHAT_HEAVY):.2f}; no reliable value by reweighting "
                                f"(fit the scaled program and run {Route('loo')})")
            elpd[power].at[_key(a)] = entry
    curves = _curves(ev.log_z, ev.log_z_se, pc, prior_norm, ll, lp, chains, thr)
    names = prog.model.param_names()
    theta = prog.model.constrain_many(x)[:, : len(names)]
    return SensitivityResult(
        model=prog.name, log_z=ev.log_z, log_z_se=ev.log_z_se, elpd_loo=base_elpd,
        elpd_loo_se=base_se, quantities={"log_z": log_z, "elpd_loo": elpd},
        params=_param_rows(names, theta, lp, lik), curves=curves, n_draws=x.shape[0],
        method=method, seconds=time.perf_counter() - t0, warnings=warnings,
        prior_route=prog.prior.route)


def _zero_where_undefined(lw: np.ndarray) -> np.ndarray:
    """Log weights with NaN / ±inf (a proposal draw so far out that the density under- or
    overflows, where it is zero) set to a value whose weight is 0 next to the others."""
    ok = np.isfinite(lw)
    if ok.all():
        return lw
    if not ok.any():
        raise InputError("the prior density is not finite anywhere near its draws")
    return np.where(ok, lw, lw[ok].min() - 1000.0)


def cauchy_proposal(z: np.ndarray, rng: np.random.Generator, n: int = N_PROPOSAL
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``n`` draws of a multivariate Cauchy centred at the median of prior draws ``z`` with
    twice their robust scales (IQR / 1.349) on the diagonal, and its log density at them: a
    proposal whose tails cover p^α for any α at which ∫ p^α is finite for t-like priors."""
    from scipy import stats

    loc = np.median(z, axis=0)
    q75, q25 = np.percentile(z, [75, 25], axis=0)
    scale = np.maximum(2 * (q75 - q25) / 1.349, 1e-6)
    dist = stats.multivariate_t(loc=loc, shape=np.diag(scale**2), df=1)
    draws = np.atleast_2d(dist.rvs(size=n, random_state=rng)).reshape(n, -1)
    return draws, np.atleast_1d(dist.logpdf(draws))


def _curves(log_z: float, log_z_se: float, pc: np.ndarray, prior_norm: Any, ll: np.ndarray,
            lp: np.ndarray, chains: int, thr: float, n: int = 13) -> dict[str, Any]:
    """log Z(α) and elpd_loo(α) with se on a grid of α in [0.5, 2] (NaN where k̂ > threshold),
    for the plot."""
    alphas = np.exp(np.linspace(math.log(0.5), math.log(2.0), n))
    out: dict[str, list[float]] = {k: [] for k in ("alpha", "log_z", "log_z_se", "elpd_loo",
                                                   "elpd_loo_se")}
    for a in alphas:
        v1, s1, k1 = log_mean_exp_se((a - 1) * pc)
        v2, s2, k2 = prior_norm(a)
        ok = max(k1, k2) <= thr or a == 1.0
        out["alpha"].append(float(a))
        out["log_z"].append(log_z + v1 - v2 if ok else math.nan)
        out["log_z_se"].append(math.sqrt(log_z_se**2 + s1**2 + s2**2) if ok else math.nan)
        v, s, k = _loo_scaled(ll, np.broadcast_to((a - 1) * lp[:, None], ll.shape), chains)
        ok = k <= min(thr, KHAT_HEAVY) or a == 1.0
        out["elpd_loo"].append(v if ok else math.nan)
        out["elpd_loo_se"].append(s if ok else math.nan)
    return out


__all__ = ["SCALES", "Scaled", "SensitivityResult", "scaled_target", "sensitivity",
           "value_se"]
