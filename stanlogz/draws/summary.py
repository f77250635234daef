"""The summary of draws users read: mean, sd, quantiles, bulk/tail ESS and R-hat per quantity,
sampler diagnostics, and warnings that say what to do."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import arviz_compat
from .._util.jsonable import json_value

if TYPE_CHECKING:
    from .core import Draws

# Thresholds of the warnings in :meth:`Draws.summary` (Vehtari et al. 2021 recommend R-hat < 1.01
# and a bulk/tail ESS of at least 100 per chain).
RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100


def _int_or_nan(v: float) -> int | float:
    return int(round(v)) if math.isfinite(v) else v


@dataclass
class DrawsSummary:
    """Per-quantity posterior summary, overall sampler diagnostics and warnings that say what to do.

    ``rows`` holds one dict per constrained quantity with keys ``name, mean, sd, q5, q50, q95,
    ess_bulk, ess_tail, r_hat``.
    """

    rows: list[dict[str, Any]]
    diagnostics: dict[str, Any]
    warnings: list[str]

    header = ("name", "mean", "sd", "5%", "50%", "95%", "ess_bulk", "ess_tail", "r_hat")

    def table_rows(self) -> list[list[Any]]:
        """The rows as lists in the order of :attr:`header`."""
        keys = ("name", "mean", "sd", "q5", "q50", "q95")
        return [[r[k] for k in keys] + [_int_or_nan(r["ess_bulk"]), _int_or_nan(r["ess_tail"]),
                                        round(r["r_hat"], 3)] for r in self.rows]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return json_value(
            {"parameters": self.rows, "diagnostics": self.diagnostics, "warnings": self.warnings}
        )


def summarize(d: Draws) -> DrawsSummary:
    """Mean, sd, 5/50/95% quantiles, bulk/tail ESS and R-hat of each quantity, diagnostics."""
    az = arviz_compat.arviz()
    import xarray as xr

    values, names = d._values()
    chains, n, k = values.shape
    ds = xr.Dataset({"x": (("chain", "draw", "col"), values)})
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if n >= 4:
            rhat = np.asarray(az.rhat(ds)["x"].values, dtype=float)
            ess_bulk = np.asarray(az.ess(ds, method="bulk")["x"].values, dtype=float)
            ess_tail = np.asarray(az.ess(ds, method="tail")["x"].values, dtype=float)
        else:
            rhat = ess_bulk = ess_tail = np.full(k, np.nan)
    flat = values.reshape(-1, k)
    q = np.quantile(flat, [0.05, 0.5, 0.95], axis=0)
    rows = [
        {
            "name": names[j],
            "mean": float(flat[:, j].mean()),
            "sd": float(flat[:, j].std(ddof=1)) if flat.shape[0] > 1 else float("nan"),
            "q5": float(q[0, j]),
            "q50": float(q[1, j]),
            "q95": float(q[2, j]),
            "ess_bulk": float(ess_bulk[j]),
            "ess_tail": float(ess_tail[j]),
            "r_hat": float(rhat[j]),
        }
        for j in range(k)
    ]
    diag: dict[str, Any] = {
        "chains": chains,
        "draws_per_chain": n,
        "source": d.source,
        "seconds": d.seconds,
        "n_gradient_evals": d.n_gradient_evals,
        "sampling_cost_known": d.sampling_cost_known,
    }
    msgs = list(d.warnings)
    if "divergent__" in d.sampler:
        n_div = int(np.sum(d.sampler["divergent__"] > 0))
        diag["divergences"] = n_div
        if n_div:
            msgs.append(
                f"{n_div} of {chains * n} transitions diverged: increase adapt_delta "
                "(e.g. --adapt-delta 0.95) or reparameterize the program (e.g. non-centred)"
            )
    if "treedepth__" in d.sampler and d.max_treedepth is not None:
        hits = int(np.sum(d.sampler["treedepth__"] >= d.max_treedepth))
        diag["max_treedepth"] = d.max_treedepth
        diag["max_treedepth_hits"] = hits
        if hits:
            msgs.append(
                f"{hits} of {chains * n} transitions hit the maximum tree depth "
                f"{d.max_treedepth}: increase --max-treedepth or reparameterize"
            )
    if d.step_size is not None:
        diag["step_size"] = [float(s) for s in np.atleast_1d(d.step_size)]
    finite_rhat = np.where(np.isfinite(rhat), rhat, -np.inf)
    if chains > 1 and np.any(finite_rhat > RHAT_MAX):
        j = int(np.argmax(finite_rhat))
        bad = int(np.sum(finite_rhat > RHAT_MAX))
        msgs.append(
            f"R-hat of {bad} quantit{'y' if bad == 1 else 'ies'} exceeds {RHAT_MAX} "
            f"(worst: {names[j]} {rhat[j]:.3f}): the chains disagree; run longer "
            "(more --warmup and --draws) or check for multimodality"
        )
    ess_min = np.nanmin(np.minimum(ess_bulk, ess_tail)) if k and n >= 4 else np.nan
    diag["max_r_hat"] = float(np.nanmax(rhat)) if np.any(np.isfinite(rhat)) else None
    diag["min_ess"] = float(ess_min) if np.isfinite(ess_min) else None
    if np.isfinite(ess_min) and ess_min < ESS_PER_CHAIN_MIN * chains:
        msgs.append(
            f"smallest bulk/tail ESS is {ess_min:.0f} < {ESS_PER_CHAIN_MIN * chains} "
            f"({ESS_PER_CHAIN_MIN} per chain): run more draws"
        )
    return DrawsSummary(rows=rows, diagnostics=diag, warnings=msgs)
