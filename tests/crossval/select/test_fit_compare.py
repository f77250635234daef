"""``stanlogz compare --fit ...`` and ``stanlogz.compare(fits)`` (issue 26): models given as
fits that carry ``log_lik`` are compared by PSIS-LOO with the same numbers as ArviZ's
``loo``/``compare`` on the same draws, and bad requests are one line before any computation.

The draws are real CmdStan 2.35 output (/work/shared/fixtures/cmdstan) and CSV / netCDF files
written by ``stanlogz sample``; every number is deterministic given the files.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import stanlogz
from stanlogz import arviz_compat
from stanlogz._util.sum_se import arviz0_factor
from stanlogz.cli import main
from stanlogz.errors import InputError

FIX = Path("/work/shared/fixtures/cmdstan")
if not FIX.is_dir():  # the fixtures also live in the repository's shared/ folder
    FIX = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "cmdstan"
SCHOOLS = sorted(str(p) for p in (FIX / "schools").glob("schools-*.csv"))
COIN = sorted(str(p) for p in (FIX / "coin").glob("coin-*.csv"))
SCHOOLS_DATA = FIX / "schools" / "schools.data.json"
POOLED = Path(__file__).resolve().parents[3] / "stan_models" / "tests" / "schools_pooled.stan"


def _az_compare(idatas: dict):
    """ArviZ's compare on the installed version (no rounding on 1.x), stacking weights."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arviz_compat.arviz_major() >= 1:
            from arviz_stats import compare

            return compare(idatas, method="stacking", round_to="none")
        return arviz_compat.arviz().compare(idatas, method="stacking")


def _idata(files: list[str]):
    from tests.conftest import arviz_from_csv

    return arviz_from_csv(files)


@pytest.fixture(scope="module")
def pooled_files(tmp_path_factory, compiled) -> list[str]:
    """The pooled eight-schools program's draws written by ``stanlogz sample`` as CmdStan CSV
    (one file per chain) and as ArviZ netCDF."""
    compiled(POOLED, SCHOOLS_DATA)  # build once (cached)
    out = tmp_path_factory.mktemp("pooled")
    for suffix in (".csv", ".nc"):
        rc = main(["--quiet", "--seed", "3", "sample", str(POOLED), "--data", str(SCHOOLS_DATA),
                   "--draws", "500", "--output", str(out / f"pooled{suffix}")])
        assert rc == 0
    return sorted(str(p) for p in out.glob("pooled_*.csv")) + [str(out / "pooled.nc")]


def test_cli_compare_of_fits_equals_arviz(pooled_files, capsys) -> None:
    csvs, nc = pooled_files[:-1], pooled_files[-1]
    rc = main(["--json", "--quiet", "compare", "--fit", *SCHOOLS, "--fit", *csvs,
               "--names", "hier,pooled", "--weights", "stacking,pseudo-bma+"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    res = json.loads(out)
    ref = _az_compare({"hier": _idata(SCHOOLS), "pooled": _idata(csvs)})
    models = {m["name"]: m for m in res["loo"]["models"]}
    assert set(models) == {"hier", "pooled"} and res["loo"]["best"] == ref.index[0]
    sign = arviz_compat.compare_diff_sign()
    n = 8
    # stanlogz's between-observation se's use ddof 1 (as R's loo and ArviZ 1.x's se); ArviZ
    # 0.x's se and the dse of both versions use ddof 0, sqrt((N - 1) / N) smaller
    factor = arviz0_factor(n)
    ddof = 1.0 / factor if arviz_compat.arviz_major() < 1 else 1.0
    elpd_col = "elpd" if "elpd" in ref.columns else "elpd_loo"
    for name, m in models.items():
        row = ref.loc[name]
        assert abs(m["elpd_loo"] - row[elpd_col]) < 1e-6
        assert abs(m["se"] * ddof - row["se"]) < 1e-6  # loo's se
        assert abs(m["elpd_diff"] - (-sign) * row["elpd_diff"]) < 1e-6
        # diff_se is loo's se of the paired differences (the Monte Carlo se is diff_mcse)
        assert abs(m["diff_se"] / factor - row["dse"]) < 1e-6
    # stacking weights: the same optimum to ArviZ's SLSQP tolerance
    got = res["weights"]["stacking"]["weights"]
    for name in models:
        assert abs(got[name] - ref.loc[name, "weight"]) < 5e-4
    # the same comparison through the API, from the netCDF file for the pooled model
    c = stanlogz.compare([SCHOOLS, nc], weights="stacking")
    assert c.names == ["schools", "pooled"] and c.evidence is None
    nc_loo = stanlogz.loo(nc)
    assert abs(c.loo.results[1].elpd_loo - nc_loo.elpd_loo) < 1e-12
    assert abs(nc_loo.elpd_loo - models["pooled"]["elpd_loo"]) < 1e-6  # same draws as the CSV


def test_cli_compare_of_chain_groups_and_text(capsys) -> None:
    """Two halves of one CmdStan run as two "models": the difference is Monte Carlo noise."""
    rc = main(["--quiet", "compare", "--fit", *SCHOOLS[:2], "--fit", *SCHOOLS[2:]])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "schools#1" in out and "schools#2" in out and "elpd_diff" in out
    a, b = stanlogz.loo(SCHOOLS[:2]), stanlogz.loo(SCHOOLS[2:])
    c = stanlogz.compare([SCHOOLS[:2], SCHOOLS[2:]])
    assert abs(c.loo.elpd_diff[c.loo.best - 1] - (min(a.elpd_loo, b.elpd_loo)
                                                  - max(a.elpd_loo, b.elpd_loo))) < 1e-12


@pytest.mark.parametrize("argv, match", [
    (["--fit", "A", "--fit", "B"], "no such file: A"),
    (["--fit", *SCHOOLS, "--fit", *COIN], r"different numbers of observations \(schools: 8, "
     r"coin: 10\)"),
    (["--fit", *SCHOOLS[:2], "--fit", *SCHOOLS[2:], "--weights", "bma"],
     "bma weights need the evidence"),
    (["--fit", *SCHOOLS[:2], "--fit", *SCHOOLS[2:], "--evidence"], "--evidence need"),
    (["--fit", *SCHOOLS[:2], "--fit", *SCHOOLS[2:], "--names", "a"], "--names has 1 names"),
    (["--fit", *SCHOOLS[:2], "--fit", *SCHOOLS[2:], "--data", str(SCHOOLS_DATA)],
     "--data is for programs"),
    (["--fit", *SCHOOLS[:2], "--fit", "x.nc", SCHOOLS[0]], "no such file: x.nc"),
    ([str(POOLED), "--fit", *SCHOOLS], "need --data"),
])
def test_cli_compare_fit_refusals_are_one_line(argv, match, capsys) -> None:
    rc = main(["compare", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    import re

    assert re.search(match, err), err


def test_api_refusals() -> None:
    with pytest.raises(InputError, match="unbiased_bf"):
        stanlogz.compare([SCHOOLS[:2], SCHOOLS[2:]], unbiased_bf=True)
    with pytest.raises(InputError, match="at least two"):
        from stanlogz.crossval.select.fitcompare import compare_sources

        compare_sources([SCHOOLS])


def test_cli_compare_of_a_program_and_a_fit(compiled, capsys) -> None:
    """A program (NUTS, LOO by loo's routes) beside a fit: its row is ``loo`` of the program with
    the seed compare derives for it, the fit's row ``loo`` of the files."""
    compiled(POOLED, SCHOOLS_DATA)
    rc = main(["--json", "--quiet", "--seed", "5", "compare", str(POOLED), "--data",
               str(SCHOOLS_DATA), "--fit", *SCHOOLS, "--draws", "400"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    models = {m["name"]: m for m in json.loads(out)["loo"]["models"]}
    from stanlogz._util.seeds import Stream, stream_int_seed

    prog = stanlogz.loo(str(POOLED), str(SCHOOLS_DATA), seed=stream_int_seed(5, Stream.PROGRAM, 0),
                        n_draws=400)
    assert abs(models["schools_pooled"]["elpd_loo"] - prog.elpd_loo) < 1e-9
    assert abs(models["schools"]["elpd_loo"] - stanlogz.loo(SCHOOLS).elpd_loo) < 1e-9
