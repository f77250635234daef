"""The command line's loo table is the result's own: ``stanlogz loo`` prints exactly what
``print(result)`` shows for the same fit (issue 43: one table, one layout, one set of
decimals). CmdStan CSV fixtures carrying log_lik; no program is built."""

from __future__ import annotations

from pathlib import Path

import stanlogz
from stanlogz.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIX = Path("/work/shared/fixtures/cmdstan")
if not FIX.is_dir():
    FIX = ROOT / "shared" / "fixtures" / "cmdstan"
COIN = sorted(str(p) for p in (FIX / "coin").glob("coin-*.csv"))


def test_the_loo_table_is_print_of_the_result(capsys):
    assert COIN, f"no CmdStan fixtures under {FIX}"
    assert main(["--quiet", "loo", "--fit", *COIN]) == 0
    out, err = capsys.readouterr()
    result = stanlogz.loo(None, draws=COIN)  # as the command calls it
    print(result)
    assert out == capsys.readouterr().out  # line for line, decimals and all
    assert out.startswith("LooResult of ") and "elpd_loo" in out and "Pareto k" in out
    # the warnings stand in the table; stderr does not repeat them
    assert all(w not in err for w in result.warnings)
