"""A fast subset of the posteriordb corpus run as a user would run it (benchmarks/corpus.py):
each command is a subprocess of the ``stanlogz`` command line with ``--json`` and its defaults
(but fewer chains or draws where a test says so: the assertions there do not depend on
them).

- NUTS means agree with posteriordb's reference means (z against both Monte Carlo errors);
- ``loo`` answers, or refuses with one line that names a route; the kinds of refusal met in
  the corpus whose route is an argument or a command have a test that runs the named route on
  that program and gets an answer: scalar data (``stanlogz evidence``), several observation
  sizes (``--obs``), no array named as the observed values (``--obs-fields``; ``slow``),
  over the time budget (fewer iterations), no array with one number per observation (the
  program with a ``log_lik``; ``slow``).

The corpus lives beside the repository (``../shared/corpus``); without it the module skips.
Seeds are fixed; each stochastic bound states its failure probability under a right answer.
"""

from __future__ import annotations

import math

import pytest

import stanlogz
from benchmarks import corpus as C
from stanlogz._util.deadline import parse_duration
from stanlogz.errors import InputError

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.stan,
    pytest.mark.skipif(not C.CORPUS.is_dir(), reason=f"no corpus at {C.CORPUS}"),
]


def _folder(name: str):
    return C.posteriors(C.CORPUS, [name])[0]


def test_nuts_means_agree_with_the_reference():
    # 3 quantities; |z| > 4.5 for one of them has probability 3 * 6.8e-6 = 2e-5. z divides by
    # the draws' own Monte Carlo se (from their ESS), so it is standard normal at any number of
    # draws; 2 chains x 1000 draws (ESS ~600 per quantity, enough for a well-estimated se)
    # halve the sampling of the default 4.
    rec = C.run_one(_folder("kilpisjarvi"), "sample", limit=600, seed=1,
                    extra=["--chains", "2"])
    assert rec["status"] == "answered", rec.get("message")
    z = rec["reference_z"]
    assert z["compared"] == 3 and z["missing"] == 0
    assert z["max_abs_z"] <= 4.5, z


def test_loo_answers_a_regression_without_log_lik():
    # 2 chains instead of 4: the Monte Carlo se below grows by about sqrt(2) (~0.1 here)
    rec = C.run_one(_folder("kilpisjarvi"), "loo", limit=600, seed=1, extra=["--chains", "2"])
    assert rec["status"] == "answered", rec.get("message")
    js = rec["json"]
    assert js["n_obs"] == 62 and js["log_lik_source"] in ("difference", "conditional")
    # 62 observations of a linear regression: the elpd's se is a few nats, its Monte Carlo se
    # a small fraction of it
    assert math.isfinite(js["elpd_loo"]) and 1 < js["se"] < 30
    assert 0 < js["mcse_elpd_loo"] < 0.5 * js["se"]


def test_scalar_data_refusal_names_evidence_and_evidence_answers():
    folder = _folder("Rate_4_model")
    rec = C.run_one(folder, "loo", limit=600, seed=1)
    assert rec["status"] == "refused" and rec["route"] == "stanlogz evidence"
    assert not rec["raw"] and "only scalars" in rec["message"]
    ev = C.run_one(folder, "evidence", limit=600, seed=1)
    assert ev["status"] == "answered", ev.get("message")
    # k = 1 of n = 15 under a uniform prior: p(k) = 1 / (n + 1), log Z = -log 16; |error| >
    # 4.5 se has probability 7e-6 when the se is right
    js = ev["json"]
    assert abs(js["log_z"] + math.log(16)) <= 4.5 * js["log_z_se"] + 1e-9


def test_several_sizes_refusal_names_obs_and_obs_answers():
    folder = _folder("losscurve_sislob")
    rec = C.run_one(folder, "loo", limit=600, seed=1)
    assert rec["status"] == "refused" and rec["route"].startswith("--obs")
    assert "--obs n_data" in rec["message"] and not rec["raw"]
    argv = C.command_line("loo", folder, seed=1) + ["--obs", "n_data"]
    run = C.run_command(argv, limit=600)
    assert C.classify(run)["status"] == "answered", run["stderr"][-3:]
    assert run["json"]["n_obs"] == 55 and math.isfinite(run["json"]["elpd_loo"])


@pytest.mark.slow
def test_response_refusal_names_obs_fields_and_obs_fields_answers():
    # seeds_centered_model: counts n of N trials with centred (linked) random effects; four
    # per-observation arrays, none named y. The named route sums p(n_i | n_-i, theta) over the
    # support of n_i; --fix none, 2 x 100 draws and no self-check keep the run short (its
    # k-hat warnings stay): the pass sums ~32 density instances per observation and draw,
    # about 60 s at the default 4,000 draws, 6 s at 200. Seeds 1-3 gave elpd_loo -56.7 to
    # -57.9 and se 3.2 to 3.6, well inside the bounds below.
    folder = _folder("seeds_centered_model")
    rec = C.run_one(folder, "loo", limit=600, seed=1)
    assert rec["status"] == "refused" and rec["route"] == "--obs-fields n"
    assert "(e.g. --obs-fields n)" in rec["message"] and not rec["raw"]
    argv = C.command_line("loo", folder, seed=1) + ["--obs-fields", "n", "--fix", "none",
                                                    "--chains", "2", "--draws", "100",
                                                    "--verify", "0"]
    run = C.run_command(argv, limit=600)
    assert C.classify(run)["status"] == "answered", run["stderr"][-3:]
    js = run["json"]
    assert js["log_lik_source"] == "conditional" and js["n_obs"] == 21
    assert sum(js["khat_counts"].values()) == 21
    # 21 binomial counts of up to 94 trials: elpd_loo of a few nats per observation
    assert -80 < js["elpd_loo"] < -40 and 1 < js["se"] < 10


def test_over_the_time_budget_refusal_names_a_route_that_answers():
    # radon's varying intercepts and slopes sample in 20-90 s here, by the load (its first
    # warmup iterations at twice the rate of the rest): under a 12 s budget NUTS stops early
    # and names fewer iterations that fit in half the budget at the rate it measured, or, when
    # even 100 + 100 would not (a loaded machine), the budget the whole run needs. The test
    # follows the route named: fewer iterations under twice the budget (4x their own estimate:
    # room for a load that changes between the two runs), or the whole run under the budget
    # named (1.3x its estimate plus 10 s; past the warmup a budget that still falls short
    # keeps the draws so far, which is an answer too). A machine fast enough to sample within 12 s
    # answers at once, which is what the budget asks for too.
    folder = _folder("radon_variable_intercept_slope_noncentered")
    rec = C.run_one(folder, "sample", limit=12 + C.BUDGET_MARGIN_S, seed=1)
    assert rec["status"] in ("answered", "refused"), rec
    if rec["status"] == "answered":
        return
    message = rec["message"]
    assert message.startswith("sampling model would take about ") and not rec["raw"]
    route = C.route_of(rec["routes"], "sample")
    if route is not None:
        assert route[1][0] == "--warmup", message
        again = C.run_one(folder, "sample", limit=24 + C.BUDGET_MARGIN_S, seed=1, extra=route[1])
    else:
        budgets = [r["options"]["time_budget"] for r in rec["routes"]
                   if "time_budget" in r["options"]]
        assert budgets, message
        again = C.run_one(folder, "sample", limit=parse_duration(budgets[0]) + C.BUDGET_MARGIN_S,
                          seed=1)
    assert again["status"] == "answered", again.get("message")


@pytest.mark.slow
def test_log_lik_refusal_and_the_program_with_a_log_lik_answers():
    # butterfly-multi_occupancy: species x sites counts, no array with one number per
    # observation; the refusal's route is a log_lik generated quantity. The same program with
    # one (stan_models/corpus_routes/multi_occupancy_log_lik.stan) answers; --fix none and
    # short chains (2 x (150 + 150): the answer, not its accuracy, is checked) keep the run
    # short (the species-level latents leave high k-hats and R-hats, warned).
    folder = _folder("multi_occupancy")
    rec = C.run_one(folder, "loo", limit=600, seed=1)
    assert rec["status"] == "refused" and rec["route"] == "a log_lik generated quantity"
    # no draw can change this refusal (the data hold no array with one number per
    # observation), so it comes before NUTS: the progress never reaches sampling
    lines: list[str] = []
    with pytest.raises(InputError, match="no observation array holds one number"):
        stanlogz.loo(str(folder / "model.stan"), str(folder / "data.json"), seed=1,
                     progress=lines.append)
    assert not any("sampl" in line for line in lines), lines
    program = C.ROOT / "stan_models" / "corpus_routes" / "multi_occupancy_log_lik.stan"
    argv = [C.sys.executable, "-m", "stanlogz", "--json", "--seed", "1", "loo", str(program),
            "--data", str(folder / "data.json"), "--fix", "none", "--chains", "2",
            "--warmup", "150", "--draws", "150", "--verify", "0"]
    run = C.run_command(argv, limit=600)
    assert C.classify(run)["status"] == "answered", run["stderr"][-3:]
    js = run["json"]
    assert js["log_lik_source"] == "log_lik" and js["n_obs"] == 28
    assert math.isfinite(js["elpd_loo"]) and js["se"] > 0


def test_the_check_before_sampling_is_skipped_where_a_conditional_source_builds(monkeypatch):
    # 2pl_latent_reg_irt: 7,000 responses, person latents shared by 5 to 6 of them, so its
    # density difference need not factorize, and a conditional source over y builds from the
    # data. Whatever the factorization check at random points says, the answer before
    # sampling is then "decide at the draws" (None), so the check (a pass over all 7,000
    # observations: 57 s on the interpreter) is not run at all.
    import numpy as np

    from stanlogz.crossval.elpd.routes import refusal_before_draws
    from stanlogz.crossval.observations.observations import load_observed
    from stanlogz.crossval.observations.pointwise import PointwiseLogLik

    folder = _folder("2pl_latent_reg_irt")
    model, data, obs = load_observed(str(folder / "model.stan"), str(folder / "data.json"))
    pw = PointwiseLogLik(model, data, obs, "auto")
    assert pw.source == "difference" and obs.n == 7000

    def no_pass(*args, **kwargs):
        raise AssertionError("the check's pass over the observations ran")

    monkeypatch.setattr(pw, "columns", no_pass)
    rows = np.random.default_rng(1).uniform(-2, 2, (4, model.dim))
    assert refusal_before_draws(pw, "auto", rows) is None


def test_a_refused_data_instance_with_no_conditional_refuses_before_sampling():
    # kronecker_gp with --obs n1: y is an n1 x n2 matrix (several values per observation, so
    # no conditional source), and the density difference's smaller instances are refused
    # (x1 is declared with n1 entries). No draw changes either, so the refusal and its K-fold
    # route come before NUTS: the route phase of the corpus rerun spent 502 s sampling first
    folder = _folder("kronecker_gp")
    lines: list[str] = []
    with pytest.raises(InputError, match="several values per observation") as info:
        stanlogz.loo(str(folder / "model.stan"), str(folder / "data.json"), obs="n1", seed=1,
                     progress=lines.append)
    assert not any("sampl" in line for line in lines), lines
    route = info.value.routes[0]
    assert route.command == "kfold" and route.options == {"obs": "n1"}


def test_data_instances_rejected_at_every_point_with_no_conditional_refuse_before_sampling():
    # sir: an ODE over N_t times with two observed series (stoi_hat, B_hat), so no conditional
    # source; its density difference's empty baseline is rejected at every point ("times has
    # size 0"). The check before sampling read that as a point's failure and left it to the
    # draws: the refusal, naming lfo, came after 77 s of NUTS. It now comes before NUTS
    # (a quarter of the random points have a finite density; the check takes 4 of 32)
    folder = _folder("sir")
    lines: list[str] = []
    with pytest.raises(InputError, match="several values per observation") as info:
        stanlogz.loo(str(folder / "model.stan"), str(folder / "data.json"), seed=1,
                     progress=lines.append)
    assert not any("sampl" in line for line in lines), lines
    route = info.value.routes[0]
    assert route.command == "lfo" and route.options["obs"] == "N_t"
