"""The estimator registry: one frozen, validated options class per method, matching its function;
and the one seed scheme."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from stanlogz._util.seeds import (
    as_seed_sequence,
    child_int_seed,
    child_sequence,
    int_seed,
    spawn_generators,
)
from stanlogz.errors import InputError
from stanlogz.estimators import METHODS, lookup
from stanlogz.estimators.annealing.ais import ais, reverse_ais
from stanlogz.estimators.annealing.smc import smc
from stanlogz.estimators.options import AnnealOptions, UpsPathOptions

# Estimators taking **options pass them on to these functions (plus the adapter's own keywords);
# ais(), reverse_ais() and ups() take theirs as an options object (or as keywords turned into
# one): its class holds their defaults.
PASSED_ON = {"ais": (ais, AnnealOptions), "rais": (reverse_ais, AnnealOptions), "smc": (smc,),
             "ups": (UpsPathOptions,)}
# The adapters' own keywords that are not in the function they pass the rest to.
ADAPTER_DEFAULTS = {"ais": {"inflate": 1.5}, "rais": {"inflate": 1.5},
                    "smc": {"inflate": 1.5, "max_particles": None, "reverse": True}}


def _defaults(fn) -> dict:
    if dataclasses.is_dataclass(fn):  # an options class: its fields' defaults
        return {f.name: f.default for f in dataclasses.fields(fn)}
    return {n: p.default for n, p in inspect.signature(fn).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
            and n not in ("seed", "n_sampling_evals", "progress")}  # plumbing, not options


@pytest.mark.parametrize("name", sorted(METHODS))
def test_options_match_the_estimator_function(name):
    """Every option exists in the estimator with the same default, so a method run through the
    registry computes what the function called with its own defaults computes."""
    method = lookup(name)
    fn = method.function()
    params = inspect.signature(fn).parameters
    assert ("n_sampling_evals" in params) == method.takes_n_sampling_evals
    own = _defaults(fn)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    known = dict(own)
    if takes_any:
        for source in PASSED_ON[name]:
            known.update(_defaults(source))
        known.update(ADAPTER_DEFAULTS.get(name, {}))
        known.update(own)
    opts = method.Options()
    for f in dataclasses.fields(opts):
        assert f.name in known, f"{name}: option {f.name} is not taken by the estimator"
        assert getattr(opts, f.name) == known[f.name], f"{name}: default of {f.name}"
    if not takes_any:  # a function with fixed keywords: every one is an option
        assert set(own) == set(method.Options.names())


@pytest.mark.parametrize("name", sorted(METHODS))
def test_unknown_option_names_the_method_and_the_allowed_ones(name):
    method = lookup(name)
    with pytest.raises(InputError) as err:
        method.options({"no_such_option": 1})
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"method {name} has no option 'no_such_option'; it takes: ")
    assert msg.endswith(", ".join(method.Options.names()) or "none")


def test_option_types_and_ranges_are_checked():
    gbs = lookup("gbs")
    with pytest.raises(InputError, match="option n_layers of method gbs must be int or None, "
                                         "got 'abc'"):
        gbs.options({"n_layers": "abc"})
    with pytest.raises(InputError, match="option validate of method gbs must be bool, got 1"):
        gbs.options({"validate": 1})
    with pytest.raises(InputError, match="option tempered of method gbs must be one of 'auto', "
                                         "'always', 'never', got 'sometimes'"):
        gbs.options({"tempered": "sometimes"})
    with pytest.raises(InputError, match="option n_q of method gbs must be positive, got 0"):
        gbs.options({"n_q": 0})
    with pytest.raises(InputError, match="option ess_fraction of method smc must be in"):
        lookup("smc").options({"ess_fraction": 1.5})
    with pytest.raises(InputError, match="method ais has no option 'seed'"):
        lookup("ais").options({"seed": 3})
    # an int is a float, a NumPy integer an int; a float is not an int
    assert lookup("gbs").options({"f_err": 1, "n_q": np.int64(50)}).n_q == 50
    with pytest.raises(InputError, match="n_chains of method ais must be int"):
        lookup("ais").options({"n_chains": 8.0})


def test_options_are_frozen_and_kwargs_round_trip():
    opts = lookup("ups").options({"n_replicates": 20, "kernel": "hmc"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.n_replicates = 3
    assert lookup("ups").options(opts) is opts
    kw = opts.kwargs()
    assert kw["n_replicates"] == 20 and kw["kernel"] == "hmc" and kw["base"] == "gaussian"
    with pytest.raises(InputError, match="method gbs takes GbsOptions, not UpsOptions"):
        lookup("gbs").options(opts)


def test_unknown_method_lists_the_choices():
    with pytest.raises(InputError, match="unknown method 'nope'; choose one of gbs, gis"):
        lookup("nope")


def test_seed_children_are_spawn_children_and_repeatable():
    """child_sequence(seed, i) is what SeedSequence(seed).spawn gives as its i-th child, without
    spawn's state: asking twice gives the same stream."""
    spawned = np.random.SeedSequence(7).spawn(4)
    for i in range(4):
        a = child_sequence(7, i).generate_state(4)
        assert np.array_equal(a, spawned[i].generate_state(4))
        assert np.array_equal(a, child_sequence(7, i).generate_state(4))
    g1, g2 = spawn_generators(7, 2), spawn_generators(7, 2)
    assert g1[1].random() == g2[1].random()
    assert g1[0].random() != g1[1].random()
    ss = as_seed_sequence(7)
    assert as_seed_sequence(ss) is ss


def test_int_seed():
    assert int_seed(5) == 5 and int_seed(2**32 + 5) == 5
    word = int(child_sequence(3, 1).generate_state(1)[0] & 0x7FFFFFFF)
    assert child_int_seed(3, 1) == word == int_seed(child_sequence(3, 1))
    assert child_int_seed(None, 1) is None
    assert 0 <= int_seed(None) < 2**31
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(InputError, match="seed must be a non-negative integer"):
            int_seed(bad)
