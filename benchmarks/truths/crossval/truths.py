"""Exact held-out predictive densities of the shipped cross-validation examples (for tests,
benchmarks and the examples' stated values).

* eight schools (``eight_schools.stan``): log Z of any subset of schools as a 2-D integral over
  (μ, τ) — the μ-integral in closed form (y_S | τ is Gaussian), τ by adaptive quadrature;
  :func:`eight_schools_grid_log_z` does both by brute-force 2-D quadrature as a check;
* Gaussian models (``hier_regression.stan``): conditionals of a multivariate normal;
* the conjugate AR(p) model (``ar_nig.stan``): the normal-inverse-gamma evidence in closed form.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import integrate, special, stats
from scipy.optimize import minimize_scalar as optimize_scalar


def _schools_log_lik_tau(y: np.ndarray, sigma: np.ndarray, tau: float, mu_sd: float) -> float:
    """log p(y | τ) with μ ~ normal(0, mu_sd) integrated out: y ~ MVN(0, diag(σ²+τ²) + s²11')."""
    v = sigma**2 + tau**2
    a = 1.0 + mu_sd**2 * np.sum(1.0 / v)
    b = np.sum(y / v)
    logdet = np.sum(np.log(v)) + math.log(a)
    quad = np.sum(y**2 / v) - mu_sd**2 * b**2 / a
    return float(-0.5 * (y.size * math.log(2 * math.pi) + logdet + quad))


def eight_schools_log_z(y: Sequence[float], sigma: Sequence[float], mu_sd: float = 5.0,
                        tau_sd: float = 5.0) -> float:
    """log Z of the eight-schools program on schools ``y`` (any subset), half-normal(0, tau_sd)
    prior on τ; the non-centered latents integrate to the marginal model exactly."""
    y, s = np.asarray(y, dtype=float), np.asarray(sigma, dtype=float)
    ref = _schools_log_lik_tau(y, s, tau_sd, mu_sd)

    def f(tau: float) -> float:
        prior = 2.0 * stats.norm.pdf(tau, 0.0, tau_sd)
        return prior * math.exp(_schools_log_lik_tau(y, s, tau, mu_sd) - ref)

    val = 0.0
    for lo, hi in ((0.0, 5.0), (5.0, 15.0), (15.0, 30.0), (30.0, 80.0)):
        val += integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)[0]
    return ref + math.log(val)


def eight_schools_grid_log_z(y: Sequence[float], sigma: Sequence[float], mu_sd: float = 5.0,
                             tau_sd: float = 5.0, n: int = 801) -> float:
    """The same log Z by brute-force 2-D Gauss–Legendre quadrature over (μ, τ)."""
    y, s = np.asarray(y, dtype=float), np.asarray(sigma, dtype=float)
    xg, wg = np.polynomial.legendre.leggauss(n)
    mu = 40.0 * xg + 5.0  # [-35, 45]: beyond 7 prior sds
    wm = 40.0 * wg
    tau = 20.0 * (xg + 1.0)  # [0, 40]: beyond 8 prior sds
    wt = 20.0 * wg
    m, t = np.meshgrid(mu, tau, indexing="ij")
    sd = np.sqrt(s[:, None, None] ** 2 + t[None] ** 2)
    lp = (stats.norm.logpdf(m, 0, mu_sd) + math.log(2) + stats.norm.logpdf(t, 0, tau_sd)
          + np.sum(stats.norm.logpdf(y[:, None, None], m[None], sd), axis=0))
    return float(special.logsumexp(lp + np.log(wm)[:, None] + np.log(wt)[None, :]))


def eight_schools_loo(data: Mapping[str, Any]) -> np.ndarray:
    """log p(y_j | y_-j) for every school of eight-schools-style ``data`` (J, y, sigma)."""
    y, s = np.asarray(data["y"], dtype=float), np.asarray(data["sigma"], dtype=float)
    full = eight_schools_log_z(y, s)
    return np.array([full - eight_schools_log_z(np.delete(y, j), np.delete(s, j))
                     for j in range(y.size)])


def gaussian_heldout(y: np.ndarray, cov: np.ndarray, held_out: Sequence[int],
                     train: Sequence[int] | None = None) -> float:
    """log p(y_V | y_T) for y ~ MVN(0, cov): V = ``held_out``, T = ``train`` (default: the
    rest)."""
    y = np.asarray(y, dtype=float)
    v = np.asarray(held_out, dtype=int)
    t = np.setdiff1d(np.arange(y.size), v) if train is None else np.asarray(train, dtype=int)
    both = np.concatenate([t, v])
    whole = stats.multivariate_normal(np.zeros(both.size), cov[np.ix_(both, both)]).logpdf(
        y[both])
    if t.size == 0:
        return float(whole)
    part = stats.multivariate_normal(np.zeros(t.size), cov[np.ix_(t, t)]).logpdf(y[t])
    return float(whole - part)


def hier_regression_cov(data: Mapping[str, Any]) -> np.ndarray:
    """Marginal covariance of y in ``hier_regression.stan``:
    σ² I + τ² G G' + s² (1 1' + x x')."""
    g = np.asarray(data["g"], dtype=int) - 1
    x = np.asarray(data["x"], dtype=float)
    same = (g[:, None] == g[None, :]).astype(float)
    return (data["sigma"] ** 2 * np.eye(x.size) + data["tau"] ** 2 * same
            + data["s_ab"] ** 2 * (1.0 + np.outer(x, x)))


def ar_nig_log_evidence(y: Sequence[float], p: int, b_scale: float, a0: float, b0: float
                        ) -> float:
    """log p(y[p+1:] | y[:p]) of ``ar_nig.stan``: y = X b + e, e ~ N(0, σ² I),
    b | σ² ~ N(0, σ² b_scale² I), σ² ~ inv-gamma(a0, b0); marginally a multivariate t."""
    y = np.asarray(y, dtype=float)
    n = y.size - p
    if n <= 0:
        return 0.0
    x = np.column_stack([np.ones(n)] + [y[k:k + n] for k in range(p)])
    cov = np.eye(n) + b_scale**2 * x @ x.T
    chol = np.linalg.cholesky(cov)
    r = np.linalg.solve(chol, y[p:])
    logdet = 2.0 * np.sum(np.log(np.diag(chol)))
    return float(special.gammaln(a0 + n / 2) - special.gammaln(a0) + a0 * math.log(b0)
                 - 0.5 * n * math.log(2 * math.pi) - 0.5 * logdet
                 - (a0 + n / 2) * math.log(b0 + 0.5 * r @ r))


def ar_nig_lfo(data: Mapping[str, Any], min_train: int, ahead: int = 1) -> np.ndarray:
    """Exact log p(y[t+1:t+M] | y[1:t]) for t = ``min_train`` .. N − M of ``ar_nig`` data."""
    y = np.asarray(data["y"], dtype=float)
    args = (int(data["P"]), float(data["b_scale"]), float(data["a0"]), float(data["b0"]))
    return np.array([ar_nig_log_evidence(y[:t + ahead], *args) - ar_nig_log_evidence(y[:t], *args)
                     for t in range(min_train, y.size - ahead + 1)])


def local_level_cov(data: Mapping[str, Any]) -> np.ndarray:
    """Marginal covariance of y in ``local_level.stan``: σ² I + s0² + s² (min(i, j) − 1)."""
    n = int(data["N"])
    idx = np.arange(1, n + 1)
    return (data["sigma"] ** 2 * np.eye(n) + data["s0"] ** 2
            + data["s"] ** 2 * (np.minimum.outer(idx, idx) - 1))


def normal_mean_loo(data: Mapping[str, Any]) -> np.ndarray:
    """Exact log p(y_i | y_-i) of ``normal_mean.stan`` (y_i ~ N(mu, sigma), mu ~ N(0, prior_sd),
    sigma known): the conjugate posterior of mu without y_i, predicted."""
    y, s, t = np.asarray(data["y"], dtype=float), float(data["sigma"]), float(data["prior_sd"])
    out = []
    for i in range(y.size):
        rest = np.delete(y, i)
        v = 1 / (1 / t**2 + rest.size / s**2)
        out.append(stats.norm.logpdf(y[i], v * rest.sum() / s**2, math.sqrt(s**2 + v)))
    return np.array(out)


def normal_mean_kfold_data(rng: np.random.Generator, n: int, k: int,
                           noise: Callable[[np.random.Generator, int], np.ndarray],
                           noise_var: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Data y = μ + ``noise(rng, n)`` (μ ~ N(0, 1) drawn first; ``noise_var`` the noise
    variance), a random
    K-fold split, the exact K-fold log p(y_i | y_T(i)) of y_i ~ N(μ, 1), μ ~ N(0, 1), and the
    truth: the full-data posterior predictive's expected log score on n new observations
    (closed form: the log density is quadratic in ỹ). Returns (values, folds, truth)."""
    mu = rng.normal()
    y = mu + noise(rng, n)
    fold = np.empty(n, dtype=int)
    fold[rng.permutation(n)] = np.arange(n) % k
    e = np.empty(n)
    for j in range(k):
        tr = fold != j
        v = 1 / (1 + tr.sum())
        e[~tr] = stats.norm.logpdf(y[~tr], v * y[tr].sum(), math.sqrt(1 + v))
    v = 1 / (1 + n)
    s2 = 1 + v
    truth = n * (-0.5 * math.log(2 * math.pi * s2) - (noise_var + (mu - v * y.sum()) ** 2)
                 / (2 * s2))
    return e, fold, truth


def regression_log_z(x: Sequence[float], y: Sequence[float]) -> float:
    """log Z of ``regression.stan`` (alpha ~ N(0, 2²), beta ~ N(0, 1), sigma ~ half-N(0, 1),
    y ~ N(alpha + beta x, sigma)): given sigma the coefficients integrate out, y | sigma ~
    N(0, sigma² I + X S X') with X = [1, x] and S = diag(4, 1), whose density needs only X'X,
    X'y and y'y (Woodbury's identity); sigma by adaptive quadrature on each side of the
    integrand's peak (relative error < 1e-10)."""
    xv, yv = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    X = np.column_stack([np.ones(yv.size), xv])
    return _regression_log_z(yv.size, X.T @ X, X.T @ yv, float(yv @ yv))


def _regression_log_z(n: int, xtx: np.ndarray, xty: np.ndarray, yty: float) -> float:
    s_diag = np.array([4.0, 1.0])

    def log_f(sigma: float) -> float:
        s2 = sigma * sigma
        a = s2 * np.diag(1.0 / s_diag) + xtx  # Σ⁻¹ = (I − X A⁻¹ X') / s²
        quad = (yty - xty @ np.linalg.solve(a, xty)) / s2
        logdet = 2 * n * math.log(sigma) + np.linalg.slogdet(
            np.eye(2) + s_diag[:, None] * xtx / s2)[1]  # det Σ = s^2N det(I + S X'X / s²)
        return (-0.5 * (n * math.log(2 * math.pi) + logdet + quad)
                + stats.norm.logpdf(sigma) + math.log(2))

    opt = optimize_scalar(lambda s: -log_f(s), bounds=(1e-6, 50.0), method="bounded")
    peak, top = float(opt.x), -float(opt.fun)
    total = 0.0
    for lo, hi in ((0.0, peak), (peak, np.inf)):
        total += integrate.quad(lambda s: math.exp(log_f(s) - top), lo, hi, limit=200,
                                epsabs=0.0, epsrel=1e-12)[0]
    return top + math.log(total)


def regression_loo(data: Mapping[str, Any], obs: Sequence[int] | None = None) -> np.ndarray:
    """Exact log p(y_i | y_-i) of ``regression.stan`` for the observations ``obs`` (0-based;
    all when None): log Z of all the data less log Z without y_i (:func:`regression_log_z`;
    the sums without y_i are the full sums less its terms)."""
    x, y = np.asarray(data["x"], dtype=float), np.asarray(data["y"], dtype=float)
    X = np.column_stack([np.ones(y.size), x])
    xtx, xty, yty = X.T @ X, X.T @ y, float(y @ y)
    full = _regression_log_z(y.size, xtx, xty, yty)
    idx = range(y.size) if obs is None else obs
    return np.array([full - _regression_log_z(y.size - 1, xtx - np.outer(X[i], X[i]),
                                              xty - X[i] * y[i], yty - y[i] ** 2)
                     for i in idx])


def regression_loo_grid(data: Mapping[str, Any]) -> np.ndarray:
    """Exact log p(y_i | y_-i) of ``regression.stan`` for every observation at once, as
    :func:`regression_loo` computes it (log Z of all the data less log Z without y_i; given
    sigma, the Gaussian marginal of y in closed form), but the quadrature over sigma is a
    trapezoid on one grid of 4,001 values of log sigma in [log 0.05, log 5] shared by all
    N + 1 data sets: 0.2 s against 12 s for N = 300, agreeing with it to 1e-12 there. The
    posterior of log sigma has sd about 1 / sqrt(2N), so even N = 10,000 leaves 6 grid steps
    per sd (the trapezoid's error on a Gaussian then ~exp(-2 pi^2 6^2)); the grid's ends are
    checked to hold nothing."""
    x, y = np.asarray(data["x"], dtype=float), np.asarray(data["y"], dtype=float)
    X = np.column_stack([np.ones(y.size), x])
    # row 0: all the data; row 1 + i: without y_i (the sums less its terms)
    xtx = X.T @ X - np.concatenate([np.zeros((1, 2, 2)), X[:, :, None] * X[:, None, :]])
    xty = X.T @ y - np.concatenate([np.zeros((1, 2)), X * y[:, None]])
    yty = y @ y - np.concatenate([[0.0], y**2])
    n = y.size - np.concatenate([[0.0], np.ones(y.size)])
    u = np.linspace(math.log(0.05), math.log(5.0), 4001)  # log sigma
    s2 = np.exp(2 * u)[:, None]
    # A = s^2 S^-1 + X'X with S = diag(4, 1), the prior variances of (alpha, beta):
    # quad = (y'y - (X'y)' A^-1 X'y) / s^2, det Sigma = s^2n det(I + S X'X / s^2)
    p, q, r = xtx[:, 0, 0] + s2 / 4.0, xtx[:, 0, 1], xtx[:, 1, 1] + s2
    b0, b1 = xty[:, 0], xty[:, 1]
    quad = (yty - (r * b0**2 - 2 * q * b0 * b1 + p * b1**2) / (p * r - q**2)) / s2
    det = (1 + 4 * xtx[:, 0, 0] / s2) * (1 + xtx[:, 1, 1] / s2) - 4 * xtx[:, 0, 1] ** 2 / s2**2
    # sigma ~ half-N(0, 1), times the Jacobian sigma of the grid in log sigma
    log_f = (-0.5 * (n * math.log(2 * math.pi) + 2 * n * u[:, None] + np.log(det) + quad)
             + stats.norm.logpdf(np.exp(u))[:, None] + math.log(2) + u[:, None])
    assert np.all(log_f[[0, -1]] < log_f.max(axis=0) - 60)  # the grid holds the posterior
    w = np.full(u.size, u[1] - u[0])
    w[[0, -1]] /= 2
    log_z = special.logsumexp(log_f, axis=0, b=w[:, None])
    return log_z[0] - log_z[1:]


def _poisson_lognormal_grid(y: np.ndarray, points: int, box: np.ndarray | None = None
                            ) -> tuple[np.ndarray, np.ndarray]:
    """The log prior and each count's log p(y_i | mu, tau) of latent_poisson_lower1.stan on a
    ``points`` x ``points`` trapezoid over mu and log tau (40-node Gauss-Hermite over z), first
    on mu in [-4, 6] and log tau in [log 0.01, log 5], then, for more than 20 counts, again on
    the box where the log posterior given ``box`` (a mask of the counts; all when None) is
    within 40 of its largest value there. Returns (prior, lp) of shapes (points, points) and
    (points, points, N)."""
    x, w = np.polynomial.hermite.hermgauss(40)
    lw = np.log(w / np.sqrt(np.pi))
    keep_rows = np.ones(y.size, dtype=bool) if box is None else box

    def grid(mu: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m, v = np.meshgrid(mu, u, indexing="ij")
        tau = np.exp(v)
        eta = m[..., None] + tau[..., None] * np.sqrt(2) * x  # (mu, tau, nodes)
        lp = np.empty(m.shape + (y.size,))
        for i, yi in enumerate(y):
            lp[..., i] = special.logsumexp(lw + yi * eta - np.exp(eta)
                                           - special.gammaln(yi + 1), axis=-1)
        prior = (stats.norm.logpdf(m, 1, 1) + stats.lognorm.logpdf(tau, 0.5, scale=np.exp(-0.5))
                 + v)
        return prior, lp

    mu, u = np.linspace(-4, 6, points), np.linspace(np.log(0.01), np.log(5), points)
    prior, lp = grid(mu, u)
    if y.size > 20:  # narrow: the box that holds the posterior, at the same resolution
        post = prior + lp[..., keep_rows].sum(axis=-1)
        keep = np.nonzero(post > post.max() - 40.0)
        pad_m, pad_u = mu[1] - mu[0], u[1] - u[0]
        mu = np.linspace(mu[keep[0]].min() - pad_m, mu[keep[0]].max() + pad_m, points)
        u = np.linspace(u[keep[1]].min() - pad_u, u[keep[1]].max() + pad_u, points)
        prior, lp = grid(mu, u)
    return prior, lp


def poisson_lognormal_loo(y: Sequence[int] | np.ndarray, points: int = 121) -> np.ndarray:
    """Exact elpd_loo_i of latent_poisson_lower1.stan (mu ~ N(1, 1), tau ~ lognormal(-0.5,
    0.5), z ~ N(0, 1), y ~ Poisson(exp(mu + tau z))): p(y_i | mu, tau) by 40-node
    Gauss-Hermite over z, then a ``points`` x ``points`` trapezoid over mu and log tau
    (:func:`_poisson_lognormal_grid`; for 12 counts, 241 x 241 points with 80 nodes and tau
    up to 8 moved no value by more than 1.6e-6; for 200 counts, 121, 161 and 241 points agree
    on the total to 1e-10)."""
    y = np.asarray(y)
    prior, lp = _poisson_lognormal_grid(y, points)
    post = prior + lp.sum(axis=-1)
    total = special.logsumexp(post)
    return np.array([total - special.logsumexp(post - lp[..., i]) for i in range(y.size)])


def poisson_lognormal_kfold(y: Sequence[int] | np.ndarray, fold_of: Sequence[int] | np.ndarray,
                            points: int = 121, per_fold: bool = False) -> np.ndarray:
    """Exact K-fold elpd_i = log p(y_i | y_T(i)) of latent_poisson_lower1.stan, where T(i) is
    every count outside observation i's fold (``fold_of``: one fold label per count): log ∫
    p(y_i | mu, tau) p(mu, tau | y_T) as a ratio of two sums on the grid of
    :func:`_poisson_lognormal_grid`. For many counts its box is the full data's (where their
    log posterior is within 40 of its top); ``per_fold`` places it on each training set's
    posterior instead (60 counts, K = 5: the two agree to 1e-14, and 241 points move the total
    by 3e-13)."""
    y, fold_of = np.asarray(y), np.asarray(fold_of)
    out = np.empty(y.size)
    prior, lp = _poisson_lognormal_grid(y, points)
    for k in np.unique(fold_of):
        train = fold_of != k
        if per_fold:
            prior, lp = _poisson_lognormal_grid(y, points, box=train)
        post = prior + lp[..., train].sum(axis=-1)
        base = special.logsumexp(post)
        for i in np.flatnonzero(~train):
            out[i] = special.logsumexp(post + lp[..., i]) - base
    return out


def radon_county_logo(data: Mapping[str, Any], points: int = 161) -> np.ndarray:
    """Exact elpd_logo_g of posteriordb radon_county_intercept (alpha_j ~ N(0, 10²)
    independent, beta ~ N(0, 10²), sigma_y ~ half-N(0, 1), log_radon ~ N(alpha_county + beta
    floor, sigma_y)): each county's alpha integrates out in closed form, y_g − beta x_g ~
    N(0, sigma² I + 100 J), so log p(y | beta, sigma) is a sum over counties; then a
    ``points`` x ``points`` trapezoid over beta and log sigma on the box (padded by four coarse
    steps) where the log posterior of all the data is within 40 of its largest value on a
    first coarse grid; one county moves it little (161 against 241 points: the total agrees
    to 1e-12)."""
    y = np.asarray(data["log_radon"], dtype=float)
    x = np.asarray(data["floor_measure"], dtype=float)
    county = np.asarray(data["county_idx"], dtype=int)
    labels = np.unique(county)
    rows = [np.nonzero(county == j)[0] for j in labels]

    def county_terms(beta: np.ndarray, sigma: np.ndarray) -> np.ndarray:
        """(beta, sigma, G) log N(y_g - beta x_g | 0, sigma² I + 100 J)."""
        out = np.empty(beta.shape + (len(rows),))
        s2 = sigma**2
        for g, r in enumerate(rows):
            n = r.size
            e = y[r][None, None, :] - beta[..., None] * x[r][None, None, :]
            ss, tot = np.sum(e**2, axis=-1), np.sum(e, axis=-1)
            # (s² I + a J)^-1 = (I - a J / (s² + n a)) / s², det = s^(2n) (1 + n a / s²)
            a = 100.0
            quad = (ss - a * tot**2 / (s2 + n * a)) / s2
            logdet = n * np.log(s2) + np.log1p(n * a / s2)
            out[..., g] = -0.5 * (quad + logdet + n * np.log(2 * np.pi))
        return out

    def grid(b: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        bb, uu = np.meshgrid(b, u, indexing="ij")
        sig = np.exp(uu)
        prior = (stats.norm.logpdf(bb, 0, 10) + stats.halfnorm.logpdf(sig, scale=1.0) + uu)
        terms = county_terms(bb, sig)
        return prior, terms

    b, u = np.linspace(-3, 3, 121), np.linspace(np.log(0.05), np.log(3), 121)
    prior, terms = grid(b, u)
    post = prior + terms.sum(axis=-1)
    keep = np.nonzero(post > post.max() - 40.0)
    pad_b, pad_u = 4 * (b[1] - b[0]), 4 * (u[1] - u[0])
    b = np.linspace(b[keep[0]].min() - pad_b, b[keep[0]].max() + pad_b, points)
    u = np.linspace(u[keep[1]].min() - pad_u, u[keep[1]].max() + pad_u, points)
    prior, terms = grid(b, u)
    full = prior + terms.sum(axis=-1)
    total = special.logsumexp(full)
    return np.array([total - special.logsumexp(full - terms[..., g])
                     for g in range(len(rows))])
