"""Which observation array holds the observed values, and the refusal when the data cannot
tell: its example names an array the model block samples (posteriordb's soil_incubation has
times ts first and its observed eCO2mean second), several sampled arrays need a log_lik, and an
observation array that is not one number per observation gets no --obs-fields advice."""

from __future__ import annotations

import pytest

from stanlogz.crossval.observations.conditional import response_field
from stanlogz.crossval.observations.observations import find_observations
from stanlogz.errors import InputError, speaking


@pytest.fixture(autouse=True)
def _cli_voice():
    """The refusals here are checked as the command line says them (flags); the API's
    keywords are checked in tests/util/test_routes.py."""
    with speaking("cli"):
        yield


SOIL = {"N_t": 3, "ts": [1.0, 2.0, 3.0], "eCO2mean": [4.0, 5.0, 6.5], "eCO2sd": [0.1, 0.2, 0.1]}
SOIL_CODE = """
data { int N_t; array[N_t] real ts; array[N_t] real eCO2mean; array[N_t] real eCO2sd; }
parameters { real k; real<lower=0> sigma; }
model {
  // ts ~ never sampled: a comment
  k ~ normal(0, 1);
  for (t in 1:N_t) eCO2mean[t] ~ normal(k * ts[t], sigma);
}
"""


def test_the_refusal_names_the_sampled_array():
    obs = find_observations(SOIL)
    with pytest.raises(InputError) as e:
        response_field(SOIL, obs, code=SOIL_CODE)
    assert "--obs-fields eCO2mean" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(InputError, match="e.g. --obs-fields ts"):  # no program: the first
        response_field(SOIL, obs)
    lpdf = SOIL_CODE.replace("eCO2mean[t] ~ normal(", "target += normal_lpdf(eCO2sd[t] | ")
    with pytest.raises(InputError, match="e.g. --obs-fields eCO2sd"):
        response_field(SOIL, obs, code=lpdf)
    assert response_field(SOIL, find_observations(SOIL, obs_fields=["eCO2mean"])) == "eCO2mean"


def test_several_sampled_arrays_and_no_scalar_array_need_log_lik():
    two = SOIL_CODE.replace("k ~ normal(0, 1);", "k ~ normal(0, 1); eCO2sd ~ exponential(1);")
    with pytest.raises(InputError, match=r"several values per observation \(eCO2mean, eCO2sd\)"
                                         r".*log_lik"):
        response_field(SOIL, find_observations(SOIL), code=two)
    # the refit routes over whole observations come first: K-fold, or leave-future-out first
    # where the model block recurses over the observations (posteriordb's bball HMM:
    # gamma[t - 1, j]); the lfo line's first training set is 90% of the observations
    with pytest.raises(InputError, match=r"\(eCO2mean, eCO2sd\): use `stanlogz kfold --obs N_t` "
                                         r"over exchangeable observations, or `stanlogz lfo "
                                         r"--obs N_t --min-train 2`"):
        response_field(SOIL, find_observations(SOIL), code=two)
    lagged = two.replace("eCO2mean[t] ~ normal(k * ts[t]", "eCO2mean[t] ~ normal(k * ts[t - 1]")
    with pytest.raises(InputError, match=r": use `stanlogz lfo --obs N_t --min-train 2` for a "
                                         r"time series, or `stanlogz kfold --obs N_t`"):
        response_field(SOIL, find_observations(SOIL), code=lagged)
    grid = {"n": 2, "X": [[1, 0, 2], [0, 0, 1]]}
    with pytest.raises(InputError) as e:
        response_field(grid, find_observations(grid))
    assert "no observation array holds one number per observation (X)" in str(e.value)
    assert "--obs-fields" not in str(e.value)


def test_several_sizes_example_names_the_sampled_arrays_size():
    # posteriordb's bball HMM: sizes K (the prior's alpha) and N (u, v); the example named
    # whichever came first in the data; with the program it names the size of the sampled u, v
    data = {"K": 2, "alpha": [[1.0, 1.0], [1.0, 1.0]], "N": 3, "u": [0.1, 0.2, 0.3],
            "v": [1.0, 2.0, 3.0]}
    code = """data { int K; matrix[K, K] alpha; int N; array[N] real u; array[N] real v; }
    parameters { real<lower=0> phi; } model { phi ~ normal(0, 1);
      for (t in 1:N) target += exponential_lpdf(u[t] | phi) + exponential_lpdf(v[t] | phi); }"""
    with pytest.raises(InputError, match=r"several possible observation sizes .*--obs K\)"):
        find_observations(data)
    with pytest.raises(InputError, match=r"\(e\.g\. --obs N\)"):
        find_observations(data, code=code)
    assert find_observations(data, obs="N").fields == ("u", "v")
