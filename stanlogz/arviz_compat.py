"""One interface to ArviZ 0.x (``InferenceData``; what pip installs on Python 3.11) and ArviZ
>= 1.0 (``xarray.DataTree`` with arviz-base and arviz-stats; Python >= 3.12).

Everything in stanlogz that makes or reads InferenceData, or uses ArviZ's PSIS, goes through
this module.
"""

from __future__ import annotations

import os
import warnings
from functools import cache
from typing import Any

import numpy as np


@cache
def arviz() -> Any:
    """The ``arviz`` module, imported without its FutureWarnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz

    return arviz


def arviz_major() -> int:
    """The installed ArviZ's major version (0 or 1)."""
    return int(str(arviz().__version__).split(".")[0])


def from_dict(groups: dict[str, dict[str, np.ndarray] | None]) -> Any:
    """InferenceData (ArviZ 0.x) or DataTree (ArviZ 1.x) from ``{group: {var: array}}``;
    arrays are ``(chain, draw, *shape)``; empty or ``None`` groups are left out."""
    groups = {g: v for g, v in groups.items() if v}
    az = arviz()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arviz_major() >= 1:
            return az.from_dict(groups)
        return az.from_dict(**groups)


def read_netcdf(path: str | os.PathLike) -> Any:
    """InferenceData / DataTree saved with ``to_netcdf``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return arviz().from_netcdf(str(path))


def group(data: Any, name: str) -> Any:
    """The ``xarray.Dataset`` of group ``name`` of InferenceData or DataTree, or ``None``."""
    if type(data).__name__ == "DataTree":
        if name not in data.children:
            return None
        return data[name].to_dataset()
    if name not in getattr(data, "_groups", ()) and not hasattr(data, name):
        return None
    return getattr(data, name, None)


def is_inference_data(obj: Any) -> bool:
    """Whether ``obj`` is an ArviZ InferenceData (0.x) or DataTree (1.x)."""
    return type(obj).__name__ in ("InferenceData", "DataTree")


#: Fewest draws PSIS accepts (a Pareto tail of at least 5 draws, 20% of them).
PSIS_MIN_DRAWS = 25


def psislw(log_ratios: np.ndarray, r_eff: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """ArviZ's Pareto-smoothed importance sampling over the last axis.

    ``log_ratios`` is ``(..., S)``; returns log weights normalized to sum to one over the last
    axis (same shape) and the Pareto k-hat of each row.
    """

    from .errors import InputError

    lr = np.asarray(log_ratios, dtype=float)
    if lr.shape[-1] < PSIS_MIN_DRAWS:
        # ArviZ 1.x refuses a Pareto tail of fewer than 5 draws (20% of S); 0.x would smooth a
        # tail too short to fit: the same clear refusal on both
        raise InputError(f"Pareto smoothed importance sampling needs at least {PSIS_MIN_DRAWS} "
                         f"draws, got {lr.shape[-1]}: run more draws")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if arviz_major() >= 1:
            from arviz_stats.base import array_stats

            # arviz-stats' psislw takes the log-likelihood (it negates its input itself)
            lw, k = _psislw_rows(array_stats.psislw, lr, r_eff)
        else:
            lw, k = arviz().psislw(lr, reff=r_eff)
    lw = np.asarray(lw, dtype=float)
    # ArviZ normalizes already; this guards against rounding (and any version that does not)
    # at the cost of one exp pass instead of scipy's general logsumexp
    top = lw.max(axis=-1, keepdims=True)
    lw -= np.log(np.exp(lw - top).sum(axis=-1, keepdims=True)) + top
    return lw, np.asarray(k, dtype=float)


def ess_mean(values: np.ndarray) -> np.ndarray:
    """ArviZ's ESS for the mean of each column of ``values`` ``(chains, n, k)``."""
    import xarray as xr

    ds = xr.Dataset({"x": (("chain", "draw", "col"), np.asarray(values, dtype=float))})
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(arviz().ess(ds, method="mean")["x"].values, dtype=float)


def loo(data: Any) -> dict[str, Any]:
    """ArviZ's own PSIS-LOO of InferenceData/DataTree with a log_likelihood group, as
    ``{"elpd", "se", "p_loo", "elpd_i", "pareto_k"}`` (for comparisons with ArviZ)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = arviz().loo(data, pointwise=True)
    if arviz_major() >= 1:
        return {"elpd": float(r.elpd), "se": float(r.se), "p_loo": float(r.p),
                "elpd_i": np.asarray(r.elpd_i).ravel(), "pareto_k": np.asarray(r.pareto_k).ravel()}
    return {"elpd": float(r.elpd_loo), "se": float(r.se), "p_loo": float(r.p_loo),
            "elpd_i": np.asarray(r.loo_i).ravel(), "pareto_k": np.asarray(r.pareto_k).ravel()}


def elpd_data(elpd_i: np.ndarray, *, p_loo: float = 0.0, n_samples: int = 1000,
              pareto_k: np.ndarray | None = None, good_k: float = 0.7,
              warning: bool = False) -> Any:
    """ArviZ's ELPD object (``ELPDData`` in 0.x, ``ELPDDataLOO`` in 1.x) from pointwise LOO
    values, so that ArviZ's ``compare`` and plots take them (:func:`elpd_object`). ``good_k``
    defaults to ArviZ's 0.7 (``stanlogz._util.gpd.KHAT_BAD``; this module sits beside
    ``_util``, so it does not import it)."""
    e = np.asarray(elpd_i, dtype=float).ravel()
    n = e.size
    # the ddof-1 se of stanlogz._util.sum_se (a sibling layer, so not imported)
    se = float(np.sqrt(n * np.var(e, ddof=1))) if n > 1 else float("nan")
    return elpd_object("loo", elpd=float(e.sum()), se=se, p=float(p_loo), n_samples=n_samples,
                       elpd_i=e, warning=warning, good_k=good_k,
                       pareto_k=np.zeros(n) if pareto_k is None else pareto_k,
                       p_i=np.full(n, p_loo / n))


#: The seed ArviZ's ``compare(method="BB-pseudo-BMA")`` draws its Dirichlet weights with
#: (ArviZ 1.x fixes it; 0.x takes ``seed``), for reproducing its bootstrap.
def bb_pseudo_bma_seed(seed: int | None) -> int | None:
    """The ``random_state`` ArviZ passes to ``scipy.stats.dirichlet.rvs`` for ``seed``."""
    return 124 if arviz_major() >= 1 else seed


def compare_weights(elpd_i: np.ndarray, method: str, seed: int | None = None) -> np.ndarray:
    """ArviZ's ``compare`` weights (``method`` "stacking", "BB-pseudo-BMA" or "pseudo-BMA") of
    the columns of the ``(N, K)`` pointwise-elpd matrix, in column order."""
    e = np.asarray(elpd_i, dtype=float)
    names = [f"m{j}" for j in range(e.shape[1])]
    data = {n: elpd_data(e[:, j]) for j, n in enumerate(names)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arviz_major() >= 1:
            from arviz_stats import compare

            df = compare(data, method=method.lower(), round_to="none")
        else:
            df = arviz().compare(data, method=method, seed=seed)
    return np.asarray(df.loc[names, "weight"].to_numpy(), dtype=float)


def compare_columns() -> list[str]:
    """The columns of ArviZ's ``compare`` DataFrame on the installed version."""
    if arviz_major() >= 1:
        return ["rank", "elpd_diff", "dse", "p_worse", "diag_diff", "diag_elpd", "p", "elpd", "se",
                "weight"]
    return ["rank", "elpd_loo", "p_loo", "elpd_diff", "weight", "se", "dse", "warning", "scale"]


def compare_diff_sign() -> float:
    """The sign of ``elpd_diff`` in ArviZ's ``compare``: +1 for best − program (0.x), −1 for
    program − best (arviz-stats 1.x)."""
    return -1.0 if arviz_major() >= 1 else 1.0
def elpd_object(kind: str, *, elpd: float, se: float, p: float, n_samples: int,
                elpd_i: np.ndarray, warning: bool, good_k: float | None = None,
                extra: dict[str, Any] | None = None, pareto_k: np.ndarray | None = None,
                p_i: np.ndarray | None = None) -> Any:
    """The one builder of ArviZ's ELPD objects: ``kind`` ``"loo"`` (``pareto_k`` and the
    pointwise ``p_i`` required; 1.x ``ELPDDataLOO``, 0.x ``ELPDData`` with loo's entries),
    ``"kfold"`` or ``"lfo"``. ArviZ 1.x: ``ELPDDataLOOKFold`` / ``ELPDDataLFO`` (``extra``
    holds their own fields, e.g. ``n_folds``), or the base ``ELPDData`` on arviz-stats versions
    without them; for ``"loo"`` ``extra`` becomes attributes (xarray values, e.g. a fix-up's
    ``influence_pareto_k``). ArviZ 0.x, which knows only loo and waic: ``ELPDData`` (a pandas
    Series) under loo's entry names (``elpd_loo``, ``se``, ``p_loo``, ``loo_i``), so
    ``arviz.compare`` and ``print`` accept it, plus ``extra`` entries for ``"loo"`` and
    ``cv_kind`` naming what it really is otherwise."""
    import xarray as xr

    name = "loo_i" if kind == "loo" else f"{kind}_i"
    values = xr.DataArray(np.asarray(elpd_i, dtype=float), dims=["obs"], name=name)
    n = int(values.size)
    extra = dict(extra or {})
    if kind == "loo":
        k_da = xr.DataArray(np.asarray(pareto_k, dtype=float), dims=["obs"], name="pareto_k")
        if arviz_major() >= 1:
            from arviz_stats.utils import ELPDDataLOO

            out = ELPDDataLOO(elpd=elpd, se=se, p=p, n_samples=n_samples, n_data_points=n,
                              scale="log", warning=warning, good_k=good_k, elpd_i=values,
                              pareto_k=k_da,
                              p_loo_i=xr.DataArray(np.asarray(p_i, dtype=float), dims=["obs"]))
            for key, value in extra.items():
                setattr(out, key, value)
            return out
        from arviz.stats.stats_utils import ELPDData

        return ELPDData(data=[elpd, se, p, n_samples, n, warning, values, k_da, "log", good_k,
                              *extra.values()],
                        index=["elpd_loo", "se", "p_loo", "n_samples", "n_data_points",
                               "warning", "loo_i", "pareto_k", "scale", "good_k", *extra])
    if arviz_major() >= 1:
        from arviz_stats import utils

        cls = {"kfold": "ELPDDataLOOKFold", "lfo": "ELPDDataLFO"}[kind]
        common = dict(elpd=elpd, se=se, p=p, n_samples=n_samples, n_data_points=n,
                      scale="log", warning=warning, good_k=good_k, elpd_i=values)
        if hasattr(utils, cls):
            return getattr(utils, cls)(**common, **extra)
        return utils.ELPDData(kind={"kfold": "loo_kfold", "lfo": "lfo_cv"}[kind], **common)
    from arviz.stats.stats_utils import ELPDData

    values.name = "loo_i"
    return ELPDData(data=[elpd, se, p, n_samples, n, warning, values, "log", kind],
                    index=["elpd_loo", "se", "p_loo", "n_samples", "n_data_points", "warning",
                           "loo_i", "scale", "cv_kind"])


def _psislw_rows(psislw: Any, lr: np.ndarray, r_eff: float) -> tuple[np.ndarray, np.ndarray]:
    """arviz-stats' PSIS over the last axis; a row whose tail is constant (arviz-stats raises,
    ArviZ 0.x returns k̂ = inf) keeps its raw log ratios with k̂ = inf."""
    try:
        return psislw(-lr, r_eff=r_eff, axis=-1)
    except ValueError:
        rows = lr.reshape(-1, lr.shape[-1])
        lw, k = np.empty_like(rows), np.empty(rows.shape[0])
        for i, row in enumerate(rows):
            try:
                w, ki = psislw(-row, r_eff=r_eff, axis=-1)
                lw[i], k[i] = np.asarray(w, dtype=float), float(np.ravel(ki)[0])
            except ValueError:
                lw[i], k[i] = row, np.inf
        return lw.reshape(lr.shape), k.reshape(lr.shape[:-1])

