"""No Monte Carlo se of elpd_loo while a point stays above the k̂ threshold (issue 35 item 3;
loo prints "MCSE of elpd_loo is NA" then): PSIS's error on such a point is not estimable from
the draws (its own mc se understates it), so a finite total mc se would be false comfort."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import stanlogz
from stanlogz.commands.loo import print_loo
from stanlogz.draws import sample
from stanlogz.report.output import Reporter

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
NORMAL = EX / "normal_mean.stan"


def _log_lik(bad: bool) -> np.ndarray:
    """4000 draws of theta ~ N(0, 0.2^2) and 12 observations near 0; with ``bad`` the last one is
    y = 5 with sd 0.5, whose ratios 1 / p(y | theta) = exp((5 - theta)^2 / 0.5) are lognormal
    with log-sd 4 (k-hat far above 0.7)."""
    rng = np.random.default_rng(8)
    theta = 0.2 * rng.normal(size=4000)
    y = rng.normal(size=12) * 0.3
    ll = stats.norm.logpdf(y[None, :], theta[:, None], 1.0)
    if bad:
        ll[:, -1] = stats.norm.logpdf(5.0, theta, 0.5)
    return ll


def test_fit_with_a_point_above_the_threshold_has_no_total_mcse(capsys) -> None:
    r = stanlogz.loo(_log_lik(bad=True))
    assert r.khat[-1] > 1.0 and r.unfixed_bad() == [11]
    assert math.isnan(r.mcse_elpd_loo)
    why = r.mcse_na_reason()
    assert why is not None and "1 observation(s) still have Pareto k-hat above 0.70" in why
    assert f"MCSE of elpd_loo is NA: {why}." in str(r)
    d = r.to_dict()
    assert d["mcse_elpd_loo"] is None and d["mcse_elpd_loo_na"] == why
    print_loo(Reporter(json_mode=False, quiet=True), r)
    assert capsys.readouterr().out == str(r) + "\n"  # the command line prints exactly str(r)
    # the same draws without that point: every k-hat is good and the mc se is given
    ok = stanlogz.loo(_log_lik(bad=False))
    assert ok.unfixed_bad() == [] and np.isfinite(ok.mcse_elpd_loo) and ok.mcse_elpd_loo > 0
    assert ok.mcse_na_reason() is None and "MCSE of elpd_loo is NA" not in str(ok)


def test_program_route_gives_no_mcse_until_the_point_is_fixed(compiled) -> None:
    data = json.loads((EX / "normal_mean.data.json").read_text())
    data = dict(data, y=data["y"][:-1] + [12.0])  # an outlier: k-hat >> 0.7 there
    m = compiled(NORMAL, data)
    d = sample(m, chains=2, warmup=300, draws=300, seed=1)
    left = stanlogz.loo(m, data, draws=d, fix="none")
    assert left.unfixed_bad() and math.isnan(left.mcse_elpd_loo)
    assert left.mcse_na_reason() is not None
    fixed = stanlogz.loo(m, data, draws=d, fix="mm", seed=1)
    assert fixed.unfixed_bad() == [] and np.isfinite(fixed.mcse_elpd_loo)


def test_fit_and_program_routes_give_the_same_mcse_on_the_same_draws(compiled) -> None:
    """One formula for the Monte Carlo se whatever the route (issue 34): ``loo`` of the program
    with its log_lik on some draws and ``loo`` of those draws alone agree to rounding, the
    pointwise mcse and the joint one of the total (which the fit route used to take as
    sqrt(Σ mcse_i²), as if the observations did not share the draws)."""
    data = json.loads((EX / "normal_mean.data.json").read_text())
    m = compiled(NORMAL, data)
    d = sample(m, chains=2, warmup=300, draws=300, seed=3)
    prog = stanlogz.loo(m, data, draws=d, log_lik="log_lik", fix="none")
    fit = stanlogz.loo(d)
    assert fit.log_lik_source == "fit" and prog.log_lik_source == "log_lik"
    assert abs(fit.elpd_loo - prog.elpd_loo) < 1e-9 and abs(fit.se - prog.se) < 1e-9
    np.testing.assert_allclose(fit.mcse_i, prog.mcse_i, rtol=1e-9, atol=1e-12)
    assert fit.mcse_psis == pytest.approx(prog.mcse_psis, rel=1e-9)
    assert fit.mcse_elpd_loo == pytest.approx(prog.mcse_elpd_loo, rel=1e-9)
    assert fit.mcse_elpd_loo != pytest.approx(math.sqrt(np.sum(fit.mcse_i**2)), rel=1e-3)
