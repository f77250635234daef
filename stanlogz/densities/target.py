"""The *target* protocol every estimator and kernel works on.

A target is an unnormalized log density on R^dim with its gradient. A compiled Stan program
(:class:`stanlogz.stan.model.StanModel`) is one; so is any of the analytic targets in
:mod:`stanlogz.densities.gaussian`, or a pair of Python callables wrapped by
:class:`FunctionTarget`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from .._util.arrays import dimension


@runtime_checkable
class Target(Protocol):
    """Unnormalized log density on R^dim with gradient."""

    @property
    def dim(self) -> int: ...

    def log_density(self, x: np.ndarray) -> float: ...

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]: ...


@runtime_checkable
class SampleableDensity(Target, Protocol):
    """A *normalized* density that can also be sampled exactly (a base or a proposal)."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray: ...

    def log_density_many(self, xs: np.ndarray) -> np.ndarray: ...


def log_density_many(target: Target, xs: np.ndarray) -> np.ndarray:
    """Log density at each row of ``xs`` (shape ``(n, dim)``), vectorized when the target can."""
    xs = np.atleast_2d(np.asarray(xs, dtype=float))
    many = getattr(target, "log_density_many", None)
    if many is not None:
        return np.asarray(many(xs), dtype=float)
    return np.array([target.log_density(x) for x in xs], dtype=float)


def log_density_gradient_many(target: Target, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log densities ``(n,)`` and gradients ``(n, dim)`` at the rows of ``xs``: in one call
    when the target has ``log_density_gradient_many`` (a flow, a compiled Stan program), else
    point by point."""
    xs = np.atleast_2d(np.asarray(xs, dtype=float))
    many = getattr(target, "log_density_gradient_many", None)
    if many is not None:
        lp, g = many(xs)
        return np.asarray(lp, dtype=float), np.asarray(g, dtype=float)
    lp = np.empty(xs.shape[0])
    g = np.empty(xs.shape)
    for i, x in enumerate(xs):
        lp[i], g[i] = target.log_density_gradient(x)
    return lp, g


class FunctionTarget:
    """A target made of Python callables: ``log_density(x)`` and optionally its gradient.

    Without ``gradient`` the gradient is taken by central finite differences (slow; tests only).
    ``log_density_many`` may be given for vectorized evaluation.
    """

    def __init__(
        self,
        dim: int,
        log_density: Callable[[np.ndarray], float],
        gradient: Callable[[np.ndarray], np.ndarray] | None = None,
        log_density_many: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self._dim = dimension(dim, "target")
        self._f = log_density
        self._g = gradient
        if log_density_many is not None:
            self.log_density_many = log_density_many  # type: ignore[method-assign]

    @property
    def dim(self) -> int:
        return self._dim

    def log_density(self, x: np.ndarray) -> float:
        return float(self._f(np.asarray(x, dtype=float)))

    @property
    def has_gradient(self) -> bool:
        """Whether the gradient is analytic (else it is a finite difference costing 2 dim evals)."""
        return self._g is not None

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.asarray(x, dtype=float)
        if self._g is not None:
            return float(self._f(x)), np.asarray(self._g(x), dtype=float)
        h = 1e-6 * np.maximum(1.0, np.abs(x))
        grad = np.empty_like(x)
        for i in range(x.size):
            e = np.zeros_like(x)
            e[i] = h[i]
            grad[i] = (self._f(x + e) - self._f(x - e)) / (2 * h[i])
        return float(self._f(x)), grad


def has_cheap_gradient(target: Target) -> bool:
    """Whether ``target``'s gradient costs about one evaluation (not a finite difference)."""
    while isinstance(target, CountingTarget):
        target = target.target
    return bool(getattr(target, "has_gradient", True))


class CountingTarget:
    """Wraps a target and counts log-density and gradient evaluations (for cost reports)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.n_log_density = 0
        self.n_gradient = 0

    @property
    def dim(self) -> int:
        return self.target.dim

    @property
    def n_evals(self) -> int:
        """Log-density evaluations, gradient evaluations included."""
        return self.n_log_density + self.n_gradient

    def log_density(self, x: np.ndarray) -> float:
        self.n_log_density += 1
        return self.target.log_density(x)

    def log_density_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.n_gradient += 1
        return self.target.log_density_gradient(x)

    def log_density_many(self, xs: np.ndarray) -> np.ndarray:
        xs = np.atleast_2d(xs)
        self.n_log_density += xs.shape[0]
        return log_density_many(self.target, xs)

    def log_density_gradient_many(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xs = np.atleast_2d(xs)
        self.n_gradient += xs.shape[0]
        return log_density_gradient_many(self.target, xs)
