"""Programs compared by elpd_loo, as ``loo_compare`` does: differences to the best program with
the se of the paired pointwise differences, the normal-approximation probability that each
program predicts worse than the best (``p_worse``), and diagnostics of when that normal
approximation is unreliable (Sivula, Magnusson, Matamoros & Vehtari 2022; loo 2.10):

* ``diag_diff``: ``"|elpd_diff| < 4"`` (models predict so alike that the difference's
  distribution is skewed and the se unreliable), else ``"N < 100"`` (few observations: the se
  is too optimistic), else ``"khat_diff > 0.5"`` (the pointwise differences have a heavy
  tail, e.g. outliers: the Pareto k̂ of |d_i − median d| above 0.5 means their variance may be
  infinite); empty when none applies.
* ``diag_elpd``: ``"K k_psis > t"`` when K observations of the program still have Pareto k̂
  above the threshold t (not fixed), so its elpd_loo itself is unreliable.

Every loo/ArviZ name carries loo's number: ``diff_se`` (``se_diff``, ``dse``) is loo's
sqrt(N var(d_i)) of the paired pointwise differences, always given, flagged by ``diag_diff`` as
loo flags it. What stanlogz knows better goes beside it under its own name (coverage against
exact truths in ``benchmarks/coverage_interval.py``, docs/error-bars.md):

* ``diff_interval``: elpd_diff ± 2 c diff_se at level 0.954, c the small-N bootstrap-t factor
  of the paired differences (:func:`stanlogz.crossval.refit.cv_se.elpd_interval`), given where
  |elpd_diff| >= 4 and N >= 20; NaN elsewhere, with the reason in :meth:`warnings`: below
  |elpd_diff| = 4 the error of the LOO difference has a floor of a few nats that the pointwise
  differences do not show (nested programs whose extra term does nothing score almost alike at
  every observation, yet their true difference is chance), and no se built from them covered
  (0.62–0.89 for nested programs); at N < 20 the factor rests on too few values;
* ``p_worse`` = Φ(−elpd_diff / diff_se) as loo, except NaN where |elpd_diff| < 4: there loo's
  value was overconfident (0.65–0.73 where the truth was 0.56–0.66), with the reason in
  :meth:`warnings`;
* ``diff_mcse``: the Monte Carlo se of each elpd_diff (loo leaves it out of se_diff).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from ... import arviz_compat
from ..._util.gpd import KHAT_HEAVY
from ..._util.sum_se import sum_se
from ...errors import InputError, Route
from ..elpd.base import ElpdResult
from ..names import FEW_OBS, LooComparisonNames
from ..refit.cv_se import elpd_interval


def difference_warnings(names: list[str], diag_diff: list[str], diag_elpd: list[str],
                        khat_diff: Any, *, unit: str, elpd_name: str, rerun: str) -> list[str]:
    """The lines that explain each program's ``diag_diff`` and ``diag_elpd`` flags, for a
    comparison over ``unit`` (observations, or groups for leave-one-group-out)."""
    out = []
    for i, (d, e) in enumerate(zip(diag_diff, diag_elpd, strict=True)):
        n = names[i]
        if d == "|elpd_diff| < 4":
            out.append(f"{n}: |elpd_diff| < 4: the programs predict almost alike; no se of "
                       "so small a difference covers its error (nested programs: +-1 se "
                       "covered 0.62-0.89), so p_worse and diff_interval are not given "
                       "(diff_se is loo's, for reference); the choice matters little: "
                       "weigh the programs by stacking (weights) or choose on other grounds")
        elif d.startswith("khat_diff"):
            out.append(f"{n}: the differences to the best, one per {unit[:-1]}, have a heavy "
                       f"tail (k-hat {khat_diff[i]:.2f}); look at the outlying {unit} before "
                       "trusting diff_se")
        if e:
            out.append(f"{n}: {e}: its {elpd_name} is unreliable; {rerun}")
    return out


#: What to rerun with when a program's values are left above the k̂ threshold, by unit.
_RERUN = {"observations": ("exact", ""), "groups": ("auto", " to refit those groups")}


@dataclass(repr=False)
class LooComparison(LooComparisonNames):
    """Programs compared by one kind of elpd result over the same units (PSIS-LOO over
    observations, leave-one-group-out over groups, ...): elpd per program, differences to the
    best and their standard errors (module docstring). The columns take the results' loo
    names (``elpd_loo`` / ``elpd_logo``, ``p_loo`` / ``p_logo``)."""

    names: list[str]
    results: list[ElpdResult]
    elpd_diff: np.ndarray
    diff_se: np.ndarray
    best: int
    #: P(program predicts worse than the best) = Φ(−elpd_diff / diff_se); NaN for the best and
    #: where |elpd_diff| < 4 (module docstring)
    p_worse: np.ndarray | None = None
    #: Pareto k̂ of the pointwise differences to the best (NaN for the best or N < 20)
    khat_diff: np.ndarray | None = None
    diag_diff: list[str] | None = None
    diag_elpd: list[str] | None = None
    #: Monte Carlo se of each elpd_diff: both programs' complete Monte Carlo se of their elpd
    #: (their draws are independent runs), 0 for the best
    diff_mcse: np.ndarray | None = None
    #: calibrated interval of each elpd_diff, ``(k, 2)`` (low, high) at level
    #: :data:`~stanlogz.crossval.refit.cv_se.LEVEL_2SE`; NaN for the best and where none is
    #: given (module docstring)
    diff_interval: np.ndarray | None = None

    @property
    def kind(self) -> str:
        """The kind of the results compared (``"loo"``, ``"logo"``, ...)."""
        return self.results[0].kind

    @property
    def unit(self) -> str:
        """What the pointwise differences run over: observations or groups."""
        return self.results[0].unit

    @property
    def n_units(self) -> int:
        """The number of units the differences sum over."""
        return self.results[0].n_units

    @property
    def header(self) -> tuple[str, ...]:
        """Column names of :meth:`table`."""
        r = self.results[0]
        return ("model", r.elpd_name, "se", "elpd_diff", "diff_se", r.p_name, "fixed",
                "p_worse", "diag_diff", "diag_elpd", "mcse", "diff_mcse")

    def order(self) -> list[int]:
        """Program indices, best elpd first."""
        return [int(i) for i in np.argsort(-np.array([r.elpd for r in self.results]),
                                           kind="stable")]

    def table(self) -> list[list[Any]]:
        """One row per program, best first, in the order of :attr:`header`."""
        k = len(self.names)
        dd, de = self.diag_diff or [""] * k, self.diag_elpd or [""] * k
        return [[self.names[i], r.elpd, r.se, float(self.elpd_diff[i]),
                 json_number(self.diff_se, i), json_float(r.p), len(r.fixed_labels()),
                 json_number(self.p_worse, i), dd[i], de[i], json_float(r.mcse),
                 json_number(self.diff_mcse, i)]
                for i in self.order() for r in (self.results[i],)]

    def warnings(self) -> list[str]:
        """What the diagnostics mean for this comparison, and what to do."""
        out = []
        n, unit = self.n_units, self.unit
        if n < MIN_OBS and len(self.results) > 1:
            out.append(f"only {n} {unit}: diff_se is loo's, but no calibrated diff_interval "
                       "is given " + (
                           "(with so few, +-2 se covered 84% of the errors at N = 10 even with "
                           "a right model); compare the programs' evidence instead "
                           f"({Route('compare', {'use_evidence': True})}), which needs no "
                           "average over observations" if unit == "observations" else
                           f"(too few {unit} for the small-N factor)"))
        elif "N < 100" in (self.diag_diff or []):
            out.append(f"only {n} {unit}: loo's diff_se is too optimistic at this many units "
                       "(diag_diff 'N < 100'); diff_interval carries the small-N factor")
        fix, why = _RERUN.get(unit, _RERUN["observations"])
        out.extend(difference_warnings(self.names, self.diag_diff or [], self.diag_elpd or [],
                                       self.khat_diff, unit=unit,
                                       elpd_name=self.results[0].elpd_name,
                                       rerun=f"rerun with {Route(options={'fix': fix})}{why}"))
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict: ``kind``, ``unit``, ``n_units``, ``best`` and one entry
        per program under the results' loo names."""
        k = len(self.names)
        models = []
        for j, (n, r) in enumerate(zip(self.names, self.results, strict=True)):
            models.append({
                "name": n, r.elpd_name: r.elpd, "se": r.se,
                f"mcse_{r.elpd_name}": json_float(r.mcse),
                "elpd_diff": float(self.elpd_diff[j]), "diff_se": json_number(self.diff_se, j),
                "diff_interval": json_pair(self.diff_interval, j),
                "diff_mcse": json_number(self.diff_mcse, j),
                r.p_name: json_float(r.p), "fixed": r.fixed_labels(),
                "warnings": r.warnings, "p_worse": json_number(self.p_worse, j),
                "khat_diff": json_number(self.khat_diff, j),
                "diag_diff": (self.diag_diff or [""] * k)[j],
                "diag_elpd": (self.diag_elpd or [""] * k)[j], **r.unit_values()})
        return {"kind": self.kind, "unit": self.unit, "n_units": self.n_units,
                "best": self.names[self.best], "models": models,
                **self.results[0].comparison_info()}


def json_number(values: np.ndarray | None, j: int) -> float | None:
    """``values[j]`` as a JSON number: None where there is no array or the value is not
    finite."""
    if values is None or not np.isfinite(values[j]):
        return None
    return float(values[j])


def json_float(value: float) -> float | None:
    """``value`` as a JSON number: None where it is not finite."""
    return float(value) if np.isfinite(value) else None


def json_pair(values: np.ndarray | None, j: int) -> list[float] | None:
    """Row ``j`` of an interval array as ``[low, high]``; None unless both are finite."""
    if values is None or not np.all(np.isfinite(values[j])):
        return None
    return [float(values[j][0]), float(values[j][1])]


def p_worse(elpd_diff: np.ndarray, diff_se: np.ndarray) -> np.ndarray:
    """Φ(−elpd_diff / diff_se): the normal-approximation probability that each program's elpd
    is below the best's (loo's ``pnorm(0, elpd_diff, se_diff)``); NaN where diff_se is 0."""
    d = np.asarray(elpd_diff, dtype=float)
    s = np.asarray(diff_se, dtype=float)
    out = np.full(d.shape, np.nan)
    ok = s > 0
    out[ok] = norm.cdf(0.0, loc=d[ok], scale=s[ok])
    return out


def tail_khat(values: np.ndarray) -> float:
    """Pareto k̂ of the upper tail of |values − median| (ArviZ's generalized-Pareto fit, as in
    PSIS); NaN for fewer than 20 values."""
    v = np.asarray(values, dtype=float)
    if v.size < 20:
        return float("nan")
    dev = np.abs(v - np.median(v))
    if not np.any(dev > 0):
        return float("-inf")
    with np.errstate(divide="ignore"):
        lr = np.log(dev)
    lr[~np.isfinite(lr)] = lr[np.isfinite(lr)].min() - 50.0  # ties at the median: no tail mass
    _, k = arviz_compat.psislw(lr[None, :])
    return float(np.ravel(k)[0])


#: Below this |elpd_diff| neither p_worse nor a calibrated interval is given (module docstring).
SMALL_DIFF = 4.0
#: Below this many observations no calibrated interval of a difference is given (module
#: docstring); the same bound below which a LooResult's display calls loo's se too small.
MIN_OBS = FEW_OBS


def difference_diagnostics(n_obs: int, elpd_diff: float, khat: float) -> str:
    """loo's ``diag_diff`` for one program against the best (module docstring)."""
    if abs(elpd_diff) < SMALL_DIFF:  # first: it is the one that withholds p_worse
        return "|elpd_diff| < 4"
    if n_obs < 100:
        return "N < 100"
    if khat > KHAT_HEAVY:
        return f"khat_diff > {KHAT_HEAVY}"
    return ""


def elpd_diagnostic(result: ElpdResult) -> str:
    """loo's ``diag_elpd``: units whose k̂ is above the threshold and were not fixed."""
    bad = result.unfixed_bad()
    return f"{len(bad)} k_psis > {result.threshold:.2f}" if bad else ""


@dataclass
class PairedDifferences:
    """Each program against the best (0, NaN or "" for the best itself): ``elpd_diff``,
    ``diff_se`` (loo's sqrt(n var(d)) of the paired pointwise differences d, scaled to the
    units when the values are a subsample), ``diff_mcse`` (the Monte Carlo se of both in
    quadrature), ``diff_interval`` (the calibrated one, where |elpd_diff| >= 4 and there are
    at least 20 units), ``khat_diff``, ``diag_diff`` and ``p_worse`` (NaN below
    |elpd_diff| = 4)."""

    best: int
    elpd_diff: np.ndarray
    diff_se: np.ndarray
    diff_mcse: np.ndarray
    diff_interval: np.ndarray
    khat_diff: np.ndarray
    diag_diff: list[str]
    p_worse: np.ndarray


def paired_differences(results: Sequence[ElpdResult], n_units: int) -> PairedDifferences:
    """The differences to the best of elpd results over the same units (module docstring):
    the one comparison of :func:`loo_compare` (``elpd_i`` per observation, or per group);
    ``n_units`` is the number of units the sum runs over (more than ``elpd_i`` holds when
    subsampled)."""
    k = len(results)
    best = int(np.argmax([r.elpd for r in results]))
    b = results[best]
    diff = np.array([r.elpd - b.elpd for r in results])
    se, mcse = np.zeros(k), np.zeros(k)
    interval = np.full((k, 2), np.nan)
    khat = np.full(k, np.nan)
    diag = [""] * k
    for j, r in enumerate(results):
        if j == best:
            continue
        d_i = np.asarray(r.elpd_i) - np.asarray(b.elpd_i)
        mcse[j] = math.hypot(r.mcse, b.mcse)
        se[j] = sum_se(d_i) * math.sqrt(n_units / d_i.size)
        if abs(diff[j]) >= SMALL_DIFF and n_units >= MIN_OBS:
            interval[j] = tuple(elpd_interval(d_i, float(diff[j]), n_units))
        khat[j] = tail_khat(d_i)
        diag[j] = difference_diagnostics(n_units, float(diff[j]), float(khat[j]))
    pw = p_worse(diff, se)
    pw[np.abs(diff) < SMALL_DIFF] = np.nan  # miscalibrated there (module docstring)
    return PairedDifferences(best, diff, se, mcse, interval, khat, diag, pw)


def _check_same_units(results: list[ElpdResult]) -> None:
    """Raise :class:`InputError` unless the results pair unit by unit: one kind, the same
    observations, the same units (the same groups; the same sampled observations)."""
    first = results[0]
    kinds = {r.kind for r in results}
    if len(kinds) != 1:
        raise InputError("a comparison needs results of one kind over the same units; got "
                         f"{', '.join(sorted(kinds))}")
    if len({(r.n_obs, r.n_units) for r in results}) != 1:
        raise InputError(f"a comparison needs the same {first.unit} for every program; got "
                         f"{', '.join(str(r.n_units) for r in results)} {first.unit} of "
                         f"{', '.join(str(r.n_obs) for r in results)} observations")
    if first.unit == "groups" and any(
            [(g.label, g.rows.tolist()) for g in r.groups]
            != [(g.label, g.rows.tolist()) for g in first.groups] for r in results[1:]):
        raise InputError("a comparison needs the same groups of the same observations in "
                         "every program; the programs' groups differ")
    sub = [r.sample_index for r in results if getattr(r, "sample_index", None) is not None]
    if sub and (len(sub) < len(results)
                or any(not np.array_equal(x, sub[0]) for x in sub[1:])):
        raise InputError("subsampled LOO results can be compared only when every program used "
                         "the same sampled observations (same seed and subsample size); "
                         "otherwise the pointwise differences pair unrelated observations")


def loo_compare(results: Sequence[ElpdResult], names: Sequence[str] | None = None
                ) -> LooComparison:
    """Compare elpd results of programs over the same units as loo's ``loo_compare``:
    elpd_diff = elpd − best, diff_se = sqrt(N var(elpd_i − best_i)) over the N units (ddof 1;
    over the sampled differences, scaled to N, when subsampled), p_worse, diag_diff and
    diag_elpd; beside them diff_mcse (both programs' Monte Carlo se in quadrature) and the
    calibrated diff_interval (module docstring). :class:`LooResult` s pair by observation,
    leave-one-group-out results (:class:`~stanlogz.crossval.logo.result.LogoResult`) by group:
    a new group is what they predict. Subsampled results must share the sampled observations
    (same seed and subsample size).

    Parameters
    ----------
    results : sequence of ElpdResult
        At least two results of one kind over the same units of the same observations.
    names : sequence of str, optional
        One name per result (default: each result's program name).

    Returns
    -------
    LooComparison
        Best first: ``names``, the results' elpd, ``se``, ``elpd_diff``, ``diff_se``,
        ``diff_mcse``, ``p_worse``, ``diff_interval``, ``diag_diff`` and ``diag_elpd``, with
        ``warnings`` on where the se of a difference is not to be trusted; ``table()`` prints
        them.

    Raises
    ------
    InputError
        Fewer than two results, results of different kinds or over different units, a count
        of ``names`` that is not the number of results, or subsampled results on different
        observations.

    See Also
    --------
    stanlogz.loo : the results compared.
    stanlogz.cv : cross-validation of several programs, compared.
    stanlogz.compare : the programs' evidence instead.

    Examples
    --------
    Two log-likelihood arrays, the second lower by 0.2 at each of 3 observations (PSIS
    weights do not change under a constant shift, so elpd_diff is exactly −0.6):

    >>> import numpy as np, stanlogz
    >>> ll = np.random.default_rng(0).normal(-1.0, 0.1, size=(4, 100, 3))
    >>> c = stanlogz.loo_compare([stanlogz.loo(ll), stanlogz.loo(ll - 0.2)], names=["a", "b"])
    >>> list(c.names), [round(float(d), 6) for d in c.elpd_diff]
    (['a', 'b'], [0.0, -0.6])
    """
    results = list(results)
    if len(results) < 2:
        raise InputError(f"a comparison needs at least two results, got {len(results)}")
    _check_same_units(results)
    names = list(names) if names is not None else [r.model for r in results]
    if len(names) != len(results):
        raise InputError(f"{len(names)} names for {len(results)} results")
    d = paired_differences(results, results[0].n_units)
    return LooComparison(names=names, results=results, elpd_diff=d.elpd_diff,
                         diff_se=d.diff_se, best=d.best, p_worse=d.p_worse,
                         khat_diff=d.khat_diff, diag_diff=d.diag_diff,
                         diag_elpd=[elpd_diagnostic(r) for r in results],
                         diff_mcse=d.diff_mcse, diff_interval=d.diff_interval)
