"""Estimators scored against the truth: data simulated from the model (``simulation``), the
bidirectional Monte Carlo sandwich of its log Z (``sandwich``), and the testbed that runs every
estimator against it (``run``; its figure is :mod:`stanlogz.report.testbed_plot`)."""

from .run import (
    DEFAULT_ESTIMATORS,
    SHORTCUT_ESTIMATORS,
    TestbedOptions,
    TestbedResult,
    TestbedRow,
    budget_fractions,
    check_estimators,
    default_estimators,
    run_testbed,
    testbed,
)
from .sandwich import BDMCResult, bdmc, sandwich_band
from .simulation import Simulation, prior_draws, simulate, split_variables

__all__ = ["DEFAULT_ESTIMATORS", "SHORTCUT_ESTIMATORS", "BDMCResult", "Simulation",
           "TestbedOptions", "TestbedResult", "TestbedRow", "bdmc", "budget_fractions",
           "check_estimators", "default_estimators", "prior_draws", "run_testbed",
           "sandwich_band", "simulate", "split_variables", "testbed"]
