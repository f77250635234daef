"""Mixture importance sampling LOO (issue 26 item 5; Silva & Zanella 2022) against the closed-
form LOO of the conjugate normal-mean example with an influential last observation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

import stanlogz
from benchmarks.truths.crossval.truths import normal_mean_loo as _exact
from stanlogz.cli import main
from stanlogz.crossval.psis_loo.mixture_loo import mixture_loo
from stanlogz.stan.settings import NutsArgs

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
BASE = json.loads((EX / "normal_outlier.data.json").read_text())
FAST = NutsArgs(chains=4, warmup=300, draws=1000)


def _data(y10: float) -> dict:
    return dict(BASE, y=BASE["y"][:-1] + [y10])


def test_mixture_loo_lands_on_exact_loo(compiled) -> None:
    d = _data(5.0)
    m = compiled(EX / "normal_mean.stan", d)
    r = mixture_loo(m, settings=FAST, seed=3)
    ex = _exact(d)
    assert r.fix == "mis" and r.n_obs == 10
    # no se at all when any observation's terms have k-hat > 0.5 (or too small an IS ESS)
    given = np.isfinite(r.psis_mcse_i)
    assert given.all() or not given.any()
    assert not given.any() or np.all(r.khat <= 0.5)
    assert math.isfinite(r.mcse_elpd_loo) == bool(given.all())
    # benchmarks/mixture_loo.py: where an se is given, ±2 mcse covers ~0.95 (z close to
    # N(0, 1)), so 4.5 mcse fails with probability ~1e-5 per value
    assert np.all(np.abs(r.elpd_i - ex)[given] < 4.5 * r.psis_mcse_i[given])
    if given.all():
        assert abs(r.elpd_loo - ex.sum()) < 4.5 * r.mcse_elpd_loo
    else:
        assert any("fix='exact'" in w for w in r.warnings)
    # loo(fix="mis") is a fix-up: only observations above the k-hat threshold change
    r2 = stanlogz.loo(m, fix="mis", chains=4, warmup=300, n_draws=1000, seed=3)
    keep = np.array([i not in {f.index for f in r2.fixed} for i in range(10)])
    np.testing.assert_array_equal(r2.elpd_i[keep], r2.psis_elpd_i[keep])


def test_too_influential_point_gets_no_se(compiled) -> None:
    m = compiled(EX / "normal_mean.stan", _data(12.0))
    r = mixture_loo(m, settings=FAST, seed=4)
    # y10 = 12 sits 11 sd from the others: under the mixture (≈ the posterior without it) its
    # likelihood is lognormal with log-sd ~3.6, a tail far heavier than k = 0.5
    assert r.khat[-1] > 0.5 and math.isnan(r.mcse_elpd_loo) and math.isnan(r.psis_mcse_i[-1])
    assert any("fix='exact'" in w for w in r.warnings)


def test_cli_fix_mis(capsys, compiled, tmp_path) -> None:
    compiled(EX / "normal_mean.stan", _data(5.0))  # built once for the session
    data = tmp_path / "d.json"
    data.write_text(json.dumps(_data(5.0)))
    rc = main(["--json", "--quiet", "--seed", "3", "loo", str(EX / "normal_mean.stan"),
               "--data", str(data), "--fix", "mis", "--chains", "4", "--warmup", "300",
               "--draws", "1000"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    ref = stanlogz.loo(compiled(EX / "normal_mean.stan", _data(5.0)), fix="mis", chains=4,
                       warmup=300, n_draws=1000, seed=3)
    assert res["fix"] == "mis" and res["n_obs"] == 10
    assert abs(res["elpd_loo"] - ref.elpd_loo) < 1e-9  # the CLI's seed 3 is the API's
    rc = main(["loo", "--fit", str(data), "--fix", "mis"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "need(s) the Stan program" in err


