"""Exact leave-one-out predictive densities of posteriordb programs that are Gaussian given a
few hyperparameters, by quadrature (the references of ``benchmarks/corpus_coverage.py``).

Two shapes cover the programs used:

- **Gaussian linear models**: y_j ~ normal(x_j' beta, sqrt(v_j(h))) with beta ~ normal(m0,
  Lambda0^-1) (a zero row of the precision Lambda0 is a flat prior) and one hyperparameter h
  (the noise sd sigma, v_j = sigma^2; or eight schools' tau, v_j = s_j^2 + tau^2 once each
  school's theta_j is integrated out). Given h, the posterior of beta is Gaussian and the
  leave-one-out predictive is closed form through the leverage h_i = x_i' A^-1 x_i / v_i and
  the residual e_i at the full-data mean: y_i | y_-i, h ~ normal(y_i - e_i / (1 - h_i),
  sqrt(v_i / (1 - h_i))).
- **A Gaussian process** y ~ multi_normal(0, K(alpha, rho) + sigma I) with three
  hyperparameters: y_i | y_-i, h from the precision P = C^-1, mean y_i - (P y)_i / P_ii,
  variance 1 / P_ii.

Then p(y_i | y_-i) = E[1 / p(y_i | y_-i, h) | y]^-1 with the posterior of h on a trapezoid
grid in log h, wide enough that the dropped mass is below exp(-40). The quadrature error is
measured by doubling the grid (``quadrature_error``); there is no Monte Carlo error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

LOG2PI = float(np.log(2 * np.pi))


def _half_normal(s: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda h: -0.5 * (h / s) ** 2


def _half_cauchy(s: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda h: -np.log1p((h / s) ** 2)


def _flat(h: np.ndarray) -> np.ndarray:
    return np.zeros_like(h)


@dataclass
class LinearModel:
    """A Gaussian linear model given one hyperparameter ``h``: design ``X`` (N, D), outcome
    ``y``, prior mean ``m0`` and precision ``prec0`` of beta (zeros: flat), the noise
    variances ``variance(h)`` (N,) and the log prior of h (up to a constant)."""

    X: np.ndarray
    y: np.ndarray
    m0: np.ndarray
    prec0: np.ndarray
    variance: Callable[[float], np.ndarray]
    log_prior: Callable[[np.ndarray], np.ndarray]
    hyper: str = "sigma"

    def at(self, h: float) -> tuple[float, np.ndarray]:
        """log p(y | h) (up to a constant free of h) and log p(y_i | y_-i, h) for every i."""
        v = self.variance(h)
        Xw = self.X / v[:, None]
        A = self.X.T @ Xw + self.prec0
        b = Xw.T @ self.y + self.prec0 @ self.m0
        L = np.linalg.cholesky(A)
        beta = np.linalg.solve(A, b)
        Linv_x = np.linalg.solve(L, self.X.T)  # (D, N)
        lev = np.minimum(np.sum(Linv_x ** 2, axis=0) / v, 1 - 1e-15)  # 1 only where h is far out
        e = self.y - self.X @ beta
        log_marg = (-0.5 * np.sum(np.log(v)) - np.sum(np.log(np.diag(L)))
                    - 0.5 * (np.sum(self.y ** 2 / v) + self.m0 @ self.prec0 @ self.m0 - b @ beta))
        loo = -0.5 * (LOG2PI + np.log(v / (1 - lev))) - e ** 2 / (2 * v * (1 - lev))
        return float(log_marg), loo


def _grid_loo(log_w: np.ndarray, cond: np.ndarray) -> np.ndarray:
    """elpd_i = -log sum_g w_g exp(-cond_gi) + log sum_g w_g (w: the posterior of h on the
    grid, log, trapezoid weights included)."""
    return -logsumexp(log_w[:, None] - cond, axis=0) + logsumexp(log_w)


def _trapezoid(n: int) -> np.ndarray:
    w = np.ones(n)
    w[0] = w[-1] = 0.5
    return np.log(w)


def _range(logpost: Callable[[float], float], lo: float = -60.0, hi: float = 15.0,
           n: int = 151, drop: float = 40.0) -> tuple[float, float]:
    """The interval of log h where the log posterior is within ``drop`` of its maximum (a
    coarse grid, one step of margin each side)."""
    u = np.linspace(lo, hi, n)
    lp = np.array([logpost(x) for x in u])
    keep = np.nonzero(lp > np.nanmax(lp) - drop)[0]
    if keep[0] == 0 or keep[-1] == n - 1:
        raise ValueError("the posterior of the hyperparameter reaches the grid's end")
    return float(u[keep[0] - 1]), float(u[keep[-1] + 1])


def linear_loo(m: LinearModel, n_grid: int = 801) -> np.ndarray:
    """Exact log p(y_i | y_-i) of every observation of a :class:`LinearModel` (trapezoid rule
    over ``n_grid`` values of log h)."""
    def logpost(u: float) -> float:
        h = float(np.exp(u))
        return m.at(h)[0] + float(m.log_prior(np.array(h))) + u

    lo, hi = _range(logpost)
    u = np.linspace(lo, hi, n_grid)
    rows = [m.at(float(np.exp(x))) for x in u]
    log_w = (np.array([r[0] for r in rows]) + m.log_prior(np.exp(u)) + u + _trapezoid(n_grid))
    return _grid_loo(log_w, np.array([r[1] for r in rows]))


@dataclass
class GaussianProcess:
    """y ~ multi_normal(0, alpha^2 exp(-(x - x')^2 / (2 rho^2)) + sigma I) with rho ~
    gamma(25, 4), alpha ~ normal+(0, 2), sigma ~ normal+(0, 1) (posteriordb's gp_regr)."""

    x: np.ndarray
    y: np.ndarray

    def log_prior(self, rho: np.ndarray, alpha: np.ndarray, sigma: np.ndarray) -> np.ndarray:
        return 24 * np.log(rho) - 4 * rho - 0.5 * (alpha / 2) ** 2 - 0.5 * sigma ** 2

    def at(self, rho: np.ndarray, alpha: np.ndarray, sigma: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
        """Batched log p(y | h) and log p(y_i | y_-i, h) (G, N) for G hyperparameter points."""
        d2 = (self.x[:, None] - self.x[None, :]) ** 2
        C = (alpha[:, None, None] ** 2 * np.exp(-d2[None] / (2 * rho[:, None, None] ** 2))
             + sigma[:, None, None] * np.eye(self.x.size)[None])
        L = np.linalg.cholesky(C)
        P = np.linalg.inv(C)
        z = np.linalg.solve(L, np.broadcast_to(self.y, (rho.size, self.y.size))[..., None])[..., 0]
        n = self.y.size
        log_marg = (-0.5 * n * LOG2PI - np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
                    - 0.5 * np.sum(z ** 2, axis=1))
        pii = np.diagonal(P, axis1=1, axis2=2)
        py = P @ self.y
        cond = -0.5 * (LOG2PI - np.log(pii)) - py ** 2 / (2 * pii)
        return log_marg, cond


def gp_loo(m: GaussianProcess, n_grid: int = 48, chunk: int = 20000) -> np.ndarray:
    """Exact log p(y_i | y_-i) of :class:`GaussianProcess` (a product trapezoid rule over
    ``n_grid`` values per log hyperparameter, on the box where the coarse posterior is within
    30 of its maximum)."""
    def post(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h = np.exp(u)
        outs = [m.at(*h[s:s + chunk].T) for s in range(0, h.shape[0], chunk)]
        lm = np.concatenate([o[0] for o in outs])
        return lm + m.log_prior(*h.T) + u.sum(axis=1), np.concatenate([o[1] for o in outs])

    coarse = np.linspace(-20, 6, 53)
    U = np.stack(np.meshgrid(coarse, coarse, coarse, indexing="ij"), -1).reshape(-1, 3)
    lp, _ = post(U)
    keep = U[lp > lp.max() - 30]
    step = coarse[1] - coarse[0]
    lo, hi = keep.min(axis=0) - step, keep.max(axis=0) + step
    if np.any(lo <= coarse[0]) or np.any(hi >= coarse[-1]):
        raise ValueError("the GP posterior reaches the coarse grid's end")
    axes = [np.linspace(lo[k], hi[k], n_grid) for k in range(3)]
    U = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    lp, cond = post(U)
    t = _trapezoid(n_grid)
    log_w = lp + (t[:, None, None] + t[None, :, None] + t[None, None, :]).ravel()
    return _grid_loo(log_w, cond)


# ---------------------------------------------------------------------------------------------
# the programs: each builds its exact model from the posterior's data, and its log joint
# density (the Stan program's, up to a constant) from its constrained parameters


def _col(d: dict[str, Any], k: str) -> np.ndarray:
    return np.asarray(d[k], dtype=float)


def _lm(X: np.ndarray, y: np.ndarray, prior_sd: np.ndarray | float | None,
        m0: np.ndarray | None = None,
        sigma_prior: Callable[[np.ndarray], np.ndarray] = _flat) -> LinearModel:
    D = X.shape[1]
    prec = (np.zeros((D, D)) if prior_sd is None
            else np.diag(1.0 / np.broadcast_to(np.asarray(prior_sd, float), (D,)) ** 2))
    return LinearModel(X, y, np.zeros(D) if m0 is None else m0, prec,
                       lambda s: np.full(y.size, s ** 2), sigma_prior)


def _kilpisjarvi(d: dict[str, Any]) -> LinearModel:
    x = _col(d, "x")
    return _lm(np.column_stack([np.ones_like(x), x]), _col(d, "y"),
               np.array([d["psalpha"], d["psbeta"]]), np.array([d["pmualpha"], d["pmubeta"]]))


def _mesquite(d: dict[str, Any]) -> LinearModel:
    cols = [np.log(_col(d, k)) for k in ("diam1", "diam2", "canopy_height", "total_height",
                                          "density")]
    X = np.column_stack([np.ones(int(d["N"]))] + cols + [_col(d, "group")])
    return _lm(X, np.log(_col(d, "weight")), None)


def _blr(d: dict[str, Any]) -> LinearModel:
    return _lm(np.asarray(d["X"], float), _col(d, "y"), 10.0, sigma_prior=_half_normal(10.0))


def _radon_county(d: dict[str, Any]) -> LinearModel:
    n, j = int(d["N"]), int(d["J"])
    onehot = np.zeros((n, j))
    onehot[np.arange(n), np.asarray(d["county_idx"]) - 1] = 1.0
    X = np.column_stack([onehot, _col(d, "floor_measure")])
    return _lm(X, _col(d, "log_radon"), 10.0, sigma_prior=_half_normal(1.0))


def _kid_interaction(d: dict[str, Any]) -> LinearModel:
    hs, iq = _col(d, "mom_hs"), _col(d, "mom_iq")
    X = np.column_stack([np.ones_like(hs), hs, iq, hs * iq])
    return _lm(X, _col(d, "kid_score"), None, sigma_prior=_half_cauchy(2.5))


def _kid_work(d: dict[str, Any]) -> LinearModel:
    w = np.asarray(d["mom_work"])
    X = np.column_stack([np.ones(w.size)] + [(w == k).astype(float) for k in (2, 3, 4)])
    return _lm(X, _col(d, "kid_score"), None)


def _sesame(d: dict[str, Any]) -> LinearModel:
    e = _col(d, "encouraged")
    return _lm(np.column_stack([np.ones_like(e), e]), _col(d, "watched"), None)


def _earn_height(d: dict[str, Any]) -> LinearModel:
    h = _col(d, "height")
    return _lm(np.column_stack([np.ones_like(h), h]), _col(d, "earn"), None)


def _eight_schools(d: dict[str, Any]) -> LinearModel:
    s2 = _col(d, "sigma") ** 2
    y = _col(d, "y")
    return LinearModel(np.ones((y.size, 1)), y, np.zeros(1), np.array([[1 / 25.0]]),
                       lambda tau: s2 + tau ** 2, _half_cauchy(5.0), hyper="tau")


def _gp(d: dict[str, Any]) -> GaussianProcess:
    return GaussianProcess(_col(d, "x"), _col(d, "y"))


def _scalar(v: Any) -> float:
    return float(np.asarray(v, dtype=float).reshape(-1)[0])


def _norm(y: np.ndarray, mu: Any, sd: Any) -> float:
    return float(np.sum(-0.5 * ((y - mu) / sd) ** 2 - np.log(sd)))


def _lm_joint(m: LinearModel, beta: np.ndarray, sigma: float) -> float:
    """The log joint of a linear model with noise sd sigma (constants dropped)."""
    r = beta - m.m0
    return (_norm(m.y, m.X @ beta, sigma) - 0.5 * r @ m.prec0 @ r
            + float(m.log_prior(np.array(sigma))))


def _joint_named(build: Callable[[dict[str, Any]], LinearModel], beta_names: list[str],
                 sigma_name: str) -> Callable[[dict[str, Any], dict[str, np.ndarray]], float]:
    def joint(d: dict[str, Any], p: dict[str, np.ndarray]) -> float:
        beta = np.concatenate([np.atleast_1d(p[k]) for k in beta_names])
        return _lm_joint(build(d), beta, _scalar(p[sigma_name]))
    return joint


def _eight_joint(d: dict[str, Any], p: dict[str, np.ndarray]) -> float:
    y, s = _col(d, "y"), _col(d, "sigma")
    tau, mu, theta = _scalar(p["tau"]), _scalar(p["mu"]), np.asarray(p["theta"])
    return (_norm(y, theta, s) + _norm(theta, mu, tau) - 0.5 * (mu / 5) ** 2
            - float(np.log1p((tau / 5) ** 2)))


def _gp_joint(d: dict[str, Any], p: dict[str, np.ndarray]) -> float:
    m = _gp(d)
    rho, alpha, sigma = (np.atleast_1d(_scalar(p[k])) for k in ("rho", "alpha", "sigma"))
    d2 = (m.x[:, None] - m.x[None, :]) ** 2
    C = alpha[0] ** 2 * np.exp(-d2 / (2 * rho[0] ** 2)) + sigma[0] * np.eye(m.x.size)
    _, logdet = np.linalg.slogdet(C)
    quad = m.y @ np.linalg.solve(C, m.y)
    return float(-0.5 * logdet - 0.5 * quad + m.log_prior(rho, alpha, sigma)[0])


@dataclass(frozen=True)
class Program:
    """A corpus posterior with an exact LOO: its folder, how the reference is computed, the
    exact model and the Stan program's log joint (up to a constant) from named parameters."""

    folder: str
    how: str
    build: Callable[[dict[str, Any]], Any]
    joint: Callable[[dict[str, Any], dict[str, np.ndarray]], float]

    def exact_loo(self, data: dict[str, Any], fine: bool = False) -> np.ndarray:
        """log p(y_i | y_-i) of every observation (``fine``: the doubled grid)."""
        m = self.build(data)
        if isinstance(m, GaussianProcess):
            return gp_loo(m, n_grid=96 if fine else 64)
        return linear_loo(m, n_grid=401 if fine else 201)


_LIN = ("quadrature: beta integrated in closed form given {h} (Gaussian), then the trapezoid "
        "rule over log {h}")
PROGRAMS: dict[str, Program] = {p.folder: p for p in [
    Program("eight_schools-eight_schools_centered",
            "quadrature: theta and mu integrated in closed form given tau, then the trapezoid "
            "rule over log tau", _eight_schools, _eight_joint),
    Program("kilpisjarvi_mod-kilpisjarvi", _LIN.format(h="sigma"), _kilpisjarvi,
            _joint_named(_kilpisjarvi, ["alpha", "beta"], "sigma")),
    Program("mesquite-logmesquite", _LIN.format(h="sigma"), _mesquite,
            _joint_named(_mesquite, ["beta"], "sigma")),
    Program("sblri-blr", _LIN.format(h="sigma"), _blr, _joint_named(_blr, ["beta"], "sigma")),
    Program("radon_mn-radon_county_intercept", _LIN.format(h="sigma_y"), _radon_county,
            _joint_named(_radon_county, ["alpha", "beta"], "sigma_y")),
    Program("kidiq-kidscore_interaction", _LIN.format(h="sigma"), _kid_interaction,
            _joint_named(_kid_interaction, ["beta"], "sigma")),
    Program("kidiq_with_mom_work-kidscore_mom_work", _LIN.format(h="sigma"), _kid_work,
            _joint_named(_kid_work, ["beta"], "sigma")),
    Program("sesame_data-sesame_one_pred_a", _LIN.format(h="sigma"), _sesame,
            _joint_named(_sesame, ["beta"], "sigma")),
    Program("earnings-earn_height", _LIN.format(h="sigma"), _earn_height,
            _joint_named(_earn_height, ["beta"], "sigma")),
    Program("gp_pois_regr-gp_regr",
            "quadrature: the Gaussian likelihood's leave-one-out conditional in closed form "
            "given (rho, alpha, sigma), then a product trapezoid rule over their logs",
            _gp, _gp_joint),
]}
