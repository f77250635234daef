"""The public plots: each takes a result object and returns a matplotlib Figure.

Single-panel plots draw on ``ax`` when one is given (to compose figures); every plot saves to
``path`` when one is given. Matplotlib chooses its backend as usual (inline in a notebook, a
window where there is a display, Agg otherwise); the command line's plot files are drawn
by :mod:`stanlogz.report.crossval_plots` and :mod:`stanlogz.report.plots`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .figures import user_pyplot

#: matplotlib's Axes and Figure (named only: matplotlib is loaded by .figures, on first use)
Axes = Any
Figure = Any

if TYPE_CHECKING:
    from ..crossval.psis_loo.loo import LooResult
    from ..estimators.base import EvidenceResult

__all__ = ["plot_khat", "plot_loo_pit", "plot_compare", "plot_elpd_diff", "plot_evidence"]


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    plt = user_pyplot()
    return plt.subplots(figsize=size)[1]


def _done(fig: Figure, path: str | Path | None) -> Figure:
    fig.tight_layout()
    if path is not None:
        fig.savefig(Path(path), dpi=110)
    return fig


def plot_khat(result: LooResult, *, ax: Axes | None = None,
              path: str | Path | None = None) -> Figure:
    """Pareto k̂ of each observation of a PSIS-LOO result, with its threshold.

    Observations above the threshold are drawn as red crosses, and those stanlogz recomputed
    (``result.fixed``) are circled.

    Parameters
    ----------
    result : LooResult
        What :func:`stanlogz.loo` returns.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    path : str or Path, optional
        Also save the figure there (the format from the suffix).

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on.

    Raises
    ------
    InputError
        When ``result`` carries no k̂ (a result made without PSIS).

    See Also
    --------
    plot_elpd_diff : where two programs' pointwise predictions differ.
    arviz.plot_khat : the same from ``result.to_arviz()`` (ArviZ 0.x).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from stanlogz.report import plot_khat
    >>> r = SimpleNamespace(khat=np.array([0.1, 0.3, 0.9]), threshold=0.7,
    ...                     index=np.arange(3), fixed=[], model="demo")
    >>> fig = plot_khat(r)
    >>> fig.axes[0].get_ylabel()
    'Pareto k̂'
    """
    khat = getattr(result, "khat", None)
    if khat is None:
        raise InputError("this result has no Pareto k-hat to plot (PSIS-LOO results have)")
    khat = np.asarray(khat, dtype=float)
    ax = _axes(ax, (7, 3.6))
    obs = np.asarray(getattr(result, "index", np.arange(khat.size))) + 1
    bad = khat > result.threshold
    ax.scatter(obs[~bad], khat[~bad], s=14, color="C0", label="k̂ ≤ threshold")
    ax.scatter(obs[bad], khat[bad], s=30, color="C3", marker="x", label="k̂ > threshold")
    fixed = [f.index for f in getattr(result, "fixed", [])]
    if fixed:
        pos = {int(o): j for j, o in enumerate(obs - 1)}
        j = [pos[i] for i in fixed if i in pos]
        ax.scatter(obs[j], khat[j], s=110, facecolors="none", edgecolors="C3",
                   label=f"recomputed ({getattr(result, 'fix', 'fix')})")
    ax.axhline(result.threshold, color="C3", ls="--", lw=1,
               label=f"threshold {result.threshold:.2f}")
    top = max(1.05, float(np.nanmax(khat, initial=0.0)) + 0.1)  # room above the worst point
    ax.set_ylim(min(-0.05, float(np.nanmin(khat, initial=0.0)) - 0.05), top)
    ax.set_xlabel("observation")
    ax.set_ylabel("Pareto k̂")
    ax.set_title(f"{getattr(result, 'model', '')}: PSIS k̂ per observation".lstrip(": "))
    ax.legend(fontsize=8)
    return _done(ax.figure, path)


def _pit_values(checks: Any) -> np.ndarray:
    pit = getattr(checks, "pit", checks)
    if pit is None:
        raise InputError("no LOO-PIT values to plot: ask for the PIT check "
                         "(predictive_checks(..., pit=True))")
    pit = np.asarray(pit, dtype=float)
    return np.sort(pit[np.isfinite(pit)])  # NaN: k-hat too high, left out


def _pit_test(checks: Any, test: str) -> Any:
    """The dependence-aware test ``test`` of ``checks`` (computed for a bare array of values,
    calibrated as for independent values)."""
    from ..crossval.checks.pit_tests import uniformity_test

    have = getattr(checks, "pit_tests", None)
    if have and test in have:
        return have[test]
    pit = np.asarray(getattr(checks, "pit", checks), dtype=float)
    return uniformity_test(pit, test, calibrate=True)


def plot_loo_pit(checks: Any, *, level: float = 0.99, test: str = "pot", ax: Axes | None = None,
                 path: str | Path | None = None) -> Figure:
    """The LOO-PIT ECDF minus the uniform CDF, with a simultaneous band and the observations
    that drive a rejection marked.

    A calibrated program's LOO-PIT values are uniform: the curve stays inside the band. A
    ∪ shape means predictions too narrow, ∩ too wide; a slope, a shifted location. The band
    is simultaneous at ``level`` for independent uniforms (the order statistics' Beta
    intervals at an adjusted pointwise level,
    :func:`stanlogz.crossval.checks.pit_tests.simultaneous_band`); LOO-PIT values are
    dependent and stay inside it more often. When the dependence-aware ``test`` rejects at
    α = 1 − ``level`` (its calibrated p-value), the observations with a positive Shapley
    contribution are marked in red.

    Parameters
    ----------
    checks : PredictiveChecks or array_like
        What :func:`stanlogz.crossval.checks.predictive_checks` returns (its ``pit`` and
        ``pit_tests``), or the LOO-PIT values themselves. NaN values (k̂ too high) are left
        out.
    level : float, default 0.99
        Coverage of the band under uniformity, and 1 − the level of the test that marks points.
    test : {"pot", "piet", "prit"}, default "pot"
        The test whose contributions mark the points.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    path : str or Path, optional
        Also save the figure there (PNG, PDF or SVG by its suffix).

    Returns
    -------
    matplotlib.figure.Figure
        The figure of the ECDF difference, its band and the marked points.

    Raises
    ------
    InputError
        When ``checks`` has no PIT values.

    See Also
    --------
    arviz.plot_loo_pit : ArviZ's version, from InferenceData with a posterior predictive.

    Examples
    --------
    >>> import numpy as np
    >>> from stanlogz.report import plot_loo_pit
    >>> fig = plot_loo_pit(np.random.default_rng(0).uniform(size=200))
    >>> fig.axes[0].get_xlabel()
    'LOO-PIT'
    """
    from ..crossval.checks.pit_tests import simultaneous_band

    p = _pit_values(checks)
    n = p.size
    if n == 0:
        raise InputError("no finite LOO-PIT values to plot")
    lo, hi = simultaneous_band(n, level)
    # the band's edges jump at the interval ends: evaluate just before and at each of them
    ends = np.concatenate([lo, hi])
    x = np.unique(np.concatenate([np.linspace(0.0, 1.0, 201), ends,
                                  np.clip(ends - 1e-9, 0.0, 1.0)]))
    ax = _axes(ax, (6, 3.6))
    ax.fill_between(x, np.searchsorted(hi, x, side="right") / n - x,
                    np.searchsorted(lo, x, side="right") / n - x, color="0.88", lw=0,
                    label=f"{100 * level:g}% simultaneous band")
    ax.step(np.concatenate([[0.0], p, [1.0]]),
            np.concatenate([[0.0], np.arange(1, n + 1) / n - p, [0.0]]),
            where="post", color="C0", label="ECDF − uniform")
    ax.axhline(0, color="0.4", lw=0.8)
    r = _pit_test(checks, test)
    pit_all = np.asarray(getattr(checks, "pit", checks), dtype=float).ravel()
    marked = r.drivers(alpha=1.0 - level)
    p_shown = r.p_value if r.p_value_calibrated is None else r.p_value_calibrated
    if marked.size:
        u = pit_all[marked]
        ax.scatter(u, np.searchsorted(p, u, side="right") / n - u, s=22, color="C3", zorder=3,
                   label=f"drive the {test.upper()} rejection")
    ax.set_xlim(0, 1)
    ax.set_xlabel("LOO-PIT")
    ax.set_ylabel("ECDF difference")
    name = getattr(checks, "outcome", None)
    ax.set_title((f"LOO-PIT of {name}" if name else f"LOO-PIT of {n} observations")
                 + f" ({test.upper()} p = {p_shown:.2g})")
    ax.legend(fontsize=8)
    return _done(ax.figure, path)


def _comparison_rows(result: Any) -> tuple[list[str], np.ndarray, np.ndarray, str, int]:
    """``(names, value, se, label, best)`` of a LOO or evidence comparison."""
    loo = getattr(result, "loo", result)
    if loo is not None and hasattr(loo, "elpd_diff"):
        vals = np.array([r.elpd for r in loo.results])
        ses = np.array([r.se for r in loo.results])
        return list(loo.names), vals, ses, loo.results[0].elpd_name, int(loo.best)
    ev = getattr(result, "evidence", result)
    if ev is not None and hasattr(ev, "log_bf"):
        vals = np.array([r.log_z for r in ev.results])
        ses = np.array([r.log_z_se for r in ev.results])
        return list(ev.names), vals, ses, "log Z", int(ev.best)
    raise InputError(f"cannot plot a {type(result).__name__} as a comparison: give what "
                     "stanlogz.compare or stanlogz.loo_compare returns")


def plot_compare(result: Any, *, ax: Axes | None = None,
                 path: str | Path | None = None) -> Figure:
    """Each program's elpd_loo (or log Z) with ±1 se, best on top, as ``arviz.plot_compare``.

    For a LOO comparison the difference to the best is drawn too, with its ``diff_se``
    (none where stanlogz gives none: differences under 4 or too few observations).

    Parameters
    ----------
    result : ProgramChoice, LooComparison or ComparisonResult
        What :func:`stanlogz.compare` or :func:`stanlogz.loo_compare` returns; a
        :class:`~stanlogz.crossval.select.choose.ProgramChoice` with LOO is drawn by its LOO.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    path : str or Path, optional
        Also save it to this file.

    Returns
    -------
    matplotlib.figure.Figure
        The figure: one row per program.

    Raises
    ------
    InputError
        ``result`` is neither a LOO nor an evidence comparison.

    See Also
    --------
    plot_elpd_diff : the pointwise differences behind one elpd_diff.
    arviz.plot_compare : the same from ``arviz.compare`` of each result's ``to_arviz()``.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace as NS
    >>> from stanlogz.report import plot_compare
    >>> ev = NS(names=["a", "b"], results=[NS(log_z=-10.0, log_z_se=0.1),
    ...         NS(log_z=-12.0, log_z_se=0.2)], log_bf=np.array([0.0, -2.0]), best=0)
    >>> fig = plot_compare(ev)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['b', 'a']
    """
    names, vals, ses, label, best = _comparison_rows(result)
    order = np.argsort(-vals, kind="stable")[::-1]  # best at the top
    y = np.arange(len(names))
    ax = _axes(ax, (7, 1.2 + 0.55 * len(names)))
    ax.errorbar(vals[order], y, xerr=ses[order], fmt="o", color="C0", mfc="white", capsize=3,
                label=f"{label} ± se")
    loo = getattr(result, "loo", result)
    if label.startswith("elpd_") and getattr(loo, "diff_se", None) is not None:
        diff_se = np.asarray([np.nan if v is None else v for v in loo.diff_se], dtype=float)
        for row, i in enumerate(order):
            if i != best:
                ax.errorbar(vals[best] + loo.elpd_diff[i], y[row] - 0.2,
                            xerr=None if np.isnan(diff_se[i]) else diff_se[i], fmt="^",
                            color="0.4", ms=5, capsize=3,
                            label="difference to best ± diff_se" if row == 0 else None)
    ax.axvline(vals[best], color="0.7", ls="--", lw=1)
    ax.set_yticks(y, [names[i] for i in order])
    ax.set_ylim(-0.7, len(names) - 0.3)
    ax.set_xlabel(label)
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2,
              frameon=False)  # above the axes: never over a program's row
    return _done(ax.figure, path)


def plot_elpd_diff(first: LooResult, second: LooResult, *, names: tuple[str, str] | None = None,
                   ax: Axes | None = None, path: str | Path | None = None) -> Figure:
    """Pointwise differences ``elpd_i(second) − elpd_i(first)`` per observation.

    Points far from zero are the observations that decide between the programs; those with a
    high k̂ in either result are marked, as their elpd_i are the least certain.

    Parameters
    ----------
    first, second : LooResult
        PSIS-LOO of two programs on the same observations (:func:`stanlogz.loo`).
    names : tuple of str, optional
        Labels of the two programs (default: their ``model`` names).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure when omitted.
    path : str or Path, optional
        Also write the figure to this path.

    Returns
    -------
    matplotlib.figure.Figure
        The figure of the pointwise differences.

    Raises
    ------
    InputError
        When the two results have different numbers of observations.

    See Also
    --------
    plot_compare : the summed differences with their standard errors.
    arviz.plot_elpd : the same for ArviZ ELPD objects (``to_arviz()``).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace as NS
    >>> from stanlogz.report import plot_elpd_diff
    >>> a = NS(elpd_i=np.zeros(4), khat=np.zeros(4), threshold=0.7, model="a")
    >>> b = NS(elpd_i=np.array([0.1, -0.2, 0.0, 1.5]), khat=np.array([0, 0, 0, 0.9]),
    ...        threshold=0.7, model="b")
    >>> fig = plot_elpd_diff(a, b)
    >>> fig.axes[0].get_title()
    'b − a: Σ = 1.40'
    """
    ea, eb = np.asarray(first.elpd_i, float), np.asarray(second.elpd_i, float)
    if ea.shape != eb.shape:
        raise InputError(f"the results have {ea.size} and {eb.size} observations; compare "
                         "programs on the same observations")
    na, nb = names or (getattr(first, "model", "first"), getattr(second, "model", "second"))
    d = eb - ea
    high = (np.asarray(first.khat) > first.threshold) | (np.asarray(second.khat) >
                                                         second.threshold)
    obs = np.arange(1, d.size + 1)
    ax = _axes(ax, (7, 3.6))
    ax.scatter(obs[~high], d[~high], s=14, color="C0")
    if high.any():
        ax.scatter(obs[high], d[high], s=30, color="C3", marker="x", label="k̂ > threshold")
        ax.legend(fontsize=8)
    ax.axhline(0, color="0.4", lw=0.8)
    ax.set_xlabel("observation")
    ax.set_ylabel(f"elpd_i({nb}) − elpd_i({na})")
    ax.set_title(f"{nb} − {na}: Σ = {d.sum():.2f}")
    return _done(ax.figure, path)


def plot_evidence(result: EvidenceResult, draws: Any, *, max_dims: int = 4, seed: int = 0,
                  names: list[str] | None = None, path: str | Path | None = None) -> Figure:
    """Evidence diagnostics: the proposal against the posterior, and the bridge's log weights.

    One panel per coordinate (the first ``max_dims``) compares the posterior draws with the
    fitted proposal (flow); the last panel shows the log weights ``log p − log q − log Z`` of
    the posterior and proposal draws. Where the two histograms of the last panel barely
    overlap, the bridge estimate and its se are not to be trusted.

    Parameters
    ----------
    result : EvidenceResult
        What :func:`stanlogz.evidence` returns with ``method`` ``"gbs"``, ``"gis"`` or
        ``"ghm"`` (its ``detail`` holds the flow and weights).
    draws : Draws or array_like
        The posterior draws it was computed from (``Draws`` or unconstrained draws).
    max_dims : int, default 4
        Coordinates shown.
    seed : int, default 0
        Seed of the proposal's draws.
    names : list of str, optional
        Labels of the unconstrained coordinates (``StanModel.param_unc_names()``).
    path : str or Path, optional
        Also save the figure there.

    Returns
    -------
    matplotlib.figure.Figure
        The figure.

    Raises
    ------
    InputError
        When ``result`` carries no flow or weights (another method).

    See Also
    --------
    stanlogz.evidence : the estimate.

    Examples
    --------
    A Gaussian target whose log Z is -3, estimated by Gaussianized bridge sampling:

    >>> import numpy as np
    >>> from stanlogz.densities.gaussian import GaussianTarget
    >>> from stanlogz.estimators.bridge.bridge import gbs
    >>> from stanlogz.report import plot_evidence
    >>> target = GaussianTarget(np.zeros(2), log_z=-3.0)
    >>> x = target.sample(np.random.default_rng(1), 800)
    >>> r = gbs(target, x, seed=2)
    >>> fig = plot_evidence(r, x)
    >>> len(fig.axes)  # two coordinates and the log weights
    3
    """
    from .plots import evidence_figure

    fig = evidence_figure(result, getattr(draws, "unconstrained", draws), max_dims=max_dims,
                          seed=seed, names=names)
    return _done(fig, path)
