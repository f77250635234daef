"""Everything a user reads: terminal output (progress, tables, JSON) and plots. The result
types live with what makes them (:mod:`stanlogz.estimators.base`, :mod:`stanlogz.draws`)."""
