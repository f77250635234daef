"""PSIS-LOO of a Stan program with every unreliable observation fixed by an exact or unbiased
leave-one-out estimate: :func:`loo` and :class:`LooResult`."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import arviz_compat
from ..draws import Draws, as_draws, sample
from ..errors import InputError
from ..parallel import run_parallel, with_client
from .fixups import FIX_METHODS, FixedPoint, FixTask, fix_observation
from .observations import Observations, find_observations
from .pointwise import PointwiseLogLik
from .psis import psis_loo, relative_efficiency

#: k̂ bands of the loo table (the first bound is the draw-count-dependent threshold).
BANDS = ("good", "bad", "very bad")


@dataclass
class LooResult:
    """Leave-one-out cross-validation of one program: elpd_loo with its se, p_loo, and the
    pointwise values (PSIS, or fixed where k̂ was above the threshold)."""

    model: str
    elpd_loo: float
    se: float
    p_loo: float
    elpd_i: np.ndarray  # final pointwise values (fixed ones replaced)
    psis_elpd_i: np.ndarray
    lppd_i: np.ndarray
    khat: np.ndarray
    threshold: float
    n_samples: int
    r_eff: float
    fix: str
    log_lik_source: str
    observations: Observations
    fixed: list[FixedPoint] = field(default_factory=list)
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def n_obs(self) -> int:
        """Number of observations."""
        return int(self.elpd_i.size)

    @property
    def mc_se_i(self) -> np.ndarray:
        """Monte Carlo se of each pointwise value (0 for PSIS points, whose Monte Carlo error
        the loo convention leaves out)."""
        out = np.zeros(self.n_obs)
        for f in self.fixed:
            out[f.index] = f.se
        return out

    def khat_counts(self) -> dict[str, int]:
        """Observations per k̂ band: (-inf, threshold], (threshold, 1], (1, inf)."""
        k = self.khat
        return {"good": int(np.sum(k <= self.threshold)),
                "bad": int(np.sum((k > self.threshold) & (k <= 1.0))),
                "very bad": int(np.sum(k > 1.0))}

    def unfixed_bad(self) -> list[int]:
        """0-based indices of observations above the threshold that were not fixed."""
        done = {f.index for f in self.fixed}
        return [int(i) for i in np.nonzero(self.khat > self.threshold)[0] if i not in done]

    def pointwise(self) -> list[dict[str, Any]]:
        """One row per observation: number (from 1), elpd, its Monte Carlo se, k̂, method."""
        method = ["psis"] * self.n_obs
        for f in self.fixed:
            method[f.index] = f.method
        se = self.mc_se_i
        return [{"observation": i + 1, "elpd": float(self.elpd_i[i]), "mc_se": float(se[i]),
                 "psis_elpd": float(self.psis_elpd_i[i]), "khat": float(self.khat[i]),
                 "method": method[i]} for i in range(self.n_obs)]

    def table(self) -> list[list[Any]]:
        """The loo-style summary rows: (quantity, estimate, se)."""
        return [["elpd_loo", round(self.elpd_loo, 3), round(self.se, 3)],
                ["p_loo", round(self.p_loo, 3), None],
                ["looic", round(-2 * self.elpd_loo, 3), round(2 * self.se, 3)]]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict (pointwise rows included)."""
        return {"model": self.model, "elpd_loo": self.elpd_loo, "se": self.se,
                "p_loo": self.p_loo, "looic": -2 * self.elpd_loo, "n_obs": self.n_obs,
                "n_samples": self.n_samples, "r_eff": self.r_eff, "khat_threshold": self.threshold,
                "khat_counts": self.khat_counts(), "fix": self.fix,
                "log_lik_source": self.log_lik_source,
                "observations": {"size": self.observations.size_name,
                                 "fields": list(self.observations.fields)},
                "fixed": [f.to_dict() for f in self.fixed], "pointwise": self.pointwise(),
                "seconds": self.seconds, "warnings": self.warnings}

    def to_arviz(self) -> Any:
        """The result as ArviZ's ELPD object (``ELPDData`` in 0.x, ``ELPDDataLOO`` in 1.x), with
        the fixed pointwise values, for ``arviz.compare`` and ArviZ's plots."""
        import xarray as xr

        elpd_i = xr.DataArray(self.elpd_i, dims=["obs"], name="loo_i")
        k = xr.DataArray(self.khat, dims=["obs"], name="pareto_k")
        warn = bool(self.unfixed_bad())
        if arviz_compat.arviz_major() >= 1:
            from arviz_stats.utils import ELPDDataLOO

            return ELPDDataLOO(elpd=self.elpd_loo, se=self.se, p=self.p_loo,
                               n_samples=self.n_samples, n_data_points=self.n_obs, scale="log",
                               warning=warn, good_k=self.threshold, elpd_i=elpd_i, pareto_k=k,
                               p_loo_i=xr.DataArray(self.lppd_i - self.elpd_i, dims=["obs"]))
        from arviz.stats.stats_utils import ELPDData

        return ELPDData(
            data=[self.elpd_loo, self.se, self.p_loo, self.n_samples, self.n_obs, warn, elpd_i,
                  k, "log", self.threshold],
            index=["elpd_loo", "se", "p_loo", "n_samples", "n_data_points", "warning", "loo_i",
                   "pareto_k", "scale", "good_k"])


def combine(elpd_i: np.ndarray, mc_se_i: np.ndarray) -> tuple[float, float]:
    """elpd = Σ elpd_i and its se: the between-observation part sqrt(N var(elpd_i)) (as loo and
    ArviZ) plus the Monte Carlo variance of the fixed points."""
    n = elpd_i.size
    return float(elpd_i.sum()), float(math.sqrt(n * np.var(elpd_i) + np.sum(mc_se_i**2)))


@with_client
def loo(
    model: Any,
    data: Any = None,
    *,
    draws: Any = None,
    obs: str | None = None,
    obs_fields: list[str] | None = None,
    fix: str = "exact",
    log_lik: str = "auto",
    k_threshold: float | None = None,
    chains: int = 4,
    warmup: int = 1000,
    n_draws: int = 1000,
    seed: int | None = None,
    n_workers: int = 1,
    ups_options: dict[str, Any] | None = None,
    progress: Any = None,
) -> LooResult:
    """PSIS-LOO of a Stan program (a path or :class:`StanModel`) with ``data``, every observation
    whose Pareto k̂ exceeds the threshold recomputed by ``fix`` (``"exact"``: NUTS without it
    and bridge sampling between the two posteriors; ``"ups"``: unbiased path sampling;
    ``"none"``). ``draws``: existing draws (Draws, cmdstanpy fit, CSV paths, InferenceData);
    without them NUTS runs (``chains`` x ``n_draws`` after ``warmup``). ``obs`` names the
    observation size variable (inferred when unambiguous); ``log_lik``: ``"auto"``,
    ``"log_lik"`` (the generated quantity) or ``"difference"`` (two data instances).
    ``k_threshold``: fix observations above this k̂ instead of the draw-count-dependent
    threshold min(1 − 1/log10 S, 0.7) (e.g. 0.5 to be stricter)."""
    from ..stan.inputs import read_data
    from ..stan.load import load_model

    t0 = time.perf_counter()
    if fix not in FIX_METHODS:
        raise InputError(f"fix must be one of {', '.join(FIX_METHODS)}, got {fix!r}")
    if k_threshold is not None and not 0.0 <= k_threshold <= 1.0:
        raise InputError(f"k_threshold must be in [0, 1], got {k_threshold}")
    model = load_model(model, data, seed=seed, progress=progress)
    data_dict = read_data(data) if data is not None else _model_data(model)
    observations = find_observations(data_dict, obs, obs_fields)
    pw = PointwiseLogLik(model, data_dict, observations, log_lik)
    d = _get_draws(model, draws, chains, warmup, n_draws, seed, progress)
    if progress:
        progress(f"pointwise log-likelihood of {observations.n} observations "
                 f"({pw.source}) at {d.n_chains * d.n_draws} draws")
    ll = pw.matrix(d.flat_unconstrained(), None if d.constrained is None
                   else d.constrained.reshape(-1, d.constrained.shape[2]), d.constrained_names)
    r_eff = relative_efficiency(_posterior_values(d))
    ps = psis_loo(ll, r_eff)
    threshold = ps.threshold if k_threshold is None else float(k_threshold)
    bad = np.nonzero(ps.khat > threshold)[0]
    fixed: list[FixedPoint] = []
    if fix != "none" and bad.size:
        if progress:
            progress(f"fixing {bad.size} observation(s) with k-hat > {threshold:.2f} "
                     f"({fix}): {', '.join(str(i + 1) for i in bad)}")
        tasks = [FixTask(int(i), fix, float(ps.khat[i]), float(ps.elpd_i[i]), chains, warmup,
                         n_draws, dict(ups_options or {})) for i in bad]
        for i in bad:
            pw.held_out_model(int(i))  # build data instances (and check dims) before the workers
        unc = d.unconstrained
        fixed = run_parallel(lambda task, rng: fix_observation(pw, unc, task, rng), tasks,
                             seed, n_workers=n_workers, backend="thread" if n_workers > 1
                             else "serial")
    elpd_i = ps.elpd_i.copy()
    for f in fixed:
        elpd_i[f.index] = f.elpd
    mc_se = np.zeros_like(elpd_i)
    for f in fixed:
        mc_se[f.index] = f.se
    elpd, se = combine(elpd_i, mc_se)
    warns = list(d.summary().warnings) if d.source == "stanlogz-nuts" else []
    res = LooResult(
        model=model.name, elpd_loo=elpd, se=se, p_loo=float(np.sum(ps.lppd_i - elpd_i)),
        elpd_i=elpd_i, psis_elpd_i=ps.elpd_i, lppd_i=ps.lppd_i, khat=ps.khat,
        threshold=threshold, n_samples=ps.n_samples, r_eff=r_eff, fix=fix,
        log_lik_source=pw.source, observations=observations, fixed=fixed,
        seconds=time.perf_counter() - t0, warnings=warns,
    )
    res.warnings.extend(_warnings(res))
    return res


def _model_data(model: Any) -> dict[str, Any]:
    import json

    return json.loads(model.data_json) if getattr(model, "data_json", "") else {}


def _get_draws(model: Any, draws: Any, chains: int, warmup: int, n_draws: int,
               seed: int | None, progress: Any) -> Draws:
    if draws is not None:
        return as_draws(draws, model)
    return sample(model, chains=chains, warmup=warmup, draws=n_draws, seed=seed,
                  progress=progress)


def _posterior_values(d: Draws) -> np.ndarray:
    """The posterior quantities ArviZ would put in the posterior group (no log_lik)."""
    if d.constrained is None:
        return d.unconstrained
    keep = [j for j, n in enumerate(d.constrained_names) if not n.startswith("log_lik")]
    return d.constrained[:, :, keep] if keep else d.unconstrained


def _warnings(r: LooResult) -> list[str]:
    out = []
    left = r.unfixed_bad()
    if left:
        nums = ", ".join(str(i + 1) for i in left[:10])
        out.append(f"{len(left)} observation(s) have Pareto k-hat above {r.threshold:.2f} "
                   f"({nums}): their PSIS values are unreliable; use fix='exact' or 'ups' "
                   "(--fix exact)")
    for f in r.fixed:
        out.extend(f.warnings)
        if f.se > 0.1:
            out.append(f"observation {f.index + 1}: the fixed value has Monte Carlo se "
                       f"{f.se:.2f}; run more draws for it")
    if r.p_loo > 0.4 * r.n_obs and r.n_obs > 10:
        out.append(f"p_loo = {r.p_loo:.1f} is large against {r.n_obs} observations: the model "
                   "may be misspecified or too flexible")
    return out
