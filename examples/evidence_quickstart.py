"""Quickstart: the log evidence of a Stan program and a Bayes factor between two programs.

Run from the repository root (offline; the first run builds each program, ~20 s each):

    python3 examples/evidence_quickstart.py
"""

from __future__ import annotations

from pathlib import Path

import stanlogz
from stanlogz.report.output import format_table

EX = Path(__file__).resolve().parents[1] / "stan_models" / "examples"


def main() -> None:
    # 1. log Z of a conjugate model whose exact value is known: -13.275816.
    model = stanlogz.StanModel.from_file(str(EX / "normal_mean.stan"),
                                         str(EX / "normal_mean.data.json"))
    r = stanlogz.evidence(model, seed=1)  # NUTS draws, then Gaussianized bridge sampling
    print(r)  # gbs: log Z = ... ± ...
    print(f"exact log Z = -13.2758, error = {r.log_z + 13.275816:+.4f}")

    # 2. The same, from draws you already have (CmdStan CSV files, a cmdstanpy fit, an array).
    draws = stanlogz.sample(model, chains=4, draws=1000, seed=2)
    s = draws.summary()
    print(format_table(s.header, s.table_rows()[:1]), s.warnings)
    r2 = stanlogz.evidence(model, draws=draws, seed=3)
    print(r2, r2.diagnostics["n_sampling_evals"], "sampling gradient evaluations")

    # 3. A Bayes factor: linear regression with and without the predictor (exact log BF 5.9387).
    data = EX / "regression.data.json"
    c = stanlogz.compare([EX / "regression.stan", EX / "regression_null.stan"], data, seed=4)
    print(format_table(c.header, c.table()))
    print("best:", c.names[c.best])


if __name__ == "__main__":
    main()
