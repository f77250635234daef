"""Pseudo-marginal MCMC on a doubly-intractable posterior: a chain of 20 continuous spins.

pi(h, J | y) ∝ pi(h, J) p*(y | h, J) / Z(h, J), where Z(h, J) (an integral over R^20) has no
closed form. `stanlogz pmmh` samples it from two Stan programs: the outer one (theta = (h, J),
target = log prior + log p*(y | theta)) and the inner one (theta as data, parameters x with
density p*(x | theta)), with unbiased RBBCE estimates of 1/Z(theta) (Wei & Murray 2017). The exact
posterior moments (transfer operator on a quadrature grid) are printed for comparison.

Run from the repository root (the first run builds both programs, ~1 min):

    python3 examples/pmmh_spin_chain.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from stanlogz.cli import main as stanlogz_main
from stanlogz.densities.testing import spin_chain_posterior

EX = Path(__file__).resolve().parents[1] / "stan_models" / "examples"


def main() -> None:
    # The command line a user would type (stanlogz pmmh ...), run in-process.
    argv = ["pmmh", str(EX / "spin_chain_outer.stan"), "--inner", str(EX / "spin_chain_inner.stan"),
            "--data", str(EX / "spin_chain.data.json"), "--estimator", "rbbce", "--batch", "40",
            "--iter", "3000", "--warmup", "1000", "--seed", "1", "--quiet"]
    print("$ stanlogz " + " ".join(argv))
    rc = stanlogz_main(argv)
    if rc:
        raise SystemExit(rc)

    y = np.array(json.loads((EX / "spin_chain.data.json").read_text())["y"])
    hg, jg = np.linspace(-1, 1, 81), np.linspace(-0.5, 0.5, 41)
    post = spin_chain_posterior(y, hg, jg)
    ph, pj = post.sum(axis=1), post.sum(axis=0)
    for name, grid, p in (("h", hg, ph), ("J", jg, pj)):
        mean = float(p @ grid)
        sd = float(np.sqrt(p @ grid**2 - mean**2))
        print(f"exact posterior {name}: mean {mean:.4f}, sd {sd:.4f}")


if __name__ == "__main__":
    main()
