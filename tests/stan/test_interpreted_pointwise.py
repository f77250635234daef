"""The interpreter's batched density-difference pass (stanlogz.stan.interpreted_pointwise)
against the per-call path and the closed-form pointwise log-likelihood.

Both paths sum the same stan-math double-precision terms; they differ only in where the
Jacobian (identical for every data instance) is added and subtracted, so they agree to
rounding: 1e-12 relative is ~1e4 ulps of the values here. The closed form is scipy's, whose
log densities agree with stan-math's to ~1e-15 relative; 1e-11 leaves room for the log of the
truncation's normalizing cdf.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from stanlogz.crossval.observations.observations import Observations
from stanlogz.crossval.observations.pointwise import PointwiseLogLik
from stanlogz.stan.interpreted import InterpretedModel
from stanlogz.stan.interpreted_pointwise import instance_program

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "stan_models" / "tests" / "pointwise_batch.stan"
_rng = np.random.default_rng(47)
N = 9
DATA = {"N": N, "X": _rng.normal(size=(N, 2)).tolist(), "y": _rng.normal(1, 1, N).tolist(),
        "k": _rng.poisson(2, N).tolist(), "scale": 2.0}
OBS = Observations("N", ("X", "y", "k"), N)

pytestmark = pytest.mark.stan


def exact_pointwise(theta: np.ndarray, truncated: bool = False) -> np.ndarray:
    """``(S, N)`` log p(y_i, k_i | θ) of pointwise_batch.stan at constrained draws
    ``(beta1, beta2, sigma, w1, w2, w3, ...)`` (``truncated``: with k_i ~ poisson T[, 20])."""
    x, y, k = np.array(DATA["X"]), np.array(DATA["y"]), np.array(DATA["k"])
    beta, sigma, w = theta[:, :2], theta[:, 2:3], theta[:, 3:6]
    lam = np.exp(beta[:, :1] + w[:, :1])
    return (stats.norm.logpdf(y, beta @ x.T, sigma)
            + stats.poisson.logpmf(k, lam) - truncated * stats.poisson.logcdf(20, lam)
            + stats.norm.logpdf(np.log1p(y * y), w[:, 1:2], 1 + sigma))


def _passes(code: str) -> tuple[InterpretedModel, np.ndarray, np.ndarray, np.ndarray, bool]:
    """The model, draws, and the pass's columns batched (where it can) and per call."""
    model = InterpretedModel(code, DATA, name="pointwise_batch", seed=1)
    unc = np.random.default_rng(3).normal(0, 0.7, (25, model.dim))
    pw = PointwiseLogLik(model, DATA, OBS, "difference")
    pw._batch_measured = True  # no timing race: batched wherever it can run
    batched = pw.columns(range(N), unc)
    used = not pw._batch_failed
    per_call = PointwiseLogLik(model, DATA, OBS, "difference")
    per_call._batch_failed = True  # the path it replaces
    return model, unc, batched, per_call.columns(range(N), unc), used


def test_batched_pass_equals_the_per_call_path_and_the_closed_form():
    model, unc, batched, per_call, used = _passes(PROGRAM.read_text())
    assert used
    assert np.all(np.abs(batched - per_call) <= 1e-12 * (1 + np.abs(per_call)))
    truth = exact_pointwise(model.constrain_many(unc))
    assert np.all(np.abs(batched - truth) <= 1e-11 * (1 + np.abs(truth)))
    # the batched pass passes the pass's own check (Σ ℓ_i = full − baseline difference)
    pw = PointwiseLogLik(model, DATA, OBS, "difference")
    pw.check(unc[:3])
    assert pw.checked and not pw._batch_failed


@pytest.mark.parametrize("what", ["lp_function", "truncation"])
def test_what_the_rewrite_cannot_serve_keeps_the_per_call_path(what):
    code = PROGRAM.read_text()
    if what == "lp_function":  # a user _lp function: not callable from a value-only function
        code = code.replace("functions {",
                            "functions {\n  void extra_lp(real x) {\n    target += 0 * x;\n  }")
        code = code.replace("model {", "model {\n  extra_lp(sigma);")
    else:  # Stan's truncation stays a '~' statement, which a function cannot hold
        code = code.replace("k[n] ~ poisson(lam);", "k[n] ~ poisson(lam) T[, 20];")
    model, unc, batched, per_call, used = _passes(code)
    assert not used
    np.testing.assert_array_equal(batched, per_call)
    truth = exact_pointwise(model.constrain_many(unc), truncated=what == "truncation")
    assert np.all(np.abs(batched - truth) <= 1e-11 * (1 + np.abs(truth)))


def test_rewrite_reads_declarations_and_passes_each_instance_its_observations():
    code = instance_program(PROGRAM.read_text(), ["X", "y", "k"], "N")
    assert ("real slz_logp(int N, matrix X, vector y, array[] int k, real scale, "
            "vector beta, real sigma, vector w)") in code
    assert "vector[N] ylog = log1p(y .* y);" in code
    assert "real lam = exp(shift(beta[1], w[1]));" in code  # the bound dropped in the body
    assert "slz_target += normal_lpdf(y | X * beta, sigma);" in " ".join(code.split())
    assert "slz_logp(slz_len[slz_j], X[slz_idx[slz_j, 1:slz_len[slz_j]]]" in code


def test_pass_keeps_the_per_call_path_where_it_is_measured_faster(monkeypatch):
    from stanlogz.crossval.observations import batched

    model = InterpretedModel(PROGRAM.read_text(), DATA, name="pointwise_batch", seed=1)
    unc = np.random.default_rng(4).normal(0, 0.7, (batched.MEASURE_DRAWS, model.dim))
    timed = batched._per_call

    def instant(*args):  # the per-call path measured as free: the batched one cannot win
        want, _ = timed(*args)
        return want, (0.0, 0.0)

    monkeypatch.setattr(batched, "_per_call", instant)
    pw = PointwiseLogLik(model, DATA, OBS, "difference")
    cols = pw.columns(range(N), unc)
    assert pw._batch_measured and pw._batch_failed
    truth = exact_pointwise(model.constrain_many(unc))
    assert np.all(np.abs(cols - truth) <= 1e-11 * (1 + np.abs(truth)))


def test_nuts_started_from_a_previous_run_samples_the_exact_posterior():
    # normal_mean: mu | y ~ normal(m, s) with precision N / sigma^2 + 1 / prior_sd^2 = 10.25.
    # 4 x 1000 draws of a 1-D Gaussian under NUTS have ESS >= 1000 (conservative), so the
    # mean is within 5 se = 5 s / sqrt(1000) with probability 1 - 6e-7, the variance within
    # 5 x sqrt(2 / 1000) of s^2 (relative) likewise.
    import json

    from stanlogz.stan.settings import NutsArgs

    ex = ROOT / "stan_models" / "examples"
    data = json.loads((ex / "normal_mean.data.json").read_text())
    model = InterpretedModel((ex / "normal_mean.stan").read_text(), data, name="normal_mean")
    first = model.nuts(NutsArgs(warmup=300, draws=200, backend="interpreted"), seed=11)
    warm = model.nuts(NutsArgs(warmup=50, draws=1000, backend="interpreted"), seed=12,
                      warm=first)
    prec = data["N"] / data["sigma"] ** 2 + 1 / data["prior_sd"] ** 2
    m, s = sum(data["y"]) / data["sigma"] ** 2 / prec, prec ** -0.5
    mu = warm.unconstrained[..., 0].ravel()
    assert abs(mu.mean() - m) <= 5 * s / np.sqrt(1000)
    assert abs(mu.var() / s**2 - 1) <= 5 * np.sqrt(2 / 1000)


def test_a_pass_over_more_rows_than_one_instance_holds_is_split(monkeypatch):
    # posteriordb 2pl_latent_reg_irt (N = 7000): the interpreter keeps about 2.4 MB per row of
    # a batched instance, and one instance of 3500 rows per thread was killed for memory. A
    # cap of 2 rows splits this pass over several instances within it, with the same values
    # to the last bit (the same terms summed in the same order)
    from stanlogz.stan import interpreted_pointwise as ip

    model, unc, batched, _, used = _passes(PROGRAM.read_text())
    assert used
    rows: list[int] = []
    real = InterpretedModel.__init__

    def counting(self, code, data, *args, **kwargs):
        if isinstance(data, dict) and "slz_idx" in data:  # a batched instance
            rows.append(len(data["slz_idx"]))
        real(self, code, data, *args, **kwargs)

    monkeypatch.setattr(InterpretedModel, "__init__", counting)

    def run() -> np.ndarray:
        rows.clear()
        pw = PointwiseLogLik(model, DATA, OBS, "difference")
        pw._batch_measured = True
        out = pw.columns(range(N), unc)
        assert not pw._batch_failed and rows
        return out

    run()  # uncapped: one instance of 11 rows (2 baselines and 9 observations)
    assert rows == [11]
    monkeypatch.setattr(ip, "MAX_ROWS", 2)
    split = run()
    assert rows == [2, 2, 2, 2, 2, 1]
    np.testing.assert_array_equal(split, batched)
