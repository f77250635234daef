"""Moved to :mod:`stanlogz.testbed` (and its figure to :mod:`stanlogz.report.testbed_plot`); the
old path warns, and goes in the next release."""

import warnings

from .report.testbed_plot import plot_testbed  # noqa: F401
from .testbed import *  # noqa: F403
from .testbed.sandwich import BDMCResult, bdmc  # noqa: F401

warnings.warn("stanlogz.bdmc moved to stanlogz.testbed; import it from there (the old path goes "
              "away in the next release)", DeprecationWarning, stacklevel=2)
