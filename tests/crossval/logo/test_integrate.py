"""The per-group integrator (stanlogz.crossval.logo.integrate) on densities with closed-form
integrals, one to three coordinates: a product of log-gamma kernels ∫ exp(y x − n eˣ) dx =
Γ(y) / nʸ (skewed: Laplace is off, Gauss-Hermite must correct it) and a correlated Gaussian
(Laplace exact, used where Gauss-Hermite confirms it). Deterministic: quadrature only."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from stanlogz.crossval.logo.integrate import integrate
from stanlogz.errors import InputError


class _Kernel:
    """f(x) over ``dim`` coordinates: the first ``d`` integrated, the last one a shift s that
    enters every term (as the hyperparameters do)."""

    name = "kernel"

    def __init__(self, d: int, y: np.ndarray, n: np.ndarray, gaussian: bool = False) -> None:
        self.d, self.y, self.n, self.gaussian = d, y, n, gaussian
        self.dim = d + 1
        a = np.eye(d) + 0.4 * np.ones((d, d))
        self.prec = np.linalg.inv(a)  # a correlated Gaussian

    def _f(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v, s = x[:, : self.d], x[:, self.d:]
        if self.gaussian:
            r = v - s
            return -0.5 * np.einsum("si,ij,sj->s", r, self.prec, r), -(r @ self.prec)
        return (np.sum(self.y * v - self.n * np.exp(v + s), axis=1),
                self.y - self.n * np.exp(v + s))

    def log_density_many(self, x: np.ndarray) -> np.ndarray:
        return self._f(np.asarray(x, dtype=float))[0]

    def log_density_gradient_many(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f, g = self._f(np.asarray(x, dtype=float))
        return f, np.column_stack([g, np.zeros(len(x))])


@pytest.mark.parametrize("d", [1, 2, 3])
def test_gauss_hermite_matches_gamma_integrals(d):
    y, n = np.array([3.0, 7.0, 1.5])[:d], np.array([2.0, 5.0, 0.5])[:d]
    m = _Kernel(d, y, n)
    base = np.column_stack([np.zeros((5, d)), np.linspace(-1, 1, 5)])
    out = integrate(m, base, np.arange(d), np.zeros((5, d)), "test",
                    check=np.arange(5))
    s = base[:, d]
    # ∫ exp(y v − n e^{v+s}) dv = Γ(y) / (n e^s)^y per coordinate
    exact = sum(special.gammaln(y[j]) - y[j] * (np.log(n[j]) + s) for j in range(d))
    assert out.method == "gauss-hermite"  # skewed: Laplace refused by the check
    # the third coordinate is a gamma(1.5) kernel on the log scale, far from Gaussian: the
    # rules are 1e-3 off there, and the reported error must bound the actual one
    assert np.max(np.abs(out.value - exact)) < (5e-5 if d == 1 else 2e-3)
    assert np.all(np.abs(out.value - exact) <= out.error)
    # Laplace alone is measurably off
    assert np.max(np.abs(out.laplace - exact)) > 1e-3


@pytest.mark.parametrize("d", [1, 2, 3])
def test_laplace_is_used_where_exact(d):
    m = _Kernel(d, np.zeros(d), np.zeros(d), gaussian=True)
    base = np.column_stack([np.zeros((4, d)), np.linspace(-2, 2, 4)])
    out = integrate(m, base, np.arange(d), np.ones((4, d)), "test", check=np.arange(4))
    exact = 0.5 * d * math.log(2 * math.pi) + 0.5 * np.linalg.slogdet(
        np.linalg.inv(m.prec))[1]
    assert out.method == "laplace"
    np.testing.assert_allclose(out.value, exact, atol=1e-8)


def test_more_than_three_latents_refused():
    m = _Kernel(4, np.ones(4), np.ones(4))
    with pytest.raises(InputError, match="4 latent coordinates per group"):
        integrate(m, np.zeros((2, 5)), np.arange(4), np.zeros((2, 4)), "group 1 of g")
