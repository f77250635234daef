"""ups()'s options object: :class:`UpsPathOptions` (frozen, validated) and the old keywords,
turned into one at the boundary, give the same run; bad options are one-line InputErrors."""

import dataclasses

import numpy as np
import pytest

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.errors import InputError
from stanlogz.estimators.options import UpsOptions, UpsPathOptions
from stanlogz.estimators.ups.ups import ups
from stanlogz.mcmc.paths import GeometricPath

# A cheap run (fixed k, m, no pilots): the same seed must give the same replicates bit for bit
# whichever way the options arrive.
CHEAP = dict(n_replicates=8, grid=2, n_workers=1, k=4, m=12, adapt=False, q="uniform")


def _path() -> GeometricPath:
    return GeometricPath(GaussianTarget(np.zeros(2)),
                         GaussianTarget(np.array([0.5, 0.0]), np.eye(2) * 0.7, log_z=-0.3))


@pytest.mark.parametrize("kernel", ["rwmh", "hmc"])
def test_keywords_and_the_options_object_give_the_same_run(kernel):
    path = _path()
    by_keywords = ups(path, seed=3, kernel=kernel, **CHEAP)
    by_object = ups(path, UpsPathOptions(kernel=kernel, **CHEAP), seed=3)
    by_registry_class = ups(path, options=UpsOptions(kernel=kernel, **CHEAP), seed=3)
    overridden = ups(path, UpsPathOptions(kernel="rwmh", **{**CHEAP, "n_replicates": 50}),
                     seed=3, kernel=kernel, n_replicates=8)
    for r in (by_object, by_registry_class, overridden):
        assert np.array_equal(r.replicates, by_keywords.replicates)
        assert np.array_equal(r.lambdas, by_keywords.lambdas)
        assert r.estimate == by_keywords.estimate and r.se == by_keywords.se
        assert r.kernel == kernel


def test_the_object_is_frozen_and_keeps_ups_defaults():
    opts = UpsPathOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.n_replicates = 3
    assert opts.adapt is True and opts.n_replicates == 100 and opts.kernel == "rwmh"
    # the registry's class adds the base and turns per-lambda re-fitting off
    assert UpsOptions().adapt is False and UpsOptions().base == "gaussian"
    assert set(UpsPathOptions.names()) < set(UpsOptions.names())


def test_an_unknown_keyword_is_an_input_error_naming_it():
    with pytest.raises(InputError, match="method ups has no option 'n_replicate'; it takes: "):
        ups(_path(), seed=1, n_replicate=10)
    with pytest.raises(InputError, match="no option 'bogus'"):
        ups(_path(), UpsPathOptions(**CHEAP), seed=1, bogus=1)


@pytest.mark.parametrize("bad, message", [
    ({"n_replicates": 1}, "option n_replicates of method ups must be >= 2"),
    ({"n_replicates": 2.5}, "option n_replicates of method ups must be int"),
    ({"kernel": "nuts"}, "option kernel of method ups must be one of 'rwmh', 'hmc'"),
    ({"k": 3}, "options k and m of method ups go together"),
    ({"k": 5, "m": 4}, r"option k of method ups must be in \[0, m=4\]"),
    ({"quantile": 1.5}, r"option quantile of method ups must be in \(0, 1\]"),
    ({"proposal_scale": 0.0}, "option proposal_scale of method ups must be positive"),
    ({"omega": 0.0}, r"option omega of method ups must be in \(0, 1\]"),
])
def test_bad_values_are_refused_by_the_object_and_by_keywords(bad, message):
    with pytest.raises(InputError, match=message):
        UpsPathOptions(**bad)
    with pytest.raises(InputError, match=message):
        ups(_path(), seed=1, **bad)


def test_options_that_choose_a_path_are_refused_by_ups():
    with pytest.raises(InputError, match="base and inflate choose the path of ups_estimate"):
        ups(_path(), UpsOptions(base="laplace"), seed=1)
    with pytest.raises(InputError, match="ups options must be UpsPathOptions, got dict"):
        ups(_path(), {"n_replicates": 10}, seed=1)
