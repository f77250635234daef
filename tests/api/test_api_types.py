"""The public API called with arguments of the wrong type: one ArgumentTypeError (an
InputError and a TypeError) naming the function and the argument, raised before any build or
sampling (the program path below does not exist, so a check that came later would fail with
another message)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stanlogz
from stanlogz._util.argcheck import check_arguments
from stanlogz.errors import ArgumentTypeError, InputError

NOWHERE = "no/such/program.stan"
DATA = {"N": 2, "y": [0.1, 0.2]}

CASES = [
    # (call, function name, argument named in the message)
    (lambda: stanlogz.loo(NOWHERE, DATA, progress=5), "loo", "progress"),
    (lambda: stanlogz.loo(NOWHERE, DATA, draws=3.5), "loo", "draws"),
    (lambda: stanlogz.loo(NOWHERE, DATA, draws="no/such/draws.csv"), "loo", "draws"),
    (lambda: stanlogz.loo(NOWHERE, DATA, obs=5), "loo", "obs"),
    (lambda: stanlogz.loo(NOWHERE, DATA, fix=3), "loo", "fix"),
    (lambda: stanlogz.loo(NOWHERE, DATA, subsample="10"), "loo", "subsample"),
    (lambda: stanlogz.loo(NOWHERE, DATA, ups_options=[1]), "loo", "ups_options"),
    (lambda: stanlogz.evidence(3.0), "evidence", "model"),
    (lambda: stanlogz.evidence(NOWHERE, DATA, draws="no/such/draws.csv"), "evidence", "draws"),
    (lambda: stanlogz.evidence(NOWHERE, DATA, target_se="0.1"), "evidence", "target_se"),
    (lambda: stanlogz.evidence(NOWHERE, DATA, method=3), "evidence", "method"),
    (lambda: stanlogz.evidence(NOWHERE, DATA, progress="loud"), "evidence", "progress"),
    (lambda: stanlogz.compare(NOWHERE, DATA), "compare", "models"),
    (lambda: stanlogz.compare(3, DATA), "compare", "models"),
    (lambda: stanlogz.compare([NOWHERE, 3], DATA), "compare", "models[1]"),
    (lambda: stanlogz.compare([NOWHERE, NOWHERE], DATA, draws="x.csv"), "compare", "draws"),
    (lambda: stanlogz.compare([NOWHERE, NOWHERE], DATA, draws=[None, 7]), "compare",
     "draws[1]"),
    (lambda: stanlogz.compare([NOWHERE, NOWHERE], DATA, prior_probs="0.5,0.5"), "compare",
     "prior_probs"),
    (lambda: stanlogz.compare([NOWHERE, NOWHERE], DATA, with_loo=True, weights=5), "compare",
     "weights"),
    (lambda: stanlogz.compare([NOWHERE, NOWHERE], DATA, with_loo=True, loo_options=3), "compare",
     "loo_options"),
    (lambda: stanlogz.kfold(7, DATA), "kfold", "model"),
    (lambda: stanlogz.kfold(NOWHERE, DATA, k=2.5), "kfold", "k"),
    (lambda: stanlogz.kfold(NOWHERE, DATA, group=3), "kfold", "group"),
    (lambda: stanlogz.kfold(NOWHERE, DATA, draws=True), "kfold", "draws"),
    (lambda: stanlogz.kfold(NOWHERE, DATA, progress=1), "kfold", "progress"),
    (lambda: stanlogz.lfo(3, DATA, min_train=2), "lfo", "model"),
    (lambda: stanlogz.lfo(NOWHERE, DATA, min_train="2"), "lfo", "min_train"),
    (lambda: stanlogz.lfo(NOWHERE, DATA, min_train=2, ahead=None), "lfo", "ahead"),
    (lambda: stanlogz.lfo(NOWHERE, DATA, min_train=2, obs_fields="y"), "lfo", "obs_fields"),
    (lambda: stanlogz.sample(3), "sample", "model"),
    (lambda: stanlogz.sample(NOWHERE, data=DATA, progress=2), "sample", "progress"),
]


@pytest.mark.parametrize("call, where, name", CASES,
                         ids=[f"{w}-{n}" for _, w, n in CASES])
def test_wrong_type_is_one_typed_error_naming_the_argument(call, where, name):
    with pytest.raises(ArgumentTypeError) as info:
        call()
    err = info.value
    assert isinstance(err, InputError) and isinstance(err, TypeError)
    text = str(err)
    assert text.startswith(f"{where}(): {name} ") and "\n" not in text, text


def test_right_types_pass(tmp_path: Path):
    csv = tmp_path / "draws.csv"
    csv.write_text("lp__\n0\n")
    # numpy integers and reals, paths, tuples, generators of programs, globs, None
    check_arguments("f", model=Path(NOWHERE), draws=str(tmp_path / "*.csv"), progress=print,
                    k=np.int64(5), n_workers=None, min_train=np.int32(3), ahead=1,
                    target_se=np.float64(0.1), k_threshold=0.7, obs="N",
                    obs_fields=("y",), weights=("stacking", "bma"), prior_probs=np.array(
                        [0.3, 0.7]), loo_options={"fix": "mm"}, method="gbs")
    check_arguments("f", models=(m for m in [NOWHERE, NOWHERE]), draws=[csv, csv])
    check_arguments("f", models=[NOWHERE, Path(NOWHERE)], draws=np.zeros((2, 3)))


def test_chain_files_of_a_stem_pass(tmp_path: Path):
    for c in (1, 2):
        (tmp_path / f"draws_{c}.csv").write_text("lp__\n0\n")
    check_arguments("kfold", draws=str(tmp_path / "draws.csv"))  # write_csv's chain files
    with pytest.raises(ArgumentTypeError, match="kfold\\(\\): draws names"):
        check_arguments("kfold", draws=str(tmp_path / "other.csv"))
