"""Posterior draws of a Stan program, from stanlogz's NUTS, cmdstanpy, CmdStan CSV or an array.

:class:`Draws` keeps the draws in both spaces: ``unconstrained`` (what evidence estimators use)
and ``constrained`` (what users read: parameters, transformed parameters, generated quantities,
named with Stan's flat names such as ``"beta.2"``), plus sampler diagnostics, the adapted step
sizes and metric, and the cost of sampling.
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import arviz_compat
from .._util.arrays import even_rows
from ..errors import DataError, InputError, Route
from ..stan.nuts import (
    SAMPLER_COLUMNS,  # noqa: F401 - the draws' sampler columns
    budget_stop_dict,
)
from ..stan.program import StanProgram
from .project import project_rounded
from .summary import ESS_PER_CHAIN_MIN, RHAT_MAX, DrawsSummary

#: Sampler column -> ArviZ ``sample_stats`` name.
_ARVIZ_STATS = {
    "lp__": "lp",
    "accept_stat__": "acceptance_rate",
    "stepsize__": "step_size",
    "treedepth__": "tree_depth",
    "n_leapfrog__": "n_steps",
    "divergent__": "diverging",
    "energy__": "energy",
}

DRAW_SOURCES = ("stanlogz-nuts", "cmdstanpy", "csv", "arviz", "array")


def flat_name(name: str) -> str:
    """Stan's dotted flat name for a column name: ``"beta[1,2]"`` -> ``"beta.1.2"``."""
    name = name.strip()
    m = re.fullmatch(r"([^\[\]]+)\[([^\]]*)\]", name)
    if m:
        return m.group(1) + "".join("." + i.strip() for i in m.group(2).split(","))
    return name


@dataclass
class Draws:
    """Posterior draws of one Stan program.

    ``unconstrained`` is ``(chains, n, dim)``; ``constrained`` is ``(chains, n, k)`` with
    ``constrained_names`` (Stan's flat names) or ``None`` when only unconstrained draws are known.
    ``sampler`` maps CmdStan sampler columns (``lp__``, ``divergent__``, ...) to ``(chains, n)``
    arrays and may be empty. ``seconds`` and ``n_gradient_evals`` are the cost of producing the
    draws as far as it is known (for CSV input: the recorded post-warmup leapfrog steps and the
    summed elapsed time of all chains). ``sampling_cost_known`` is True only when
    ``n_gradient_evals`` is the whole cost, warmup included (stanlogz's own NUTS, :func:`sample`);
    estimators that budget against the sampling cost (gbs's n_q rule) treat it as unknown
    otherwise.
    """

    unconstrained: np.ndarray
    constrained: np.ndarray | None = None
    constrained_names: list[str] = field(default_factory=list)
    unc_names: list[str] = field(default_factory=list)
    sampler: dict[str, np.ndarray] = field(default_factory=dict)
    step_size: np.ndarray | None = None
    inv_metric: np.ndarray | None = None
    seconds: float = 0.0
    n_gradient_evals: int = 0
    source: str = "array"
    sampling_cost_known: bool = False
    max_treedepth: int | None = None
    warnings: list[str] = field(default_factory=list)
    #: the target acceptance NUTS adapted to (None when the draws do not say)
    adapt_delta: float | None = None
    #: (draws kept, draws asked) per chain when the time budget ended sampling after the
    #: warmup, with (chains kept, chains) where chains still in warmup were left out (a
    #: warning says so); None when sampling went to its end
    budget_stop: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        u = np.asarray(self.unconstrained, dtype=float)
        if u.ndim != 3:
            raise InputError(f"unconstrained draws must be (chains, n, dim), got shape {u.shape}")
        self.unconstrained = u
        if self.source not in DRAW_SOURCES:
            raise InputError(f"unknown draws source {self.source!r}; one of "
                             f"{', '.join(DRAW_SOURCES)}")
        if self.constrained is not None:
            c = np.asarray(self.constrained, dtype=float)
            if c.ndim != 3 or c.shape[:2] != u.shape[:2]:
                raise InputError(
                    f"constrained draws {c.shape} do not match unconstrained draws {u.shape}"
                )
            if self.constrained_names and len(self.constrained_names) != c.shape[2]:
                raise InputError(
                    f"{len(self.constrained_names)} constrained names for {c.shape[2]} columns"
                )
            if not self.constrained_names:
                self.constrained_names = [f"theta.{i + 1}" for i in range(c.shape[2])]
            self.constrained = c
        if not self.unc_names:
            self.unc_names = [f"x.{i + 1}" for i in range(u.shape[2])]

    def __repr__(self) -> str:
        """One line: shape, quantities, source and cost (the arrays are attributes;
        :meth:`summary` is the table)."""
        names = self.constrained_names if self.constrained is not None else self.unc_names
        shown = ", ".join(names[:6]) + (f", ... ({len(names)} in all)" if len(names) > 6 else "")
        cost = f", {self.seconds:.1f} s" if self.seconds else ""
        return (f"Draws({self.n_chains} chains x {self.n_draws} draws, {self.dim} unconstrained "
                f"dims; {shown}; from {self.source}{cost})")

    @property
    def n_chains(self) -> int:
        """Number of chains."""
        return int(self.unconstrained.shape[0])

    @property
    def n_draws(self) -> int:
        """Draws per chain."""
        return int(self.unconstrained.shape[1])

    @property
    def dim(self) -> int:
        """Dimension of the unconstrained space."""
        return int(self.unconstrained.shape[2])

    def flat_unconstrained(self) -> np.ndarray:
        """All unconstrained draws as ``(chains * n, dim)``."""
        return self.unconstrained.reshape(-1, self.dim)

    def thinned(self, per_chain: int) -> Draws:
        """The same chains with ``per_chain`` draws each, spread evenly over each chain (the
        first and last kept), with their sampler diagnostics; ``self`` when it has no more.
        The cost of producing them stays the whole run's."""
        if per_chain >= self.n_draws:
            return self
        rows = even_rows(self.n_draws, per_chain)
        sampler = {k: (v[:, rows] if np.ndim(v) >= 2 and np.shape(v)[:2] == (self.n_chains,
                                                                           self.n_draws) else v)
                   for k, v in self.sampler.items()}
        return dataclasses.replace(
            self, unconstrained=self.unconstrained[:, rows],
            constrained=None if self.constrained is None else self.constrained[:, rows],
            sampler=sampler, warnings=list(self.warnings))

    def _values(self, only: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
        if self.constrained is not None:
            values, names = self.constrained, self.constrained_names
        else:
            values, names = self.unconstrained, self.unc_names
        if only is not None:
            wanted = set(only)
            keep = [j for j, n in enumerate(names) if n in wanted]
            if keep:  # none of them (e.g. unconstrained draws only): every column
                return values[:, :, keep], [names[j] for j in keep]
        return values, list(names)

    # ------------------------------------------------------------------ summary
    def summary(self, names: Sequence[str] | None = None) -> DrawsSummary:
        """Mean, sd, 5/50/95% quantiles, bulk/tail ESS and R-hat of each quantity (only the
        columns ``names``, Stan's flat names, when given and present), diagnostics."""
        az = arviz_compat.arviz()
        import xarray as xr

        values, names = self._values(names)
        chains, n, k = values.shape
        ds = xr.Dataset({"x": (("chain", "draw", "col"), values)})
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if n >= 4:
                # ArviZ's R-hat is NaN with one chain, and says so on its logger (a line the
                # user did not ask for): NaN without asking
                rhat = (np.asarray(az.rhat(ds)["x"].values, dtype=float) if chains >= 2
                        else np.full(k, np.nan))
                ess_bulk = np.asarray(az.ess(ds, method="bulk")["x"].values, dtype=float)
                ess_tail = np.asarray(az.ess(ds, method="tail")["x"].values, dtype=float)
                ess_mean = np.asarray(az.ess(ds, method="mean")["x"].values, dtype=float)
            else:
                rhat = ess_bulk = ess_tail = ess_mean = np.full(k, np.nan)
        flat = values.reshape(-1, k)
        q = np.quantile(flat, [0.05, 0.5, 0.95], axis=0)
        sd = flat.std(axis=0, ddof=1) if flat.shape[0] > 1 else np.full(k, np.nan)
        rows = [
            {
                "name": names[j],
                "mean": float(flat[:, j].mean()),
                "sd": float(sd[j]),
                # Monte Carlo se of the mean: sd / sqrt(ESS of the mean)
                "mcse_mean": float(sd[j] / np.sqrt(ess_mean[j])) if ess_mean[j] > 0
                else float("nan"),
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
            "source": self.source,
            "seconds": self.seconds,
            "n_gradient_evals": self.n_gradient_evals,
            "sampling_cost_known": self.sampling_cost_known,
        }
        if self.budget_stop is not None:
            diag["budget_stop"] = budget_stop_dict(self.budget_stop)
        msgs = list(self.warnings)
        if "divergent__" in self.sampler:
            n_div = int(np.sum(self.sampler["divergent__"] > 0))
            diag["divergences"] = n_div
            if n_div:
                msgs.append(f"{n_div} of {chains * n} transitions diverged: "
                            + divergence_advice(self.adapt_delta))
        if "treedepth__" in self.sampler and self.max_treedepth is not None:
            hits = int(np.sum(self.sampler["treedepth__"] >= self.max_treedepth))
            diag["max_treedepth"] = self.max_treedepth
            diag["max_treedepth_hits"] = hits
            if hits:
                msgs.append(
                    f"{hits} of {chains * n} transitions hit the maximum tree depth "
                    f"{self.max_treedepth}: increase {Route(options={'max_treedepth': ...})} or "
                    "reparameterize"
                )
        if self.step_size is not None:
            diag["step_size"] = [float(s) for s in np.atleast_1d(self.step_size)]
        finite_rhat = np.where(np.isfinite(rhat), rhat, -np.inf)
        if chains > 1 and np.any(finite_rhat > RHAT_MAX):
            j = int(np.argmax(finite_rhat))
            bad = int(np.sum(finite_rhat > RHAT_MAX))
            msgs.append(
                f"R-hat of {bad} quantit{'y' if bad == 1 else 'ies'} exceeds {RHAT_MAX} "
                f"(worst: {names[j]} {rhat[j]:.3f}): the chains disagree; run longer "
                f"(more {Route(options={'warmup': ..., 'draws': ...})}) or check for "
                "multimodality"
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

    # ------------------------------------------------------------------ ArviZ
    def to_inference_data(self) -> Any:
        """ArviZ InferenceData (ArviZ 0.x) or DataTree (ArviZ >= 1) with posterior,
        sample_stats and, given a ``log_lik`` generated quantity, a log_likelihood group."""
        values, names = self._values()
        grouped = group_flat_names(names)
        posterior: dict[str, np.ndarray] = {}
        log_lik: dict[str, np.ndarray] = {}
        for var, (shape, cols) in grouped.items():
            arr = values[:, :, cols].reshape(values.shape[:2] + shape, order="F")
            (log_lik if var == "log_lik" else posterior)[var] = arr
        stats = {
            _ARVIZ_STATS[k]: (v.astype(bool) if k == "divergent__" else v)
            for k, v in self.sampler.items()
            if k in _ARVIZ_STATS
        }
        return arviz_compat.from_dict(
            {"posterior": posterior, "sample_stats": stats, "log_likelihood": log_lik}
        )


def group_flat_names(names: Sequence[str]) -> dict[str, tuple[tuple[int, ...], list[int]]]:
    """Group Stan flat names into variables: name -> (shape, column indices in Fortran order).

    ``["a", "b.1.1", "b.2.1", "b.1.2", "b.2.2"]`` gives ``{"a": ((), [0]), "b": ((2, 2), [1, 2,
    3, 4])}``. Names with non-integer parts (complex ``z.real``, tuples ``t.1:2``) stay flat.
    """
    parsed: dict[str, list[tuple[tuple[int, ...], int]]] = {}
    out: dict[str, tuple[tuple[int, ...], list[int]]] = {}
    for j, name in enumerate(names):
        base, *idx = name.split(".")
        if idx and all(i.isdigit() for i in idx):
            parsed.setdefault(base, []).append((tuple(int(i) for i in idx), j))
        else:
            out[name] = ((), [j])
    for base, entries in parsed.items():
        ndim = {len(i) for i, _ in entries}
        if len(ndim) != 1 or base in out:
            for _, j in entries:
                out[names[j]] = ((), [j])
            continue
        shape = tuple(max(i[d] for i, _ in entries) for d in range(ndim.pop()))
        if math.prod(shape) != len(entries):
            for _, j in entries:
                out[names[j]] = ((), [j])
            continue
        # Position of each element in Fortran (column-major) order.
        pos = {i: int(np.ravel_multi_index(tuple(x - 1 for x in i), shape, order="F"))
               for i, _ in entries}
        cols = [0] * len(entries)
        for i, j in entries:
            cols[pos[i]] = j
        out[base] = (shape, cols)
    return out


def divergence_advice(adapt_delta: float | None) -> str:
    """What to do about divergences, given the ``adapt_delta`` the draws were adapted to (the
    sampler setting); the setting is named as a :class:`~stanlogz.errors.Route`."""
    reparam = "reparameterize the program (e.g. non-centred)"
    ad = Route(options={"adapt_delta": ...})
    if adapt_delta is None:
        return (f"raise {ad} above the value used, e.g. to 0.95 or 0.99, "
                f"or {reparam}")
    if adapt_delta < 0.95:
        return f"raise {ad} from {adapt_delta:g} to 0.95, or {reparam}"
    if adapt_delta < 0.99:
        return f"raise {ad} from {adapt_delta:g} to 0.99, or {reparam}"
    return (f"{ad} is already {adapt_delta:g}, so raising it further "
            f"seldom helps: {reparam}")


def _from_columns(
    values: np.ndarray,
    names: list[str],
    model: StanProgram,
    *,
    what: str,
    source: str,
    step_size: np.ndarray | None,
    inv_metric: np.ndarray | None,
    seconds: float,
    max_treedepth: int | None,
    sig_figs: int = 6,
    adapt_delta: float | None = None,
) -> Draws:
    """Draws from ``values`` (chains, n, columns) named by CmdStan columns (sampler first).
    Values rounded to ``sig_figs`` digits are projected onto their constraints first."""
    chains, n, _ = values.shape
    sampler = {nm: values[:, :, j] for j, nm in enumerate(names) if nm.endswith("__")}
    qcols = [j for j, nm in enumerate(names) if not nm.endswith("__")]
    qnames = [names[j] for j in qcols]
    pnames = list(model.param_names())
    missing = [p for p in pnames if p not in qnames]
    if missing:
        extra = [q for q in qnames if q not in set(model.param_names(include_tp=True,
                                                                     include_gq=True))]
        msg = f"{what} does not match model {model.name!r}: missing parameter columns "
        msg += _short(missing)
        if extra:
            msg += f"; columns not in the model: {_short(extra)}"
        raise DataError(msg)
    index = {nm: j for j, nm in zip(qcols, qnames, strict=True)}
    theta = values[:, :, [index[p] for p in pnames]].reshape(chains * n, len(pnames))
    theta, projected = project_rounded(theta, pnames, model, sig_figs)
    try:
        unc = np.asarray(model.unconstrain_many(theta), dtype=float)
    except DataError:
        raise
    except (InputError, RuntimeError) as exc:  # StanModel: InputError; bridgestan: RuntimeError
        raise DataError(f"{what}: cannot unconstrain the draws: {_first_line(exc)}") from None
    unc = unc.reshape(chains, n, -1)
    if not np.all(np.isfinite(unc)):
        c, i, _ = np.argwhere(~np.isfinite(unc))[0]
        raise DataError(
            f"{what}: draw {i + 1} of chain {c + 1} lies on the boundary of the parameter space "
            "(too few digits?); write the CSV with more significant digits (sig_figs=18)"
        )
    n_leap = sampler.get("n_leapfrog__")
    out = Draws(
        unconstrained=unc,
        constrained=values[:, :, qcols],
        constrained_names=qnames,
        unc_names=list(model.param_unc_names()),
        sampler=sampler,
        step_size=step_size,
        inv_metric=inv_metric,
        seconds=seconds,
        n_gradient_evals=int(np.sum(n_leap)) if n_leap is not None else 0,
        source=source,
        max_treedepth=max_treedepth,
        adapt_delta=adapt_delta,
    )
    if projected:
        out.warnings.append(projected)
    return out


def _short(names: Sequence[str], k: int = 6) -> str:
    s = ", ".join(names[:k])
    return s + (f", ... ({len(names)} in all)" if len(names) > k else "")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


