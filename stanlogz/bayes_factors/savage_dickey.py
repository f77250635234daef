"""Savage–Dickey density ratio: log BF₀₁ of a point null φ = φ₀ nested in a program.

log BF₀₁ = log p(φ₀ | y) − log p(φ₀), the posterior and prior densities of the tested
parameter at the null value (Dickey 1971; valid when the null's prior on the other
parameters ψ is the full prior's conditional p(ψ | φ₀)). Each density is a Rao–Blackwellized
average over draws of ψ of the conditional density p(φ₀ | ψ, ·), normalized by quadrature over
φ on the unconstrained scale: the posterior's from NUTS on the program, the prior's from the
prior draws of :mod:`.prior_density` (NUTS on the zero-observation instance, else independence
Metropolis–Hastings on the prior density from ``lprior``, ``log_lik`` or one-observation
instances). The Jacobian of φ's transform at φ₀ is the same in both and
cancels. The se combines the Monte Carlo se of both averages (delta method with the MCMC ESS)
and the quadrature error (trapezoid on the grid against every other point).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .._util.gpd import KHAT_HEAVY
from .._util.seeds import Stream, stream, stream_int_seed
from ..draws import sample
from ..errors import EstimationError, InputError, option
from ..estimators import lookup
from ..stan.program import ProgramLike, StanProgram
from ..stan.settings import NutsArgs
from .common import chains_of, khat, linearized_se, posterior_and_prior

#: Most draws whose conditional density is computed (evenly thinned).
MAX_DRAWS = 1000


@dataclass
class DensityAt:
    """log density of the tested parameter at φ₀ (unconstrained scale) with its se."""

    log_density: float
    se: float
    quadrature_error: float
    khat: float
    n_draws: int


@dataclass
class SavageDickeyResult:
    """log BF₀₁ by the Savage–Dickey density ratio (see :func:`savage_dickey`).

    Attributes
    ----------
    model : str
        The full program's name.
    at : dict
        The null value.
    log_bf01, se : float
        log BF₀₁ and its standard error (NaN where none is trustworthy).
    posterior, prior : DensityAt
        The log densities at the null value.
    evidence_check : dict or None
        log BF₀₁ by the evidence route, with ``null``.
    warnings : list of str
        What to do about problems found.
    """

    model: str
    at: dict[str, float]
    log_bf01: float
    se: float
    posterior: DensityAt
    prior: DensityAt
    evidence_check: dict[str, Any] | None = None
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    prior_route: str = ""

    def table(self) -> list[list[Any]]:
        rows = [["log BF01 (Savage-Dickey)", self.log_bf01, self.se],
                ["  log p(phi0 | y), posterior", self.posterior.log_density,
                 self.posterior.se],
                ["  log p(phi0), prior", self.prior.log_density, self.prior.se]]
        if self.evidence_check:
            rows.append(["log BF01 (evidence route)", self.evidence_check["log_bf01"],
                         self.evidence_check["se"]])
        return rows

    def to_dict(self) -> dict[str, Any]:
        dens = lambda d: {"log_density": d.log_density, "se": d.se,  # noqa: E731
                          "quadrature_error": d.quadrature_error, "khat": d.khat,
                          "n_draws": d.n_draws}
        return {"model": self.model, "at": dict(self.at),
                "log_bf01": {"value": self.log_bf01, "se": self.se},
                "posterior": dens(self.posterior), "prior": dens(self.prior),
                "evidence_check": self.evidence_check, "seconds": self.seconds,
                "prior_route": self.prior_route,
                "warnings": list(self.warnings)}


def parse_at(text: str) -> dict[str, float]:
    """``"mu=0,beta[2]=0.5"`` -> ``{"mu": 0.0, "beta.2": 0.5}``."""
    out: dict[str, float] = {}
    for item in (p.strip() for p in text.split(",")):
        name, sep, value = item.partition("=")
        name = re.sub(r"\[(.*?)\]", lambda m: "." + m.group(1).replace(",", "."), name.strip())
        try:
            out[name] = float(value)
        except ValueError:
            raise InputError(f"{option('at')} {item!r} is not NAME=VALUE with a number VALUE"
                             ) from None
        if not sep or not name:
            raise InputError(f"{option('at')} {item!r} is not NAME=VALUE")
    if not out:
        raise InputError(f"{option('at')} is empty")
    return out


def _coordinate(model: StanProgram, x: np.ndarray, name: str, value: float) -> tuple[int, float]:
    """The unconstrained coordinate of the scalar parameter ``name`` and its value at
    ``value`` (InputError unless one coordinate moves, the same way at two draws)."""
    names = model.param_names()
    if name not in names:
        raise InputError(f"{option('at')} {name}: no parameter named {name} (parameters: "
                         f"{', '.join(names[:10])})")
    j = names.index(name)
    found = []
    for row in x[[0, -1]]:
        theta = model.constrain(row)
        theta[j] = value
        try:
            u = model.unconstrain(theta)
        except InputError as exc:
            raise InputError(f"{option('at')} {name}={value:g} is outside {name}'s support ({exc})"
                             ) from None
        moved = np.flatnonzero(~np.isclose(u, row, rtol=1e-12, atol=1e-12))
        if moved.size > 1 or not np.all(np.isfinite(u)):
            null = option("null", "NULL.stan")
            raise InputError(f"{option('at')} {name}: fixing {name} moves {moved.size} "
                             "unconstrained coordinates (not an elementwise transform) or lies "
                             f"on its bound; use the evidence route ({null} with the nested "
                             "program)", routes=null)
        k = int(moved[0]) if moved.size else int(np.argmin(np.abs(u - row)))
        found.append((k, float(u[k])))
    if found[0][0] != found[1][0] or not math.isclose(found[0][1], found[1][1], rel_tol=1e-9,
                                                      abs_tol=1e-12):
        null = option("null", "NULL.stan")
        raise InputError(f"{option('at')} {name}: its unconstrained value depends on other "
                         f"parameters (a bound that depends on a parameter); use {null} instead",
                         routes=null)
    return found[0]


def conditional_log_density(model: StanProgram, x: np.ndarray, k: int, u0: float, *,
                            n_grid: int = 801) -> tuple[np.ndarray, float]:
    """log p(u0 | x_{−k}) at each row of ``x`` under ``model``'s density on the unconstrained
    scale, with quadrature over coordinate k, and the largest absolute quadrature error.

    The quadrature is the trapezoid rule after u = c + s·tan(t), t in (−π/2, π/2) (c, s: the
    median and a robust scale of coordinate k over the draws), which maps polynomial tails to
    a bounded integrand; its error is estimated against the rule on every other node.
    """
    uk = x[:, k]
    c = float(np.median(uk))
    q75, q25 = np.percentile(uk, [75, 25])
    s = max(float(q75 - q25) / 1.349, float(uk.std()) / 10, 1e-8)
    t = np.linspace(-math.pi / 2, math.pi / 2, n_grid + 1 + n_grid % 2)[1:-1]
    grid = c + s * np.tan(t)
    log_jac = math.log(s) - 2 * np.log(np.cos(t))
    pts = np.repeat(x, grid.size + 1, axis=0)
    pts[:, k] = np.tile(np.append(grid, u0), x.shape[0])
    lp = model.log_density_many(pts).reshape(x.shape[0], grid.size + 1)
    lp = np.where(np.isfinite(lp), lp, -np.inf)
    lg, at = lp[:, :-1] + log_jac, lp[:, -1]
    edge = np.maximum(lg[:, 0], lg[:, -1]) - lg.max(axis=1)
    if not np.all(edge < -2):  # no decay at all; slow decay shows in the error estimate
        raise EstimationError("the conditional density of the tested parameter decays too "
                              "slowly for quadrature (improper or very heavy-tailed)")
    h = t[1] - t[0]
    full = logsumexp(lg, axis=1) + math.log(h)
    half = logsumexp(lg[:, 1::2], axis=1) + math.log(2 * h)
    err = max(float(np.max(np.abs(half - full))), 1e-12)
    return at - full, err


def _density_at(model: StanProgram, d: Any, k: int, u0: float, n_grid: int) -> DensityAt:
    x = d.flat_unconstrained()
    step = max(1, x.shape[0] // MAX_DRAWS)
    chains = d.n_chains
    per = d.n_draws - d.n_draws % step
    x = d.unconstrained[:, :per:step].reshape(-1, x.shape[1])
    lc, err = conditional_log_density(model, x, k, u0, n_grid=n_grid)
    value = float(logsumexp(lc) - math.log(lc.size))
    mc = linearized_se(chains_of(np.exp(lc - value), chains))
    return DensityAt(value, math.hypot(mc, err), err, khat(lc), lc.size)


def savage_dickey(
    model: ProgramLike,
    data: Any = None,
    *,
    at: Mapping[str, float] | str,
    settings: NutsArgs | None = None,
    null: Any = None,
    method: str = "gbs",
    obs: str | None = None,
    n_grid: int = 801,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
    **nuts: Any,
) -> SavageDickeyResult:
    """log BF₀₁ for a point null nested in a Stan program, by the Savage–Dickey density ratio.

    log BF₀₁ = log p(θ₀ | y) − log p(θ₀), each density at the null value from the posterior
    and prior draws by quadrature over the conditional densities, with a standard error (or
    none, with a warning, where the conditional densities are too heavy-tailed over the
    draws to give one).

    Parameters
    ----------
    model : str, Path or StanModel
        The full program.
    data : dict or str, optional
        Its data.
    at : dict or str
        The null value of one parameter: ``{"mu": 0}`` or ``"mu=0"``.
    settings : NutsArgs, optional
        Settings of the posterior and prior NUTS runs; the keywords ``chains``, ``warmup``,
        ``draws`` (per chain), ``adapt_delta``, ``max_treedepth`` replace single fields.
    null : str, optional
        The nested program (a ``.stan`` path reading the same data): log BF₀₁ is then also
        computed by the evidence route (log Z of both, with ``method``) and compared in
        ``evidence_check``.
    method : str, default "gbs"
        The evidence estimator of the evidence route.
    obs : str, optional
        The observation count variable (for the prior program; inferred when omitted).
    n_grid : int, default 801
        Quadrature points (at least 101).
    seed : int, optional
        Random seed.
    progress : callable, optional
        Called with one line of text per step.
    **nuts
        Single fields of ``settings``, by name.

    Returns
    -------
    SavageDickeyResult
        ``log_bf01`` with ``se``, the posterior and prior densities at the null, the
        ``evidence_check`` (with ``null``) and ``warnings``.

    Raises
    ------
    InputError
        A null on more than one parameter (give the nested program as ``null``), a parameter
        the program does not have, or ``n_grid`` below 101.

    See Also
    --------
    stanlogz.compare : the evidence route for any pair of programs.
    stanlogz.sensitivity : how the Bayes factor moves with the prior.

    Examples
    --------
    The executed tutorial :doc:`/tutorials/defensible_bayes_factor` tests ``beta = 0`` in a
    regression, against the evidence route; the ``savage-dickey`` command is the same from a
    shell.
    """
    import time

    t0 = time.perf_counter()
    at = parse_at(at) if isinstance(at, str) else {str(k): float(v) for k, v in at.items()}
    if len(at) != 1:
        null = option("null", "NULL.stan")
        raise InputError(f"Savage-Dickey here tests one parameter at a time, got {len(at)}; "
                         f"for a joint null give the nested program with {null} (evidence "
                         "route)", routes=null)
    if int(n_grid) < 101:
        raise InputError(f"n_grid must be >= 101, got {n_grid}")
    settings = NutsArgs.of(settings, **nuts)
    prog, d_post, d_prior = posterior_and_prior(model, data, obs, settings, seed=seed,
                                                progress=progress)
    say = progress or (lambda _m: None)
    name, value = next(iter(at.items()))
    k, u0 = _coordinate(prog.model, d_post.flat_unconstrained(), name, value)
    say(f"conditional densities of {name} at {value:g} by quadrature")
    post = _density_at(prog.model, d_post, k, u0, int(n_grid))
    prior = _density_at(prog.prior, d_prior, k, u0, int(n_grid))
    log_bf, se = post.log_density - prior.log_density, math.hypot(post.se, prior.se)
    warnings = prog.prior.warnings + d_prior.warnings
    # The densities are averaged plainly (not Pareto-smoothed): above k̂ 0.5 their variance is
    # infinite and the se fails (bf_regression at a far null, beta = 1.2: 0.67 of 9 values
    # within 2 se in the band 0.5-0.7; benchmarks/bayes_factor_tools.py --nulls)
    for what, dd in (("posterior", post), ("prior", prior)):
        if dd.khat > KHAT_HEAVY:
            warnings.append(f"the {what} conditional densities at {name}={value:g} are heavy-"
                            f"tailed over the draws (k-hat {dd.khat:.2f}): the se is not "
                            f"trustworthy; use the evidence route ({option('null', 'NULL.stan')})")
            se = math.nan
    check = None
    if null is not None:
        check = _evidence_route(prog, null, settings, method, seed, progress, log_bf, se)
        if check["z"] is not None and abs(check["z"]) > 3:
            warnings.append(f"Savage-Dickey and the evidence route differ by "
                            f"{abs(check['z']):.1f} se: is the null's prior on the other "
                            "parameters the full prior's conditional at the null?")
    return SavageDickeyResult(prog.name, at, log_bf, se, post, prior, check,
                              time.perf_counter() - t0, warnings, prog.prior.route)


def _evidence_route(prog: Any, null: Any, settings: NutsArgs, method: str, seed: int | None,
                    progress: Any, log_bf: float, se: float) -> dict[str, Any]:
    """log Z(null) − log Z(full) by ``method`` on NUTS draws of each, compared to ``log_bf``."""
    from ..stan.load import load_model

    out = []
    for i, m in enumerate((null, prog.model)):
        route = stream(seed, Stream.ROUTE, i)
        mm = load_model(m, prog.data, seed=stream_int_seed(route, Stream.MODEL), progress=progress)
        if mm.dim == 0:
            out.append((float(mm.log_density(np.zeros(0))), 0.0))
            continue
        d = sample(mm, settings, seed=stream_int_seed(route, Stream.NUTS), progress=progress)
        r = lookup(method).run(mm, d.unconstrained, seed=stream_int_seed(route, Stream.ESTIMATOR))
        out.append((r.log_z, r.log_z_se))
    value = out[0][0] - out[1][0]
    ese = math.hypot(out[0][1], out[1][1])
    tot = math.hypot(ese, se)
    z = (log_bf - value) / tot if tot > 0 and math.isfinite(tot) else None
    return {"log_bf01": value, "se": ese, "z": z, "method": method}
