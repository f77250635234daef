"""gbs with fewer draws per half than dimensions: the structured (diagonal plus low rank)
proposal runs instead of a refusal, says so, and its log Z covers the exact one."""

from types import SimpleNamespace

import numpy as np
import pytest

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.errors import InputError
from stanlogz.estimators.bridge.bridge import combine_orientations, gbs
from stanlogz.estimators.bridge.route import choose_route
from stanlogz.estimators.common import check_evidence_draws, least_draws
from stanlogz.flows.selection import STRUCTURED_MIN_DRAWS
from stanlogz.stan.settings import NutsArgs


def test_route_is_dense_where_the_draws_are_enough_else_structured():
    assert not choose_route(2000, 1002).structured  # the 1,002-parameter case of issue 46
    r = choose_route(2000, 3002)
    assert r.structured and r.least == STRUCTURED_MIN_DRAWS
    assert "fewer than the 3766 a dense covariance needs in 3002 dimensions" in r.reason
    assert not choose_route(10, 10).structured  # small d: the dense minimum is the lower one
    assert choose_route(10**6, 10, proposal="structured").structured
    assert not choose_route(10, 10**4, proposal="dense").structured
    with pytest.raises(InputError, match="proposal must be one of auto, dense, structured"):
        choose_route(100, 10, proposal="sparse")


def test_draws_check_no_longer_refuses_at_more_dimensions_than_draws():
    defaults = NutsArgs()  # 4 chains x 1000 draws: halves of 2000
    for dim in (3002, 10002):  # issue 46 was refused here before sampling
        check_evidence_draws(SimpleNamespace(dim=dim), "gbs", defaults)
    assert least_draws(10002) == STRUCTURED_MIN_DRAWS
    # 4 x 100 draws: halves of 200 < 250, but gbs splits them unevenly (63 to fit, 37 to
    # bridge a chain), so the settings are not refused; 4 x 80 leave 17 a chain: refused
    check_evidence_draws(SimpleNamespace(dim=10002), "gbs", NutsArgs(draws=100))
    with pytest.raises(InputError, match=r"each half has 160, need at least 250 for dimension "
                                         r"10002; run with settings=NutsArgs\(draws=150\) "
                                         r"\(4 chains\)"):
        check_evidence_draws(SimpleNamespace(dim=10002), "gbs", NutsArgs(draws=80))
    # dense forced at 3002: 4 x 1000 split unevenly (942 a chain to fit, 58 to bridge), as gbs
    # splits them; 4 x 950 leave 8 a chain: refused
    check_evidence_draws(SimpleNamespace(dim=3002), "gbs", defaults, proposal="dense")
    with pytest.raises(InputError, match=r"each half has 1900, need at least 3766 for dimension "
                                         r"3002"):
        check_evidence_draws(SimpleNamespace(dim=3002), "gbs", NutsArgs(draws=950),
                             proposal="dense")


def spiked_gaussian(d, seed=0):
    """N(m, diag(s^2) + w w^T) with a rank-2 w, its log Z set to -3.7."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((d, 2)) * rng.uniform(0.2, 1.0, (d, 1))
    cov = np.diag(rng.uniform(0.5, 2.0, d) ** 2) + w @ w.T
    return GaussianTarget(rng.standard_normal(d), cov, log_z=-3.7)


def test_structured_gbs_covers_the_exact_log_z_with_more_dimensions_than_draws():
    # d = 600 with halves of 4 x 100 = 400 exact draws: a dense fit needs 764, so "auto" takes
    # the structured route. Failure probability: an honest se puts |err| > 4 se at 6e-5; the
    # se bound (measured ~0.06 here) only checks the route is not uselessly vague.
    t = spiked_gaussian(600)
    x = t.sample(np.random.default_rng(1), 800).reshape(4, 200, 600)
    r = gbs(t, x, seed=2)
    assert r.diagnostics["proposal"] == "diagonal+rank-2"  # the held-out draws find the rank
    assert "fewer than the 764 a dense covariance needs" in r.diagnostics["proposal_route"]
    assert abs(r.log_z - t.log_z) <= 4 * r.log_z_se
    assert r.log_z_se < 0.3
    # the two orientations' errors taken as fully correlated (see combine_orientations)
    assert r.log_z_se >= 0.5 * sum(r.diagnostics["half_swap_se"]) * (1 - 1e-12)


def test_correlated_orientations_average_their_ses():
    # independent: sqrt(0.1^2 + 0.3^2) / 2 = 0.158; fully correlated: (0.1 + 0.3) / 2 = 0.2;
    # either way at least half the two estimates' difference
    assert combine_orientations([1.0, 1.01], [0.1, 0.3])[1] == pytest.approx(0.1581139, 1e-6)
    assert combine_orientations([1.0, 1.01], [0.1, 0.3], correlated=True)[1] == pytest.approx(0.2)
    assert combine_orientations([1.0, 2.0], [0.1, 0.3], correlated=True)[1] == pytest.approx(0.5)


def test_structured_route_forced_at_small_dimension_agrees_with_the_truth():
    # d = 12 with plenty of draws, structured forced: same 4-se criterion (failure prob 6e-5)
    t = spiked_gaussian(12, seed=5)
    x = t.sample(np.random.default_rng(6), 2000).reshape(4, 500, 12)
    r = gbs(t, x, seed=7, proposal="structured")
    assert r.diagnostics["proposal"].startswith("diagonal")
    assert r.diagnostics["proposal_route"] == "diagonal plus low rank (asked for)"
    assert abs(r.log_z - t.log_z) <= 4 * r.log_z_se
    assert r.log_z_se < 0.1


def test_uneven_cut_fits_on_what_the_proposal_needs_and_bridges_on_the_rest():
    from stanlogz.estimators.common import MIN_BRIDGE_PER_CHAIN, uneven_cut

    assert uneven_cut(4, 1000, 250) is None  # halves of 2000: even
    assert uneven_cut(4, 126, 250) is None  # halves of 4 x 63 = 252: even
    assert uneven_cut(4, 125, 250) == 63  # halves of 4 x 62 = 248: the fit takes 63 a chain
    assert uneven_cut(4, 108, 250) == 63  # kronecker_gp's budget-stopped run: 63 fit, 45 bridge
    # fewer than MIN_BRIDGE_PER_CHAIN left per chain: even halves, which refuse
    assert uneven_cut(4, 63 + MIN_BRIDGE_PER_CHAIN, 250) == 63
    assert uneven_cut(4, 63 + MIN_BRIDGE_PER_CHAIN - 1, 250) is None


def test_draws_too_few_for_two_halves_answer_with_one_uneven_orientation():
    # posteriordb kronecker_gp (438 parameters): the time budget left 4 x 108 draws, halves of
    # 216 < 250, and evidence refused after 493 s. Exact draws of a 438-dimensional target:
    # the proposal fits on 4 x 63, the bridge runs on 4 x 45. Over 400 replicates
    # (benchmarks/evidence_uneven_split.py) rms z was 1.04 and 1.03 on two targets; |z| > 4.5
    # has probability 7e-6 for a normal z, and under 1e-4 for one with that rms.
    t = spiked_gaussian(438, seed=3)
    x = t.sample(np.random.default_rng(11), 432).reshape(4, 108, 438)
    r = gbs(t, x, seed=12)
    assert any("fit to the first 63 of each chain and the bridge runs on the other 45" in w
               for w in r.warnings), r.warnings
    assert r.diagnostics["n_p"] == 4 * 45 and r.n_draws == 432
    assert len(r.diagnostics["half_swap_log_z"]) == 1
    assert abs(r.log_z - t.log_z) <= 4.5 * r.log_z_se
    # fewer still (4 x 80: 17 left per chain after the 63): refused, naming the draws
    with pytest.raises(InputError, match="too few draws: each half has 160, need at least 250"):
        gbs(t, x[:, :80], seed=12)
