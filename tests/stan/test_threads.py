"""Model code run from a worker thread: a thread that never took a gradient has no autodiff
tape of its own, and code evaluated in doubles can still use autodiff inside (the BDF ODE
solver's Jacobian). The log density, the constrained values and the construction with new data
of such a program work from any thread (a corpus ODE program segfaulted in loo's threaded
pointwise pass before)."""

from __future__ import annotations

import math
import threading

import numpy as np
from scipy import stats

DATA = {"T": 3, "ts": [0.5, 1.0, 2.0], "y_obs": [0.62, 0.35, 0.14]}


def _log_density(k: float) -> float:
    """The program's log density at unconstrained log k (with the log-Jacobian log k)."""
    lp = stats.lognorm(s=1.0).logpdf(k) + math.log(k)
    return lp + sum(stats.norm(math.exp(-k * t), 0.1).logpdf(y)
                    for t, y in zip(DATA["ts"], DATA["y_obs"], strict=True))


def _in_a_new_thread(fn):
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_ode_program_evaluates_in_a_worker_thread(compiled):
    model = compiled("ode_bdf_decay", DATA)
    x = np.log([[0.8], [1.3]])
    lp = _in_a_new_thread(lambda: model.log_density_many(x))
    np.testing.assert_allclose(lp, [_log_density(0.8), _log_density(1.3)], rtol=1e-7)
    other = {**DATA, "y_obs": [0.6, 0.4, 0.1]}
    m2 = _in_a_new_thread(lambda: model.with_data(other))  # transformed data solves an ODE
    c = _in_a_new_thread(lambda: m2.constrain_many(x, include_tp=True, include_gq=True))
    names = m2.param_names(include_tp=True, include_gq=True)
    assert names[:2] == ["k", "y_half_data"]
    np.testing.assert_allclose(c[:, 0], [0.8, 1.3], rtol=1e-12)
    np.testing.assert_allclose(c[:, 1], math.exp(-0.5), rtol=1e-7)
    np.testing.assert_allclose(c[1, 2:], np.exp(-1.3 * np.array(DATA["ts"])), rtol=1e-7)
