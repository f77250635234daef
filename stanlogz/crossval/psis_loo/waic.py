"""WAIC (Watanabe 2010; as loo's ``waic`` and ArviZ's ``waic``) of a fit's pointwise
log-likelihood or of a Stan program: :func:`waic`, :class:`WaicResult`.

elpd_waic = Σ_i (lppd_i − p_waic_i) with lppd_i = log (1/S) Σ_s p(y_i | θ_s) and p_waic_i the
sample variance over the S draws of log p(y_i | θ_s). Every field under loo's names is R loo's
number: p_waic_i with S − 1 degrees of freedom (loo's ``colVars``), and ``se``
(``se_elpd_waic``) = sqrt(N var(elpd_waic_i)) with N − 1 (loo's ``sqrt(n * var(pointwise))``).
ArviZ 0.x's ``waic`` (the only ArviZ with a WAIC; arviz-stats 1.x has none) takes both
variances with ddof 0, so its p_waic is (S − 1)/S of loo's, its elpd_waic higher by the
difference, and its se about sqrt((N − 1)/N) of loo's; :meth:`WaicResult.arviz0` gives its
three numbers. ``mcse`` is the Monte Carlo se of elpd_waic from the draws (delta method: the
per-draw influence Σ_i [p(y_i | θ_s) / mean_s p(y_i | θ) − (log p(y_i | θ_s) − mean)²],
divided by the square root of its ESS). As loo warns, p_waic_i above 0.4 means WAIC is
unreliable for that observation and PSIS-LOO is the better estimate.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from scipy.special import logsumexp

from ... import arviz_compat
from ..._util.arrays import even_rows
from ..._util.seeds import Stream, stream_int_seed
from ..._util.sum_se import sum_se
from ...draws import as_draws, sample
from ...errors import InputError, Route
from ..elpd.base import ElpdResult
from ..observations.observations import Observations, load_observed
from ..observations.pointwise import PointwiseLogLik
from ..refit.cv_se import ElpdInterval, elpd_interval
from .fitloo import is_fit, log_lik_from_fit

#: p_waic_i above this makes WAIC unreliable for that observation (loo's and ArviZ's bound).
P_WAIC_MAX = 0.4


@dataclass
class WaicResult(ElpdResult):
    """WAIC of one program or fit: elpd_waic with its between-observation se and Monte Carlo
    se, p_waic, and the pointwise values.

    Attributes
    ----------
    model : str
        The program's (or fit's) name.
    elpd_waic : float
        lppd − p_waic.
    se : float
        Its se over observations, R loo's sqrt(N var(elpd_i)) with ddof 1 (ArviZ 0.x's
        ``waic`` takes ddof 0: :meth:`arviz0`).
    p_waic : float
        The effective number of parameters: Σ_i of the variance over draws of log p(y_i | θ),
        with S − 1 degrees of freedom as R loo (ArviZ 0.x divides by S: :meth:`arviz0`).
    mcse : float
        The Monte Carlo se of elpd_waic.
    elpd_i, lppd_i, p_waic_i : ndarray
        Per observation.
    n_samples : int
        The draws used.
    warnings : list of str
        What to do about problems found.

    Examples
    --------
    >>> import numpy as np, stanlogz
    >>> w = stanlogz.waic(np.random.default_rng(0).normal(-1.0, 0.1, size=(4, 100, 3)))
    >>> type(w).__name__, w.n_samples, bool(np.isclose(w.elpd_waic, w.elpd_i.sum()))
    ('WaicResult', 400, True)
    """

    kind: ClassVar[str] = "waic"
    model: str
    elpd_waic: float
    se: float
    p_waic: float
    mcse: float
    elpd_i: np.ndarray
    lppd_i: np.ndarray
    p_waic_i: np.ndarray
    n_samples: int
    observations: Observations
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def se_elpd_waic(self) -> float:
        """loo's name for ``se``: sqrt(N var(elpd_i)) (ddof 1)."""
        return float(self.se)

    def arviz0(self) -> dict[str, float]:
        """ArviZ 0.x's ``waic`` numbers on the same draws, which differ from loo's (the fields):
        its p_waic_i divide by S instead of S − 1 and its se takes the ddof-0 variance over
        observations.

        Returns
        -------
        dict
            ``elpd_waic``, ``se`` and ``p_waic`` as ``arviz.waic(..., scale="log")`` reports
            them.
        """
        s = self.n_samples
        p_i = self.p_waic_i * (s - 1) / s
        e = self.lppd_i - p_i
        return {"elpd_waic": float(e.sum()), "se": float(math.sqrt(e.size * np.var(e))),
                "p_waic": float(p_i.sum())}

    @property
    def mcse_elpd_waic(self) -> float:
        """loo's name for ``mcse``."""
        return float(self.mcse)

    @property
    def p_waic_se(self) -> float:
        """loo's se of p_waic, sqrt(N var(p_waic_i))."""
        return sum_se(self.p_waic_i)

    @property
    def se_p_waic(self) -> float:
        """loo's name for ``p_waic_se``."""
        return self.p_waic_se

    @property
    def waic(self) -> float:
        """−2 elpd_waic (loo's information-criterion scale)."""
        return -2.0 * self.elpd_waic

    @property
    def se_waic(self) -> float:
        """loo's se of ``waic``: 2 se."""
        return 2.0 * float(self.se)

    @cached_property
    def elpd_waic_interval(self) -> ElpdInterval:
        """The calibrated interval for elpd_waic beside loo's ``se``: elpd_waic ± 2 c se, c the
        small-N bootstrap-t factor (:func:`~stanlogz.crossval.refit.cv_se.elpd_interval`)."""
        return elpd_interval(self.elpd_i, self.elpd_waic)

    def table(self) -> list[list[Any]]:
        """The loo-style summary rows: (quantity, estimate, se)."""
        return [["elpd_waic", round(self.elpd_waic, 3), round(self.se, 3)],
                ["p_waic", round(self.p_waic, 3), round(self.p_waic_se, 3)],
                ["waic", round(-2 * self.elpd_waic, 3), round(2 * self.se, 3)]]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (pointwise values included)."""
        return {**self.elpd_dict(), "model": self.model, "elpd_waic": self.elpd_waic,
                "se": self.se,
                "se_elpd_waic": self.se, "p_waic_se": self.p_waic_se,
                "elpd_waic_interval": self.elpd_waic_interval.to_dict(),
                "mcse_elpd_waic": self.mcse, "p_waic": self.p_waic,
                "waic": -2 * self.elpd_waic, "n_obs": self.n_obs, "n_samples": self.n_samples,
                "n_p_waic_above_0.4": int(np.sum(self.p_waic_i > P_WAIC_MAX)),
                "pointwise": [{"observation": i + 1, "elpd": float(e), "p_waic": float(p)}
                              for i, (e, p) in enumerate(zip(self.elpd_i, self.p_waic_i,
                                                             strict=True))],
                "seconds": self.seconds, "warnings": self.warnings}


class _Accumulator:
    """Pointwise WAIC terms over blocks of observations, and the per-draw influence."""

    def __init__(self, chains: int, n: int) -> None:
        self.shape = (chains, n)
        self.lppd: list[np.ndarray] = []
        self.pw: list[np.ndarray] = []
        self.influence = np.zeros(chains * n)

    def add(self, ll: np.ndarray) -> None:
        """``ll``: (draws, block of observations)."""
        s = ll.shape[0]
        if s < 2:
            raise InputError("WAIC needs at least two draws")
        if not np.all(np.isfinite(ll)):
            d, i = np.argwhere(~np.isfinite(ll))[0]
            raise InputError(f"log-likelihood is not finite at draw {d + 1} (block column "
                             f"{i + 1})")
        lppd = logsumexp(ll, axis=0) - math.log(s)
        mean = ll.mean(axis=0)
        var = ll.var(axis=0, ddof=1)  # loo's p_waic (colVars; ArviZ 0.x divides by S)
        self.lppd.append(lppd)
        self.pw.append(var)
        self.influence += np.sum(np.exp(ll - lppd) - (ll - mean) ** 2, axis=1)

    def result(self, name: str, t0: float) -> WaicResult:
        lppd = np.concatenate(self.lppd)
        p_i = np.concatenate(self.pw)
        elpd_i = lppd - p_i
        n = elpd_i.size
        phi = self.influence.reshape(*self.shape, 1)
        s = phi.size
        ess = float(arviz_compat.ess_mean(phi)[0]) if np.ptp(phi) > 0 else float(s)
        ess = ess if np.isfinite(ess) and ess > 0 else float(s)
        mcse = float(np.std(phi, ddof=1) / math.sqrt(ess)) if s > 1 else float("nan")
        res = WaicResult(model=name, elpd_waic=float(elpd_i.sum()),
                         se=sum_se(elpd_i), p_waic=float(p_i.sum()),
                         mcse=mcse, elpd_i=elpd_i, lppd_i=lppd, p_waic_i=p_i, n_samples=s,
                         observations=Observations(size_name="", fields=(), n=n))
        high = np.nonzero(p_i > P_WAIC_MAX)[0]
        if high.size:
            nums = ", ".join(str(i + 1) for i in high[:10])
            res.warnings.append(f"{high.size} of {n} observations have p_waic above "
                                f"{P_WAIC_MAX} ({nums}): WAIC is unreliable for them; use "
                                f"PSIS-LOO ({Route('loo')}), which also says how reliable it is")
        if mcse > 0.5:
            res.warnings.append(f"the Monte Carlo se of elpd_waic is {mcse:.2f}: run more "
                                "draws")
        res.seconds = time.perf_counter() - t0
        return res


def waic(model: Any, data: Any = None, *, draws: Any = None, var: str = "log_lik",
         obs: str | None = None, obs_fields: list[str] | None = None, log_lik: str = "auto",
         settings: Any = None, seed: int | None = None, progress: Any = None) -> WaicResult:
    """WAIC of a fit's pointwise log-likelihood (anything
    :func:`~stanlogz.crossval.psis_loo.fitloo.loo_from_fit` takes: InferenceData, a cmdstanpy fit,
    CSV paths, Draws with ``var`` columns, an array) or of a Stan program with ``data`` (its
    ``log_lik`` or density differences, on ``draws`` or on NUTS draws run with ``settings``,
    a :class:`~stanlogz.stan.settings.NutsArgs`).

    Parameters
    ----------
    model : fit, array, str, Path or StanModel
        A fit's pointwise log-likelihood (InferenceData, cmdstanpy fit, CSV paths,
        :class:`~stanlogz.Draws`, or an array of shape (chains, draws, observations)), or a
        Stan program (a ``.stan`` file or a built :class:`~stanlogz.StanModel`).
    data : dict or str, optional
        The program's data (a dict or a Stan JSON file); not with a fit.
    draws : Draws, cmdstanpy fit, CSV paths or InferenceData, optional
        Draws of the program's posterior, instead of a NUTS run.
    var : str, default "log_lik"
        The fit's pointwise log-likelihood variable.
    obs, obs_fields : str, list of str, optional
        The observation count and the data variables indexed by observation (inferred when
        omitted).
    log_lik : str, default "auto"
        How the program's pointwise log-likelihood is computed: its ``log_lik`` quantity or
        density differences.
    settings : NutsArgs, optional
        Settings of the NUTS run.
    seed : int, optional
        Random seed of the NUTS run (when ``draws`` are omitted).
    progress : callable, optional
        Called with one line of text per step.

    Returns
    -------
    WaicResult
        ``elpd_waic`` with its ``se`` and Monte Carlo ``mcse``, ``p_waic``, the pointwise
        ``elpd_i``, ``lppd_i`` and ``p_waic_i``, and ``warnings``.

    Raises
    ------
    InputError
        A fit given with ``data`` (or with ``draws``), fewer than two draws, or a
        log-likelihood that is not finite.

    See Also
    --------
    stanlogz.loo : PSIS-LOO, with a diagnostic WAIC lacks.
    stanlogz.jacobian_adjusted : a WAIC of a transformed outcome on the original scale.

    Examples
    --------
    WAIC of a log-likelihood array (4 chains x 100 draws x 3 observations):

    >>> import numpy as np, stanlogz
    >>> ll = np.random.default_rng(0).normal(-1.0, 0.1, size=(4, 100, 3))
    >>> w = stanlogz.waic(ll)
    >>> w.elpd_i.shape, bool(np.isclose(w.elpd_waic, w.lppd_i.sum() - w.p_waic))
    ((3,), True)
    """
    t0 = time.perf_counter()
    if is_fit(model) or (model is None and draws is not None):
        if data is not None or (is_fit(model) and draws is not None):
            raise InputError("give a fit, or a Stan program with data (and draws=...)")
        ll, _, what = log_lik_from_fit(model if draws is None else draws, var)
        if ll.shape[0] * ll.shape[1] < 2:
            raise InputError("WAIC needs at least two draws")
        acc = _Accumulator(ll.shape[0], ll.shape[1])
        acc.add(ll.reshape(-1, ll.shape[2]))
        return acc.result(what, t0)

    model, data_dict, observations = load_observed(model, data, obs, obs_fields, seed=seed,
                                                   progress=progress, settings=settings)
    pw = PointwiseLogLik(model, data_dict, observations, log_lik)
    d = (as_draws(draws, model) if draws is not None
         else sample(model, settings, seed=stream_int_seed(seed, Stream.NUTS),
                     progress=progress))
    unc = d.flat_unconstrained()
    pw.check(unc[even_rows(unc.shape[0], 3)])
    con = None if d.constrained is None else d.constrained.reshape(-1, d.constrained.shape[2])
    acc = _Accumulator(d.n_chains, d.n_draws)
    for _, block in pw.chunks(unc, con, d.constrained_names):
        acc.add(block)
    return acc.result(model.name, t0)
