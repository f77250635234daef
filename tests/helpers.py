"""Test targets and helpers that several test modules share."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from scipy import stats

from stanlogz.densities.gaussian import GaussianTarget


class NormalNormal:
    """θ ~ N(0, τ² I_d), y_i ~ N(θ, σ² I_d), i = 1..n: prior × likelihood, with exact log Z."""

    def __init__(self, y: np.ndarray, tau: float, sigma: float) -> None:
        self.y, self.tau, self.sigma = y, tau, sigma
        self.prior = GaussianTarget(np.zeros(y.shape[1]), tau**2 * np.eye(y.shape[1]))

    @property
    def dim(self) -> int:
        return self.y.shape[1]

    def log_density_gradient(self, x):
        r = self.y - x
        n = self.y.shape[0]
        ll = -0.5 * np.sum(r**2) / self.sigma**2 - n * self.dim * np.log(
            np.sqrt(2 * np.pi) * self.sigma)
        lp, gp = self.prior.log_density_gradient(x)
        return ll + lp, gp + r.sum(0) / self.sigma**2

    def log_density(self, x):
        return self.log_density_gradient(x)[0]

    def log_z(self) -> float:
        n = self.y.shape[0]
        cov = self.sigma**2 * np.eye(n) + self.tau**2 * np.ones((n, n))
        return float(sum(stats.multivariate_normal(np.zeros(n), cov).logpdf(self.y[:, j])
                         for j in range(self.dim)))


def ar1_chains(rng: np.random.Generator, reps: int, chains: int, n: int, phi: float,
               mean: float, var: float) -> np.ndarray:
    """``reps`` independent sets of ``chains`` AR(1) chains (lag-1 correlation ``phi``) whose
    stationary law is N(``mean``, ``var``), ``(reps, chains, n)``."""
    e = rng.normal(size=(reps, chains, n))
    x = np.empty_like(e)
    x[..., 0] = e[..., 0]
    for t in range(1, n):
        x[..., t] = phi * x[..., t - 1] + math.sqrt(1 - phi**2) * e[..., t]
    return mean + math.sqrt(var) * x


def se_ratio_z(estimates: np.ndarray, ses: np.ndarray) -> float:
    """z statistic of log(mean se / sd of the estimates) under 'the se is right': the sample
    sd's log has variance (kurtosis − 1) / (4 (R − 1)), the mean se's log var(se) / (R mean²)."""
    r = estimates.size
    var_log_sd = (stats.kurtosis(estimates, fisher=False) - 1) / (4 * (r - 1))
    var_log_se = ses.var(ddof=1) / (r * ses.mean() ** 2)
    return math.log(ses.mean() / estimates.std(ddof=1)) / math.sqrt(var_log_sd + var_log_se)


def elpd_of(elpd_object: Any) -> float:
    """The estimate in an ArviZ ELPD object (a dataclass in 1.x, a Series under loo's names in
    0.x)."""
    from stanlogz import arviz_compat

    if arviz_compat.arviz_major() >= 1:
        return float(elpd_object.elpd)
    return float(elpd_object["elpd_loo"])


def robust_regression_loo_grid(data: dict, grid: int = 32
                               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The exact leave-one-out posteriors of regression_robust.stan (Student-t(4) errors,
    alpha ~ N(0, 2), beta ~ N(0, 1), sigma ~ half-N(0, 1)) on a grid over (alpha, beta,
    log sigma) spanning >= 7 posterior sd each way: weights ``(G, N)`` (each column sums to
    1), the means mu ``(G, N)`` and scales sigma ``(G,)`` at the grid points, and y."""
    x, y = np.asarray(data["x"]), np.asarray(data["y"])
    axes = (np.linspace(-0.2, 1.95, grid), np.linspace(-0.55, 1.75, grid),
            np.linspace(-1.95, 0.7, grid))
    a, b, log_s = (v.ravel() for v in np.meshgrid(*axes, indexing="ij"))
    s = np.exp(log_s)
    mu = a[:, None] + b[:, None] * x[None, :]
    ll = stats.t.logpdf(y[None, :], 4, mu, s[:, None])
    lp = (stats.norm.logpdf(a, 0, 2) + stats.norm.logpdf(b, 0, 1) + stats.norm.logpdf(s, 0, 1)
          + log_s + ll.sum(axis=1))
    lw = lp[:, None] - ll  # leave-one-out posterior, one column per observation
    w = np.exp(lw - lw.max(axis=0))
    return w / w.sum(axis=0), mu, s, y


class FakeClock:
    """A clock for :mod:`stanlogz._util.deadline` that moves only when a test sets ``t``
    (the ``clock`` fixture of ``tests/conftest.py`` installs one)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def tick_per_call(monkeypatch: Any, clock: FakeClock, owner: Any, name: str,
                  seconds: float = 1.0) -> None:
    """A step-count budget: ``owner.name`` advances the injected ``clock`` by ``seconds`` at
    each call (and nothing else moves it), so a loaded machine does not move where a budget
    stops."""
    real = getattr(owner, name)

    def ticked(*args: Any, **kwargs: Any) -> Any:
        clock.t += seconds
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, ticked)


def tick_during(monkeypatch: Any, clock: FakeClock, owner: Any, name: str, stage_owner: Any,
                stage_name: str, seconds: float = 1.0) -> None:
    """A step-count budget confined to one stage: each call of ``owner.name`` made while
    ``stage_owner.stage_name`` runs advances the injected ``clock`` by ``seconds`` (calls
    outside it, and nothing else, move it), so a budget ends after a fixed count of them
    (e.g. the replicates of coupled chains, and not the tuning runs before them)."""
    real, stage, on = getattr(owner, name), getattr(stage_owner, stage_name), [False]

    def ticked(*args: Any, **kwargs: Any) -> Any:
        clock.t += seconds if on[0] else 0.0
        return real(*args, **kwargs)

    def staged(*args: Any, **kwargs: Any) -> Any:
        on[0] = True
        try:
            return stage(*args, **kwargs)
        finally:
            on[0] = False

    monkeypatch.setattr(owner, name, ticked)
    monkeypatch.setattr(stage_owner, stage_name, staged)


def past_budget_grace(quiet: float) -> float:
    """Seconds a budgeted run may end past its budget: ``quiet`` on an idle machine, times the
    load per core (the 1-minute load average over the cores) where that is above 1. The
    budget is checked between steps it cannot interrupt, and a step takes that much longer
    where more runnable processes share the cores (two suites on two cores ended such runs
    0.5-1 s past, against 0.2 s alone)."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return quiet * max(1.0, load)


def run_cli(capture: Any, *argv: str) -> tuple[int, str, str]:
    """The ``stanlogz`` command with ``argv`` run in this process as ``python -m stanlogz``
    runs it (the entry point itself is tested in tests/cli), and its exit status, stdout and
    stderr: ``capture`` is pytest's ``capsys``, or ``capfd`` to count what the compiled side
    writes to the file descriptors too. What was captured before the call is dropped."""
    from stanlogz.cli import main

    capture.readouterr()
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    out, err = capture.readouterr()
    return rc, out, err
