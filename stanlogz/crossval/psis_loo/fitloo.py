"""PSIS-LOO from a fit without its Stan program: the pointwise log-likelihood of an ArviZ
InferenceData / DataTree (or its netCDF file), a cmdstanpy fit, CmdStan CSV files, a
:class:`~stanlogz.draws.Draws` with ``log_lik`` columns, or a log-likelihood array.

The result is the same :class:`~stanlogz.crossval.LooResult` as for a program, with no
fix-ups (refits and moment matching need the program) and ``program``/``data``/``draws`` None.
elpd_loo, its se (loo's), p_loo and k̂ equal ``arviz.loo`` on the same log-likelihood and r_eff.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any

import numpy as np

from ... import arviz_compat
from ..._util.sum_se import sum_se
from ...draws.convert import _is_netcdf
from ...draws.stancsv import read_columns
from ...errors import DataError, InputError
from ...stan.settings import NutsArgs
from ..elpd.psis import psis_loo, relative_efficiency
from ..observations.observations import Observations
from .band_refit import correct_band
from .result import LooResult

#: ``log_lik`` source recorded in a program-free result.
SOURCE = "fit"


def is_fit(obj: Any) -> bool:
    """Whether ``obj`` is a fit (draws with a log-likelihood) rather than a Stan program."""
    if obj is None or hasattr(obj, "log_density_gradient"):
        return False
    if isinstance(obj, str | os.PathLike):
        return not str(obj).endswith(".stan")
    if isinstance(obj, list | tuple):
        return bool(obj) and all(isinstance(p, str | os.PathLike)
                                 and not str(p).endswith(".stan") for p in obj)
    return (arviz_compat.is_inference_data(obj) or type(obj).__name__ in ("CmdStanMCMC", "Draws")
            or isinstance(obj, np.ndarray))


def _flat_columns(names: list[str], values: np.ndarray, var: str
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (chains, n, cols) split into the ``var`` columns and the posterior quantities
    (neither sampler columns ``*__`` nor ``var``), both (chains, n, k)."""
    is_ll = np.array([n == var or n.startswith(var + ".") or n.startswith(var + "[")
                      for n in names])
    is_post = np.array([not n.endswith("__") for n in names]) & ~is_ll
    if not is_ll.any():
        raise DataError(f"the fit has no {var!r} columns; give the Stan program (its density "
                        "gives the pointwise log-likelihood) or a fit with a log_lik quantity")
    return values[:, :, is_ll], values[:, :, is_post]


def log_lik_from_fit(fit: Any, var: str = "log_lik") -> tuple[np.ndarray, np.ndarray | None, str]:
    """The pointwise log-likelihood ``(chains, n, N)`` of a fit, the posterior quantities
    ``(chains, n, k)`` (for r_eff; None for an array) and a short description of the fit."""
    if _is_netcdf(fit):
        path = fit[0] if isinstance(fit, list | tuple) else fit
        if not os.path.isfile(path):
            raise InputError(f"no such file: {path}")
        try:
            fit = arviz_compat.read_netcdf(path)
        except Exception as exc:  # netCDF/HDF5 readers raise many types
            raise DataError(f"{path}: not an ArviZ netCDF file ({exc})") from None
    if arviz_compat.is_inference_data(fit):
        ll = arviz_compat.group(fit, "log_likelihood")
        if ll is None or not ll.data_vars:
            raise DataError("the InferenceData has no log_likelihood group; give the Stan "
                            "program or add the group (e.g. az.from_cmdstanpy(log_likelihood="
                            "'log_lik'))")
        names = [str(v) for v in ll.data_vars]
        if len(names) > 1 and var not in names:
            raise InputError(f"the log_likelihood group holds {', '.join(names)}; name one "
                             "(var=...)")
        arr = ll[var if var in names else names[0]].transpose("chain", "draw", ...).values
        arr = np.asarray(arr, dtype=float).reshape(arr.shape[0], arr.shape[1], -1)
        post = arviz_compat.group(fit, "posterior")
        pv = None
        if post is not None and post.data_vars:
            pv = np.concatenate([np.asarray(post[v].transpose("chain", "draw", ...).values,
                                            dtype=float).reshape(arr.shape[0], arr.shape[1], -1)
                                 for v in post.data_vars], axis=2)
        return arr, pv, "InferenceData"
    if type(fit).__name__ == "CmdStanMCMC":
        values = np.asarray(fit.draws(concat_chains=False), dtype=float).transpose(1, 0, 2)
        ll, post = _flat_columns(list(fit.column_names), values, var)
        return ll, post, "cmdstanpy fit"
    if type(fit).__name__ == "Draws":
        if fit.constrained is None:
            raise DataError("these draws have no constrained values, so no log_lik; give the "
                            "Stan program")
        ll, post = _flat_columns(list(fit.constrained_names), fit.constrained, var)
        return ll, post, "draws"
    if isinstance(fit, str | os.PathLike) or (isinstance(fit, list | tuple) and fit and all(
            isinstance(p, str | os.PathLike) for p in fit)):
        values, names, what = read_columns(fit)
        ll, post = _flat_columns(names, values, var)
        return ll, post, what
    if isinstance(fit, np.ndarray | list | tuple):
        arr = np.asarray(fit, dtype=float)
        if arr.ndim == 2:
            arr = arr[None]
        if arr.ndim != 3:
            raise InputError("a log-likelihood array must be (draws, observations) or "
                             f"(chains, draws, observations), got shape {arr.shape}")
        return arr, None, "log-likelihood array"
    raise InputError(f"cannot read a log-likelihood from {type(fit).__name__}; give "
                     "InferenceData, a cmdstanpy fit, CSV paths, Draws or an array")


def loo_from_fit(fit: Any, *, var: str = "log_lik", r_eff: float | None = None,
                 k_threshold: float | None = None, name: str | None = None) -> LooResult:
    """PSIS-LOO of a fit's pointwise log-likelihood, without the program.

    ``fit``: InferenceData/DataTree or a ``.nc`` file of one (log_likelihood group), a
    cmdstanpy fit, CmdStan CSV path(s) or a glob, :class:`~stanlogz.draws.Draws` (``var``
    columns), or an array ``(draws, N)`` / ``(chains, draws, N)``. ``r_eff``: the relative
    efficiency (default ArviZ's: mean ESS of the posterior quantities over the draws; 1 for an
    array or one chain). Observations above the k̂ threshold are reported, not fixed.
    """
    t0 = time.perf_counter()
    if k_threshold is not None and not 0.0 <= k_threshold <= 1.0:
        raise InputError(f"k_threshold must be in [0, 1], got {k_threshold}")
    if r_eff is not None and not 0.0 < r_eff:
        raise InputError(f"r_eff must be positive, got {r_eff}")
    ll, post, what = log_lik_from_fit(fit, var)
    if r_eff is None:
        r_eff = 1.0 if post is None or post.shape[2] == 0 else relative_efficiency(post)
    ps = psis_loo(ll, r_eff)
    threshold = ps.threshold if k_threshold is None else float(k_threshold)
    elpd_i = ps.elpd_i
    n = elpd_i.size
    p_i = ps.lppd_i - elpd_i
    res = LooResult(
        model=name or what, elpd_loo=float(elpd_i.sum()),
        se=sum_se(elpd_i), p_loo=float(p_i.sum()), elpd_i=elpd_i,
        psis_elpd_i=ps.elpd_i, lppd_i=ps.lppd_i, khat=ps.khat, threshold=threshold,
        n_samples=ps.n_samples, r_eff=float(r_eff), fix="none", log_lik_source=SOURCE,
        observations=Observations(size_name="", fields=(), n=n),
        psis_mcse_i=ps.mcse_i, p_loo_se=sum_se(p_i))
    # the same joint Monte Carlo se as loo() of a program (the observations share the draws)
    res.mcse_psis, res.mcse_bias = ps.total_mcse(), ps.total_bias()
    # the k-hat band's estimated PSIS bias joins it where material, as in loo() of a program
    # whose band refits cost too much: here no value can be refit (band_refit)
    _, res.band = correct_band(np.arange(n), ps.khat, ps.elpd_i, [], None,
                               threshold=threshold, refit_seconds=None, rng=None,
                               psis_mcse=ps.mcse_i,
                               claimed=math.hypot(res.mcse_psis, res.mcse_bias),
                               no_refit="a fit without its program cannot refit them; loo of "
                                        "the program and data refits a sample and corrects "
                                        "the rest")
    res.mcse_elpd_loo = math.hypot(res.mcse_psis, res.mcse_bias,
                                   0.0 if res.band is None else res.band.bias)
    if res.band is not None:
        res.warnings.append(res.band.note)
    bad = res.unfixed_bad()
    if bad:
        res.mcse_elpd_loo = float("nan")  # as loo: NA while a point is above the threshold
    if bad:
        nums = ", ".join(str(i + 1) for i in bad[:10])
        res.warnings.append(f"{len(bad)} observation(s) have Pareto k-hat above "
                            f"{threshold:.2f} ({nums}): their PSIS values are unreliable; give "
                            "the Stan program and data to fix them (moment matching or refits)")
    if res.mcse_elpd_loo > 0.5:
        res.warnings.append(f"the Monte Carlo se of elpd_loo is {res.mcse_elpd_loo:.2f}: run "
                            "more draws (it falls as 1/sqrt(draws))")
    if res.p_loo > 0.4 * n and n > 10:
        res.warnings.append(f"p_loo = {res.p_loo:.1f} is large against {n} observations: the "
                            "model may be misspecified or too flexible")
    res.seconds = time.perf_counter() - t0
    return res


def loo_elsewise(model: Any, data: Any, *, draws: Any, obs: str | None,
                 obs_fields: list[str] | None, fix: str, log_lik: str,
                 k_threshold: float | None, subsample: int | None, settings: NutsArgs,
                 seed: int | None, progress: Any, n_workers: int = 1,
                 ups_options: Any = None, mm_budget: float | None = None,
                 cond_budget: float | None = None, fix_options: Any = None
                 ) -> LooResult:
    """What :func:`~stanlogz.crossval.psis_loo.loo.loo` does for a fit without its program:
    PSIS-LOO of its log_lik with ``k_threshold``; ``progress`` gets one line; ``seed`` is
    accepted (PSIS draws no random numbers, so every seed gives the same result). Every other
    argument needs the program (sampling, fix-ups, the data's observations): given (not at its
    default), it is refused with an :class:`~stanlogz.errors.InputError` that names it."""
    if is_fit(model) and draws is not None:
        raise InputError("give either a Stan program with draws=..., or a fit, not both")
    default = NutsArgs()
    nuts = [f"{f.name}={getattr(settings, f.name)!r}" for f in dataclasses.fields(NutsArgs)
            if getattr(settings, f.name) != getattr(default, f.name)]
    need = [what for what, used in (("data", data is not None),
                                    ("obs", obs is not None),
                                    ("obs_fields", obs_fields is not None),
                                    (f"fix={fix!r}", fix not in ("auto", "none")),
                                    (f"log_lik={log_lik!r}", log_lik not in ("auto", "log_lik")),
                                    ("subsample", subsample is not None),
                                    (f"sampler settings ({', '.join(nuts)})", bool(nuts)),
                                    (f"n_workers={n_workers!r}", n_workers != 1),
                                    ("ups_options", ups_options is not None),
                                    ("mm_budget", mm_budget is not None),
                                    ("cond_budget", cond_budget is not None),
                                    ("fix_options", fix_options is not None)) if used]
    if need:
        raise InputError(f"{', '.join(need)} need(s) the Stan program; a fit alone gives "
                         "PSIS-LOO of its log_lik")
    if progress:
        progress("PSIS-LOO of the fit's log_lik (without the program: no fix-ups)")
    return loo_from_fit(model if draws is None else draws, k_threshold=k_threshold)
