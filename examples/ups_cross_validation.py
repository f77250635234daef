"""Unbiased path sampling (UPS): a Bayesian cross-validation term as a log Z ratio.

log p(y_N | y_1..N-1) = log Z(all data) - log Z(all but the last observation). UPS estimates the
difference without bias along the geometric path between the two posteriors; independent
replicates give a confidence interval. The conjugate model's exact value is printed alongside.
Then ``stanlogz.cv`` (leave-one-out over all observations) runs under a 5 s time budget.
Run from the repository root (offline):

    python3 examples/ups_cross_validation.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy import stats

import stanlogz

EX = Path(__file__).resolve().parents[1] / "stan_models" / "examples"


def exact_log_z(d: dict) -> float:
    """log N(y | 0, sigma^2 I + prior_sd^2 11') for normal_mean.stan."""
    y = np.asarray(d["y"], dtype=float)
    cov = d["sigma"] ** 2 * np.eye(y.size) + d["prior_sd"] ** 2 * np.ones((y.size, y.size))
    return float(stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y))


def main() -> None:
    data = json.loads((EX / "normal_mean.data.json").read_text())
    full = stanlogz.StanModel.from_file(str(EX / "normal_mean.stan"), data)
    held_out_data = dict(data, N=data["N"] - 1, y=data["y"][:-1])
    held_out = full.with_data(held_out_data)  # same compiled library, no rebuild

    r = stanlogz.log_ratio(
        held_out, full,
        draws0=stanlogz.sample(held_out, seed=1).unconstrained,
        draws1=stanlogz.sample(full, seed=2).unconstrained,
        seed=3, n_replicates=100,
    )
    truth = exact_log_z(data) - exact_log_z(held_out_data)
    lo, hi = r.ci
    print(f"UPS   log p(y_N | y_1..N-1) = {r.estimate:.4f} ± {r.se:.4f}"
          f"  95% CI [{lo:.4f}, {hi:.4f}]")
    print(f"exact log p(y_N | y_1..N-1) = {truth:.4f}")
    print(f"cost: {r.n_evals} path evaluations, {r.seconds:.1f} s")

    # Unbiased leave-one-out CV of every observation under a 5 s time budget: far more splits
    # are asked than fit, and the answer is the first ones the budget leaves time for (at
    # least 30), flagged in budget_stop; a budget too short for 30 is refused with one that fits.
    try:
        with stanlogz.time_budget(5):
            c = stanlogz.cv(full, data, splits=100_000, seed=4)
        print(f"cv under 5 s: {c.estimate:.4f} ± {c.estimate_mcse:.4f} from "
              f"{c.replicates.size} splits (budget_stop {c.budget_stop})")
    except stanlogz.OverBudget as exc:
        print(f"cv under 5 s refused: {exc}")


if __name__ == "__main__":
    main()
