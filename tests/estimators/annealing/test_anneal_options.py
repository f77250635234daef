"""ais() and reverse_ais() take their options as one frozen, validated AnnealOptions; the old
keywords, turned into one at the boundary, give the same run; bad options are one-line
InputErrors naming the option."""

import dataclasses

import numpy as np
import pytest

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.errors import InputError
from stanlogz.estimators.annealing.ais import ais, reverse_ais
from stanlogz.estimators.options import AisOptions, AnnealOptions
from stanlogz.mcmc.annealing import HMCTuning

BASE = GaussianTarget(np.zeros(2), np.eye(2) * 2.0)
POST = GaussianTarget(np.array([0.5, -0.3]), np.eye(2) * 0.5, log_z=-0.7)
# A cheap run with fixed tuning (no pilot): the same seed gives the same weights bit for bit.
TUNING = HMCTuning.constant(0.4, 1.0, 2)
CHEAP = dict(n_chains=4, n_temps=15, hmc_steps=3, n_workers=1, backend="serial")


def test_keywords_and_the_options_object_give_the_same_runs():
    post = POST.sample(np.random.default_rng(1), 4)
    for run, args in ((ais, ()), (reverse_ais, (post,))):
        by_keywords = run(POST, BASE, *args, seed=2, tuning=TUNING, **CHEAP)
        by_object = run(POST, BASE, *args, AnnealOptions(**CHEAP), seed=2, tuning=TUNING)
        overridden = run(POST, BASE, *args, AnnealOptions(**{**CHEAP, "n_temps": 40}), seed=2,
                         tuning=TUNING, n_temps=15)
        for r in (by_object, overridden):
            assert np.array_equal(r.log_weights, by_keywords.log_weights)
            assert r.log_z == by_keywords.log_z and r.n_temps == 15
    # the registry's class extends it (inflate is the adapter's): accepted as the options too
    assert np.array_equal(ais(POST, BASE, AisOptions(**CHEAP), seed=2, tuning=TUNING).log_weights,
                          ais(POST, BASE, seed=2, tuning=TUNING, **CHEAP).log_weights)


def test_the_object_is_frozen_with_the_old_defaults():
    opts = AnnealOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.n_chains = 3
    assert (opts.n_chains, opts.n_temps, opts.schedule, opts.hmc_steps, opts.jitter) == \
        (16, 1000, "adaptive", 10, 0.1)


def test_an_unknown_keyword_is_an_input_error_naming_it():
    with pytest.raises(InputError, match="method ais has no option 'n_chain'; it takes: "):
        ais(POST, BASE, seed=1, n_chain=4)
    with pytest.raises(InputError, match="no option 'bogus'"):
        reverse_ais(POST, BASE, np.zeros(2), AnnealOptions(), seed=1, bogus=1)
    with pytest.raises(InputError, match="annealing options must be AnnealOptions, got dict"):
        ais(POST, BASE, {"n_chains": 4}, seed=1)


@pytest.mark.parametrize("bad, message", [
    ({"n_chains": 0}, "option n_chains of method ais must be positive"),
    ({"n_chains": 2.5}, "option n_chains of method ais must be int"),
    ({"hmc_steps": 0}, "option hmc_steps of method ais must be positive"),
    ({"transitions_per_temp": 0}, "option transitions_per_temp of method ais must be positive"),
    ({"jitter": 1.0}, r"option jitter of method ais must be in \[0, 1\)"),
    ({"backend": "mpi"}, "option backend of method ais must be one of"),
])
def test_bad_values_are_refused_before_any_work(bad, message):
    with pytest.raises(InputError, match=message):
        AnnealOptions(**bad)
    for run, args in ((ais, ()), (reverse_ais, (np.zeros(2),))):
        with pytest.raises(InputError, match=message):
            run(POST, BASE, *args, seed=1, **bad)
