"""ProgramChoice computes each program's log-likelihood and PSIS weights once for its measures
and its LOO-PIT checks (compare_measures, pit_checks), and the checks are the arrays'
predictive_checks. The programs' fits are stood in for by a stub of predictive_inputs
(no Stan): two normal predictives of the same 40 observations."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from stanlogz.crossval.checks.checks import predictive_checks
from stanlogz.crossval.checks.predictive import loo_log_weights
from stanlogz.crossval.select import choose as choose_mod
from stanlogz.crossval.select.choose import ProgramChoice
from stanlogz.errors import InputError


def _arrays(shift: float, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    y = np.random.default_rng(0).normal(size=40)
    mu = rng.normal(shift, 0.15, size=(400, 1))
    ll = -0.5 * (y[None] - mu) ** 2
    return y, ll, loo_log_weights(ll), mu + rng.normal(size=(400, 40))


def test_inputs_are_computed_once_and_shared(monkeypatch) -> None:
    arrays = [_arrays(0.0, 1), _arrays(0.8, 2)]
    calls = []

    def stub(result, model, data, draws, yrep, outcome):
        calls.append(result.i)
        return arrays[result.i]

    monkeypatch.setattr(choose_mod, "predictive_inputs", stub)
    results = [SimpleNamespace(i=i, elpd_i=np.zeros(40) - i, mcse=0.1, r_eff=1.0,
                               sample_index=None) for i in range(2)]
    fits = [(None, None, SimpleNamespace(n_chains=4))] * 2
    c = ProgramChoice(["a", "b"], loo=SimpleNamespace(results=results), fits=fits)
    mc = c.compare_measures(["elpd", "rps"], yrep="y_rep")
    checks = c.pit_checks("y_rep", seed=3)
    c.compare_measures(["crps"], yrep="y_rep")
    assert calls == [0, 1]                               # once per program, then reused
    assert mc.names[mc.best] == "a" and mc.diff[1, 1] < 0
    y, ll, _, yr = arrays[1]
    ref = predictive_checks(ll, yr, y, metrics=False, crps=False, seed=3)
    assert np.array_equal(checks["b"].pit, ref.pit)
    assert checks["b"].pit_tests["pot"].p_value == ref.pit_tests["pot"].p_value
    with pytest.raises(InputError, match="fitted programs"):
        ProgramChoice(["a", "b"]).pit_checks("y_rep")
