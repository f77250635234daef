"""The cause an exact-refit refusal names is true (issue 35 item 3): each cause on a program
that has it and on programs that do not. check_split compares the program without y_i with the
full program with y_i (and its latents) integrated out, at a few draws; every check here is
deterministic given the draws (closed forms and a fixed grid)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stanlogz.crossval.observations.observations import find_observations
from stanlogz.crossval.observations.splitcheck import SplitError, check_split
from stanlogz.draws import sample
from stanlogz.stan.settings import NutsArgs

TESTS = Path(__file__).resolve().parents[3] / "stan_models" / "tests"
SHORT = NutsArgs(chains=1, warmup=200, draws=60)
Y12 = [0.3, 1.2, -0.4, 0.8, 2.1, 0.05, -1.5, 0.6, 1.0, 0.2, 1.7, -0.2]

PRIOR = "a latent's prior does not integrate to one"
SHARED = "y_i enters other terms"
LINKED = "linked to other observations' latents"
OWN = "do not integrate to one over them"
CAUSES = (PRIOR, SHARED, LINKED, OWN)


def _cause(model, data, i, x) -> str | None:
    try:
        check_split(model, data, find_observations(data, "N"), i, x)
    except SplitError as err:
        found = [c for c in CAUSES if c in str(err)]
        assert len(found) == 1, str(err)
        return found[0]
    return None


def test_unnormalized_latent_prior_is_named_at_every_draw(compiled):
    """The issue's program (z_i <lower=0> ~ normal(0, 1) without T[,], y_i ~ normal(z_i,
    0.1)), observation 5 (y = 2.1): where the grid over its latent reached e^15 the quadratic
    fit was rounding noise, and 19 of 20 triples of draws were refused as "y_i enters other
    terms" (+1e12 to +2e13); every triple must name the prior, with the exact gap -log 2."""
    data = {"N": 12, "y": Y12, "sigma": 0.1}
    m = compiled(TESTS / "halfnormal_latents.stan", data)
    x = sample(m, SHORT, seed=2).flat_unconstrained()
    for r in range(0, 60, 3):
        with pytest.raises(SplitError, match=r"differ by -0\.6931") as err:
            check_split(m, data, find_observations(data, "N"), 4, x[r:r + 3])
        assert PRIOR in str(err.value) and SHARED not in str(err.value)


def test_each_cause_on_a_program_with_it_and_without(compiled):
    rng = np.random.default_rng(0)
    # y_i shares terms with its neighbours: a multivariate normal with AR(1) errors
    mvn = {"N": 12, "y": Y12, "rho": 0.7, "sigma": 1.0}
    m = compiled(TESTS / "mvn_ar1.stan", mvn)
    x = sample(m, SHORT, seed=1).flat_unconstrained()[:3]
    assert _cause(m, mvn, 5, x) == SHARED
    assert _cause(m, mvn, 0, x) is None  # the first value: deleting it leaves the right model
    # y_i's own extra term: not normalized, varies with mu, shared with nothing
    own = {"N": 12, "y": Y12}
    m = compiled(TESTS / "y_extra_term.stan", own)
    x = sample(m, SHORT, seed=1).flat_unconstrained()[:3]
    assert _cause(m, own, 5, x) == OWN
    # linked latents (a random walk)
    rw = {"N": 12, "y": Y12, "sigma_x": 0.5, "sigma_y": 1.0}
    m = compiled(TESTS / "rw_states.stan", rw)
    x = sample(m, SHORT, seed=1).flat_unconstrained()[:3]
    assert _cause(m, rw, 5, x) == LINKED
    # none: independent latents with normalized priors, at draws and at random points
    ok = {"N": 12, "y": Y12}
    m = compiled(TESTS / "per_obs.stan", ok)
    x = sample(m, SHORT, seed=1).flat_unconstrained()[:3]
    for pts in (x, rng.normal(size=(3, m.dim))):
        assert _cause(m, ok, 5, pts) is None
