"""Choosing between programs: p_worse and the loo 2.10 difference diagnostics on constructed
pointwise values, the combined result (table, weights, ArviZ frame, HTML), the three shipped
regression programs end to end, and the bad inputs (one line, exit 2)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from stanlogz import arviz_compat
from stanlogz._util.sum_se import arviz0_factor, sum_se
from stanlogz.cli import main
from stanlogz.crossval.elpd.base import ElpdResult
from stanlogz.crossval.select.choose import check_request, check_same_data, choose, parse_weights
from stanlogz.crossval.select.compare import loo_compare, tail_khat
from stanlogz.errors import InputError
from tests.helpers import robust_regression_loo_grid

EX = Path(__file__).resolve().parents[3] / "stan_models" / "examples"
DATA = EX / "regression.data.json"
PROGRAMS = [EX / "regression.stan", EX / "regression_null.stan", EX / "regression_robust.stan"]
#: exact log Z of the three programs on regression.data.json (their header comments)
EXACT_LOG_Z = np.array([-29.477367, -35.416101, -30.238090])


@dataclass
class FakeLoo(ElpdResult):
    """What loo_compare and ProgramChoice read from a LooResult (through the elpd interface:
    ``elpd`` is ``elpd_loo``, ``mcse`` is ``mcse_elpd_loo``)."""

    kind: ClassVar[str] = "loo"  # its elpd and p: elpd_loo, p_loo

    elpd_i: np.ndarray
    model: str = "m"
    threshold: float = 0.7
    bad: list[int] = field(default_factory=list)
    fixed: list = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    p_loo: float = 2.0
    mcse_elpd_loo: float = 0.0
    sample_index: np.ndarray | None = None

    @property
    def elpd_loo(self) -> float:
        return float(self.elpd_i.sum())

    @property
    def mcse(self) -> float:
        return self.mcse_elpd_loo

    @property
    def se(self) -> float:
        return sum_se(self.elpd_i)  # as LooResult's

    @property
    def n_obs(self) -> int:
        return int(self.elpd_i.size)

    @property
    def mcse_i(self) -> np.ndarray:
        return np.zeros(self.n_obs)

    @property
    def khat(self) -> np.ndarray:
        return np.zeros(self.n_obs)

    def unfixed_bad(self) -> list[int]:
        return list(self.bad)


def pair(diffs: np.ndarray, seed: int = 0) -> list[FakeLoo]:
    """A best program and one whose pointwise elpd is lower by ``diffs``."""
    base = np.random.default_rng(seed).normal(-1.0, 0.3, diffs.size)
    return [FakeLoo(base, "best"), FakeLoo(base - diffs, "other")]


def test_p_worse_is_the_normal_probability_of_a_negative_difference():
    d = np.random.default_rng(1).normal(0.15, 0.4, 60)  # elpd_diff about -9: an se is given
    c = loo_compare(pair(d), ["best", "other"])
    diff, se = -d.sum(), c.diff_se[1]
    assert c.elpd_diff[1] == pytest.approx(diff)
    # loo: pnorm(0, elpd_diff, se_diff) = Phi(-elpd_diff / se_diff)
    assert c.p_worse[1] == pytest.approx(0.5 * (1 + math.erf(-diff / se / math.sqrt(2))))
    assert np.isnan(c.p_worse[0]) and c.table()[0][7] is None
    assert c.diag_diff == ["", "N < 100"]


def test_diff_se_covers_the_expected_difference_at_its_exact_rate():
    """diff_se against the exact sampling distribution: 500 programs whose pointwise elpd falls
    short of the best one's by iid N(0.5, 0.4²) values (N = 60), so each elpd_diff has
    expectation -30 and z = (elpd_diff + 30) / diff_se = -t_59 exactly (the se uses the
    ddof-1 variance, as loo and ArviZ 1.x). The number of the 500 with |z| <= 2 is
    Binomial(500, p0), p0 = P(|t_59| <= 2) = 0.950; it lies between the 5e-5 and 1 - 5e-5 quantiles
    except with probability <= 1e-4 (scipy.stats.binom). An se off by sqrt(2) either way
    (coverage 0.834 or 0.993) falls outside those bounds with probability > 0.99."""
    from scipy import stats

    n, reps, mu = 60, 500, 0.5
    rng = np.random.default_rng(31)
    base = rng.normal(-1.0, 0.3, n)
    d = rng.normal(mu, 0.4, (reps, n))
    names = ["best"] + [f"o{r}" for r in range(reps)]
    c = loo_compare([FakeLoo(base, "best")] + [FakeLoo(base - x, m)
                                               for x, m in zip(d, names[1:], strict=True)],
                    names)
    assert c.best == 0  # every sum of d is > 0 here (mean 30, sd 3.1)
    z = (c.elpd_diff[1:] + n * mu) / c.diff_se[1:]
    covered = int(np.sum(np.abs(z) <= 2))
    p0 = 1 - 2 * stats.t.sf(2.0, n - 1)
    lo, hi = stats.binom.ppf(5e-5, reps, p0), stats.binom.isf(5e-5, reps, p0)
    assert lo <= covered <= hi, (covered, lo, hi, p0)


def test_difference_diagnostics_follow_loo():
    rng = np.random.default_rng(2)
    # N >= 100 and a small difference
    small = loo_compare(pair(rng.normal(0.01, 0.3, 400)), ["a", "b"])
    assert abs(small.elpd_diff[1]) < 4 and small.diag_diff[1] == "|elpd_diff| < 4"
    # a clear difference with normal pointwise differences: no flag (k-hat of |normal| tails
    # is ~0, sd 0.06 at 300 tail draws; 0.5 is 8 sd away)
    clear = loo_compare(pair(rng.normal(0.05, 0.3, 10000)), ["a", "b"])
    assert clear.elpd_diff[1] < -4 and clear.diag_diff[1] == ""
    assert clear.khat_diff[1] < 0.3
    # Cauchy pointwise differences (tail index 1): k-hat ~ 1 with sd ~0.12 from 300 tail
    # draws, so above 0.5 except with probability ~1e-5
    heavy = rng.standard_cauchy(10000) * 0.05 + 0.05
    hc = loo_compare(pair(heavy), ["a", "b"])
    assert abs(hc.elpd_diff[1]) >= 4 and hc.diag_diff[1] == "khat_diff > 0.5"
    assert tail_khat(heavy) > 0.5
    # the elpd of a program with unfixed high-k observations is flagged
    bad = pair(rng.normal(0.05, 0.3, 50))
    bad[1].bad = [3, 7]
    assert loo_compare(bad, ["a", "b"]).diag_elpd == ["", "2 k_psis > 0.70"]


def fake_evidence(log_z: np.ndarray, se: np.ndarray):
    from stanlogz import ComparisonResult, EvidenceResult

    res = [EvidenceResult(method="fake", log_z=float(z), log_z_se=float(s), n_draws=1, n_evals=1,
                          seconds=0.0) for z, s in zip(log_z, se, strict=True)]
    return ComparisonResult(names=["a", "b", "c"], results=res, prior_probs=np.full(3, 1 / 3))


def three_loos() -> list[FakeLoo]:
    rng = np.random.default_rng(3)
    base = rng.normal(-1.0, 0.4, 120)
    return [FakeLoo(base + rng.normal(0, 0.2, 120), "a"), FakeLoo(base - 0.1, "b"),
            FakeLoo(base + rng.normal(0.02, 0.3, 120), "c")]


def test_program_choice_combines_loo_evidence_and_weights(tmp_path):
    loos = three_loos()
    ev = fake_evidence(np.array([-10.0, -11.0, -10.5]), np.array([0.1, 0.2, 0.1]))
    c = choose(["a", "b", "c"], loo=loos, evidence=ev, weights="stacking,pseudo-bma+,bma",
               seed=1)
    e = np.column_stack([r.elpd_i for r in loos])
    from stanlogz.crossval.select.weights import bma_weights, stacking_weights

    assert c.weights("stacking").weights == pytest.approx(
        stacking_weights(e, n_boot=0).weights, abs=1e-9)
    assert c.weights("bma").weights == pytest.approx(ev.post_probs, rel=1e-12)
    assert c.weights("bma").se == pytest.approx(ev.post_probs_se, rel=1e-12)
    assert c.weights("bma").weights == pytest.approx(
        bma_weights([-10.0, -11.0, -10.5], [0.1, 0.2, 0.1]).weights)
    with pytest.raises(InputError, match="pseudo-bma weights were not computed"):
        c.weights("pseudo-bma")
    rows = c.table()
    assert len(rows) == 3 and len(rows[0]) == len(c.header)
    assert rows[0][0] == c.names[c.loo.best]
    assert {"p_worse", "diag_diff", "log_z", "post_prob", "w_stacking", "w_bma_se"} <= set(
        c.header)
    html = c._repr_html_()
    assert html.startswith("<p><b>ProgramChoice") and all(n in html for n in "abc")
    # print(): the evidence, LOO and weights tables as the CLI prints them, each line <= 100
    text = repr(c)
    assert max(map(len, text.splitlines())) <= 100
    assert [t in text for t in ("evidence; log_bf", "PSIS-LOO; elpd_diff", "model weights")] == [
        True] * 3 and "se_diff" not in text.split("warning")[0]
    d = c.to_dict()
    assert set(d["weights"]) == {"stacking", "pseudo-bma+", "bma"} and "loo" in d
    # the ArviZ frame: the same elpd, elpd_diff, se and dse as arviz.compare on these values
    df = c.to_arviz("stacking")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arviz_compat.arviz_major() >= 1:
            from functools import partial

            from arviz_stats import compare as az_compare_1

            az_compare = partial(az_compare_1, round_to="none")  # 1.x rounds by default
        else:
            az_compare = arviz_compat.arviz().compare
        ref = az_compare({n: arviz_compat.elpd_data(r.elpd_i, p_loo=r.p_loo)
                          for n, r in zip("abc", loos, strict=True)}, method="stacking")
    assert list(df.columns) == list(ref.columns) and list(df.index) == list(ref.index)
    # dse: stanlogz's uses the ddof-1 variance (as R's loo_compare); ArviZ's compare (0.x, and
    # arviz-stats 1.3 too) uses ddof 0, smaller by sqrt((N - 1) / N); se is the ELPD objects'
    # own (ddof 1) in both
    dse_factor = arviz0_factor(loos[0].n_obs)
    for col in ("elpd_diff", ref.columns[1]):
        assert df[col].to_numpy(float) == pytest.approx(ref[col].to_numpy(float), abs=1e-9)
    # se and dse are loo's (ddof 1) under every name: ArviZ's se, and its dse times the ddof
    # factor (the small-N factor is only in the intervals beside them)
    order = [c.names.index(n) for n in df.index]
    assert df["se"].to_numpy(float) == pytest.approx([loos[i].se for i in order], rel=1e-12)
    assert df["se"].to_numpy(float) == pytest.approx(ref["se"].to_numpy(float), abs=1e-9)
    np.testing.assert_allclose(df["dse"].to_numpy(float), c.loo.diff_se[order], rtol=1e-12)
    assert c.loo.diff_se[order] == pytest.approx(ref["dse"].to_numpy(float) * dse_factor,
                                                 abs=1e-9)
    assert df["weight"].to_numpy(float) == pytest.approx(ref["weight"].to_numpy(float),
                                                         abs=5e-4)  # ArviZ's SLSQP tolerance
    import matplotlib

    matplotlib.use("Agg")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arviz_compat.arviz_major() >= 1:
            from arviz_plots import plot_compare
        else:
            plot_compare = arviz_compat.arviz().plot_compare
        plot_compare(df)


def test_bad_requests_are_one_line_input_errors():
    with pytest.raises(InputError, match="stacking weights need the LOO comparison"):
        check_request(["stacking"], loo=False, evidence=True)
    with pytest.raises(InputError, match="bma weights need the evidence"):
        check_request(["bma"], loo=True, evidence=False)
    with pytest.raises(InputError, match="unknown weight method 'akaike'"):
        parse_weights("stacking,akaike")
    with pytest.raises(InputError, match="N differs"):
        check_same_data([{"N": 2, "y": [1, 2]}, {"N": 3, "y": [1, 2, 3]}], ["a", "b"])
    with pytest.raises(InputError, match="'y' differs between a and b"):
        check_same_data([{"N": 2, "y": [1, 2]}, {"N": 2, "y": [1, 5]}], ["a", "b"])
    with pytest.raises(InputError, match="to_arviz needs the LOO"):
        choose(["a", "b", "c"], evidence=fake_evidence(np.zeros(3), np.ones(3))).to_arviz()
    with pytest.raises(InputError, match="at least two"):
        choose(["a"], loo=[FakeLoo(np.zeros(5))])


@pytest.mark.parametrize("argv, message", [
    ([str(PROGRAMS[0])], "at least two"),
    ([*map(str, PROGRAMS[:2]), "--weights", "stacking"], "stacking weights need the LOO"),
    ([*map(str, PROGRAMS[:2]), "--loo", "--weights", "bma"], "bma weights need the evidence"),
    ([*map(str, PROGRAMS[:2]), "--weights", "bayes"], "unknown weight method 'bayes'"),
])
def test_cli_bad_inputs_exit_2_with_one_line(capsys, argv, message):
    rc = main(["compare", *argv, "--data", str(DATA)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err and "Traceback" not in err


def test_cli_programs_fitted_to_different_data(capsys, tmp_path):
    import json

    d = json.loads(DATA.read_text())
    short = tmp_path / "short.json"
    short.write_text(json.dumps(dict(d, N=24, x=d["x"][:24], y=d["y"][:24])))
    other = tmp_path / "other.json"
    other.write_text(json.dumps(dict(d, y=[v + 1 for v in d["y"]])))
    for path, message in ((short, "N differs"), (other, "'y' differs")):
        rc = main(["compare", *map(str, PROGRAMS[:2]), "--loo", "--data", str(DATA), str(path)])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and message in err


def test_three_shipped_programs_by_loo_and_evidence(compiled, capsys):
    import json

    for p in PROGRAMS:
        compiled(p, DATA)
    rc = main(["--json", "--quiet", "--seed", "7", "compare", *map(str, PROGRAMS), "--data",
               str(DATA), "--loo", "--evidence", "--weights", "stacking,pseudo-bma+,bma",
               "--chains", "2", "--warmup", "400", "--draws", "600"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    names = ["regression", "regression_null", "regression_robust"]
    lz = np.array([next(m for m in res["models"] if m["name"] == n)["log_z"] for n in names])
    se = np.array([next(m for m in res["models"] if m["name"] == n)["log_z_se"] for n in names])
    bma = res["weights"]["bma"]
    p = np.exp(lz - lz.max()) / np.exp(lz - lz.max()).sum()
    assert [bma["weights"][n] for n in names] == pytest.approx(p, rel=1e-9)
    # the evidence itself against the exact values (quadrature, the programs' headers): three
    # z-tests at 4.5 reported se, failure probability <= 3 * 6.8e-6 = 2e-5 for an honest se
    # (a program in the wrong row is off by >= 0.76 nat, hundreds of se)
    z = (lz - EXACT_LOG_Z) / se
    assert np.all(np.abs(z) < 4.5), (lz, se, z)
    loo_models = {m["name"]: m for m in res["loo"]["models"]}
    assert set(loo_models) == set(names)
    best = res["loo"]["best"]
    assert loo_models[best]["elpd_diff"] == 0 and loo_models[best]["p_worse"] is None
    for n in names:
        if n != best:
            m = loo_models[n]
            if abs(m["elpd_diff"]) < 4:  # loo's diff_se, but no p_worse nor interval
                assert m["diff_se"] > 0 and m["p_worse"] is None
                assert m["diff_interval"] is None
                assert m["diag_diff"] == "|elpd_diff| < 4"
                continue
            z = -m["elpd_diff"] / m["diff_se"]
            assert m["p_worse"] == pytest.approx(0.5 * (1 + math.erf(z / math.sqrt(2))))
            assert m["diag_diff"] == "N < 100"  # 25 observations
    for method in ("stacking", "pseudo-bma+", "bma"):
        assert sum(res["weights"][method]["weights"].values()) == pytest.approx(1.0)
    # the null model (no predictor, log BF -5.9 against the others) gets almost no weight
    assert res["weights"]["pseudo-bma+"]["weights"]["regression_null"] < 0.1


def test_api_compare_by_loo_only(compiled):
    import stanlogz
    from stanlogz.crossval.select.choose import ProgramChoice

    models = [compiled(p, DATA) for p in PROGRAMS[:2]]
    c = stanlogz.compare(models, str(DATA), with_loo=True, use_evidence=False, weights=["stacking"],
                         chains=2, warmup=300, n_draws=400, seed=3,
                         loo_options={"fix": "none"})
    assert isinstance(c, ProgramChoice) and c.evidence is None
    assert c.header[:3] == ["model", "elpd_loo", "se"] and "log_z" not in c.header
    e = np.column_stack([r.elpd_i for r in c.loo.results])
    from stanlogz.crossval.select.weights import stacking_objective

    w = c.weights("stacking")
    # the weights maximize the log score: no vertex or midpoint scores higher
    for v in ([1.0, 0.0], [0.0, 1.0], [0.5, 0.5]):
        assert stacking_objective(np.array(v), e) <= w.details["log_score"] + 1e-9
    with pytest.raises(InputError, match="unbiased Bayes factors need the evidence"):
        stanlogz.compare(models, str(DATA), with_loo=True, use_evidence=False, unbiased_bf=True)


def _robust_loo_crps(data: dict, grid: int = 32, pairs: int = 20000) -> float:
    """Mean over observations of the exact LOO CRPS (½E|X − X'| − E|X − y_i|) of
    regression_robust.stan: the LOO posterior on a grid over (alpha, beta, log sigma) spanning
    >= 7 posterior sd each way; E|X − y_i| in closed form per grid point (for Z ~ t_4,
    E|Z − k| = k(2F(k) − 1) + 2(4 + k²)/3 f(k)); E|X − X'| from 20000 pairs of exact draws
    of the LOO predictive (Monte Carlo sd of the mean < 1e-3)."""
    from scipy import stats

    w, mu, s, y = robust_regression_loo_grid(data, grid)
    k = (y[None, :] - mu) / s[:, None]
    e_xy = np.sum(w * s[:, None] * (k * (2 * stats.t.cdf(k, 4) - 1)
                                    + 2 * (4 + k * k) / 3 * stats.t.pdf(k, 4)), axis=0)
    rng = np.random.default_rng(0)
    e_xx = np.empty(y.size)
    for i in range(y.size):
        g = rng.choice(w.shape[0], size=(2, pairs), p=w[:, i])
        draws = mu[g, i] + s[g] * rng.standard_t(4, (2, pairs))
        e_xx[i] = np.mean(np.abs(draws[0] - draws[1]))
    return float(np.mean(0.5 * e_xx - e_xy))


def test_cli_compare_with_predictive_checks(compiled, capsys, tmp_path):
    import json

    robust = str(PROGRAMS[2])
    compiled(PROGRAMS[2], DATA)
    png = tmp_path / "pit.png"
    rc = main(["--json", "--quiet", "--seed", "2", "compare", robust, robust, "--data",
               str(DATA), "--loo", "--yrep", "y_rep", "--pit", "--crps", "--metrics",
               "--pit-plot", str(png), "--chains", "2", "--warmup", "300", "--draws", "400"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    checks = json.loads(out)["checks"]
    assert set(checks) == {"regression_robust", "regression_robust#1"}
    # CRPS (positively oriented, so always <= 0) against the exact LOO value by quadrature.
    # Monte Carlo error of each fit's mean CRPS over 25 observations (ESS >= 200 of the 800
    # draws assumed): the y_rep noise, independent across observations, sd <=
    # rms sqrt(E(X - y_i)²) / sqrt(200 * 25) = 1.1 / 70.7 = 0.016 for E|X - y_i| and half
    # that for ½E|X - X'|; the shared error of the draws (mostly sigma: posterior sd 0.1, slope
    # of the mean CRPS in sigma < 1) adds < 0.1 / sqrt(200) = 0.007: sd <= 0.031, and 0.15
    # is 4.8 sd (P(fail) < 2e-6 per fit).
    exact_crps = _robust_loo_crps(json.loads(DATA.read_text()))
    for ch in checks.values():
        assert ch["outcome"] == "y" and len(ch["pit"]) == 25
        assert abs(ch["crps"]["crps"] - exact_crps) < 0.15, (ch["crps"]["crps"], exact_crps)
        assert {m["metric"] for m in ch["metrics"]} == {"mae", "rmse", "r2"}
    assert (tmp_path / "pit-regression_robust.png").stat().st_size > 0
    assert (tmp_path / "pit-regression_robust_1.png").stat().st_size > 0
    # bad inputs: one line, exit 2, no plot written
    compiled(PROGRAMS[1], DATA)
    bad_png = tmp_path / "bad.png"
    for argv, message in (
            ([robust, robust, "--yrep", "y_rep", "--pit"], "use the LOO weights: add --loo"),
            ([robust, robust, "--loo", "--pit"], "need --yrep NAME"),
            ([robust, str(PROGRAMS[1]), "--loo", "--yrep", "y_rep", "--crps", "--pit-plot",
              str(bad_png), "--draws", "200", "--warmup", "200"],
             "regression_null has no generated quantity 'y_rep'"),
            ([robust, robust, "--loo", "--yrep", "yrep", "--crps"],
             "regression_robust has no generated quantity 'yrep'")):
        rc = main(["--quiet", "compare", *argv, "--data", str(DATA)])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and message in err, err
    assert not list(tmp_path.glob("bad*"))


def test_bma_weights_alone_come_from_the_evidence(monkeypatch):
    """Evidence-only weights need no data check (programs without data are fine): the BMA
    weights are the evidence comparison's posterior probabilities and their se."""
    import stanlogz
    from stanlogz import EvidenceResult, api
    from stanlogz.crossval.select.choose import ProgramChoice

    class Fake:
        name = "fake"
        log_density_gradient = None

    zs = iter([-3.0, -4.0])
    monkeypatch.setattr(api, "evidence", lambda m, **kw: EvidenceResult(
        method="gbs", log_z=next(zs), log_z_se=0.1))
    c = stanlogz.compare([Fake(), Fake()], weights="bma", seed=1)
    assert isinstance(c, ProgramChoice) and c.loo is None
    assert c.weights("bma").weights == pytest.approx([1 / (1 + math.exp(-1)),
                                                      1 / (1 + math.exp(1))])
    assert c.weights("bma").se == pytest.approx(c.evidence.post_probs_se)
    # and that se is the spread it claims: the weight of 20000 log Z pairs drawn N(lz, 0.1²)
    # has sd w(1 - w) sqrt(2) 0.1 = 0.0278 up to O(se²) curvature (< 1% at se 0.1); the
    # sample sd's relative sd is 1/sqrt(2 * 19999) = 0.5%, so 3.5% is > 5 of those beyond the
    # curvature (P(fail) < 1e-6)
    z = np.array([-3.0, -4.0]) + 0.1 * np.random.default_rng(4).standard_normal((20000, 2))
    w1 = 1 / (1 + np.exp(z[:, 1] - z[:, 0]))
    assert c.weights("bma").se == pytest.approx([w1.std(ddof=1)] * 2, rel=0.035)
