"""Paths of distributions ``pi_lambda``, lambda in [0, 1], for path sampling.

A path gives ``U(lam, x) = log pi~_lambda(x)`` (the *log* unnormalized density; note the sign is the
opposite of the paper's potential), its x-gradient ``grad_x`` and its lambda-derivative ``dU_dlam``.
Path sampling: ``log Z_1 - log Z_0 = int_0^1 E_lambda[dU_dlam(lambda, X)] dlambda``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from .._util.arrays import dimension
from ..densities.target import Target
from ..errors import InputError


@runtime_checkable
class LambdaPath(Protocol):
    """A path of unnormalized log densities on R^dim indexed by lambda in [0, 1]."""

    @property
    def dim(self) -> int: ...

    def U(self, lam: float, x: np.ndarray) -> float: ...

    def grad_x(self, lam: float, x: np.ndarray) -> tuple[float, np.ndarray]: ...

    def dU_dlam(self, lam: float, x: np.ndarray) -> float: ...


class GeometricPath:
    """``log pi~_lambda = (1 - lambda) log p0 + lambda log p1`` between two targets of equal dim.

    ``dU_dlam = log p1 - log p0``; the path estimates ``log Z(p1) - log Z(p0)``. With a normalized
    ``p0`` (a base such as a Laplace or draws-fitted Gaussian) that is ``log Z(p1)``.
    """

    def __init__(self, p0: Target, p1: Target) -> None:
        if p0.dim != p1.dim:
            raise InputError(f"path end points differ in dimension: {p0.dim} vs {p1.dim}")
        self.p0 = p0
        self.p1 = p1

    @property
    def dim(self) -> int:
        return self.p1.dim

    def U(self, lam: float, x: np.ndarray) -> float:
        lam = _check_lam(lam)
        a = self.p0.log_density(x) if lam < 1.0 else 0.0
        b = self.p1.log_density(x) if lam > 0.0 else 0.0
        return float((1.0 - lam) * a + lam * b)

    def grad_x(self, lam: float, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``U(lam, x)`` and its gradient in ``x``."""
        lam = _check_lam(lam)
        val, grad = 0.0, np.zeros(self.dim)
        if lam < 1.0:
            a, ga = self.p0.log_density_gradient(x)
            val, grad = (1.0 - lam) * a, (1.0 - lam) * np.asarray(ga, dtype=float)
        if lam > 0.0:
            b, gb = self.p1.log_density_gradient(x)
            val, grad = val + lam * b, grad + lam * np.asarray(gb, dtype=float)
        return float(val), grad

    def dU_dlam(self, lam: float, x: np.ndarray) -> float:
        return float(self.p1.log_density(x) - self.p0.log_density(x))

    def U_and_dU_dlam(self, lam: float, x: np.ndarray) -> tuple[float, float]:
        """``U(lam, x)`` and ``dU_dlam(lam, x)`` from one evaluation of each end point."""
        lam = _check_lam(lam)
        a, b = self.p0.log_density(x), self.p1.log_density(x)
        return _mix(lam, a, b), float(b - a)

    def grad_x_and_dU_dlam(self, lam: float, x: np.ndarray) -> tuple[float, np.ndarray, float]:
        """``U``, its x-gradient and ``dU_dlam`` from one gradient evaluation of each end."""
        lam = _check_lam(lam)
        a, ga = self.p0.log_density_gradient(x)
        b, gb = self.p1.log_density_gradient(x)
        grad = (1.0 - lam) * np.asarray(ga, dtype=float) + lam * np.asarray(gb, dtype=float)
        return _mix(lam, a, b), grad, float(b - a)


def _mix(lam: float, a: float, b: float) -> float:
    """(1 - lam) a + lam b without 0 * inf at the ends."""
    if lam == 0.0:
        return float(a)
    if lam == 1.0:
        return float(b)
    return float((1.0 - lam) * a + lam * b)


def base_to_target_path(base: Target, target: Target) -> GeometricPath:
    """Geometric path from a *normalized* base density (lambda = 0) to ``target`` (lambda = 1)."""
    return GeometricPath(base, target)


def two_posterior_path(target0: Target, target1: Target) -> GeometricPath:
    """Geometric path between two posteriors of one program with different data (same dim)."""
    return GeometricPath(target0, target1)


class FunctionPath:
    """A user path from Python callables ``U(lam, x)``, ``dU_dlam(lam, x)`` and optional gradient.

    ``grad_x(lam, x)`` must return the x-gradient of ``U``; without it only gradient-free kernels
    (RWMH) can be used.
    """

    def __init__(
        self,
        dim: int,
        U: Callable[[float, np.ndarray], float],
        dU_dlam: Callable[[float, np.ndarray], float],
        grad_x: Callable[[float, np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self._dim = dimension(dim, "path")
        self._U = U
        self._dU = dU_dlam
        self._grad = grad_x

    @property
    def dim(self) -> int:
        return self._dim

    def U(self, lam: float, x: np.ndarray) -> float:
        return float(self._U(_check_lam(lam), np.asarray(x, dtype=float)))

    def grad_x(self, lam: float, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``U(lam, x)`` and its gradient in ``x``."""
        if self._grad is None:
            raise InputError("this FunctionPath has no grad_x; use kernel='rwmh'")
        x = np.asarray(x, dtype=float)
        return self.U(lam, x), np.asarray(self._grad(_check_lam(lam), x), dtype=float)

    def dU_dlam(self, lam: float, x: np.ndarray) -> float:
        return float(self._dU(_check_lam(lam), np.asarray(x, dtype=float)))


def _check_lam(lam: float) -> float:
    lam = float(lam)
    if not 0.0 <= lam <= 1.0:
        raise InputError(f"lambda must be in [0, 1], got {lam}")
    return lam
