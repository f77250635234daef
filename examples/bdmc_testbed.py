"""BDMC testbed: sandwich log Z on data simulated from a model, and grade estimators against it.

The conjugate normal-mean program has an exact log Z for any data set, so this example also
shows where the truth falls inside the sandwich. Run from the repository root (offline):

    python3 examples/bdmc_testbed.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import stats

import stanlogz
from stanlogz.report.output import format_table

BDMC = Path(__file__).resolve().parents[1] / "stan_models" / "bdmc"


def exact_log_z(data: dict) -> float:
    """log N(y | 0, sigma^2 I + tau^2 11'): the evidence of the conjugate normal-mean model."""
    y = np.asarray(data["y"], dtype=float)
    cov = data["sigma"] ** 2 * np.eye(y.size) + data["tau"] ** 2 * np.ones((y.size, y.size))
    return float(stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y))


def main() -> None:
    res = stanlogz.run_testbed(
        BDMC / "normal_mean.stan", BDMC / "normal_mean_sim.stan",
        BDMC / "normal_mean_sim.data.json",
        estimators=["gbs", "laplace", "bridge-gaussian", "ais"],
        n_temps=200, seed=1,
    )
    s = res.sandwich
    print(f"sandwich: [{s.lower.log_z:.4f}, {s.upper.log_z:.4f}]  gap {s.gap:.4f} nats")
    print(f"exact log Z of the simulated data: {exact_log_z(res.info['data']):.4f}")
    print(format_table(res.HEADER, res.table_rows()))


if __name__ == "__main__":
    main()
