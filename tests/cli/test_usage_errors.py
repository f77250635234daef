"""Usage errors (a flag, choice or sub-command argparse refuses): one line on stderr with a
"did you mean" when a close name exists, exit status 2, no traceback; under ``--json`` also the
one JSON error object on stdout, as for every other failure."""

from __future__ import annotations

import json

import pytest

from stanlogz.cli import build_parser, did_you_mean, main

CASES = [  # argv, the words the one line must hold
    (["loo", "m.stan", "--drws", "3"], ["unrecognized arguments: --drws", "did you mean --draws?"]),
    (["loo", "m.stan", "--adapt-dleta=0.9"], ["did you mean --adapt-delta?"]),
    (["lo", "m.stan"], ["invalid choice: 'lo'", "did you mean loo?"]),
    (["cv", "m.stan", "--kernel", "hcm"], ["invalid choice: 'hcm'", "did you mean hmc?"]),
    # an unknown flag before the command: argparse takes its value for the command
    (["--seeed", "3", "loo", "m.stan"], ["invalid choice: '3'", "did you mean --seed?"]),
    (["kfold"], ["the following arguments are required: MODEL.stan"]),
    (["loo", "m.stan", "--chains", "two"], ["--chains: invalid int value: 'two'"]),
]


@pytest.mark.parametrize("json_flag", [[], ["--json"], ["--js"]], ids=["plain", "json", "prefix"])
@pytest.mark.parametrize(("argv", "needles"), CASES, ids=lambda v: " ".join(v)[:30])
def test_usage_error_is_one_line_and_one_json_object(capsys, argv, needles, json_flag) -> None:
    rc = main(json_flag + argv)
    out = capsys.readouterr()
    assert rc == 2
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stanlogz") and " error: " in lines[0], out.err
    assert "Traceback" not in out.err
    for needle in needles:
        assert needle in lines[0]
    if not json_flag:
        assert out.out == ""
        return
    stdout = out.out.strip().splitlines()
    assert len(stdout) == 1, out.out
    obj = json.loads(stdout[0])
    assert obj["kind"] == "error" and obj["exit_status"] == 2
    assert lines[0].endswith(obj["error"])  # the same words as the stderr line
    for needle in needles:
        assert needle in obj["error"]


def test_json_after_the_command_and_a_typo_far_from_every_name(capsys) -> None:
    rc = main(["loo", "m.stan", "--json", "--zzzzqqq"])
    out = capsys.readouterr()
    assert rc == 2 and "did you mean" not in out.err  # nothing close: no guess
    assert json.loads(out.out)["error"].startswith("unrecognized arguments: --zzzzqqq")


def test_json_after_a_double_dash_is_not_the_flag(capsys) -> None:
    assert main(["loo", "--drws", "--", "--json"]) == 2
    assert capsys.readouterr().out == ""


def test_did_you_mean_names_the_closest_option_of_the_parser() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["kfold"]
    options = [o for a in sub._actions for o in a.option_strings]
    assert did_you_mean("--grup", options) == "; did you mean --group?"
    assert did_you_mean("--wokers", options) == "; did you mean --workers?"
    assert did_you_mean("--xyzzy", options) == ""


def test_help_and_version_are_not_errors(capsys) -> None:
    assert main(["--json", "--help"]) == 0
    assert capsys.readouterr().out.lstrip().startswith("usage:")
