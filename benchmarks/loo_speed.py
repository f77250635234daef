"""Speed of stanlogz's PSIS-LOO against ArviZ's ``loo`` on the same log-likelihood matrix.

A simulated Poisson regression's log-likelihood (chains x draws x N, draws from a Gaussian
approximation of its posterior) is given to ``arviz.loo`` (InferenceData / DataTree with a
log_likelihood group; posterior with the coefficients, for its r_eff) and to what
``stanlogz.crossval.loo`` runs on draws that carry a ``log_lik``: r_eff, the PSIS pass over
column blocks (:func:`stanlogz.crossval.elpd.psis.psis_loo`, k̂, elpd_i, the pointwise Monte
Carlo se and the draws' influence for the se of the total) and the total's Monte Carlo se.
Each timing is the best of ``--repeats`` runs, alternated between the two, in CPU seconds
(process time: fair on a shared machine, where wall time measures the other jobs; run with
one thread, OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1, so that neither
side's CPU time counts parallel threads), and wall seconds beside them.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        python3 benchmarks/loo_speed.py              # N = 3000 and 10000, 4 x 1000 draws
    python3 benchmarks/loo_speed.py --n 10000 --repeats 5
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import gammaln

from stanlogz import arviz_compat
from stanlogz.crossval.elpd.psis import PsisLoo, psis_loo, relative_efficiency
from stanlogz.crossval.observations.pointwise import CHUNK_BYTES


def simulate(n: int, chains: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(posterior (chains, draws, 3), log_lik (chains, draws, n)) of a Poisson regression."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    y = rng.poisson(np.exp(0.5 + x @ np.array([0.3, -0.2])))
    theta = np.array([0.5, 0.3, -0.2]) + 0.02 * rng.normal(size=(chains, draws, 3))
    eta = theta[..., :1] + theta[..., 1:] @ x.T
    return theta, y * eta - np.exp(eta) - gammaln(y + 1)


def stanlogz_loo(post: np.ndarray, ll: np.ndarray) -> float:
    """What loo() does with a given log_lik after the draws are read; returns the total."""
    r_eff = relative_efficiency(post)
    flat = ll.reshape(-1, ll.shape[-1])
    width = max(1, CHUNK_BYTES // (8 * flat.shape[0]))
    ps = PsisLoo.concatenate([psis_loo(flat[:, a:a + width], r_eff, chains=ll.shape[0])
                              for a in range(0, flat.shape[1], width)])
    ps.total_mcse()
    return float(ps.elpd_i.sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[3000, 10000])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"{'N':>6s} {'S':>6s} {'arviz s':>8s} {'stanlogz s':>10s} {'ratio':>6s} "
          f"{'wall az':>7s} {'wall sl':>7s} {'ratio':>6s} {'|elpd diff|':>11s}")
    for n in args.n:
        post, ll = simulate(n, args.chains, args.draws, 1)
        idata = arviz_compat.from_dict({"posterior": {"theta": post},
                                        "log_likelihood": {"y": ll}})
        ta, ts, wa, ws = [], [], [], []
        for _ in range(args.repeats):
            t, w = time.process_time(), time.perf_counter()
            ref = arviz_compat.loo(idata)["elpd"]
            ta.append(time.process_time() - t)
            wa.append(time.perf_counter() - w)
            t, w = time.process_time(), time.perf_counter()
            ours = stanlogz_loo(post, ll)
            ts.append(time.process_time() - t)
            ws.append(time.perf_counter() - w)
        print(f"{n:6d} {ll.shape[0] * ll.shape[1]:6d} {min(ta):8.2f} {min(ts):10.2f} "
              f"{min(ts) / min(ta):6.2f} {min(wa):7.2f} {min(ws):7.2f} "
              f"{min(ws) / min(wa):6.2f} {abs(ref - ours):11.2e}")


if __name__ == "__main__":
    main()
