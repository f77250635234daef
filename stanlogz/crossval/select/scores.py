"""Comparing programs on any predictive score with paired standard errors, the warning about
selection-induced bias when many programs are compared, and model-averaged predictive draws.

* :func:`compare_scores`: elpd (a sum of log predictive densities), RMSE and MAE of the LOO
  predictive mean, CRPS and SCRPS (means of pointwise scores), each program against the best
  with the se of the *paired* pointwise differences (the programs are scored on the same
  observations, so the shared difficulty of each observation cancels);
* :func:`compare_measures`: several measures at once (loo 3.0's multi-measure ``loo_compare``):
  programs ranked by one of them (``rank_by``), every measure's difference to the top-ranked
  program on the utility scale (losses' signs flipped, so a worse program's diff is negative)
  with the se of the paired pointwise influences;
* :func:`selection_warning`: with many programs the best-looking one is partly the luckiest
  (Sivula et al. 2022; McLatchie & Vehtari 2023): even if all predicted equally well, the best
  would lead by about E[max of K standard normals] × the typical se of the differences;
* :func:`mix_draws`: draws of the weighted mixture of the programs' predictive distributions
  (e.g. stacking weights): each draw comes from program k for a share w_k of the draws.

What each se is an se *of*: the data-sampling error of the score as an estimate of the same
score on new observations from the data-generating process (the Monte Carlo error of the LOO
values is not included; it is small against it when the LOO diagnostics are good).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import integrate, stats

from ...errors import InputError, option
from ...stan.program import StanProgram
from ..checks.checks import generated_quantity, outcome_name
from ..checks.measures import MEASURES, CustomMeasure, Measure, elpd_measure, loo_measures
from ..checks.predictive import e_loo, loo_crps, loo_log_weights
from ..observations.pointwise import PointwiseLogLik

#: Scores by the names ``score`` takes; True where higher is better.
SCORES = {"elpd": True, "rmse": False, "mae": False, "crps": True, "scrps": True}

#: More programs than this and the comparison warns about selection-induced bias.
MANY_PROGRAMS = 11


def expected_max_normal(k: int) -> float:
    """E[max of k independent standard normals] (0 for k = 1)."""
    if k < 2:
        return 0.0

    def f(z: float) -> float:
        return z * k * stats.norm.pdf(z) * stats.norm.cdf(z) ** (k - 1)

    return float(integrate.quad(f, -12.0, 12.0, epsabs=1e-12, limit=200)[0])


def selection_warning(k: int, diff_se: Sequence[float] | np.ndarray, score: str = "elpd"
                      ) -> str | None:
    """A warning when more than :data:`MANY_PROGRAMS` programs are compared: the best's lead
    is biased upwards by selection; None for fewer programs."""
    if k <= MANY_PROGRAMS:
        return None
    se = np.asarray(diff_se, dtype=float)
    se = se[np.isfinite(se) & (se > 0)]
    typical = float(np.median(se)) if se.size else float("nan")
    return (f"{k} programs compared: the best {score} is optimistic by selection (the "
            "luckiest of many looks best; McLatchie & Vehtari 2023); were all equally good, the "
            f"best would still lead by about {expected_max_normal(k):.1f} x diff_se "
            f"(~{expected_max_normal(k) * typical:.3g} here). Treat smaller leads as noise, "
            "or confirm the choice on held-out data")


@dataclass
class ScoreComparison:
    """Programs compared on one score: estimate and se per program, difference to the best
    (estimate − best's; ≤ 0 when higher is better, ≥ 0 when lower is) and its paired se."""

    score: str
    names: list[str]
    estimate: np.ndarray
    se: np.ndarray
    diff: np.ndarray
    diff_se: np.ndarray
    best: int
    n_obs: int
    warnings: list[str] = field(default_factory=list)

    header = ("model", "score", "estimate", "se", "diff", "diff_se")

    @property
    def higher_is_better(self) -> bool:
        """Whether a higher value of the score is better."""
        return SCORES[self.score]

    def order(self) -> list[int]:
        """Program indices, best first."""
        sign = -1.0 if self.higher_is_better else 1.0
        return [int(i) for i in np.argsort(sign * self.estimate, kind="stable")]

    def table(self) -> list[list[Any]]:
        """One row per program, best first."""
        return [[self.names[i], self.score, float(self.estimate[i]), float(self.se[i]),
                 float(self.diff[i]), float(self.diff_se[i])] for i in self.order()]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"score": self.score, "higher_is_better": self.higher_is_better,
                "best": self.names[self.best], "n_obs": self.n_obs,
                "models": [{"name": self.names[i], "estimate": float(self.estimate[i]),
                            "se": float(self.se[i]), "diff": float(self.diff[i]),
                            "diff_se": float(self.diff_se[i])} for i in self.order()],
                "warnings": list(self.warnings)}


def _aggregate(score: str, v: np.ndarray) -> tuple[float, np.ndarray]:
    """The score from pointwise values ``v`` (squared errors for RMSE) and each observation's
    influence on it (its first-order contribution, for the se)."""
    n = v.size
    if score == "elpd":
        return float(v.sum()), n * (v - v.mean())
    if score == "rmse":
        r = math.sqrt(float(v.mean()))
        return r, (v - v.mean()) / (2.0 * r) if r > 0 else np.zeros(n)
    return float(v.mean()), v - v.mean()


def compare_scores(pointwise: Sequence[Any], names: Sequence[str], score: str = "elpd"
                   ) -> ScoreComparison:
    """Compare programs on ``score`` from their pointwise values on the same N observations
    (``elpd``: log predictive densities; ``rmse``: squared errors of the LOO predictive mean;
    ``mae``: absolute errors; ``crps``/``scrps``: pointwise scores, higher better). The se of a
    score, and of a difference from the paired pointwise differences, is sd(influence) /
    sqrt(N): sqrt(N var(d_i)) for the elpd sum, sd(d_i) / sqrt(N) for means, the delta method
    for RMSE."""
    if score not in SCORES:
        raise InputError(f"unknown score {score!r}; choose from {', '.join(SCORES)}")
    vals = [np.asarray(p, dtype=float).ravel() for p in pointwise]
    if len(vals) < 2 or len(names) != len(vals):
        raise InputError(f"a comparison needs at least two programs with names, got "
                         f"{len(vals)} value sets and {len(names)} names")
    n = {v.size for v in vals}
    if len(n) != 1 or min(n) < 2:
        raise InputError("every program needs the same observations (at least two) to compare "
                         f"on {score}; got sizes {sorted(n)}")
    if not all(np.all(np.isfinite(v)) for v in vals):
        raise InputError(f"pointwise {score} values must be finite")
    n_obs = vals[0].size
    agg = [_aggregate(score, v) for v in vals]
    est = np.array([a[0] for a in agg])
    infl = [a[1] for a in agg]

    def se_of(g: np.ndarray) -> float:
        return float(np.std(g, ddof=1) / math.sqrt(n_obs))

    best = int(np.argmax(est) if SCORES[score] else np.argmin(est))
    diff = est - est[best]
    diff_se = np.array([0.0 if j == best else se_of(infl[j] - infl[best])
                        for j in range(len(vals))])
    out = ScoreComparison(score, list(names), est, np.array([se_of(g) for g in infl]), diff,
                          diff_se, best, n_obs)
    w = selection_warning(len(vals), diff_se[np.arange(len(vals)) != best], score)
    if w:
        out.warnings.append(w)
    return out


def pointwise_values(score: str, log_w: np.ndarray, y: np.ndarray, y_rep: np.ndarray
                     ) -> np.ndarray:
    """Pointwise values of ``score`` (not elpd) from PSIS-LOO log weights ``(S, N)``, the
    observations and posterior-predictive draws ``(S, N)``: squared (RMSE) or absolute (MAE)
    errors of the LOO predictive mean, or CRPS/SCRPS per observation."""
    if score in ("rmse", "mae"):
        err = np.asarray(y, dtype=float).ravel() - e_loo(log_w, y_rep, quantiles=()).mean
        return err**2 if score == "rmse" else np.abs(err)
    if score in ("crps", "scrps"):
        c = loo_crps(log_w, y, y_rep)
        return c.crps_i if score == "crps" else c.scrps_i
    raise InputError(f"pointwise values of {score!r} come from the LOO results, not draws")


def mix_draws(draws: Sequence[Any], weights: Any, *, n_draws: int | None = None,
              seed: int | np.random.SeedSequence | None = None) -> np.ndarray:
    """Draws ``(n_draws, N)`` of the mixture Σ_k w_k p_k of the programs' predictive
    distributions, from each program's draws ``(S_k, N)``: program k supplies round(w_k ·
    n_draws) draws (largest remainders; systematic, so the shares are exact up to one draw),
    taken without replacement from its own draws, in a random order. ``n_draws`` defaults to
    the fewest draws of any program."""
    arrs = [np.asarray(d, dtype=float) for d in draws]
    w = np.asarray(weights, dtype=float).ravel()
    if len(arrs) != w.size or w.size < 1:
        raise InputError(f"{w.size} weights for {len(arrs)} programs' draws")
    if np.any(~np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise InputError("mixture weights must be non-negative with a positive sum")
    if any(a.ndim != 2 for a in arrs) or len({a.shape[1] for a in arrs}) != 1:
        raise InputError("every program's draws must be (draws, observations) with the same "
                         "observations")
    w = w / w.sum()
    size = min(a.shape[0] for a in arrs) if n_draws is None else int(n_draws)
    if size < 1:
        raise InputError(f"n_draws must be positive, got {size}")
    counts = mix_counts(w, size)
    rng = np.random.default_rng(seed)
    parts = []
    for a, c in zip(arrs, counts, strict=True):
        if c > a.shape[0]:
            raise InputError(f"a program with weight {c / size:.2f} needs {c} draws but has "
                             f"{a.shape[0]}; ask for fewer mixture draws")
        parts.append(a[rng.choice(a.shape[0], size=c, replace=False)])
    out = np.concatenate(parts, axis=0)
    return out[rng.permutation(size)]


def mix_counts(weights: Any, n_draws: int) -> np.ndarray:
    """How many of ``n_draws`` mixture draws each program supplies (as :func:`mix_draws`)."""
    w = np.asarray(weights, dtype=float).ravel()
    w = w / w.sum()
    counts = np.floor(w * n_draws).astype(int)
    counts[np.argsort(-(w * n_draws - counts), kind="stable")[:n_draws - counts.sum()]] += 1
    return counts


def program_pointwise(score: str, result: Any, model: StanProgram, data: Mapping[str, Any],
                      draws: Any, yrep: str | None, outcome: str | None) -> np.ndarray:
    """Pointwise values of ``score`` for one program from its LOO result (``elpd``: its
    elpd_i, fixed points included) or from its draws' ``yrep`` quantity and the observed
    ``outcome`` (default: ``yrep`` without its _rep suffix)."""
    if score == "elpd":
        return np.asarray(result.elpd_i, dtype=float)
    if yrep is None:
        raise InputError(f"comparing on {score} needs the posterior-predictive quantity: "
                         f"{option('yrep', 'NAME')}")
    y, ll, y_rep = _predictive_arrays(result, model, data, draws, yrep, outcome)
    return pointwise_values(score, loo_log_weights(ll, result.r_eff), y, y_rep)


def _predictive_arrays(result: Any, model: StanProgram, data: Mapping[str, Any], draws: Any,
                       yrep: str, outcome: str | None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The observed ``outcome`` (default: ``yrep`` without its _rep suffix), the pointwise
    log-likelihood (draws × observations) on the result's route, and the draws of ``yrep``."""
    n = result.n_obs
    name = outcome or outcome_name(yrep, data, n)
    if name not in data or np.size(data[name]) != n:
        raise InputError(f"outcome {name!r} is not a data array with {n} entries")
    pw = PointwiseLogLik(model, data, result.observations, result.log_lik_source)
    c = draws.constrained
    ll = pw.matrix(draws.flat_unconstrained(), None if c is None else c.reshape(-1, c.shape[2]),
                   draws.constrained_names)
    return (np.asarray(data[name], dtype=float).ravel(), ll,
            generated_quantity(model, draws, yrep, n))


@dataclass
class MeasureComparison:
    """Programs compared on several measures (:func:`compare_measures`): per program (rows of
    the arrays, in input order) and measure (columns): estimate, se, Monte Carlo se, and the
    difference to the top-ranked program on the utility scale (−(loss − top's) for a loss:
    negative is worse for every measure) with its paired se."""

    names: list[str]
    measures: list[str]
    rank_by: str
    estimate: np.ndarray
    se: np.ndarray
    mcse: np.ndarray
    diff: np.ndarray
    diff_se: np.ndarray
    loss: list[bool]
    best: int
    n_obs: int
    warnings: list[str] = field(default_factory=list)

    header = ("model", "measure", "estimate", "se", "mcse", "diff", "diff_se")

    def order(self) -> list[int]:
        """Program indices, best first by ``rank_by``."""
        j = self.measures.index(self.rank_by)
        u = -1.0 if self.loss[j] else 1.0
        return [int(i) for i in np.argsort(-u * self.estimate[:, j], kind="stable")]

    def table(self) -> list[list[Any]]:
        """One row per measure and program: measures in the order asked, programs ranked."""
        return [[self.names[i], m, float(self.estimate[i, j]), float(self.se[i, j]),
                 float(self.mcse[i, j]), float(self.diff[i, j]), float(self.diff_se[i, j])]
                for j, m in enumerate(self.measures) for i in self.order()]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return {"rank_by": self.rank_by, "best": self.names[self.best], "n_obs": self.n_obs,
                "sign_converted": [m for m, lo in zip(self.measures, self.loss, strict=True)
                                   if lo],
                "measures": {m: [{"name": self.names[i], "estimate": float(self.estimate[i, j]),
                                  "se": float(self.se[i, j]), "mcse": float(self.mcse[i, j]),
                                  "diff": float(self.diff[i, j]),
                                  "diff_se": float(self.diff_se[i, j])} for i in self.order()]
                             for j, m in enumerate(self.measures)},
                "warnings": list(self.warnings)}


def compare_measures(per_program: Sequence[Sequence[Measure]], names: Sequence[str],
                     rank_by: str | None = None) -> MeasureComparison:
    """Compare programs on the measures each was scored on (the same measures, in the same
    order, on the same N observations). Programs are ranked by ``rank_by`` (default elpd when
    present, else the first measure); every measure's diff is the program's value minus the
    top-ranked program's on the utility scale (signs of losses flipped), its se
    sd(influence − top's influence)/√N over the paired observations.

    Parameters
    ----------
    per_program : sequence of sequences of Measure
        Each program's measures (:func:`~stanlogz.crossval.checks.measures.loo_measures`,
        :func:`~stanlogz.crossval.checks.measures.elpd_measure`).
    names : sequence of str
        The programs' names.
    rank_by : str, optional
        The measure that ranks the programs.

    Returns
    -------
    MeasureComparison
        ``table()`` (one row per measure and program), ``to_dict()``, the arrays.

    Raises
    ------
    InputError
        Fewer than two programs, programs scored on different measures or observations, or a
        ``rank_by`` that is not among the measures.
    """
    if len(per_program) < 2 or len(names) != len(per_program):
        raise InputError(f"a comparison needs at least two programs with names, got "
                         f"{len(per_program)} measure sets and {len(names)} names")
    meas = [m.name for m in per_program[0]]
    if not meas or len(set(meas)) != len(meas):
        raise InputError(f"each program needs distinct measures, got {meas}")
    for name, ms in zip(names, per_program, strict=True):
        if [m.name for m in ms] != meas:
            raise InputError(f"{name} was scored on {[m.name for m in ms]}, not {meas}")
    sizes = {m.influence.size for ms in per_program for m in ms}
    if len(sizes) != 1:
        raise InputError(f"every program needs the same observations; got sizes {sorted(sizes)}")
    rank_by = rank_by or ("elpd" if "elpd" in meas else meas[0])
    if rank_by not in meas:
        raise InputError(f"rank_by {rank_by!r} is not among the measures {', '.join(meas)}")
    n_obs = sizes.pop()
    loss = [m.loss for m in per_program[0]]
    grid = lambda attr: np.array([[getattr(m, attr) for m in ms]  # noqa: E731
                                  for ms in per_program], dtype=float)
    est, se, mcse = grid("estimate"), grid("se"), grid("mcse")
    sign = np.where(loss, -1.0, 1.0)
    j = meas.index(rank_by)
    best = int(np.argmax(sign[j] * est[:, j]))
    diff = sign[None, :] * (est - est[best]) + 0.0  # + 0.0: no -0.0 at the top
    diff_se = np.array([[0.0 if i == best else float(
        np.std(ms[k].influence - per_program[best][k].influence, ddof=1) / math.sqrt(n_obs))
        for k in range(len(meas))] for i, ms in enumerate(per_program)])
    out = MeasureComparison(list(names), meas, rank_by, est, se, mcse, diff, diff_se, loss,
                            best, n_obs)
    w = selection_warning(len(names), np.delete(diff_se[:, j], best), rank_by)
    if w:
        out.warnings.append(w)
    return out


def parse_measures(text: str | Sequence[str]) -> list[str]:
    """Measure names from ``"elpd,rps,acc"`` or a list, checked against elpd and
    :data:`~stanlogz.crossval.checks.measures.MEASURES`."""
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text)]
    known = ("elpd", *MEASURES)
    bad = [t for t in items if t not in known]
    if not items or bad or len(set(items)) != len(items):
        raise InputError(f"measures must be distinct names among {', '.join(known)}, got "
                         f"{','.join(items) if items else 'none'}")
    return items


def program_measures(measures: Sequence[str | CustomMeasure], result: Any,
                     model: StanProgram | None, data: Mapping[str, Any] | None, draws: Any,
                     yrep: str | None, outcome: str | None) -> list[Measure]:
    """The ``measures`` of one program from its LOO result (elpd: its elpd_i and Monte Carlo
    se) and, for the others, its draws' ``yrep`` quantity against the observed ``outcome``
    under the PSIS weights of the result's pointwise log-likelihood."""
    if getattr(result, "sample_index", None) is not None:
        raise InputError("measures need every observation's LOO value: the LOO result is "
                         f"subsampled; run loo without {option('subsample')} to compare on "
                         "measures")
    others = [m for m in measures if m != "elpd"]
    scored: dict[str, Measure] = {}
    if others:
        if yrep is None or model is None or data is None:
            raise InputError(f"measures other than elpd ({', '.join(map(str, others))}) need "
                             "the program's draws and the posterior-predictive quantity: "
                             f"{option('yrep', 'NAME')}")
        y, ll, y_rep = _predictive_arrays(result, model, data, draws, yrep, outcome)
        chains = int(draws.n_chains) if ll.shape[0] % int(draws.n_chains) == 0 else 1
        got = loo_measures(loo_log_weights(ll, result.r_eff), y, y_rep, others, chains=chains)
        scored = {m.name: m for m in got}
    return [elpd_measure(result.elpd_i, float(result.mcse))
            if m == "elpd" else scored[m if isinstance(m, str) else m.name] for m in measures]
