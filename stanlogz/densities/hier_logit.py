"""A non-Gaussian hierarchical program whose log evidence is known at any number of groups.

The non-centred hierarchical logistic of ``stan_models/highdim/hier_logit_nc.stan``: J groups,
``y_j ~ binomial_logit(n_j, mu + tau eta_j)``, ``mu ~ N(0, mu_sd)``, ``tau ~ half-N(0, tau_sd)``,
``eta_j ~ N(0, 1)``; J + 2 parameters, every density normalized so that log Z is p(y).

Given (mu, tau) the groups are independent, so

    p(y) = ∫∫ p(mu) p(tau) prod_j L_j(mu, tau) dmu dtau,
    L_j(mu, tau) = ∫ phi(z) Binomial(y_j | n_j, logistic(mu + tau z)) dz,

a two-dimensional integral of a product of one-dimensional ones. Groups with the same (n_j, y_j)
share their L_j, so with a few trial counts the cost does not grow with J: the benchmark's data
use n_j in {5, 10}, at most 17 distinct pairs however many groups.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from ..errors import InputError
from .gaussian import NoncentredHierarchy

#: Nodes of the trapezoid rule over the standardized group effect z (|z| <= Z_MAX); the
#: integrand is smooth and below phi(8) ~ 5e-15 at the ends, so the rule's error is far below
#: the truncation's.
Z_MAX, Z_NODES = 8.0, 641
#: Nodes per axis of the outer trapezoid rule over (mu, log tau), and how far below its peak
#: the log integrand must be on every edge of the box (exp(-40) ~ 4e-18).
OUTER_NODES, EDGE_DROP = 161, 40.0


class HierarchicalLogitTarget(NoncentredHierarchy):
    """The program above on Stan's unconstrained scale ``(mu, log tau, eta_1..J)``, with
    ``log_z`` by nested quadrature (module docstring).

    Parameters
    ----------
    n, y : array_like of int
        Trials and successes per group (0 <= y_j <= n_j, n_j >= 1).
    mu_sd, tau_sd : float
        Prior scales of ``mu`` (normal) and ``tau`` (half-normal).
    """

    def __init__(self, n: np.ndarray, y: np.ndarray, mu_sd: float = 2.0,
                 tau_sd: float = 1.0) -> None:
        self.n = np.asarray(n, dtype=float)
        self.y = np.asarray(y, dtype=float)
        if (self.n.ndim != 1 or self.n.shape != self.y.shape or self.n.size == 0
                or np.any(self.n < 1) or np.any(self.y < 0) or np.any(self.y > self.n)
                or np.any(self.n != np.round(self.n)) or np.any(self.y != np.round(self.y))):
            raise InputError("n and y must be integer vectors of one length, 0 <= y <= n, n >= 1")
        if mu_sd <= 0 or tau_sd <= 0:
            raise InputError(f"mu_sd and tau_sd must be positive, got {mu_sd}, {tau_sd}")
        self.mu_sd, self.tau_sd = float(mu_sd), float(tau_sd)
        self._lchoose = (special.gammaln(self.n + 1) - special.gammaln(self.y + 1)
                         - special.gammaln(self.n - self.y + 1))
        pairs, self._counts = np.unique(np.column_stack([self.n, self.y]), axis=0,
                                        return_counts=True)
        self._pn, self._py = pairs[:, 0], pairs[:, 1]
        self._pc = (special.gammaln(self._pn + 1) - special.gammaln(self._py + 1)
                    - special.gammaln(self._pn - self._py + 1))
        self._z = np.linspace(-Z_MAX, Z_MAX, Z_NODES)
        self._log_wz = (np.log(self._z[1] - self._z[0]) - 0.5 * self._z**2
                        - 0.5 * math.log(2 * math.pi))
        self._log_wz[[0, -1]] -= math.log(2.0)
        self.log_z = self._outer()

    @property
    def dim(self) -> int:
        return self.n.size + 2

    def log_outer(self, mu: np.ndarray, s: np.ndarray) -> np.ndarray:
        """log p(mu) + log p(tau = e^s) + s + sum_j log L_j(mu, e^s), vectorized (same shape)."""
        mu, s = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(s, dtype=float))
        flat_mu, flat_s = mu.ravel(), s.ravel()
        out = np.empty(flat_mu.size)
        for a in range(0, flat_mu.size, 256):  # blocks: 256 x pairs x Z_NODES doubles
            m, t = flat_mu[a:a + 256], np.exp(flat_s[a:a + 256])
            eta = m[:, None] + t[:, None] * self._z  # (b, Z)
            soft = np.logaddexp(0.0, eta)
            ll = (self._pc[None, :, None] + self._py[None, :, None] * eta[:, None, :]
                  - self._pn[None, :, None] * soft[:, None, :])  # (b, P, Z)
            log_l = special.logsumexp(ll + self._log_wz, axis=2)
            out[a:a + 256] = log_l @ self._counts
        lp = (-0.5 * (flat_mu / self.mu_sd) ** 2 - 0.5 * math.log(2 * math.pi * self.mu_sd**2)
              + math.log(2.0) - 0.5 * (np.exp(flat_s) / self.tau_sd) ** 2
              - 0.5 * math.log(2 * math.pi * self.tau_sd**2) + flat_s)
        return (out + lp).reshape(mu.shape)

    def _outer(self) -> float:
        """log Z: the trapezoid rule over a box in (mu, log tau) grown until the log integrand
        is EDGE_DROP below its peak on every edge."""
        rate = (self.y.sum() + 0.5) / (self.n.sum() + 1.0)
        f = lambda v: -float(self.log_outer(v[0], v[1]))  # noqa: E731
        opt = optimize.minimize(f, [math.log(rate / (1 - rate)), 0.0], method="Nelder-Mead",
                                options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 2000})
        mode = opt.x
        h = 1e-3
        hess = np.empty((2, 2))
        for i in range(2):
            for k in range(2):
                e_i, e_k = np.eye(2)[i] * h, np.eye(2)[k] * h
                hess[i, k] = (f(mode + e_i + e_k) - f(mode + e_i - e_k) - f(mode - e_i + e_k)
                              + f(mode - e_i - e_k)) / (4 * h * h)
        sd = np.sqrt(np.clip(np.diag(np.linalg.inv(hess)), 1e-12, None))
        lo, hi = mode - 10 * sd, mode + 10 * sd
        for _ in range(40):  # grow the box on a coarse grid, then integrate on a fine one
            g = self.log_outer(np.linspace(lo[0], hi[0], 33)[:, None],
                               np.linspace(lo[1], hi[1], 33)[None, :])
            top = float(np.max(g))
            edges = [g[0, :], g[-1, :], g[:, 0], g[:, -1]]  # mu low/high, s low/high
            grow = [float(np.max(e)) > top - EDGE_DROP for e in edges]
            if not any(grow):
                break
            width = hi - lo
            lo = lo - 0.5 * width * np.array([grow[0], grow[2]])
            hi = hi + 0.5 * width * np.array([grow[1], grow[3]])
        else:  # pragma: no cover - the prior's tails bound the box
            raise InputError("hierarchical logit: quadrature box did not close")
        # The trapezoid rule's error on an analytic integrand is ~ exp(-2 pi w / h) for a strip
        # of half-width w where it stays analytic: about pi in mu (the logistic's poles) and
        # pi/4 in log tau (exp(-tau^2 / 2) blows up at Im s = pi/2), so h <= 0.25 and 0.1
        # keep it below 1e-10 however wide the box grew.
        n_mu = max(OUTER_NODES, math.ceil((hi[0] - lo[0]) / 0.25) + 1)
        n_s = max(OUTER_NODES, math.ceil((hi[1] - lo[1]) / 0.1) + 1)
        mus, ss = np.linspace(lo[0], hi[0], n_mu), np.linspace(lo[1], hi[1], n_s)
        g = self.log_outer(mus[:, None], ss[None, :])
        top = float(np.max(g))
        w_mu = np.full(n_mu, mus[1] - mus[0])
        w_s = np.full(n_s, ss[1] - ss[0])
        w_mu[[0, -1]] *= 0.5
        w_s[[0, -1]] *= 0.5
        return top + math.log(float(np.sum(np.exp(g - top) * w_mu[:, None] * w_s[None, :])))

    def log_likelihood_many(self, a: np.ndarray) -> np.ndarray:
        return np.sum(self._lchoose + self.y * a - self.n * np.logaddexp(0.0, a), axis=1)

    def score(self, a: np.ndarray) -> np.ndarray:
        return self.y - self.n * special.expit(a)

def hier_logit_data(j: int, seed: int = 0, mu: float = -0.5, tau: float = 1.0) -> dict:
    """J groups with n_j alternating 5 and 10 trials, y_j simulated at ``mu``, ``tau``."""
    if j < 1:
        raise InputError(f"hier_logit_data needs at least one group, got {j}")
    rng = np.random.default_rng(seed)
    n = np.where(np.arange(j) % 2 == 0, 5, 10)
    y = rng.binomial(n, special.expit(mu + tau * rng.standard_normal(j)))
    return {"J": j, "n": n.tolist(), "y": y.tolist()}
