"""Every sub-command registered in the CLI, on hostile inputs: one line on stderr, exit status 2
for the expected problems (1 only for an internal error), and never a Python traceback.

The sub-commands and their arguments are discovered from the parser, so commands added later are
covered too: positional programs and ``*.stan`` options get the case's program, ``*.json``
options its data, ``--fit`` its draws and sampler sizes are made small.
"""

from __future__ import annotations

import json

import pytest

from stanlogz.cli import internal_error_text, main
from tests.cli.helpers import argv_for, subcommands
from tests.conftest import MODELS

TESTS = MODELS / "tests"


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    d = tmp_path_factory.mktemp("hostile")
    normal = TESTS / "normal.stan"
    good = json.loads((TESTS / "normal.json").read_text())
    (d / "empty.json").write_text("{}")
    (d / "nan.json").write_text(json.dumps({**good, "y": [float("nan")] + good["y"][1:]}))
    (d / "inf.json").write_text(json.dumps({**good, "sigma": float("inf")}))
    (d / "no_params.json").write_text(json.dumps({"N": 2, "y": [1.0, 2.0]}))
    # A CmdStan CSV header (comment lines and column names) without a single draw.
    header = "lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu"
    (d / "zero_rows.csv").write_text("# model = normal_model\n# num_samples = 1000\n"
                                     + header + ",y_rep\n")
    return {
        "empty data": (normal, d / "empty.json", None, []),
        "NaN in data": (normal, d / "nan.json", None, []),
        "inf in data": (normal, d / "inf.json", None, []),
        "zero prior weights": (normal, TESTS / "normal.json", None, ["--prior-probs", "0,0"]),
        "-inf density at the inits": (TESTS / "neg_inf.stan", d / "empty.json", None, []),
        "no parameters": (TESTS / "no_params.stan", d / "no_params.json", None, []),
        "0-row CSV": (normal, TESTS / "normal.json", d / "zero_rows.csv", []),
    }


CASES = ["empty data", "NaN in data", "inf in data", "zero prior weights",
         "-inf density at the inits", "no parameters", "0-row CSV"]


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_no_traceback_on_hostile_inputs(name, cases, capfd):
    sub = subcommands()[name]
    failures = []
    for case in CASES:
        program, data, fit, extra = cases[case]
        argv = argv_for(name, sub, program, data, fit, extra)
        rc = main(argv)
        out, err = capfd.readouterr()
        lines = [ln for ln in err.splitlines() if ln.strip()]
        ok = ("Traceback" not in err and "Traceback" not in out
              and (rc == 0 or (rc == 2 and len(lines) == 1
                               and lines[0].startswith("stanlogz: error: ")
                               and len(lines[0]) < 1000)))  # a line, not Stan's whole log
        if not ok:
            failures.append(f"{case}: rc={rc} argv={argv} stderr={err[-600:]!r}")
    assert not failures, "\n".join(failures)


def test_an_unexpected_exception_is_one_line_with_exit_status_1(monkeypatch, capfd):
    from stanlogz.commands import compile as compile_command

    def broken(args, report):
        raise ZeroDivisionError("float division by zero\nsecond line")

    monkeypatch.setattr(compile_command, "run", broken)
    rc = main(["compile", str(TESTS / "normal.stan")])
    err = capfd.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("stanlogz: internal error: ZeroDivisionError: float division by zero "
                          "second line (rerun with --verbose")
    rc = main(["compile", str(TESTS / "normal.stan"), "--verbose"])
    err = capfd.readouterr().err
    assert rc == 1 and "Traceback" in err and err.rstrip().splitlines()[-1].startswith(
        "stanlogz: internal error:")
    assert internal_error_text(ValueError("x" * 400)).endswith("...")


def test_ctrl_c_while_the_commands_load_ends_in_one_line(monkeypatch, capfd):
    # A Ctrl-C during the seconds the imports take on a loaded machine broke numpy's import
    # (ImportError traceback) or escaped as a KeyboardInterrupt traceback; it is now held until
    # the imports finish, then ends the run with status 130.
    import os
    import signal

    import stanlogz.cli as cli

    real = cli.build_parser

    def interrupted_build():
        os.kill(os.getpid(), signal.SIGINT)  # delivered while the commands load
        return real()

    handler = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(cli, "build_parser", interrupted_build)
    rc = main(["compile", str(TESTS / "normal.stan")])
    err = capfd.readouterr().err
    assert rc == 130 and err == "stanlogz: interrupted\n"
    assert signal.getsignal(signal.SIGINT) is handler  # the previous handler is back


def test_pmmh_with_an_inner_program_of_zero_density_is_one_line(capfd):
    # every importance weight of Z(theta) would be zero (1/Z undefined): one line, exit 2
    rc = main(["pmmh", str(TESTS / "gauss_precision_outer.stan"), "--inner",
               str(TESTS / "gauss_precision_zero.stan"), "--data",
               str(TESTS / "gauss_precision_outer.json"), "--iter", "20", "--warmup", "20",
               "--seed", "1", "--quiet"])
    err = capfd.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("stanlogz: error: "), err
    assert len(err) < 1000  # each message of Stan's log once (it repeated one 100 times)
