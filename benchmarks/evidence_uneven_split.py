"""gbs on draws too few for two halves that each fit the proposal: the uneven split
(``bridge.uneven_cut``), measured against exact log Z with exact posterior draws.

The case: a run the time budget ended soon after warmup. posteriordb kronecker_gp (438
parameters) kept 108 draws of each of 4 chains: halves of 216, fewer than the 250 the structured
proposal fits on, and ``evidence`` refused after 493 s with a route (more draws) that the same
budget could not reach. The split now fits the proposal on the first ceil(250 / 4) = 63 draws
of each chain and bridges on the other 45, one orientation.

Targets with exact draws and exact log Z, d = 438 (as kronecker_gp):

- ``spiked``: N(m, diag + rank 2) (tests/estimators/bridge/test_structured_route.py);
- ``hier``: the non-centred hierarchical normal of 436 groups
  (``stanlogz.densities.gaussian.HierarchicalNormalTarget``): a funnel in (log tau, eta).

    python3 -m benchmarks.evidence_uneven_split --reps 400
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common import z_cells
from stanlogz.densities.gaussian import GaussianTarget, HierarchicalNormalTarget
from stanlogz.estimators.bridge.bridge import gbs

DIM = 438


def spiked(d: int = DIM, seed: int = 3) -> GaussianTarget:
    """N(m, diag(s²) + w wᵀ), w of rank 2, log Z −3.7."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((d, 2)) * rng.uniform(0.2, 1.0, (d, 1))
    cov = np.diag(rng.uniform(0.5, 2.0, d) ** 2) + w @ w.T
    return GaussianTarget(rng.standard_normal(d), cov, log_z=-3.7)


def hier(d: int = DIM, seed: int = 4) -> HierarchicalNormalTarget:
    """436 groups, y_j ~ N(mu + tau eta_j, sigma_j), true tau 1."""
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(0.5, 2.0, d - 2)
    return HierarchicalNormalTarget(1.0 + rng.standard_normal(d - 2) + sigma
                                    * rng.standard_normal(d - 2), sigma)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=108, help="per chain")
    a = ap.parse_args(argv)
    print("| target | reps | draws | mean z | rms z | max abs z | abs z > 2 | abs z > 3 | "
          "mean se | s per run |\n|---|---|---|---|---|---|---|---|---|---|")
    for name, make in (("spiked Gaussian", spiked), ("hierarchical normal (funnel)", hier)):
        t = make()
        zs, ses, t0 = [], [], time.perf_counter()
        for rep in range(a.reps):
            x = t.sample(np.random.default_rng([7, rep]), a.chains * a.draws)
            r = gbs(t, x.reshape(a.chains, a.draws, t.dim), seed=rep)
            assert any("one orientation" in w for w in r.warnings), r.warnings
            zs.append((r.log_z - t.log_z) / r.log_z_se)
            ses.append(r.log_z_se)
        z = np.array(zs)
        print(f"| {name} | {a.reps} | {a.chains} x {a.draws} | {z_cells(z)} | "
              f"{np.mean(ses):.3f} | {(time.perf_counter() - t0) / a.reps:.2f} |", flush=True)


if __name__ == "__main__":
    main()
