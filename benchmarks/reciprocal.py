"""Unbiased 1/Z (Wei & Murray 2017: IAE, FCE, RBBCE) and pseudo-marginal MCMC: the paper's
experiments.

Tables: (1) Figure 1: std/mean of S and the fraction of positive estimates against tau on a
10 x 30 Ising lattice (exact Z by transfer matrices over the 2^10 column states; AIS weights,
10 temperatures, batches of 10); (2) pseudo-marginal Ising (alpha = beta = 0.1 data, uniform
priors alpha in [-1, 1], beta in [0, 0.4], steps 0.025 / 0.01, 2 trials of 10 AIS weights with 30
temperatures): positive states per estimator; (3) ERGM (edges + 2-stars) on the Florentine
*business* network (steps 1 / 0.1, 10 trials of 10 AIS weights with 10 temperatures); (4) the
continuous spin chain (Stan programs, `stanlogz pmmh`) against its exact posterior; (5) RBBCE's
std/mean and sign fraction against the batch size m. Iteration counts are scaled down from the
paper's (flags below); the fractions are comparable, their binomial se is printed.

    python3 -m benchmarks.reciprocal [--trials 1000] [--ising-iter 2000] [--ergm-iter 300]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from stanlogz.estimators.reciprocal.reciprocal import (
    RECIPROCAL_METHODS,
    batch_log_weights,
    estimate_reciprocal,
)
from stanlogz.report.output import format_table

ROWS, COLS = 10, 30
LOG2 = math.log(2.0)

# Padgett's Florentine *business* ties (Padgett & Ansell 1993; the `flobusiness` network of R's
# ergm package: 16 families, 15 ties). networkx's florentine_families_graph is the *marriage*
# network (15 families, 20 ties), so the business edge list is given here.
FAMILIES = ["Acciaiuoli", "Albizzi", "Barbadori", "Bischeri", "Castellani", "Ginori", "Guadagni",
            "Lamberteschi", "Medici", "Pazzi", "Peruzzi", "Pucci", "Ridolfi", "Salviati",
            "Strozzi", "Tornabuoni"]
BUSINESS = [("Barbadori", "Castellani"), ("Barbadori", "Ginori"), ("Barbadori", "Medici"),
            ("Barbadori", "Peruzzi"), ("Bischeri", "Guadagni"), ("Bischeri", "Lamberteschi"),
            ("Bischeri", "Peruzzi"), ("Castellani", "Lamberteschi"), ("Castellani", "Peruzzi"),
            ("Ginori", "Medici"), ("Guadagni", "Lamberteschi"), ("Lamberteschi", "Peruzzi"),
            ("Medici", "Pazzi"), ("Medici", "Salviati"), ("Medici", "Tornabuoni")]


# ---------------------------------------------------------------- Ising 10 x 30
class Ising:
    """p*(x) = exp(sum a_i x_i + sum_edges b_ij x_i x_j) on a ROWS x COLS grid, x in {-1, 1}."""

    def __init__(self, a: np.ndarray, bh: np.ndarray, bv: np.ndarray) -> None:
        self.a, self.bh, self.bv = a, bh, bv  # (R, C), (R, C-1), (R-1, C)

    def energy(self, x: np.ndarray) -> np.ndarray:
        return (np.sum(self.a * x, axis=(-2, -1)) + np.sum(self.bh * x[..., :, :-1] * x[..., :, 1:],
                                                            axis=(-2, -1))
                + np.sum(self.bv * x[..., :-1, :] * x[..., 1:, :], axis=(-2, -1)))

    def log_z(self) -> float:
        """Transfer matrices over the 2^ROWS column states."""
        states = 1 - 2 * ((np.arange(2**ROWS)[:, None] >> np.arange(ROWS)) & 1)  # (S, R)

        def col(c: int) -> np.ndarray:
            return states @ self.a[:, c] + (states[:, :-1] * states[:, 1:]) @ self.bv[:, c]

        v, log_s = np.exp(col(0) - col(0).max()), col(0).max()
        for c in range(1, COLS):
            e = (states * self.bh[:, c - 1]) @ states.T
            t = np.exp(e - e.max())
            v = t.T @ v
            ec = col(c)
            v = v * np.exp(ec - ec.max())
            log_s += e.max() + ec.max() + math.log(v.max())
            v /= v.max()
        return float(log_s + math.log(v.sum()))

    def gibbs(self, x: np.ndarray, beta: float, rng: np.random.Generator) -> None:
        """One checkerboard Gibbs sweep of exp(beta E(x)) on chains x (K, R, C), in place."""
        ii, jj = np.indices((ROWS, COLS))
        for parity in (0, 1):
            mask = (ii + jj) % 2 == parity
            f = self.a.copy() + np.zeros_like(x, dtype=float)
            f[:, :, 1:] += self.bh * x[:, :, :-1]
            f[:, :, :-1] += self.bh * x[:, :, 1:]
            f[:, 1:, :] += self.bv * x[:, :-1, :]
            f[:, :-1, :] += self.bv * x[:, 1:, :]
            p = 1.0 / (1.0 + np.exp(-2.0 * beta * f))
            new = np.where(rng.uniform(size=x.shape) < p, 1, -1)
            x[:, mask] = new[:, mask]

    def ais(self, n_temps: int) -> Callable[[np.random.Generator, int], np.ndarray]:
        """AIS log-weights from the uniform base (Z_base = 2^(R C)) with Gibbs transitions."""
        betas = np.linspace(0.0, 1.0, n_temps)

        def source(rng: np.random.Generator, n: int) -> np.ndarray:
            x = np.where(rng.uniform(size=(n, ROWS, COLS)) < 0.5, 1, -1)
            lw = np.full(n, ROWS * COLS * LOG2)
            for t in range(1, n_temps):
                lw += (betas[t] - betas[t - 1]) * self.energy(x)
                if t < n_temps - 1:
                    self.gibbs(x, betas[t], rng)
            return lw

        return source


def random_ising(tau: float, rng: np.random.Generator) -> Ising:
    return Ising(*(rng.uniform(-tau, tau, size=s)
                   for s in ((ROWS, COLS), (ROWS, COLS - 1), (ROWS - 1, COLS))))


def uniform_ising(alpha: float, beta: float) -> Ising:
    return Ising(np.full((ROWS, COLS), alpha), np.full((ROWS, COLS - 1), beta),
                 np.full((ROWS - 1, COLS), beta))


# ---------------------------------------------------------------- ERGM
class ERGM:
    """p*(x | theta) = exp(theta_e edges(x) + theta_s 2-stars(x) / n) on undirected graphs."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])

    def stats(self, adj: np.ndarray) -> np.ndarray:
        deg = adj.sum(axis=-1)
        return np.stack([deg.sum(axis=-1) / 2, (deg * (deg - 1) / 2).sum(axis=-1) / self.n], -1)

    def ais(self, theta: np.ndarray, n_temps: int, toggles: int = 120
            ) -> Callable[[np.random.Generator, int], np.ndarray]:
        """AIS weights of Z(theta) from the edges-only ERGM (independent edges with probability
        sigmoid(theta_e), normalizer (1 + e^theta_e)^m) to the full one, annealing the 2-star
        term in; Metropolis edge toggles at every temperature."""
        betas = np.linspace(0.0, 1.0, n_temps)
        m = len(self.pairs)
        p_edge = 1.0 / (1.0 + math.exp(-theta[0]))

        def source(rng: np.random.Generator, k: int) -> np.ndarray:
            adj = np.zeros((k, self.n, self.n))
            on = rng.uniform(size=(k, m)) < p_edge
            adj[:, self.pairs[:, 0], self.pairs[:, 1]] = on
            adj = adj + adj.transpose(0, 2, 1)
            lw = np.full(k, m * float(np.logaddexp(0.0, theta[0])))
            rows = np.arange(k)
            for t in range(1, n_temps):
                lw += (betas[t] - betas[t - 1]) * theta[1] * self.stats(adj)[:, 1]
                if t == n_temps - 1:
                    break
                for _ in range(toggles):
                    e = self.pairs[rng.integers(m, size=k)]
                    i, j = e[:, 0], e[:, 1]
                    cur = adj[rows, i, j]
                    di = adj[rows, i].sum(axis=1) - cur
                    dj = adj[rows, j].sum(axis=1) - cur
                    sign = 1 - 2 * cur  # +1 adds the edge, -1 removes it
                    delta = sign * (theta[0] + betas[t] * theta[1] * (di + dj) / self.n)
                    acc = np.log(rng.uniform(size=k)) < delta
                    new = np.where(acc, 1 - cur, cur)
                    adj[rows, i, j] = new
                    adj[rows, j, i] = new
            return lw

        return source


# ---------------------------------------------------------------- pseudo-marginal loop
def pm_run(log_target, source_at, lo, hi, steps, x0, n_iter, method, batch, trials, rng):
    """RWMH on theta in the box [lo, hi] (uniform prior) with |f^| = exp(log_target) |S|."""
    def evaluate(th):
        if np.any(th < lo) or np.any(th > hi):
            return -math.inf, 0
        e = estimate_reciprocal(source_at(th), method, rng=rng, batch=batch, trials=trials)
        return log_target(th) + e.log_abs, e.sign

    x, cur = np.array(x0, float), evaluate(np.array(x0, float))
    signs, xs, acc = np.empty(n_iter), np.empty((n_iter, len(x0))), 0
    t0 = time.perf_counter()
    for t in range(n_iter):
        prop = x + steps * rng.standard_normal(len(x0))
        new = evaluate(prop)
        if math.log(rng.uniform()) < new[0] - cur[0]:
            x, cur, acc = prop, new, acc + 1
        signs[t], xs[t] = cur[1], x
    return signs, xs, acc / n_iter, (time.perf_counter() - t0) / n_iter


def pm_table(log_target, source_at, lo, hi, steps, x0, n_iter, trials, rng, names, title):
    """Run :func:`pm_run` once per estimator and print positive states, acceptance,
    sign-corrected means of the two parameters and time per iteration."""
    rows = []
    for m in RECIPROCAL_METHODS:
        signs, xs, acc, spi = pm_run(log_target, source_at, lo, hi, steps, x0, n_iter, m, 10,
                                     trials, rng)
        n_pos = int(np.sum(signs > 0))
        rows.append([m, f"{n_pos} / {n_iter}", f"{n_pos / n_iter:.4f}",
                     f"{math.sqrt(max(n_pos, 1) * (n_iter - n_pos) / n_iter) / n_iter:.4f}",
                     round(acc, 3), signed_mean(xs[:, 0], signs), signed_mean(xs[:, 1], signs),
                     f"{spi * 1e3:.1f}"])
    print(format_table(["estimator", "positive", "fraction", "binom se", "accept", *names,
                        "ms/iter"], rows, title=title))


def signed_mean(v, s):
    return float(np.sum(v * s) / np.sum(s)) if np.sum(s) else float("nan")


# ---------------------------------------------------------------- tables
def figure1(trials: int, taus: list[float], rng: np.random.Generator) -> None:
    rows = []
    for tau in taus:
        model = random_ising(tau, rng)
        lz = model.log_z()
        src = model.ais(10)
        inv = np.exp(-batch_log_weights(src, rng, trials, 10) + lz)  # biased 1/w reference
        rows.append([tau, "1/w (biased)", float(inv.std() / inv.mean()), 1.0, 10.0, ""])
        for m in RECIPROCAL_METHODS:
            t0 = time.perf_counter()
            es = [estimate_reciprocal(src, m, rng=rng, batch=10) for _ in range(trials)]
            sz = np.array([e.sign * math.exp(e.log_abs + lz) for e in es])
            pos = np.mean(sz > 0)
            rows.append([tau, m, float(np.sqrt(np.mean((sz - 1) ** 2))), float(pos),
                         float(np.mean([e.n_weights for e in es])),
                         f"{(time.perf_counter() - t0) / trials * 1e3:.1f}"])
    print(format_table(["tau", "estimator", "std/mean", "frac positive", "weights/est",
                        "ms/est"], rows,
                       title=f"Ising 10x30, Figure 1: {trials} estimates each (paper: 10,000); "
                       "AIS 10 temps, batch 10; std/mean = RMSE(S Z - 1)"))


def batch_table(trials: int, rng: np.random.Generator) -> None:
    model = random_ising(0.3, rng)
    lz, src, rows = model.log_z(), model.ais(10), []
    for m in (1, 2, 5, 10, 20):
        es = [estimate_reciprocal(src, "rbbce", rng=rng, batch=m) for _ in range(trials)]
        sz = np.array([e.sign * math.exp(e.log_abs + lz) for e in es])
        rows.append([m, float(np.sqrt(np.mean((sz - 1) ** 2))), float(np.mean(sz > 0)),
                     float(np.mean([e.n_weights for e in es]))])
    print(format_table(["batch m", "std/mean", "frac positive", "weights/est"], rows,
                       title=f"RBBCE vs batch size, Ising 10x30, tau = 0.3, {trials} estimates"))


def ising_pm(n_iter: int, rng: np.random.Generator) -> None:
    truth = uniform_ising(0.1, 0.1)
    x = np.where(rng.uniform(size=(1, ROWS, COLS)) < 0.5, 1, -1)
    for _ in range(500):
        truth.gibbs(x, 1.0, rng)
    y = x[0]
    s_a, s_b = float(y.sum()), float(np.sum(y[:, :-1] * y[:, 1:]) + np.sum(y[:-1] * y[1:]))
    pm_table(lambda th: th[0] * s_a + th[1] * s_b,
             lambda th: uniform_ising(th[0], th[1]).ais(30), np.array([-1.0, 0.0]),
             np.array([1.0, 0.4]), np.array([0.025, 0.01]), [0.1, 0.1], n_iter, 2, rng,
             ("E[alpha]", "E[beta]"),
             f"Pseudo-marginal Ising 10x30 (alpha=beta=0.1 data), {n_iter} iterations (paper: "
             "100,000; RBBCE/FCE/IAE 0.99924 / 0.97597 / 0.96538)")


def ergm_pm(n_iter: int, rng: np.random.Generator) -> None:
    idx = {f: i for i, f in enumerate(FAMILIES)}
    n = len(FAMILIES)
    adj = np.zeros((n, n))
    for a, b in BUSINESS:
        adj[idx[a], idx[b]] = adj[idx[b], idx[a]] = 1
    model = ERGM(n)
    s_obs = model.stats(adj[None])[0]
    pm_table(lambda th: float(th @ s_obs), lambda th: model.ais(th, 10),
             np.array([-2.5, -1.0]), np.array([2.5, 1.0]), np.array([1.0, 0.1]), [-1.0, 0.0],
             n_iter, 10, rng, ("E[theta_e]", "E[theta_s]"),
             f"Pseudo-marginal ERGM, Florentine business network (16 families, {len(BUSINESS)} "
             f"ties), {n_iter} iterations (paper: 100,000; 0.99890 / 0.98680 / 0.98442)")


def spin_chain(n_iter: int, seed: int) -> None:
    import json

    from stanlogz.densities.testing import spin_chain_posterior
    from stanlogz.pmmh.pseudo_marginal import pmmh

    ex = Path(__file__).resolve().parents[1] / "stan_models" / "examples"
    y = np.array(json.loads((ex / "spin_chain.data.json").read_text())["y"])
    hg, jg = np.linspace(-1, 1, 81), np.linspace(-0.5, 0.5, 41)
    post = spin_chain_posterior(y, hg, jg)
    exact = {"h": float(post.sum(1) @ hg), "J": float(post.sum(0) @ jg)}
    rows = []
    for m in RECIPROCAL_METHODS:
        r = pmmh(ex / "spin_chain_outer.stan", ex / "spin_chain_inner.stan",
                 ex / "spin_chain.data.json", estimator=m, iter=n_iter, warmup=1000, batch=40,
                 seed=seed)
        s = {row["name"]: row for row in r.summary_rows()}
        total = r.n_iter + r.warmup
        rows.append([m, f"{int(np.sum(r.signs > 0))} / {r.n_iter}", round(r.acceptance, 3)]
                    + [f"{s[k]['mean']:.3f} ± {s[k]['mcse']:.3f} "
                       f"(z {(s[k]['mean'] - exact[k]) / s[k]['mcse']:+.1f})" for k in ("h", "J")]
                    + [round(r.n_weights / total, 1), f"{r.seconds / total * 1e3:.2f}"])
    print(format_table(["estimator", "positive", "accept", "h", "J", "weights/iter", "ms/iter"],
                       rows, title=f"Continuous spin chain (L=20, Stan, batch 40), {n_iter} "
                       f"iterations; exact h {exact['h']:.3f}, J {exact['J']:.3f}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000, help="estimates per Figure-1 cell")
    ap.add_argument("--ising-iter", type=int, default=2000)
    ap.add_argument("--ergm-iter", type=int, default=300)
    ap.add_argument("--spin-iter", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="fig1,batch,ising,ergm,spin")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    only = set(args.only.split(","))
    for key, fn in (("fig1", lambda: figure1(args.trials, [0.1, 0.2, 0.3, 0.4], rng)),
                    ("batch", lambda: batch_table(args.trials, rng)),
                    ("spin", lambda: spin_chain(args.spin_iter, args.seed)),
                    ("ising", lambda: ising_pm(args.ising_iter, rng)),
                    ("ergm", lambda: ergm_pm(args.ergm_iter, rng))):
        if key in only:
            t0 = time.perf_counter()
            fn()
            print(f"({key}: {time.perf_counter() - t0:.0f} s)\n", flush=True)


if __name__ == "__main__":
    main()
