"""The shared no-rows integral of leave-one-group-out (stanlogz.crossval.logo.prior_share)
on densities with closed-form integrals (numpy only): exchangeable Gaussian latents share one
integral, and it equals each group's own; a group-level predictor in the prior (different
means) or a different scale is detected and refused. Deterministic: quadrature only."""

from __future__ import annotations

import math

import numpy as np

from stanlogz.crossval.logo.integrate import integrate
from stanlogz.crossval.logo.prior_share import prior_shared, shared_integrals
from stanlogz.crossval.logo.structure import GroupStructure


class _Prior:
    """f(φ, a) = Σ_g log N(a_g | m_g, e^{φ} s_g) − φ² / 2 over G latents and one log scale φ
    (the last coordinate)."""

    name = "prior"

    def __init__(self, means: np.ndarray, scales: np.ndarray) -> None:
        self.m, self.s = means, scales
        self.dim = means.size + 1

    def _f(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, phi = x[:, :-1], x[:, -1:]
        sd = np.exp(phi) * self.s
        z = (a - self.m) / sd
        f = np.sum(-0.5 * z**2 - np.log(sd), axis=1) - 0.5 * phi[:, 0] ** 2
        ga = -z / sd
        gphi = np.sum(z**2 - 1, axis=1) - phi[:, 0]
        return f, np.column_stack([ga, gphi])

    def log_density_many(self, x: np.ndarray) -> np.ndarray:
        return self._f(np.asarray(x, dtype=float))[0]

    def log_density_gradient_many(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._f(np.asarray(x, dtype=float))


def _structure(g: int) -> GroupStructure:
    return GroupStructure("g", np.arange(1, g + 1), [np.array([j]) for j in range(g)],
                          [np.array([j]) for j in range(g)], {"a": 0}, np.array([g]))


def test_exchangeable_latents_share_one_integral() -> None:
    g = 4
    m = _Prior(np.zeros(g), np.ones(g))
    st = _structure(g)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (30, g + 1))
    assert prior_shared([m] * g, st, x[:3], rng)
    shared = shared_integrals([m] * g, st, x, lambda: integrate(m, x, st.coords[0],
                                                                x[:, :1], "g1", np.arange(5)))
    for j in range(g):
        own = integrate(m, x, st.coords[j], x[:, j:j + 1], f"g{j}", np.arange(5))
        np.testing.assert_allclose(shared[j].value, own.value, atol=1e-9)
        # the closed form: every other term of f at the draw, the latent's prior integrating
        # to one
        rest = m.log_density_many(np.column_stack([x[:, :j], np.full(30, m.m[j]),
                                                   x[:, j + 1:]]))
        sd = np.exp(x[:, -1])
        np.testing.assert_allclose(shared[j].value, rest + np.log(sd) + 0.5 * math.log(
            2 * math.pi), atol=1e-9)


def test_different_priors_are_not_shared() -> None:
    g = 3
    st = _structure(g)
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (3, g + 1))
    moved = _Prior(np.array([0.0, 0.0, 0.5]), np.ones(g))  # a group-level predictor
    assert not prior_shared([moved] * g, st, x, rng)
    wider = _Prior(np.zeros(g), np.array([1.0, 1.3, 1.0]))
    assert not prior_shared([wider] * g, st, x, rng)
