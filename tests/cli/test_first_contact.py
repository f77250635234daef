"""First contact: loo/ArviZ names and printed tables on results, the public API in dir(),
stanlogz.sample on a path, ``stanlogz --version`` and ``--json`` errors."""

from __future__ import annotations

import json
import math
import time
from importlib.metadata import version

import numpy as np
import pytest

import stanlogz
import stanlogz.cli
from stanlogz.api import ComparisonResult
from stanlogz.cli import main
from stanlogz.crossval.fixups.fixups import FixedPoint
from stanlogz.crossval.observations.observations import Observations
from stanlogz.crossval.psis_loo.result import LooResult
from stanlogz.crossval.select.compare import loo_compare
from stanlogz.errors import InputError
from stanlogz.estimators.base import EvidenceResult
from tests.conftest import MODELS


def _loo(elpd_i: np.ndarray, khat: np.ndarray, fixed: list[FixedPoint] | None = None,
         name: str = "prog") -> LooResult:
    n = elpd_i.size
    return LooResult(model=name, elpd_loo=float(elpd_i.sum()),
                     se=float(math.sqrt(n * np.var(elpd_i))), p_loo=2.5, elpd_i=elpd_i,
                     psis_elpd_i=elpd_i, lppd_i=elpd_i + 0.01, khat=khat, threshold=0.7,
                     n_samples=4000, r_eff=1.0, fix="auto", log_lik_source="log_lik",
                     observations=Observations("N", ("y",), n), fixed=fixed or [],
                     p_loo_se=0.3, mcse_elpd_loo=0.05)


def test_loo_result_names_and_table() -> None:
    rng = np.random.default_rng(1)
    elpd_i = rng.normal(-1.0, 0.3, size=50)
    khat = np.full(50, 0.2)
    khat[[3, 7]] = [0.8, 1.3]  # one bad, one very bad
    fix = FixedPoint(index=7, elpd=-2.0, mcse=0.04, method="mm", khat=1.3, psis_elpd=-2.2,
                     n_gradient_evals=0, n_evals=100, seconds=0.01, khat_after=0.2)
    r = _loo(elpd_i, khat, [fix])
    # the aliases are the same numbers under loo's / ArviZ's names
    assert r.looic == pytest.approx(-2 * r.elpd_loo)
    assert r.se_looic == pytest.approx(2 * r.se)
    assert r.se_elpd_loo == r.se and r.se_p_loo == r.p_loo_se
    assert r.pareto_k is r.khat and r.loo_i is r.elpd_i and r.n_data_points == 50
    text = repr(r)
    for word in ("elpd_loo", "p_loo", "looic", "Pareto k", "(good)", "(bad)", "(very bad)",
                 "MCSE of elpd_loo", "moment matching"):
        assert word in text, word
    # loo's table: estimate and se to one decimal, k-hat counts and percentages per band
    assert f"{r.elpd_loo:.1f}" in text and f"{r.looic:.1f}" in text
    line = next(s for s in text.splitlines() if s.startswith("(-Inf"))
    assert line.split()[-2:] == ["48", "96.0%"]
    assert "observation(s) still above the threshold: 4" in text  # 0-based 3 is unfixed
    html = r._repr_html_()
    assert "<table>" in html and "looic" in html and "(very bad)" in html


def test_all_good_khat_says_so() -> None:
    r = _loo(np.full(20, -1.0), np.zeros(20))
    assert "All Pareto k estimates are good" in repr(r)


def test_loo_comparison_names() -> None:
    rng = np.random.default_rng(2)
    a = _loo(rng.normal(-1.0, 0.3, 30), np.zeros(30), name="a")
    b = _loo(a.elpd_i - np.abs(rng.normal(0.2, 0.1, 30)), np.zeros(30), name="b")
    c = loo_compare([a, b], ["a", "b"])
    assert np.array_equal(c.dse, c.diff_se) and np.array_equal(c.se_diff, c.diff_se)
    assert np.allclose(c.elpd_loo, [a.elpd_loo, b.elpd_loo])
    text = repr(c)
    assert "elpd_diff" in text and text.index("\na ") < text.index("\nb ")  # best first


def test_evidence_result_display() -> None:
    r = EvidenceResult(method="gbs", log_z=-13.2758, log_z_se=0.01, n_draws=4000, n_evals=99,
                       warnings=["something to fix"])
    assert r.logml == r.log_z and r.se == r.log_z_se
    text = repr(r)
    lo, hi = r.interval()
    assert "-13.2758" in text and f"{lo:.4f}" in text and "warning: something to fix" in text
    assert str(r).startswith("gbs: log Z = -13.2758")  # str keeps its one line
    assert "<table>" in r._repr_html_()
    c = ComparisonResult(["m1", "m2"], [r, EvidenceResult("gbs", -15.0, 0.02)],
                         np.array([0.5, 0.5]))
    assert np.allclose(c.log_z, [-13.2758, -15.0])
    assert "log_bf" in repr(c) and "best (m1)" in repr(c)


def test_public_api_in_dir() -> None:
    names = dir(stanlogz)
    for n in ("loo", "evidence", "compare", "kfold", "lfo", "sample", "StanModel", "NutsArgs",
              "LooResult", "EvidenceResult"):
        assert n in names, n
    assert all(hasattr(stanlogz, n) for n in stanlogz.__all__)
    assert set(stanlogz._LAZY) <= set(stanlogz.__all__)  # every lazy name is public
    assert "importlib" not in names and "Any" not in names


def test_sample_takes_a_path(compiled) -> None:
    compiled("normal")  # build (or load) the library once per session
    d = stanlogz.sample(str(MODELS / "tests" / "normal.stan"),
                        data=MODELS / "tests" / "normal.json", seed=3, chains=2, warmup=300,
                        draws=1000)
    mu = d.constrained[..., 0].ravel()
    # conjugate posterior: precision 1/4 + 5/1.44, mean (sum y / 1.44) / precision
    prec = 1 / 4 + 5 / 1.44
    mean, sd = (6.8 / 1.44) / prec, prec**-0.5
    # 2000 NUTS draws of a 1-D Gaussian have ESS well above 200; 6 MC se of that bound
    # fails with probability < 1e-8
    assert abs(mu.mean() - mean) < 6 * sd / math.sqrt(200)
    with pytest.raises(InputError, match="StanModel or a .stan path"):
        stanlogz.sample(42)


def test_version_flag(capsys) -> None:
    with pytest.raises(SystemExit) as e:  # argparse's version action exits 0 after printing
        stanlogz.cli.build_parser().parse_args(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"stanlogz {version('stanlogz')}"
    assert main(["--version"]) == 0


def test_json_error_object(capsys, tmp_path) -> None:
    rc = main(["--json", "loo", str(tmp_path / "missing.stan")])
    out = capsys.readouterr()
    assert rc == 2 and "stanlogz: error:" in out.err
    obj = json.loads(out.out)
    assert obj["kind"] == "error" and "missing.stan" in obj["error"] and obj["exit_status"] == 2


def test_unwritable_outputs_are_refused_before_any_computation(capsys, tmp_path) -> None:
    from stanlogz.cli import OUTPUT_OPTIONS
    from stanlogz.toolchain import build_count
    from tests.cli.helpers import argv_for, subcommands

    program, data = MODELS / "tests" / "normal.stan", MODELS / "tests" / "normal.json"
    flags = set(OUTPUT_OPTIONS.values())
    checked = 0
    for name, sub in sorted(subcommands().items()):
        for flag in sorted(flags & {o for a in sub._actions for o in a.option_strings}):
            for bad, why in (("/proc/x.png", "cannot be written"), (str(tmp_path), "is a folder"),
                             (str(tmp_path / "no" / "x.png"), "does not exist")):
                before = build_count()
                t = time.perf_counter()
                rc = main(["--json", *argv_for(name, sub, program, data, None, []), flag, bad])
                out = capsys.readouterr()
                assert rc == 2, (name, flag, bad, out.err)
                assert why in out.err and flag in out.err and len(out.err.splitlines()) == 1
                assert json.loads(out.out)["kind"] == "error"
                assert build_count() == before and time.perf_counter() - t < 15
                checked += 1
    assert checked >= 3 * 8  # every command that writes a file (sample, evidence, loo, ...)


def test_counted_nouns() -> None:
    from stanlogz._util.words import counted, transitions

    assert transitions(1) == "1 divergent transition"
    assert transitions(115) == "115 divergent transitions"
    assert counted(1, "quantity", "quantities") == "1 quantity"
    assert counted(2, "quantity", "quantities") == "2 quantities"
