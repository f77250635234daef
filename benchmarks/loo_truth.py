"""Exact leave-one-out values of the Poisson regressions in stan_models/tests/roaches_poisson.stan
by Gauss-Hermite quadrature (used by benchmarks/coverage_loo_mcse.py).

elpd_i = log p(y_i | y₋ᵢ) = log Z − log Z₋ᵢ, where Z = ∫ prior(θ) Π_j p(y_j | θ) dθ and Z₋ᵢ
leaves out p(y_i | θ). Both integrals are taken on one tensor grid of Gauss-Hermite nodes in
the coordinates that whiten the full posterior's Laplace approximation (mode and inverse
Hessian): the integrands are smooth and unimodal (the leave-one-out posterior sits within a
few full-posterior sd of the full one), so the rule converges fast in the number of nodes;
:func:`exact_loo` returns the values for two node counts, whose difference bounds the error.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import gammaln, logsumexp

PRIOR_SD = 2.5  # alpha, beta ~ normal(0, 2.5)


def log_lik(theta: np.ndarray, data: dict) -> np.ndarray:
    """log p(y_i | θ) at rows of ``theta`` (alpha, beta...), ``(G, N)``."""
    x = np.asarray(data["X"], dtype=float)
    y = np.asarray(data["y"], dtype=float)
    eta = np.asarray(data["log_expo"], dtype=float)[None] + theta[:, :1] + theta[:, 1:] @ x.T
    return y[None] * eta - np.exp(eta) - gammaln(y + 1)[None]


def log_prior(theta: np.ndarray) -> np.ndarray:
    """The normal(0, 2.5) prior of every coefficient, normalized."""
    k = theta.shape[1]
    return (-0.5 * np.sum(theta**2, axis=1) / PRIOR_SD**2
            - k * (math.log(PRIOR_SD) + 0.5 * math.log(2 * math.pi)))


def laplace(data: dict) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mode and inverse Hessian of the negative log posterior."""
    k = 1 + int(data["K"])

    def f(t: np.ndarray) -> float:
        return -float(log_prior(t[None])[0] + log_lik(t[None], data).sum())

    mode = minimize(f, np.zeros(k), method="BFGS", options={"gtol": 1e-9}).x
    h = 1e-4
    hess = np.zeros((k, k))
    eye = np.eye(k) * h
    for a, b in itertools.product(range(k), range(k)):
        hess[a, b] = (f(mode + eye[a] + eye[b]) - f(mode + eye[a] - eye[b])
                      - f(mode - eye[a] + eye[b]) + f(mode - eye[a] - eye[b])) / (4 * h * h)
    return mode, np.linalg.inv(hess)


def exact_loo(data: dict, nodes: int = 24, block: int = 20000) -> np.ndarray:
    """elpd_i of every observation by Gauss-Hermite quadrature with ``nodes`` per dimension."""
    mode, cov = laplace(data)
    chol = np.linalg.cholesky(cov)
    z, w = np.polynomial.hermite_e.hermegauss(nodes)  # weight exp(-z²/2)
    k = mode.size
    n = len(data["y"])
    # log of the integrand over the standard-normal density, times the rule's weights
    acc_full: list[np.ndarray] = []
    acc_loo: list[np.ndarray] = []
    grid = np.array(list(itertools.product(range(nodes), repeat=k)))
    for start in range(0, grid.shape[0], block):
        g = grid[start:start + block]
        zz = z[g]
        theta = mode[None] + zz @ chol.T
        lw = np.sum(np.log(w)[g], axis=1) + 0.5 * np.sum(zz**2, axis=1)
        ll = log_lik(theta, data)
        base = lw + log_prior(theta) + ll.sum(axis=1)
        acc_full.append(np.array([logsumexp(base)]))
        acc_loo.append(logsumexp(base[:, None] - ll, axis=0)[None])
    log_z = logsumexp(np.concatenate(acc_full))
    log_z_loo = logsumexp(np.concatenate(acc_loo, axis=0), axis=0)
    assert log_z_loo.shape == (n,)
    return log_z - log_z_loo
