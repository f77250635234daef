"""Everything a user reads: terminal output (progress, tables, JSON) and plots. The result
types live with what makes them (:mod:`stanlogz.estimators.base`, :mod:`stanlogz.draws`).

The public plots (:mod:`stanlogz.report.plotting`) each take a result object and return a
matplotlib Figure: :func:`plot_khat`, :func:`plot_loo_pit`, :func:`plot_compare`,
:func:`plot_elpd_diff` and :func:`plot_evidence`.
"""

from .plotting import plot_compare, plot_elpd_diff, plot_evidence, plot_khat, plot_loo_pit

__all__ = ["plot_khat", "plot_loo_pit", "plot_compare", "plot_elpd_diff", "plot_evidence"]
