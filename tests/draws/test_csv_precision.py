"""CmdStan CSV at 6 significant digits (issue 26 item 4): rounded simplex, Cholesky-correlation,
ordered and bounded draws are projected back onto their constraints, and evidence / LOO from
them agree with the full-precision draws; ``write_csv`` writes real CmdStan CSV (one file per
chain) that cmdstanpy and ArviZ read as its chains."""

from __future__ import annotations

import numpy as np
import pytest

from stanlogz.api import evidence
from stanlogz.crossval import loo
from stanlogz.draws import from_csv, sample, write_csv
from stanlogz.draws.project import _project, declarations, project_rounded
from stanlogz.errors import DataError, InputError
from stanlogz.stan.settings import NutsArgs


def test_declarations_and_projections_on_arrays() -> None:
    code = """data { real hi; } parameters {
      array[2] simplex[3] w;  // comment
      cholesky_factor_corr[3] L; ordered[2] mu; positive_ordered[2] s;
      real<lower=0, upper=hi> p; vector<lower=-1>[2] v; unit_vector[2] u;
      corr_matrix[2] R; real x; } model { }"""
    d = {x.name: x for x in declarations(code, {"hi": 2.0})}
    assert d["w"].kind == "simplex" and d["L"].kind == "cholesky_factor_corr"
    assert (d["p"].lower, d["p"].upper) == (0.0, 2.0) and d["v"].lower == -1.0
    assert d["x"].kind == "other" and d["x"].lower is None
    rng = np.random.default_rng(0)
    w = np.round(rng.dirichlet([1, 1, 1], size=50), 6)
    pw = _project("simplex", w, 6)
    np.testing.assert_allclose(pw.sum(axis=1), 1.0, atol=1e-15)
    assert np.abs(pw - w).max() < 2e-6  # the rounding error of 3 entries at 6 digits
    lk = np.round(np.linalg.cholesky(np.array([[1, .5, .2], [.5, 1, .3], [.2, .3, 1]])), 6)
    pl = _project("cholesky_factor_corr", lk[None], 6)[0]
    np.testing.assert_allclose(np.linalg.norm(pl, axis=1), 1.0, atol=1e-15)
    assert np.abs(pl - lk).max() < 1e-6
    po = _project("ordered", np.array([[1.23456, 1.23456, 2.0]]), 6)[0]
    assert np.all(np.diff(po) > 0) and np.abs(po - [1.23456, 1.23456, 2.0]).max() < 1e-5


def test_projection_of_a_draw_on_a_bound() -> None:
    class M:
        code = "parameters { real<lower=0, upper=1> p; simplex[2] w; } model { }"
        data_json = "{}"

    theta = np.array([[1.0, 0.3, 0.700001], [0.5, 0.25, 0.75]])
    out, note = project_rounded(theta, ["p", "w.1", "w.2"], M(), 6)
    # a value printed as its upper bound 1 was in [1 - 5e-7, 1): moved a quarter unit inside
    assert 0.999999 < out[0, 0] < 1.0 and out[1, 0] == 0.5
    np.testing.assert_allclose(out[:, 1:].sum(axis=1), 1.0, atol=1e-15)
    assert "largest change" in note and "sig_figs" in note
    same, none = project_rounded(theta[1:], ["p", "w.1", "w.2"], M(), 6)
    assert none is None and np.array_equal(same, theta[1:])


@pytest.fixture(scope="module")
def rounded_fit(compiled, tmp_path_factory):
    m = compiled("rounded")
    d = sample(m, NutsArgs(chains=4, warmup=300, draws=500), seed=3)
    folder = tmp_path_factory.mktemp("csv")
    six = write_csv(d, folder / "six.csv", sig_figs=6, warmup=300)
    full = write_csv(d, folder / "full.csv", warmup=300)
    return m, d, six, full


def test_six_digit_cmdstan_csv_evidence_and_loo_match_full_precision(rounded_fit) -> None:
    m, d, six, full = rounded_fit
    assert [f.name for f in six] == [f"six_{c}.csv" for c in (1, 2, 3, 4)]
    # the rounding really breaks the constraints: Stan refuses the raw rounded values
    names = m.param_names()
    rows = [line.split(",") for line in six[0].read_text().splitlines()
            if line and not line.startswith("#")]
    theta = np.array([[float(r[rows[0].index(n)]) for n in names] for r in rows[1:]])
    with pytest.raises((InputError, DataError, RuntimeError)):
        m.unconstrain_many(theta)
    r = from_csv(six[0].with_name("six.csv"), m)  # six.csv -> six_1.csv ... six_4.csv
    f = from_csv(full, m)
    assert r.n_chains == 4 and any("projected back" in w for w in r.warnings)
    assert not any("projected back" in w for w in f.warnings)
    # 17 digits store every double; constrain then unconstrain loses a few ulps
    np.testing.assert_allclose(f.unconstrained, d.unconstrained, rtol=0, atol=1e-9)
    # 6 digits move each unconstrained coordinate by at most ~1e-4 (relative rounding 5e-6
    # amplified by the transforms' derivatives near the edges)
    assert np.abs(r.unconstrained - d.unconstrained).max() < 1e-3
    a = evidence(m, draws=f, seed=1)
    b = evidence(m, draws=r, seed=1)
    # the draws differ by rounding only; the estimates differ by at most their Monte Carlo
    # error: even as independent estimates the difference has sd sqrt(se_a² + se_b²), and
    # 3.9 of those (P < 1e-4) is below 5.5 max(se)
    assert abs(a.log_z - b.log_z) < 5.5 * max(a.log_z_se, b.log_z_se)
    la = loo(m, draws=f, fix="none")
    lb = loo(m, draws=r, fix="none")
    # rounding log_lik to 6 digits changes each elpd_i by at most 5e-6 max|log_lik| (relative
    # rounding); summed over N observations
    bound = la.n_obs * 5e-6 * float(np.abs(la.lppd_i).max() + 10)
    # and is below PSIS's own Monte Carlo se (mcse_elpd_loo itself is NA here: with fix="none"
    # an observation stays above the k̂ threshold, as loo prints it)
    assert abs(la.elpd_loo - lb.elpd_loo) < bound < la.mcse_psis


def test_written_csv_is_read_as_chains_by_cmdstanpy_and_arviz(rounded_fit) -> None:
    import cmdstanpy

    m, d, six, full = rounded_fit
    fit = cmdstanpy.from_csv([str(p) for p in full])
    assert fit.chains == 4 and fit.num_draws_sampling == 500
    np.testing.assert_array_equal(fit.step_size, d.step_size)
    np.testing.assert_array_equal(np.asarray(fit.stan_variable("mu")).reshape(4, 500, 2),
                                  d.constrained[:, :, [d.constrained_names.index("mu.1"),
                                                       d.constrained_names.index("mu.2")]])
    from tests.conftest import arviz_from_csv

    idata = arviz_from_csv([str(p) for p in six])
    assert idata.posterior.sizes["chain"] == 4 and idata.posterior.sizes["draw"] == 500
    with pytest.raises(InputError, match="sig_figs"):
        write_csv(d, six[0].with_name("bad.csv"), sig_figs=0)


def test_values_far_off_the_constraint_are_left_for_stan_to_reject() -> None:
    class M:
        code = "parameters { real<lower=0, upper=1> p; simplex[2] w; } model { }"
        data_json = "{}"

    theta = np.array([[1.5, 0.3, 0.6], [0.5, 0.25, 0.75]])
    out, note = project_rounded(theta, ["p", "w.1", "w.2"], M(), 6)
    # p = 1.5 and a simplex summing to 0.9 are not rounding: unchanged
    assert np.array_equal(out, theta) and note is None
