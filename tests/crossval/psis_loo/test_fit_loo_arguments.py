"""``loo(fit)`` honours or refuses every argument (issue 43): PSIS of a fit's log_lik takes
``k_threshold``, ``progress`` and ``seed`` (no random numbers are drawn, so every seed gives the
same result); each argument that needs the Stan program is refused with an InputError naming
it, where it was silently dropped before. The fit is a log-likelihood array; nothing is
sampled."""

from __future__ import annotations

import numpy as np
import pytest

import stanlogz
from stanlogz.errors import InputError
from stanlogz.stan.settings import NutsArgs

LL = np.random.default_rng(7).normal(-1.0, 0.3, size=(2, 200, 6))


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"obs": "N"}, "obs"),
    ({"obs_fields": ["y"]}, "obs_fields"),
    ({"chains": 2}, "chains=2"),
    ({"n_draws": 500}, "draws=500"),
    ({"settings": NutsArgs(adapt_delta=0.95)}, "adapt_delta=0.95"),
    ({"n_workers": 3}, "n_workers=3"),
    ({"ups_options": {"n_rungs": 4}}, "ups_options"),
    ({"mm_budget": 30.0}, "mm_budget"),
    ({"cond_budget": 30.0}, "cond_budget"),
    ({"fix_options": {}}, "fix_options"),
    ({"fix": "mm"}, "fix='mm'"),
    ({"subsample": 3}, "subsample"),
])
def test_an_argument_that_needs_the_program_is_refused_by_name(kwargs, named) -> None:
    with pytest.raises(InputError, match="need.* the Stan program") as info:
        stanlogz.loo(LL, **kwargs)
    assert named in str(info.value) and "\n" not in str(info.value)


def test_the_arguments_a_fit_takes_are_honoured() -> None:
    lines: list[str] = []
    a = stanlogz.loo(LL, seed=1, progress=lines.append)
    b = stanlogz.loo(LL, seed=2)
    assert lines and "PSIS-LOO" in lines[0]
    np.testing.assert_array_equal(a.elpd_i, b.elpd_i)  # PSIS draws no random numbers
    assert a.elpd_loo == b.elpd_loo and a.se == b.se
    c = stanlogz.loo(LL, k_threshold=0.2)
    assert c.threshold == 0.2 and a.threshold != 0.2
    # the defaults a caller may pass explicitly change nothing
    d = stanlogz.loo(LL, settings=NutsArgs(), n_workers=1, fix="auto", log_lik="auto")
    assert d.elpd_loo == a.elpd_loo
