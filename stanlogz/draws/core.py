"""Posterior draws of a Stan program, from stanlogz's NUTS, cmdstanpy, CmdStan CSV or an array.

:class:`Draws` keeps the draws in both spaces: ``unconstrained`` (what evidence estimators use)
and ``constrained`` (what users read: parameters, transformed parameters, generated quantities,
named with Stan's flat names such as ``"beta.2"``), plus sampler diagnostics, the adapted step
sizes and metric, and the cost of sampling.
"""

from __future__ import annotations

import glob
import math
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import arviz_compat
from ..errors import DataError, InputError, ToolchainError

#: Sampler columns of a CmdStan CSV, in CmdStan's order.
SAMPLER_COLUMNS = (
    "lp__",
    "accept_stat__",
    "stepsize__",
    "treedepth__",
    "n_leapfrog__",
    "divergent__",
    "energy__",
)

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

SOURCES = ("stanlogz-nuts", "cmdstanpy", "csv", "arviz", "array")

# Thresholds of the warnings in :meth:`Draws.summary` (Vehtari et al. 2021 recommend R-hat < 1.01
# and a bulk/tail ESS of at least 100 per chain).
RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100


def flat_name(name: str) -> str:
    """Stan's dotted flat name for a column name: ``"beta[1,2]"`` -> ``"beta.1.2"``."""
    name = name.strip()
    m = re.fullmatch(r"([^\[\]]+)\[([^\]]*)\]", name)
    if m:
        return m.group(1) + "".join("." + i.strip() for i in m.group(2).split(","))
    return name


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
        from ..estimators.base import _jsonable

        return _jsonable(
            {"parameters": self.rows, "diagnostics": self.diagnostics, "warnings": self.warnings}
        )


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

    def __post_init__(self) -> None:
        u = np.asarray(self.unconstrained, dtype=float)
        if u.ndim != 3:
            raise InputError(f"unconstrained draws must be (chains, n, dim), got shape {u.shape}")
        self.unconstrained = u
        if self.source not in SOURCES:
            raise InputError(f"unknown draws source {self.source!r}; one of {', '.join(SOURCES)}")
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

    def _values(self) -> tuple[np.ndarray, list[str]]:
        if self.constrained is not None:
            return self.constrained, self.constrained_names
        return self.unconstrained, self.unc_names

    # ------------------------------------------------------------------ summary
    def summary(self) -> DrawsSummary:
        """Mean, sd, 5/50/95% quantiles, bulk/tail ESS and R-hat of each quantity, diagnostics."""
        az = arviz_compat.arviz()
        import xarray as xr

        values, names = self._values()
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
            "source": self.source,
            "seconds": self.seconds,
            "n_gradient_evals": self.n_gradient_evals,
            "sampling_cost_known": self.sampling_cost_known,
        }
        msgs = list(self.warnings)
        if "divergent__" in self.sampler:
            n_div = int(np.sum(self.sampler["divergent__"] > 0))
            diag["divergences"] = n_div
            if n_div:
                msgs.append(
                    f"{n_div} of {chains * n} transitions diverged: increase adapt_delta "
                    "(e.g. --adapt-delta 0.95) or reparameterize the program (e.g. non-centred)"
                )
        if "treedepth__" in self.sampler and self.max_treedepth is not None:
            hits = int(np.sum(self.sampler["treedepth__"] >= self.max_treedepth))
            diag["max_treedepth"] = self.max_treedepth
            diag["max_treedepth_hits"] = hits
            if hits:
                msgs.append(
                    f"{hits} of {chains * n} transitions hit the maximum tree depth "
                    f"{self.max_treedepth}: increase --max-treedepth or reparameterize"
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


# ---------------------------------------------------------------------- constructors
def sample(
    model: Any,
    *,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int | None = None,
    adapt_delta: float = 0.8,
    max_treedepth: int = 10,
    init: Any = None,
    progress: Any = None,
) -> Draws:
    """Draws from stanlogz's own NUTS (Stan's sampler compiled into the model library;
    :meth:`stanlogz.stan.model.StanModel.nuts` checks the arguments)."""
    out = model.nuts(
        chains=chains, warmup=warmup, draws=draws, seed=seed, adapt_delta=adapt_delta,
        max_treedepth=max_treedepth, init=init, progress=progress,
    )
    return Draws(
        unconstrained=out.unconstrained,
        constrained=out.constrained,
        constrained_names=list(out.constrained_names),
        unc_names=list(model.param_unc_names()),
        sampler={k: np.asarray(v) for k, v in out.sampler.items()},
        step_size=np.asarray(out.step_size, dtype=float),
        inv_metric=np.asarray(out.inv_metric, dtype=float),
        seconds=float(out.seconds),
        n_gradient_evals=int(out.n_gradient_evals),
        source="stanlogz-nuts",
        sampling_cost_known=True,  # the library counts warmup and sampling leapfrog steps
        max_treedepth=int(out.max_treedepth),
    )


def _from_columns(
    values: np.ndarray,
    names: list[str],
    model: Any,
    *,
    what: str,
    source: str,
    step_size: np.ndarray | None,
    inv_metric: np.ndarray | None,
    seconds: float,
    max_treedepth: int | None,
) -> Draws:
    """Draws from ``values`` (chains, n, columns) named by CmdStan columns (sampler first)."""
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
    return Draws(
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
    )


def _short(names: Sequence[str], k: int = 6) -> str:
    s = ", ".join(names[:k])
    return s + (f", ... ({len(names)} in all)" if len(names) > k else "")


def from_cmdstanpy(fit: Any, model: Any) -> Draws:
    """Draws from a ``cmdstanpy.CmdStanMCMC`` fit of the same program (``model``)."""
    arr = np.asarray(fit.draws(concat_chains=False), dtype=float)  # (n, chains, columns)
    values = np.ascontiguousarray(arr.transpose(1, 0, 2))
    names = [flat_name(c) for c in fit.column_names]
    inv = fit.inv_metric
    if inv is not None:
        inv = np.asarray(inv, dtype=float)
        if inv.ndim == 3:  # dense metric: keep its diagonal
            inv = np.diagonal(inv, axis1=1, axis2=2)
    cfg = fit.metadata.cmdstan_config
    try:  # cmdstanpy >= 1.2: a list with one {'warmup', 'sampling', 'total'} dict per chain
        seconds = float(sum(t.get("total", 0.0) for t in fit.time))
    except Exception:
        seconds = 0.0
    return _from_columns(
        values, names, model, what="cmdstanpy fit", source="cmdstanpy",
        step_size=None if fit.step_size is None else np.asarray(fit.step_size, dtype=float),
        inv_metric=inv, seconds=seconds,
        max_treedepth=int(cfg["max_depth"]) if "max_depth" in cfg else None,
    )


def from_inference_data(data: Any, model: Any) -> Draws:
    """Draws from ArviZ InferenceData / DataTree (or a netCDF file of one) of the same program.

    The posterior group must hold the program's parameters (Stan names, any shape); a
    log_likelihood group with one variable becomes the ``log_lik`` columns.
    """
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        if not path.is_file():
            raise InputError(f"no such file: {path}")
        try:
            data = arviz_compat.read_netcdf(path)
        except Exception as exc:  # netCDF/HDF5 readers raise many types
            raise DataError(f"{path}: not an ArviZ netCDF file ({_first_line(exc)})") from None
    what = "InferenceData"
    post = arviz_compat.group(data, "posterior")
    if post is None:
        raise DataError(f"{what} has no posterior group")
    names: list[str] = []
    columns: list[np.ndarray] = []

    def add(var: str, arr: np.ndarray) -> None:
        arr = np.asarray(arr, dtype=float)
        if arr.ndim == 2:
            names.append(var)
            columns.append(arr)
            return
        for idx in np.ndindex(*arr.shape[2:][::-1]):  # Stan's column-major order
            idx = idx[::-1]
            names.append(var + "".join(f".{i + 1}" for i in idx))
            columns.append(arr[(slice(None), slice(None), *idx)])

    for var in post.data_vars:
        add(str(var), post[var].transpose("chain", "draw", ...).values)
    ll = arviz_compat.group(data, "log_likelihood")
    if ll is not None and len(ll.data_vars) == 1 and "log_lik" not in post.data_vars:
        var = next(iter(ll.data_vars))
        add("log_lik", ll[var].transpose("chain", "draw", ...).values)
    stats = arviz_compat.group(data, "sample_stats")
    if stats is not None:
        for col, az_name in _ARVIZ_STATS.items():
            if az_name in stats.data_vars:
                names.append(col)
                columns.append(np.asarray(stats[az_name].values, dtype=float))
    values = np.stack(columns, axis=-1)
    return _from_columns(values, names, model, what=what, source="arviz", step_size=None,
                         inv_metric=None, seconds=0.0, max_treedepth=None)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass
class _CsvChain:
    path: Path
    names: list[str]
    rows: np.ndarray
    config: dict[str, str]
    step_size: float | None
    inv_metric: np.ndarray | None
    seconds: float


def _read_cmdstan_csv(path: Path) -> _CsvChain:
    """One CmdStan (or ``stanlogz sample``) CSV file: header, draws, adaptation and timing."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read CSV file {path}: {exc.__class__.__name__}") from None
    config: dict[str, str] = {}
    names: list[str] | None = None
    rows: list[list[float]] = []
    step_size = None
    metric_rows: list[list[float]] = []
    in_metric = False
    seconds = 0.0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            if in_metric:
                try:
                    metric_rows.append([float(v) for v in body.split(",")])
                    continue
                except ValueError:
                    in_metric = False
            if body.startswith("Adaptation terminated"):
                rows = []  # anything before this line was warmup (save_warmup=1)
            elif body.startswith("Step size ="):
                step_size = float(body.split("=", 1)[1])
            elif body.startswith("Diagonal elements of inverse mass matrix") or body.startswith(
                "Elements of inverse mass matrix"
            ):
                in_metric = True
            elif "(Total)" in body:
                m = re.search(r"([0-9.eE+-]+)\s+seconds\s+\(Total\)", body)
                if m:
                    seconds = float(m.group(1))
            elif "=" in body and names is None:
                k, v = body.split("=", 1)
                config.setdefault(k.strip(), v.strip().replace(" (Default)", ""))
            continue
        if names is None:
            names = [flat_name(c) for c in line.split(",")]
            continue
        try:
            vals = [float(v) for v in line.split(",")]
        except ValueError:
            raise DataError(f"{path}:{lineno}: not a number in a draws row") from None
        if len(vals) != len(names):
            raise DataError(f"{path}:{lineno}: {len(vals)} values for {len(names)} columns")
        rows.append(vals)
    if names is None:
        raise DataError(f"{path} is not a CmdStan CSV file: no header line")
    method = config.get("method", "sample").split()[0]
    if method != "sample" or "lp__" not in names:
        raise DataError(f"{path} is not output of Stan's sampler (method = {method})")
    if not rows:
        raise DataError(f"{path} has no post-warmup draws")
    metric = None
    if len(metric_rows) == 1:
        metric = np.array(metric_rows[0])
    elif metric_rows and all(len(r) == len(metric_rows) for r in metric_rows):
        metric = np.diag(np.array(metric_rows))  # dense metric: keep its diagonal
    return _CsvChain(path, names, np.array(rows, dtype=float), config, step_size, metric, seconds)


def _csv_paths(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    out: list[Path] = []
    for p in paths:
        s = os.fspath(p)
        if any(ch in s for ch in "*?["):
            hits = sorted(glob.glob(s))
            if not hits:
                raise InputError(f"no CSV file matches {s}")
            out += [Path(h) for h in hits]
        elif Path(s).is_dir():
            hits = sorted(Path(s).glob("*.csv"))
            if not hits:
                raise InputError(f"no CSV file in directory {s}")
            out += hits
        else:
            if not Path(s).is_file():
                raise InputError(f"CSV file not found: {s}")
            out.append(Path(s))
    if not out:
        raise InputError("no CSV files given")
    return out


def from_csv(paths: str | os.PathLike | Sequence[str | os.PathLike], model: Any) -> Draws:
    """Draws from CmdStan CSV files (one chain each; a glob pattern or a directory also works).

    A file written by ``stanlogz sample --output draws.csv`` holds all chains in one file with
    a ``chain__`` column; it is split back into chains. Every file must have the same columns,
    and the parameter columns must be the model's parameters.
    """
    files = _csv_paths(paths)
    chains: list[_CsvChain] = []
    for f in files:
        ch = _read_cmdstan_csv(f)
        if "chain__" in ch.names:
            j = ch.names.index("chain__")
            keep = [i for i in range(len(ch.names)) if i != j]
            parts = [_CsvChain(f, [ch.names[i] for i in keep],
                               ch.rows[ch.rows[:, j] == cid][:, keep], ch.config, None, None, 0.0)
                     for cid in np.unique(ch.rows[:, j])]
            _attach_adaptation(parts, ch)
            chains += parts
        else:
            chains.append(ch)
    names = chains[0].names
    for ch in chains[1:]:
        if ch.names != names:
            raise DataError(f"{ch.path} has different columns than {chains[0].path}")
    n = min(ch.rows.shape[0] for ch in chains)
    notes = []
    if any(ch.rows.shape[0] != n for ch in chains):
        notes.append(f"chains have different lengths; each was cut to its first {n} draws")
    values = np.stack([ch.rows[:n] for ch in chains])
    what = f"CSV {files[0]}" if len(files) == 1 else f"CSV files {files[0]}, ..."
    steps = [ch.step_size for ch in chains]
    mets = [ch.inv_metric for ch in chains]
    cfg = chains[0].config
    d = _from_columns(
        values, names, model, what=what, source="csv",
        step_size=None if any(s is None for s in steps) else np.array(steps, dtype=float),
        inv_metric=None if any(m is None for m in mets) or len({m.size for m in mets}) != 1
        else np.stack(mets),
        seconds=float(sum(ch.seconds for ch in chains)),
        max_treedepth=int(cfg["max_depth"]) if cfg.get("max_depth", "").isdigit() else None,
    )
    d.warnings.extend(notes)
    return d


def _attach_adaptation(parts: list[_CsvChain], whole: _CsvChain) -> None:
    # A file written by write_csv keeps each chain's step size and metric in its header.
    sizes = whole.config.get("stanlogz_step_size")
    if sizes:
        vals = [float(v) for v in sizes.split(",")]
        if len(vals) == len(parts):
            for p, v in zip(parts, vals, strict=True):
                p.step_size = v
    metric = whole.config.get("stanlogz_inv_metric")
    if metric:
        rows = [np.array([float(v) for v in r.split()]) for r in metric.split(";")]
        if len(rows) == len(parts):
            for p, r in zip(parts, rows, strict=True):
                p.inv_metric = r
    for p in parts:
        p.seconds = whole.seconds / len(parts)


def from_array(unconstrained: np.ndarray, model: Any = None) -> Draws:
    """Draws from unconstrained values ``(chains, n, dim)`` or ``(n, dim)`` (one chain).

    With a ``model`` the constrained parameters and transformed parameters are computed too.
    """
    u = np.asarray(unconstrained, dtype=float)
    if u.ndim == 2:
        u = u[None]
    if u.ndim != 3:
        raise InputError(f"draws must be (chains, n, dim) or (n, dim), got shape {u.shape}")
    if model is None:
        return Draws(unconstrained=u, source="array")
    if u.shape[2] != model.dim:
        raise InputError(f"draws have dimension {u.shape[2]}, model {model.name!r} has {model.dim}")
    if not np.all(np.isfinite(u)):
        raise InputError("draws contain non-finite values")
    chains, n, dim = u.shape
    cons = np.asarray(model.constrain_many(u.reshape(-1, dim), include_tp=True), dtype=float)
    return Draws(
        unconstrained=u,
        constrained=cons.reshape(chains, n, -1),
        constrained_names=list(model.param_names(include_tp=True)),
        unc_names=list(model.param_unc_names()),
        source="array",
    )


def as_draws(obj: Any, model: Any) -> Draws:
    """Draws from a :class:`Draws`, a cmdstanpy fit, CSV path(s) or glob, ArviZ
    InferenceData/DataTree or a ``.nc`` file of one, or an array."""
    if isinstance(obj, Draws):
        d = obj
    elif type(obj).__name__ == "CmdStanMCMC":
        d = from_cmdstanpy(obj, model)
    elif arviz_compat.is_inference_data(obj):
        d = from_inference_data(obj, model)
    elif _is_netcdf(obj):
        d = from_inference_data(obj[0] if isinstance(obj, list | tuple) else obj, model)
    elif isinstance(obj, str | os.PathLike):
        d = from_csv(obj, model)
    elif isinstance(obj, list | tuple) and obj and all(isinstance(p, str | os.PathLike)
                                                         for p in obj):
        d = from_csv(list(obj), model)
    elif isinstance(obj, np.ndarray | list | tuple):
        d = from_array(np.asarray(obj, dtype=float), model)
    else:
        raise InputError(f"cannot use {type(obj).__name__} as draws; give a Draws, a cmdstanpy "
                         "fit, CSV path(s), InferenceData or an array (chains, n, dim)")
    if model is not None and d.dim != model.dim:
        raise InputError(f"draws have dimension {d.dim}, model {model.name!r} has {model.dim}")
    return d


def _is_netcdf(obj: Any) -> bool:
    if isinstance(obj, list | tuple) and len(obj) == 1:
        obj = obj[0]
    return isinstance(obj, str | os.PathLike) and str(obj).endswith(".nc")


def sample_cmdstanpy(
    stan_file: str | os.PathLike,
    data: Any = None,
    *,
    model: Any = None,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    seed: int | None = None,
    adapt_delta: float = 0.8,
    max_treedepth: int = 10,
) -> Draws:
    """Draws from CmdStan through cmdstanpy, when a CmdStan installation exists.

    ``model`` (a :class:`stanlogz.stan.model.StanModel` of the same program and data) converts the
    draws to unconstrained space; it is built from ``stan_file`` and ``data`` when omitted.
    Raises :class:`ToolchainError` when cmdstanpy finds no CmdStan.
    """
    try:
        import cmdstanpy

        cmdstanpy.cmdstan_path()
    except Exception:
        raise ToolchainError(
            "no CmdStan installation found for cmdstanpy; use stanlogz's own sampler "
            "(stanlogz.draws.sample) or set CMDSTAN"
        ) from None
    if model is None:
        from ..stan.model import StanModel

        model = StanModel.from_file(stan_file, data, seed=seed)
    cm = cmdstanpy.CmdStanModel(stan_file=os.fspath(stan_file))
    fit = cm.sample(
        data=data, chains=chains, iter_warmup=warmup, iter_sampling=draws, seed=seed,
        adapt_delta=adapt_delta, max_treedepth=max_treedepth, show_progress=False, sig_figs=18,
    )
    return from_cmdstanpy(fit, model)


def write_csv(d: Draws, path: str | os.PathLike) -> None:
    """Write draws as one CSV file (all chains, ``chain__`` column) readable by :func:`from_csv`.

    The file is written to a temporary name and moved into place, so it is never half-written.
    """
    if d.constrained is None:
        raise InputError("draws without constrained values cannot be written as CSV")
    path = Path(path)
    stats = [c for c in SAMPLER_COLUMNS if c in d.sampler]
    header = stats + ["chain__"] + d.constrained_names
    lines = ["# stanlogz draws", "# method = sample", f"# source = {d.source}"]
    if d.max_treedepth is not None:
        lines.append(f"# max_depth = {d.max_treedepth}")
    if d.step_size is not None:
        lines.append("# stanlogz_step_size = " + ",".join(repr(float(s)) for s in d.step_size))
    if d.inv_metric is not None:
        lines.append("# stanlogz_inv_metric = " + ";".join(
            " ".join(repr(float(v)) for v in row) for row in np.atleast_2d(d.inv_metric)))
    lines.append(",".join(header))
    for c in range(d.n_chains):
        cols = [d.sampler[s][c] for s in stats] + [np.full(d.n_draws, c + 1.0)]
        block = np.column_stack(cols + [d.constrained[c]])
        lines += [",".join(repr(float(v)) for v in row) for row in block]
    lines.append(f"#  Elapsed Time: {d.seconds!r} seconds (Total)")
    atomic_write_text(path, "\n".join(lines) + "\n")


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
