"""The command line's K-fold, leave-future-out and ``loo --group`` tables are the results' own:
each command prints exactly what ``print(result)`` shows for the API call with the same seed
and settings (issue 43: one table, one layout, one set of decimals), as ``stanlogz loo``
does (tests/cli/test_loo_table.py). Small programs and few draws keep each run to seconds; the
values are not the point (their accuracy is tested in tests/crossval), the identity is. The
API call runs in the command line's voice (``speaking("cli")``), so that the advice in its
warnings names flags as the command's does."""

from __future__ import annotations

from pathlib import Path

import pytest

import stanlogz
from stanlogz.cli import main
from stanlogz.errors import speaking

EX = Path(__file__).resolve().parents[2] / "stan_models" / "examples"
NORMAL, NORMAL_DATA = EX / "normal_mean.stan", EX / "normal_mean.data.json"
HIER, HIER_DATA = EX / "hier_regression.stan", EX / "hier_regression.data.json"
FEW = {"chains": 1, "warmup": 100, "n_draws": 100}
FLAGS = ["--chains", "1", "--warmup", "100", "--draws", "100", "--seed", "7"]


def _same_as_print(capsys: pytest.CaptureFixture[str], argv: list[str], result: object) -> str:
    """The command's stdout, checked line for line against ``print(result)``."""
    assert main(["--quiet", *argv, *FLAGS]) == 0
    out, err = capsys.readouterr()
    print(result)
    assert out == capsys.readouterr().out
    # the warnings stand in the table; stderr does not repeat them
    assert all(w not in err for w in getattr(result, "warnings", []))
    return out


@pytest.mark.stan
def test_kfold_table_is_print_of_the_result(capsys, compiled):
    compiled(NORMAL, NORMAL_DATA)
    with speaking("cli"):
        r = stanlogz.kfold(str(NORMAL), str(NORMAL_DATA), k=2, seed=7, **FEW)
    out = _same_as_print(capsys, ["kfold", str(NORMAL), "--data", str(NORMAL_DATA), "--k", "2"],
                         r)
    assert out.startswith("KFoldResult of normal_mean") and "elpd_kfold" in out
    assert "Folds:" in out


@pytest.mark.stan
def test_lfo_table_is_print_of_the_result(capsys, compiled):
    compiled(NORMAL, NORMAL_DATA)
    with speaking("cli"):
        r = stanlogz.lfo(str(NORMAL), str(NORMAL_DATA), min_train=7, seed=7, **FEW)
    out = _same_as_print(capsys, ["lfo", str(NORMAL), "--data", str(NORMAL_DATA),
                                  "--min-train", "7"], r)
    assert out.startswith("LfoResult of normal_mean") and "Forecast origins:" in out


@pytest.mark.stan
def test_loo_group_table_is_print_of_the_result(capsys, compiled):
    compiled(HIER, HIER_DATA)
    with speaking("cli"):
        r = stanlogz.loo(str(HIER), str(HIER_DATA), group="g", seed=7, **FEW)
    out = _same_as_print(capsys, ["loo", str(HIER), "--data", str(HIER_DATA), "--group", "g"],
                         r)
    assert out.startswith("LogoResult of hier_regression") and "elpd_logo" in out
    assert "Per group" in out and "MCSE of elpd_logo" in out
