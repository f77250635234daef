"""PSIS-LOO of a fit without its Stan program (issue 26 item 3): ArviZ InferenceData, a
cmdstanpy fit, CmdStan CSV files and a log-likelihood array give the same numbers as
``arviz.loo``; ``loo_compare`` and the CLI accept them.

The draws are real CmdStan 2.35 output (/work/shared/fixtures/cmdstan), so every number here is
deterministic; the truth for the coin model is its closed-form leave-one-out density.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz._util.sum_se import arviz0_factor
from stanlogz.cli import main
from stanlogz.crossval import loo_compare
from stanlogz.crossval.refit.cv_se import calibration_factor
from stanlogz.errors import DataError, InputError

FIX = Path("/work/shared/fixtures/cmdstan")
if not FIX.is_dir():  # the fixtures also live in the repository's shared/ folder
    FIX = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "cmdstan"
COIN = sorted(str(p) for p in (FIX / "coin").glob("coin-*.csv"))
SCHOOLS = sorted(str(p) for p in (FIX / "schools").glob("schools-*.csv"))


def _arviz_idata(files: list[str]):
    from tests.conftest import arviz_from_csv

    return arviz_from_csv(files)


def test_loo_of_inference_data_equals_arviz() -> None:
    from stanlogz import arviz_compat

    idata = _arviz_idata(SCHOOLS)
    ref = arviz_compat.loo(idata)
    r = stanlogz.loo(idata)
    assert r.program is None and r.fix == "none" and r.n_obs == 8
    # same smoothing and r_eff as ArviZ: equal to rounding
    # se is loo's sqrt(N var(elpd_i)) with ddof 1 (as R's loo and ArviZ 1.x); ArviZ 0.x's
    # ddof 0 is smaller by the factor sqrt((N - 1) / N). The small-N factor is only in the
    # interval beside it.
    ddof_factor = 1.0 if arviz_compat.arviz_major() >= 1 else 1.0 / arviz0_factor(r.n_obs)
    assert abs(r.elpd_loo - ref["elpd"]) < 1e-6
    assert abs(r.se * ddof_factor - ref["se"]) < 1e-6
    assert r.elpd_loo_interval.high - r.elpd_loo == pytest.approx(
        2 * calibration_factor(r.elpd_i) * r.se, rel=1e-12)
    assert abs(r.p_loo - ref["p_loo"]) < 1e-6
    np.testing.assert_allclose(r.elpd_i, ref["elpd_i"], atol=1e-6)
    np.testing.assert_allclose(r.khat, ref["pareto_k"], atol=1e-6)
    # the same draws through every other door
    import cmdstanpy

    for other in (cmdstanpy.from_csv(SCHOOLS), SCHOOLS, str(FIX / "schools" / "schools-*.csv")):
        o = stanlogz.loo(other)
        assert abs(o.elpd_loo - ref["elpd"]) < 1e-6 and abs(o.p_loo - ref["p_loo"]) < 1e-6
    # model=None with draws=... is the same call
    assert abs(stanlogz.loo(None, draws=SCHOOLS).elpd_loo - ref["elpd"]) < 1e-6


def test_loo_of_log_lik_array_and_the_closed_form_truth() -> None:
    from stanlogz.draws.stancsv import read_columns

    values, names, _ = read_columns(COIN)
    ll = values[:, :, [j for j, n in enumerate(names) if n.startswith("log_lik")]]
    r = stanlogz.loo(ll)  # (chains, draws, N); r_eff 1 for an array
    assert r.r_eff == 1.0 and r.n_samples == 4000
    r1 = stanlogz.loo(ll.reshape(-1, 10))
    assert abs(r1.elpd_loo - r.elpd_loo) < 1e-12
    # Beta(1,1) prior, 2 ones in 10: leaving out a one gives Beta(2, 9), p(1) = 2/11; leaving
    # out a zero gives Beta(3, 8), p(0) = 8/11
    truth = 2 * math.log(2 / 11) + 8 * math.log(8 / 11)
    # PSIS with all k-hat small: the error is within a few Monte Carlo se (4 se: P < 1e-4
    # under the normal approximation of the PSIS error; the draws are fixed, so deterministic)
    assert np.all(r.khat < 0.5)
    assert abs(r.elpd_loo - truth) < 4 * r.mcse_elpd_loo
    exact_i = np.where(np.array([0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) == 1, math.log(2 / 11),
                       math.log(8 / 11))
    assert np.all(np.abs(r.elpd_i - exact_i) < 4 * r.mcse_i)


def test_compare_accepts_program_free_results() -> None:
    a = stanlogz.loo(SCHOOLS)
    from stanlogz.crossval.psis_loo.fitloo import loo_from_fit

    b = loo_from_fit(SCHOOLS, name="copy")
    # a worse "program": every pointwise log-likelihood shifted by -0.5 per draw
    from stanlogz.draws.stancsv import read_columns

    values, names, _ = read_columns(SCHOOLS)
    ll = values[:, :, [j for j, n in enumerate(names) if n.startswith("log_lik")]] - 0.5
    c = loo_from_fit(ll, r_eff=a.r_eff, name="shifted")
    cmp = loo_compare([a, c], names=["schools", "shifted"])
    assert cmp.best == 0
    # shifting log p(y_i | θ) by a constant shifts each elpd_i by exactly that constant
    # and loo's diff_se, of the pointwise differences only, is 0 (the Monte Carlo part is
    # diff_mcse beside it)
    assert abs(cmp.elpd_diff[1] + 0.5 * a.n_obs) < 1e-9
    assert cmp.diff_se[1] == pytest.approx(0.0, abs=1e-9) and cmp.diff_mcse[1] > 0
    # eight observations: too few for a calibrated interval of the difference
    assert np.all(np.isnan(cmp.diff_interval[1]))
    assert any("only 8 observations" in w for w in cmp.warnings())
    assert abs(b.elpd_loo - a.elpd_loo) < 1e-12 and b.model == "copy"


def test_refusals_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="need.* the Stan program"):
        stanlogz.loo(COIN, fix="exact")
    with pytest.raises(InputError, match="need.* the Stan program"):
        stanlogz.loo(COIN, subsample=3)
    with pytest.raises(InputError, match="not both"):
        stanlogz.loo(COIN, draws=COIN)
    # a CSV without log_lik columns
    src = Path(COIN[0]).read_text().splitlines()
    head = next(i for i, line in enumerate(src) if line.startswith("lp__"))
    cols = src[head].split(",")
    keep = [j for j, c in enumerate(cols) if not c.startswith("log_lik")]
    out = [",".join(line.split(",")[j] for j in keep) if not line.startswith("#") and line
           else line for line in src]
    f = tmp_path / "nolik.csv"
    f.write_text("\n".join(out) + "\n")
    with pytest.raises(DataError, match="no 'log_lik' columns"):
        stanlogz.loo(str(f))


def test_cli_loo_from_fit_files_without_a_program(tmp_path: Path, capsys) -> None:
    for f in COIN:
        shutil.copy(f, tmp_path)
    rc = main(["--json", "--quiet", "loo", "--fit", *sorted(str(p) for p in
                                                              tmp_path.glob("coin-*.csv"))])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    ref = stanlogz.loo(COIN)
    assert res["n_obs"] == 10 and abs(res["elpd_loo"] - ref.elpd_loo) < 1e-9
    assert res["log_lik_source"] == "fit" and res["fix"] == "none"
    rc = main(["loo", "--fit", *COIN, "--fix", "mm"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "need(s) the Stan program" in err
    rc = main(["loo"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--fit" in err


def test_cli_loo_says_what_its_se_includes(capsys) -> None:
    rc = main(["loo", "--fit", *SCHOOLS])
    out, err = capsys.readouterr()
    assert rc == 0, err
    r = stanlogz.loo(SCHOOLS)
    iv = r.elpd_loo_interval
    assert f"95.4% interval for elpd_loo: [{iv.low:.1f}, {iv.high:.1f}]" in out
    assert f"small-N factor {iv.factor:.2f}" in out
    assert "Only 8 observations: loo's SE understates the error" in out


def test_loo_of_a_fit_carries_the_k_hat_bands_bias_in_its_mcse() -> None:
    # exact posterior draws of a hierarchical normal with known scales (groups of 2-4, tau 1:
    # most values in the k-hat band 0.2-0.7, the exact LOO closed-form). No value can be refit
    # without the program, so the band's estimated PSIS bias joins the mc se as an error, as
    # in loo() of a program whose band refits cost too much
    from scipy import stats

    from benchmarks.band_bias_coverage import data_set, exact_loo, posterior_draws
    from stanlogz.crossval.psis_loo.band_refit import BAND_LOW, band_bias

    rng = np.random.default_rng([45, 2])
    g, y = data_set(rng, 100, 4, 1.0, 1.0, min_n=2)
    theta = posterior_draws(g, y, 1.0, 1.0, 4000, rng)
    ll = stats.norm.logpdf(y[None, :], theta[:, g], 1.0).reshape(4, 1000, -1)
    # at the default threshold one value (k-hat 0.72) is above it and the mc se NA
    r = stanlogz.loo(ll, k_threshold=1.0)
    band = (r.khat >= BAND_LOW) & (r.khat <= 1.0)
    assert r.band.status == "skipped" and r.band.n == band.sum() > 200
    assert r.band.bias == pytest.approx(band_bias(r.psis_mcse_i[band], r.khat[band]))
    assert r.mcse_elpd_loo == pytest.approx(math.hypot(r.mcse_psis, r.mcse_bias, r.band.bias))
    assert "cannot refit them" in r.band.note and r.band.note in r.warnings
    assert r.to_dict()["band"]["bias"] == pytest.approx(r.band.bias)
    # the benchmark (band_bias_coverage, 137 fits like this one) measured |z| below 1.4 in all:
    # within 4 of this mc se of the exact total, probability far above 1 - 1e-4
    exact = exact_loo(g, y, 1.0, 1.0).sum()
    assert abs(r.elpd_loo - exact) < 4 * r.mcse_elpd_loo
