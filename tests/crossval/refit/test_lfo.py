"""Leave-future-out cross-validation (stanlogz.crossval.refit.lfo, ``stanlogz lfo``) on the shipped
conjugate AR(2) program, whose M-step-ahead predictive densities are ratios of closed-form
normal-inverse-gamma evidences; bad input.

Stochastic checks are z-tests |estimate − truth| <= 4.5 se (6.8e-6 per check for an honest
se), each test's union bound stated (all <= 1e-4), fixed seeds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.truths.crossval import truths
from stanlogz.cli import main
from stanlogz.crossval.refit.lfo import lfo
from stanlogz.errors import InputError
from tests.helpers import elpd_of

EXAMPLES = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
AR = EXAMPLES / "ar_nig.stan"
Z = 4.5


def _data() -> dict:
    return json.loads((EXAMPLES / "ar_nig.data.json").read_text())


def test_truth_is_a_ratio_of_evidences() -> None:
    """The closed-form evidence factorizes over time: log p(y_{3:N} | y_{1:2}) equals the sum of
    the one-step-ahead terms from t = 2 (deterministic)."""
    d = _data()
    args = (d["P"], d["b_scale"], d["a0"], d["b0"])
    steps = truths.ar_nig_lfo(d, min_train=2, ahead=1)
    assert steps.sum() == pytest.approx(truths.ar_nig_log_evidence(d["y"], *args), abs=1e-9)
    two = truths.ar_nig_lfo(d, min_train=30, ahead=2)
    one = truths.ar_nig_lfo(d, min_train=30, ahead=1)
    assert two == pytest.approx(one[:-1] + one[1:], abs=1e-9)


def test_exact_lfo_against_conjugate_truth(compiled) -> None:
    """Exact one-step-ahead LFO from t = 32: every origin and the sum against the closed form
    (9 z-tests: failure probability <= 6.1e-5)."""
    d = _data()
    r = lfo(compiled(AR, d), d, min_train=32, ahead=1, method="exact", chains=4, warmup=500,
            n_draws=1000, seed=7)
    truth = truths.ar_nig_lfo(d, 32, 1)
    assert r.origins.tolist() == list(range(32, 40))
    assert r.refits == list(range(32, 41))
    assert np.all(np.abs(r.elpd_t - truth) < Z * r.mcse_t), (r.elpd_t - truth, r.mcse_t)
    assert abs(r.elpd_lfo - truth.sum()) < Z * r.mcse
    assert r.mcse < 0.05  # measured 0.012


def test_psis_lfo_with_refits_against_conjugate_truth(compiled) -> None:
    """Two-step-ahead PSIS-LFO from t = 30 with the refit threshold at k-hat 0.3 (so that some
    origins refit): refits happen exactly where k-hat exceeded it, and the sum matches the
    closed form within 4.5 Monte Carlo se plus 0.02 nat for PSIS's own bias (k-hat <= 0.3 here;
    the bias at such k-hat is well under 0.01 nat per origin with 4000 draws). One z-test:
    failure probability <= 6.8e-6."""
    d = _data()
    r = lfo(compiled(AR, d), d, min_train=30, ahead=2, method="psis", k_threshold=0.3,
            chains=4, warmup=500, n_draws=1000, seed=8)
    truth = truths.ar_nig_lfo(d, 30, 2)
    assert r.elpd_t.size == truth.size == 9
    refit = np.isin(r.origins, r.refits)
    assert refit[0] and np.all(np.isnan(r.khat_t[refit]))
    assert np.all(r.khat_t[~refit] <= 0.3)
    assert abs(r.elpd_lfo - truth.sum()) < Z * r.mcse + 0.02, (r.elpd_lfo, truth.sum(),
                                                                 r.mcse)
    a = r.to_arviz()
    assert elpd_of(a) == pytest.approx(r.elpd_lfo)


def test_psis_lfo_refits_start_warm(compiled) -> None:
    """With a threshold of 0 (a refit wherever k-hat is positive), the refits after the first
    start at the last fit's draws with a short warmup: fewer gradients per refit than the same
    refits cold (full warmups from random inits; measured 0.77 of them), and both sums on the
    closed form within 4.5 Monte Carlo se plus 0.02 nat (as above; two z-tests: failure
    probability <= 1.4e-5)."""
    d = _data()
    truth = truths.ar_nig_lfo(d, 30, 2).sum()
    runs = [lfo(compiled(AR, d), d, min_train=30, ahead=2, method="psis", k_threshold=0.0,
                chains=4, warmup=500, n_draws=500, seed=3, warm_refits=warm)
            for warm in (True, False)]
    per_refit = []
    for r in runs:
        assert len(r.refits) > 2
        assert abs(r.elpd_lfo - truth) < Z * r.mcse + 0.02, (r.elpd_lfo, truth, r.mcse)
        per_refit.append(r.n_gradient_evals / len(r.refits))
    assert per_refit[0] < 0.9 * per_refit[1], per_refit


def test_cli_lfo_json(compiled, capsys, tmp_path) -> None:
    d = _data()
    compiled(AR, d)
    plot = tmp_path / "lfo.png"
    rc = main(["--json", "--quiet", "--seed", "3", "lfo", str(AR), "--data",
               str(EXAMPLES / "ar_nig.data.json"), "--min-train", "37", "--ahead", "2",
               "--warmup", "300", "--draws", "500", "--plot", str(plot)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and plot.stat().st_size > 0
    assert out["method"] == "psis" and [p["t"] for p in out["pointwise"]] == [37, 38]
    assert out["pointwise"][0]["predicts"] == [38, 39]


@pytest.mark.parametrize(("args", "message"), [
    (["--min-train", "39", "--ahead", "2"], "exceeds the 40 observations"),
    (["--min-train", "30", "--ahead", "0"], "ahead must be a positive integer"),
    (["--min-train", "2"], "rejects its first 2 observations"),
    (["--min-train", "30", "--k-threshold", "2"], "k_threshold must be in [0, 1]"),
])
def test_cli_bad_input(compiled, capsys, args, message) -> None:
    compiled(AR, _data())
    rc = main(["--quiet", "lfo", str(AR), "--data", str(EXAMPLES / "ar_nig.data.json"), *args])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("stanlogz: error: ") and err.count("\n") == 1, err
    assert message in err, err


def test_bad_method(compiled) -> None:
    d = _data()
    with pytest.raises(InputError, match="method must be one of psis, exact"):
        lfo(compiled(AR, d), d, min_train=30, method="kfold")


def test_exact_lfo_with_one_latent_state_per_time(compiled) -> None:
    """A local-level model has one latent state per time, so every prefix has its own number of
    parameters: exact two-step-ahead LFO integrates the two new states out (augmented bridge)
    and matches the Gaussian closed form at every origin and in sum (5 z-tests: failure
    probability <= 3.4e-5). PSIS-LFO needs a fixed parameter space and says so."""
    path = EXAMPLES / "local_level.stan"
    d = json.loads((EXAMPLES / "local_level.data.json").read_text())
    m = compiled(path, d)
    r = lfo(m, d, min_train=25, ahead=2, method="exact", warmup=500, n_draws=1000, seed=9)
    y, cov = np.array(d["y"]), truths.local_level_cov(d)
    truth = np.array([truths.gaussian_heldout(y[:t + 2], cov[:t + 2, :t + 2], [t, t + 1])
                      for t in r.origins])
    assert r.origins.tolist() == [25, 26, 27, 28]
    assert np.all(np.abs(r.elpd_t - truth) < Z * r.mcse_t), (r.elpd_t - truth, r.mcse_t)
    assert abs(r.elpd_lfo - truth.sum()) < Z * r.mcse
    with pytest.raises(InputError, match="PSIS-LFO needs a fixed parameter space"):
        lfo(m, d, min_train=25, method="psis", warmup=200, n_draws=200, seed=1)


def test_psis_lfo_withholds_the_se_where_a_fits_chains_disagree(compiled, monkeypatch) -> None:
    """Where a fit's chains disagree (a refit's probe found another mode and its chains were
    joined; stood in for here on the second fit, the first refit), the origins estimated from
    that fit's draws keep their values and their se is NA, as is the total's, with the
    warning; the other origins keep theirs. Nothing here is statistical."""
    import stanlogz.crossval.refit.lfo as lfo_module

    seen: list[str] = []

    def disagreeing(unconstrained, what, value):
        seen.append(what)
        return f"{what}: its chains disagree (stood in)" if len(seen) == 2 else None

    monkeypatch.setattr(lfo_module, "disagreeing", disagreeing)
    d = _data()
    r = lfo(compiled(AR, d), d, min_train=30, ahead=2, method="psis", k_threshold=0.0,
            chains=4, warmup=300, n_draws=200, seed=3)
    assert len(r.refits) >= 3 and len(seen) == len(r.refits)
    start, end = r.refits[1], r.refits[2]
    na = (r.origins >= start) & (r.origins < end)
    assert na.any() and np.all(np.isnan(r.mcse_t[na])) and np.all(np.isfinite(r.mcse_t[~na]))
    assert np.all(np.isfinite(r.elpd_t)) and math.isnan(r.mcse)
    assert any("its chains disagree (stood in)" in w for w in r.warnings)
