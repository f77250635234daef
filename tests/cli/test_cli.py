"""The ``stanlogz`` command line: error handling in-process, real runs on the shipped examples."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "stan_models" / "examples"
NORMAL = str(EX / "normal_mean.stan")
NORMAL_DATA = str(EX / "normal_mean.data.json")
# Small runs: the conjugate example mixes in a handful of iterations.
FAST = ["--chains", "2", "--warmup", "200", "--draws", "300"]


def exact_log_z(data: dict) -> float:
    """Closed-form evidence of normal_mean.stan (see the program's header comment)."""
    y = np.asarray(data["y"], dtype=float)
    cov = data["sigma"] ** 2 * np.eye(y.size) + data["prior_sd"] ** 2 * np.ones((y.size,) * 2)
    return float(multivariate_normal(np.zeros(y.size), cov).logpdf(y))


@pytest.fixture(scope="module")
def built_normal(compiled):
    """The conjugate example, built once per session (the CLI then finds it in the cache)."""
    return compiled(NORMAL, NORMAL_DATA)


@pytest.fixture
def bad_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"N": 10, "y": [1, 2,')
    return str(p)


ERROR_CASES = [
    (["evidence", "missing.stan"], "Stan program not found: missing.stan"),
    (["evidence", str(ROOT / "README.md")], "is not a Stan program"),
    (["evidence", NORMAL, "--data", "missing.json"], "data file not found"),
    (["evidence", NORMAL, "--data", "BAD"], "is not valid JSON"),
    (["evidence", NORMAL, "--method", "nope"], "unknown method 'nope'"),
    (["evidence", NORMAL, "--plot", "out.gif"], "must end in .png or .pdf or .svg"),
    (["evidence", NORMAL, "--option", "nokey"], "is not KEY=VALUE"),
    # checked before the build and NUTS, not after
    (["evidence", NORMAL, "--option", "bogus=1"], "method gbs has no option 'bogus'"),
    (["compare", NORMAL, NORMAL, "--option", "bogus=1"], "has no option 'bogus'"),
    (["evidence", NORMAL, "--option", "seed=3"], "has no option 'seed'"),
    (["evidence", NORMAL, "--target-se", "0"], "--target-se must be a positive number"),
    (["evidence", NORMAL, "--target-se", "0.1", "--max-draws", "0"], "--max-draws must be"),
    (["evidence", NORMAL, "--option", "n_layers=abc"], "n_layers of method gbs must be int"),
    (["evidence", NORMAL, "--option", "flow_options=3"], "must be dict or None, got 3"),
    (["evidence", NORMAL, "--method", "laplace", "--plot", "p.png"], "not laplace"),
    (["sample", NORMAL, "--output", "draws.txt"], "must end in .csv or .nc"),
    (["sample", NORMAL, "--output", "no/such/dir/d.csv"], "does not exist"),
    (["compare", NORMAL, NORMAL, "--data", NORMAL_DATA, NORMAL_DATA, NORMAL_DATA],
     "--data has 3 files for 2 programs"),
    (["compare", NORMAL, NORMAL, "--prior-probs", "0.5,x"], "not a comma-separated list"),
    (["compare", NORMAL, NORMAL, "--prior-probs", "0.2,0.3,0.5"], "3 values for 2 programs"),
    (["compare", NORMAL, NORMAL, "--method", "nope"], "unknown method"),
    (["compare", NORMAL], "at least two"),
    (["evidence"], "required: MODEL.stan"),
    (["frobnicate"], "invalid choice"),
]


@pytest.mark.parametrize(("argv", "needle"), ERROR_CASES, ids=lambda v: str(v)[:40])
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, bad_json, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    argv = [bad_json if a == "BAD" else a for a in argv]
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("stanlogz") and "error" in lines[0]
    assert needle in lines[0]
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == [Path(bad_json)]  # nothing written


def test_help_exits_zero(capsys):
    rc, out, _ = run_cli(capsys, "--help")
    assert rc == 0 and "evidence" in out and "compare" in out


# ------------------------------------------------------------------ real runs
def test_compile_json(capsys, built_normal):
    rc, out, _ = run_cli(capsys, "--json", "--quiet", "compile", NORMAL, "--data", NORMAL_DATA)
    assert rc == 0
    d = json.loads(out)
    assert d["dim"] == 1 and d["param_names"] == ["mu"] and Path(d["lib_path"]).is_file()


def test_evidence_json_matches_exact_log_z(capsys, built_normal, tmp_path):
    rc, out, err = run_cli(capsys, "--json", "--seed", "3", "evidence", NORMAL,
                           "--data", NORMAL_DATA, *FAST)
    assert rc == 0, err
    d = json.loads(out)
    for key in ("method", "log_z", "log_z_se", "n_draws", "n_evals", "seconds", "diagnostics"):
        assert key in d
    assert not [k for k in d["diagnostics"] if k.startswith("_")]
    assert d["method"] == "gbs" and d["diagnostics"]["n_sampling_evals"] > 0
    exact = exact_log_z(json.loads(Path(NORMAL_DATA).read_text()))
    # Within the larger of 4.5 reported se and 5 sd of the estimator (see test_evidence_api): over
    # 300 seeds of these FAST settings the error had sd 0.0068 (max 4.8 sd, never above 4 se),
    # floor 0.034; the se was 0.0062 +- 0.0037, max 0.034, and a power-law fit to its largest
    # tenth (exponent 5) puts P(se > 0.05) below 1e-4.
    assert abs(d["log_z"] - exact) < max(4.5 * d["log_z_se"], 0.034)
    assert 0 < d["log_z_se"] < 0.05
    assert err  # progress lines went to stderr, not stdout


def test_evidence_plot_is_written_whole(capsys, built_normal, tmp_path):
    png = tmp_path / "gbs.png"
    rc, out, err = run_cli(capsys, "--quiet", "--seed", "5", "evidence", NORMAL,
                           "--data", NORMAL_DATA, *FAST, "--plot", str(png))
    assert rc == 0, err
    assert "log Z =" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gbs.png"]  # no temporary left
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sample_output_then_evidence_from_fit(capsys, built_normal, tmp_path):
    csv = tmp_path / "draws.csv"
    rc, out, err = run_cli(capsys, "--seed", "1", "sample", NORMAL, "--data", NORMAL_DATA,
                           *FAST, "--output", str(csv))
    assert rc == 0, err
    assert "mu" in out and "r_hat" in out and "divergences" in out
    # one CmdStan CSV per chain (draws_1.csv, ...); --fit draws.csv reads them back
    assert sorted(p.name for p in tmp_path.iterdir()) == ["draws_1.csv", "draws_2.csv"]
    rc, out, err = run_cli(capsys, "--json", "--quiet", "--seed", "2", "evidence", NORMAL,
                           "--data", NORMAL_DATA, "--fit", str(csv))
    assert rc == 0, err
    d = json.loads(out)
    assert d["diagnostics"]["draws_source"] == "csv" and d["diagnostics"]["chains"] == 2


def test_sample_json_and_netcdf(capsys, built_normal, tmp_path):
    nc = tmp_path / "draws.nc"
    rc, out, err = run_cli(capsys, "--json", "--quiet", "--seed", "1", "sample", NORMAL,
                           "--data", NORMAL_DATA, *FAST, "--output", str(nc))
    assert rc == 0, err
    d = json.loads(out)
    assert [r["name"] for r in d["parameters"]][0] == "mu"
    assert d["diagnostics"]["chains"] == 2 and nc.is_file()
    import arviz as az

    assert az.from_netcdf(nc).log_likelihood["log_lik"].shape == (2, 300, 10)


def test_compare_one_program_per_data_file(capsys, built_normal, tmp_path):
    data = json.loads(Path(NORMAL_DATA).read_text())
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps(dict(data, prior_sd=10.0)))
    rc, out, err = run_cli(capsys, "--json", "--quiet", "--seed", "4", "compare", NORMAL, NORMAL,
                           "--data", NORMAL_DATA, str(wide), "--prior-probs", "0.5,0.5", *FAST)
    assert rc == 0, err
    d = json.loads(out)
    probs = [m["post_prob"] for m in d["models"]]
    assert sum(probs) == pytest.approx(1.0) and len(d["models"]) == 2
    exact = exact_log_z(data) - exact_log_z(dict(data, prior_sd=10.0))  # 1.457
    bf = d["models"][1]["log_bf"] if d["best"] == d["models"][0]["name"] else None
    # Same rule: over 300 seeds the log BF's error had sd 0.0087 (floor 0.044), its se 0.0088 +-
    # 0.0036 (max 0.021; power-law tail puts P(se > 0.05) below 1e-4). 1.457 is 170 sd from 0.
    bf_se = d["models"][1]["log_bf_se"]
    assert bf is not None and abs(-bf - exact) < max(4.5 * bf_se, 0.044)
    assert 0 < bf_se < 0.05


def test_installed_console_script(built_normal):
    exe = shutil.which("stanlogz")
    assert exe, "the stanlogz console script is installed by: python3 -m pip install -e ."
    p = subprocess.run([exe, "--json", "--quiet", "compile", NORMAL, "--data", NORMAL_DATA],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["param_names"] == ["mu"]
    p = subprocess.run([exe, "evidence", "missing.stan"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not found" in p.stderr
