"""cmdstanpy's names of the sampler settings get a "did you mean" with stanlogz's name."""

from __future__ import annotations

import pytest

from stanlogz.errors import InputError
from stanlogz.stan.settings import NutsArgs, nuts_from_keywords, split_nuts_keywords


@pytest.mark.parametrize(("name", "ours"), [("iter_sampling", "n_draws="),
                                            ("iter_warmup", "warmup="),
                                            ("max_depth", "max_treedepth=")])
def test_api_keywords_suggest_stanlogz_names(name, ours):
    with pytest.raises(InputError, match=rf"loo\(\) got {name}: .*did you mean {ours}"):
        nuts_from_keywords(None, {name: 10}, "loo")
    with pytest.raises(InputError, match=rf"evidence\(\) got {name}: .*did you mean {ours}"):
        split_nuts_keywords(None, {name: 10, "n_layers": 2}, "evidence")


def test_nuts_args_suggest_draws_for_iter_sampling():
    with pytest.raises(InputError, match=r"iter_sampling; did you mean draws="):
        NutsArgs().replace(iter_sampling=10)


def test_stanlogz_names_still_pass():
    nuts, rest = split_nuts_keywords(None, {"n_draws": 10, "warmup": 5, "n_layers": 2}, "x")
    assert (nuts.draws, nuts.warmup, rest) == (10, 5, {"n_layers": 2})
    assert nuts_from_keywords(None, {"chains": 2}, "loo").chains == 2
