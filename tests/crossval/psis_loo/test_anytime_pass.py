"""A pointwise pass the run's time budget ends part-way (issue 45): the observations done are
kept, visited in a seeded random order, and the rest estimated by the subsampling difference
estimator with its se. The clock is injected (as in tests/util/test_deadline.py), so every
decision is checked exactly; the source is a fixed log-likelihood matrix, so the full pass's
value is known exactly and the estimate's only error is the subsampling."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from stanlogz._util.deadline import OverBudget, time_budget
from stanlogz._util.gpd import KHAT_BAD
from stanlogz._util.seeds import Stream, stream_rng
from stanlogz.crossval.elpd.psis import LOGLIK_VAR_HEAVY, psis_loo
from stanlogz.crossval.observations import clock as pass_clock
from stanlogz.crossval.observations.clock import PassClock
from stanlogz.crossval.psis_loo.anytime import (
    CERTAIN_MAX,
    anytime_pass,
    budget_flags,
)
from stanlogz.crossval.psis_loo.screen import far_out
from stanlogz.crossval.psis_loo.subsample import final_estimates, subsample_estimates
from stanlogz.crossval.refit.cv_se import LEVEL_2SE
from stanlogz.draws import Draws
from stanlogz.errors import ThinForBudget
from tests.helpers import FakeClock

CHAINS, PER_CHAIN = 4, 250


def log_lik(n: int, seed: int = 0) -> np.ndarray:
    """(S, n) log p(y_i | mu_s) of a normal mean: y with a few outliers, mu_s posterior draws
    (sd 1/sqrt(n)), so the elpd_i vary as real ones do."""
    rng = np.random.default_rng(seed)
    y = rng.standard_t(4, size=n)
    mu = y.mean() + rng.normal(size=CHAINS * PER_CHAIN) / np.sqrt(n)
    return -0.5 * (y[None, :] - mu[:, None]) ** 2 - 0.5 * np.log(2 * np.pi)


class FakeSource:
    """A pointwise source over a fixed matrix whose clock is the fake one: each observation
    costs ``per_obs`` seconds at all the draws (in proportion at fewer), as the real
    sources' passes go (anytime, budget_checked, chunks with index)."""

    anytime = False
    budget_checked = True

    def __init__(self, ll: np.ndarray, fake: FakeClock, per_obs: float,
                 approx_fails: bool = False, fixed_cost: bool = False) -> None:
        self.ll, self.fake, self.per_obs = ll, fake, per_obs
        self.obs = SimpleNamespace(n=ll.shape[1])
        self.approx_fails = approx_fails
        self.fixed_cost = fixed_cost  # an observation costs per_obs at any number of draws

    def chunks(self, unc, constrained=None, names=None, index=None):
        rows = np.asarray(unc)[:, 0].astype(int)  # the draws carry their own row number
        index = np.arange(self.obs.n) if index is None else np.asarray(index, dtype=int)
        if self.approx_fails and rows.size == 100:  # the approximation's 100 draws
            raise OverBudget("the budget ran out during the approximation")
        clock = PassClock(None, index.size, "fake log-likelihood", clock=self.fake,
                          draws=(CHAINS, rows.size // CHAINS), anytime=self.anytime,
                          checked=self.budget_checked,
                          thin=getattr(self, "anytime_thin", False),
                          first=getattr(self, "anytime_first", 0))
        for idx in np.array_split(index, max(1, index.size // 50)):
            out = np.empty((rows.size, idx.size))
            for j, i in enumerate(idx):
                if clock.stopped:
                    break
                self.fake.t += self.per_obs * (1.0 if self.fixed_cost
                                               else rows.size / (CHAINS * PER_CHAIN))
                out[:, j] = self.ll[rows, i]
                clock.update(obs=(i,))
            self.last_clock = clock
            if clock.stopped:
                idx, out = clock.trim(idx, out)
                if idx.size:
                    yield idx, out
                return
            yield idx, out


def draws() -> Draws:
    rows = np.arange(CHAINS * PER_CHAIN, dtype=float).reshape(CHAINS, PER_CHAIN, 1)
    return Draws(unconstrained=rows)


def test_a_pass_that_fits_its_budget_gives_the_plain_values(clock):
    ll = log_lik(200)
    with time_budget(100):
        ps, index, est = anytime_pass(FakeSource(ll, clock, 0.01), draws(), 1.0, 0.5, 3)
    full = psis_loo(ll, 1.0, chains=CHAINS, keep_above=0.5)
    assert index is None and est is None
    # visited in random order, put back in the observations' order
    assert np.array_equal(ps.elpd_i, full.elpd_i) and np.array_equal(ps.khat, full.khat)
    assert ps.total_mcse() == pytest.approx(full.total_mcse(), rel=1e-12)


def test_a_pass_the_budget_ends_keeps_a_random_sample_and_estimates_the_rest(clock):
    # 200 observations at 0.01 s in a 1.5 s budget. The pass keeps, for the approximation of
    # those left (at least APPROX_SHARE = 0.2 of an observation's time), the PSIS of those
    # done (PSIS_VALUE_S per value) and ANYTIME_MARGIN_S: after d observations it has
    # 1.5 - 0.01 d left and needs 0.002 (200 - d) + 0.0002 d + 0.25, so it stops at d = 104
    # (0.85 <= 0.0082 d).
    ll = log_lik(200)
    with time_budget(1.5):
        ps, index, est = anytime_pass(FakeSource(ll, clock, 0.01), draws(), 1.0, 0.5, 3)
    order = stream_rng(3, Stream.LOO_SUBSAMPLE).permutation(200)
    assert np.array_equal(index, np.sort(order[:104]))  # the first 104 of the seeded order
    full = psis_loo(ll, 1.0, chains=CHAINS, keep_above=0.5)
    assert np.array_equal(ps.elpd_i, full.elpd_i[index])
    rows = np.unique(np.linspace(0, 999, 100).astype(int))
    approx = psis_loo(ll[rows], 1.0).elpd_i  # every observation on 100 thinned draws
    assert np.allclose(est["approx"], approx, rtol=0, atol=1e-12)
    want = subsample_estimates(approx, index, full.elpd_i[index], ps, [], None)
    assert est["elpd"] == pytest.approx(want["elpd"], rel=1e-12)
    assert est["subsampling_se"] == pytest.approx(want["subsampling_se"], rel=1e-12)
    assert est["budget_pass"] == (104, 200) and est["approximation"] == "psis100"
    # the approximation of the 96 left (at 100 of 1000 draws) took 0.096 s of the 0.192 s
    # kept for it
    assert clock.t - 1000.0 == pytest.approx(1.04 + 96 * 0.01 * 0.1, abs=1e-9)
    assert budget_flags(draws(), est) == {
        "sampling": None,
        "pass": {"observations_done": 104, "observations": 200, "approximation": "psis100",
                 "screened": []}}


def test_without_time_for_the_approximation_the_rest_is_the_mean_of_those_done(clock):
    ll = log_lik(200)
    with time_budget(1.5):
        ps, index, est = anytime_pass(FakeSource(ll, clock, 0.01, approx_fails=True), draws(),
                                      1.0, 0.5, 3)
    assert est["approximation"] == "none"
    e = ps.elpd_i
    # the expansion estimator: N times the mean; se of a mean without replacement
    assert est["elpd"] == pytest.approx(200 * e.mean(), rel=1e-12)
    plain = 200 * np.sqrt((1 - e.size / 200) * e.var(ddof=1) / e.size)
    assert est["subsampling_se"] == pytest.approx(plain * est["subsampling_factor"], rel=1e-9)


def test_observations_far_out_by_the_density_difference_are_done_first_and_certain(clock):
    """Without an approximation of the rest, elpd_loo was N times the mean of a random sample
    of those done: six outliers of 200 (elpd_i near -70 against -1.5) that a sample of 35
    missed left it tens of nats high with a se of a few. A source with a cheaper ``proxy``
    (the density difference) is screened before the pass: the values far out of the proxy's
    on 100 thinned draws (Tukey's far fences) are visited first and taken with certainty, the
    rest a random sample of the others (the stratified estimator). Here the proxy is the
    same matrix at no cost, so it flags the six (and the normal tail beyond the fences); the
    pass stops where it stopped without the screen (each observation costs the same 0.01 s:
    0.6 - 0.01 d <= 0.0002 d + 0.25, d = 35), the screened ones first."""
    rng = np.random.default_rng(4)
    y = rng.normal(size=200)  # normal noise: no value of the 194 is far out by Tukey's fences
    y_far = np.arange(6) * 30  # observations 0, 30, ..., 150
    y[y_far] = 12.0
    mu = rng.normal(size=CHAINS * PER_CHAIN) / np.sqrt(200)
    ll = -0.5 * (y[None, :] - mu[:, None]) ** 2 - 0.5 * np.log(2 * np.pi)
    src = FakeSource(ll, clock, 0.01)
    src.proxy = FakeSource(ll, clock, 0.0)
    lines: list[str] = []
    with time_budget(0.6):
        ps, index, est = anytime_pass(src, draws(), 1.0, 0.5, 3, progress=lines.append)
    screened = np.array(est["screened"])
    # the six, and the normal tail beyond Tukey's far fence (elpd_i = -y^2/2 + c is skewed:
    # |y| > 2.2 or so), nothing else: the proxy's PSIS values on the 100 thinned draws
    rows = np.unique(np.linspace(0, 999, 100).astype(int))
    far = far_out(psis_loo(ll[rows], 1.0).elpd_i)
    assert est["approximation"] == "none" and np.array_equal(screened, np.flatnonzero(far))
    assert np.isin(y_far, screened).all() and 6 < screened.size <= 20
    assert np.isin(screened, index).all() and index.size == 35
    certain = est["certain"]
    assert np.array_equal(index[certain], screened)
    full = psis_loo(ll, 1.0, chains=CHAINS, keep_above=0.5)
    e = full.elpd_i[index]
    want = e[certain].sum() + (200 - screened.size) * e[~certain].mean()  # stratified
    assert est["elpd"] == pytest.approx(want, rel=1e-12)
    # the random part: the 29 after the screened ones in the seeded order (the others)
    order = stream_rng(3, Stream.LOO_SUBSAMPLE).permutation(200)
    rest = order[~np.isin(order, screened)][:35 - screened.size]
    assert np.array_equal(np.sort(index[~certain]), np.sort(rest))
    assert f"with the {screened.size} whose density difference lies far from the rest" \
        in lines[-1]
    assert budget_flags(draws(), est)["pass"]["screened"] == (screened + 1).tolist()
    # its whole error is the random part's sampling error among the others (the screened
    # outliers add none, whichever sample the order gives); the benchmark measures how often
    # the error bar covers it (benchmarks/anytime_few_coverage.py --screen)
    others = np.setdiff1d(np.arange(200), screened)
    err = (200 - screened.size) * (e[~certain].mean() - full.elpd_i[others].mean())
    assert est["elpd"] - full.elpd_i.sum() == pytest.approx(err, abs=1e-9)


def test_a_screen_whose_proxy_fails_leaves_the_plain_random_sample(clock):
    # the density difference refused (or out of time) before the pass: nothing is screened,
    # the seeded order is the plain one and the estimate N times the mean of those done
    ll = log_lik(200)
    src = FakeSource(ll, clock, 0.01)
    src.proxy = FakeSource(ll, clock, 0.0, approx_fails=True)  # fails on its 100 draws
    with time_budget(0.6):
        ps, index, est = anytime_pass(src, draws(), 1.0, 0.5, 3)
    order = stream_rng(3, Stream.LOO_SUBSAMPLE).permutation(200)
    assert est["screened"] == [] and est["certain"] is None
    assert np.array_equal(index, np.sort(order[:35]))
    assert est["elpd"] == pytest.approx(200 * ps.elpd_i.mean(), rel=1e-12)


def test_a_screen_priced_beyond_a_tenth_of_the_budget_left_is_not_run(clock, monkeypatch):
    # the density difference of 5,000 compiled data instances could take minutes: priced
    # (pass_reserve) at 0.2 s fixed + 0.001 s a draw on 100 draws, 0.3 s against the tenth of
    # the 0.6 s left, it is not run, and the pass is the plain random sample
    from stanlogz.crossval.psis_loo import anytime as anytime_mod

    monkeypatch.setattr(anytime_mod, "pass_reserve", lambda pw, n: (0.2, 0.001))
    ll = log_lik(200)
    src = FakeSource(ll, clock, 0.01)
    src.proxy = FakeSource(ll, clock, 0.0)
    with time_budget(0.6):
        ps, index, est = anytime_pass(src, draws(), 1.0, 0.5, 3)
    order = stream_rng(3, Stream.LOO_SUBSAMPLE).permutation(200)
    assert est["screened"] == [] and np.array_equal(index, np.sort(order[:35]))
    monkeypatch.setattr(anytime_mod, "pass_reserve", lambda pw, n: (0.02, 0.0001))  # 0.03 s
    with time_budget(0.6):
        ps, index, est = anytime_pass(src, draws(), 1.0, 0.5, 3)
    assert est["screened"] != []


def test_a_pass_priced_well_within_the_budget_is_not_screened(clock):
    # a conditional pass priced (expected_seconds) within a third of the budget left
    # completes: the screen before it would only cost time, and is not run. Here the price
    # is 0.15 s of 0.6 (within a third): no screen, every observation done; priced at 0.5 s
    # (beyond a third) on the same source, the screen runs and the budget ends the pass
    ll = log_lik(200)
    calls: list[int] = []

    class Counted(FakeSource):
        def chunks(self, unc, *args, **kwargs):
            calls.append(len(unc))
            yield from super().chunks(unc, *args, **kwargs)

    src = FakeSource(ll, clock, 0.0005)  # 0.1 s for all 200: the pass completes
    src.proxy = Counted(ll, clock, 0.0)
    src.expected_seconds = lambda n_draws, n_obs: 0.15 * n_draws / (CHAINS * PER_CHAIN)
    with time_budget(0.6):
        ps, index, est = anytime_pass(src, draws(), 1.0, 0.5, 3)
    assert index is None and est is None and calls == []
    src.expected_seconds = lambda n_draws, n_obs: 0.5
    src.per_obs = 0.01
    with time_budget(0.6):
        ps, index, est = anytime_pass(src, draws(), 1.0, 0.5, 3)
    assert calls == [100] and index is not None and index.size < 200


def test_the_widened_se_of_an_estimate_from_few_reaches_the_result(clock):
    # loo recomputes the estimate after its fix-ups (final_estimates); it called
    # subsample_estimates afresh, which dropped the t widening of an estimate without an
    # approximation of the rest (widen_few): the result's subsampling se was the narrower
    # one the benchmark never measured. With nothing fixed, the recomputed estimate is the
    # pass's own, widening included (t with 34 df over the normal at 2 se: 1.03)
    ll = log_lik(200)
    with time_budget(0.6):
        ps, index, est = anytime_pass(FakeSource(ll, clock, 0.01), draws(), 1.0, 0.5, 3)
    assert est["approximation"] == "none" and index.size == 35
    again = final_estimates(est, index, ps.elpd_i, ps, [])
    assert again["elpd"] == pytest.approx(est["elpd"], rel=1e-12)
    assert again["subsampling_se"] == pytest.approx(est["subsampling_se"], rel=1e-12)
    plain = subsample_estimates(np.zeros(200), index, ps.elpd_i, ps, [])
    assert again["subsampling_se"] / plain["subsampling_se"] == pytest.approx(
        stats.t.ppf(0.5 + LEVEL_2SE / 2, 34) / 2.0, rel=1e-9)


def test_the_screen_leaves_a_random_part_and_reads_no_spread_as_none():
    from stanlogz.crossval.psis_loo.screen import screened

    # 30 observations, 12 of them far out: at most (30 - 20) // 2 = 5 are taken, so that a
    # random part of 20 can still stop the pass early
    rng = np.random.default_rng(2)
    y = rng.normal(size=30)
    y[:12] = 15.0 + np.arange(12)
    mu = rng.normal(size=CHAINS * PER_CHAIN) / np.sqrt(30)
    ll = -0.5 * (y[None, :] - mu[:, None]) ** 2
    pw = SimpleNamespace(obs=SimpleNamespace(n=30),
                         proxy=FakeSource(ll, FakeClock(), 0.0))
    picked = screened(pw, draws(), 1.0)
    assert picked.size == 5 and set(picked.tolist()) <= set(range(12))  # five far ones
    # values with no spread between their quartiles: Tukey's fences measure nothing
    assert not far_out(np.r_[np.zeros(40), 1e-3, -5.0]).any()


def test_where_the_approximation_cannot_fit_the_pass_goes_on_without_it(clock):
    # 200 observations at 0.01 s in 0.6 s: once ANYTIME_MIN = 20 are done, 0.4 s are left,
    # less than the approximation of the 180 left (0.36 s) with PSIS and the margin
    # (0.254 s); so the pass goes on to the margin alone, 0.6 - 0.01 d <= 0.0002 d + 0.25:
    # d = 35, and the rest is N times the mean of those done
    ll = log_lik(200)
    with time_budget(0.6):
        ps, index, est = anytime_pass(FakeSource(ll, clock, 0.01), draws(), 1.0, 0.5, 3)
    assert index.size == 35 and est["approximation"] == "none"
    assert est["elpd"] == pytest.approx(200 * ps.elpd_i.mean(), rel=1e-12)
    assert clock.t - 1000.0 == pytest.approx(0.35)  # nothing evaluated after the stop


def test_the_budget_spent_before_enough_observations_is_refused(clock):
    pc = PassClock(None, 1000, "fake log-likelihood", clock=clock, draws=(4, 250),
                   anytime=True)
    with time_budget(1.0):
        for _ in range(pass_clock.ANYTIME_MIN - 2):
            clock.t += 0.01
            pc.update(obs=(0,))
        assert not pc.stopped
        clock.t += 2.0  # one observation takes all that was left, and more
        with pytest.raises(OverBudget, match=r"fake log-likelihood of 1000 observations would "
                                             r"take about .* run with"):
            pc.update(obs=(1,))


def test_a_clock_that_checks_no_budget_neither_stops_nor_refuses(clock):
    pc = PassClock(None, 100, "fake log-likelihood", clock=clock, anytime=True, checked=False)
    with time_budget(1.0):
        for i in range(100):
            clock.t += 1.0
            pc.update(obs=(i,))
    assert not pc.stopped and pc.done == 100


@pytest.mark.slow
def test_the_stopped_pass_covers_the_full_value(clock):
    # 120 budgets ending the pass of 200 observations at 0.01 s after 20 to 152 of them (each
    # seed its own order; as the stops above: 0.6-0.81 s leave no time for the approximation,
    # d = (B - 0.25) / 0.0102 = 34-55, and 0.81-1.9 s stop at d = (B - 0.65) / 0.0082): |estimate
    # - full pass| <= 2 subsampling se. The estimator is the calibrated difference estimator
    # (coverage 95% by design); over 120 runs the band 0.85-1 fails with probability 8.5e-6
    # at a true coverage of 0.95 (binomial: P(hits <= 101 of 120)). The size is not what is
    # tested: 400 observations and budgets to 3.6 s (stops at 20-311) took twice the time and
    # covered as often (0.95 and 0.947 over 120 and 300 other seeds, against 0.942 and 0.974
    # at 200).
    ll = log_lik(200, seed=5)
    full = psis_loo(ll, 1.0, chains=CHAINS).elpd_i.sum()
    rng = np.random.default_rng(11)
    hits, errors = [], []
    for seed in range(120):
        clock.t = 1000.0
        budget = float(rng.uniform(0.6, 1.9))
        with time_budget(budget):
            _, index, est = anytime_pass(FakeSource(ll, clock, 0.01), draws(), 1.0, 0.5,
                                         seed)
        assert index is not None and 20 <= index.size < 200
        errors.append(est["elpd"] - full)
        hits.append(abs(est["elpd"] - full) <= 2 * est["subsampling_se"])
    assert 0.85 <= np.mean(hits) <= 1.0
    # and no bias beyond 4 se of the mean error (two-sided normal: 6.3e-5 when unbiased)
    assert abs(np.mean(errors)) <= 4 * np.std(errors) / np.sqrt(len(errors))


def stop_then_thin(src: FakeSource, budget_s: float) -> tuple[ThinForBudget, Draws, tuple]:
    """Under a budget of ``budget_s``: the pass of ``src`` on all the draws stops to run on
    fewer (ThinForBudget, checked to be raised after its third observation, as the clock
    decides), then runs on the 400 it names: ``(the signal, those draws, the pass's
    result)``."""
    src.anytime_thin = True
    with time_budget(budget_s):
        with pytest.raises(ThinForBudget) as info:
            anytime_pass(src, draws(), 1.0, 0.5, 3)
        assert src.last_clock.done == 3 and info.value.draws == 400
        src.anytime_thin = False
        thinned = draws().thinned(100)
        return info.value, thinned, anytime_pass(src, thinned, 1.0, 0.5, 3)


def test_a_pass_that_fits_on_fewer_draws_stops_to_run_on_them(clock):
    # 200 observations at 0.01 s on the 1000 draws in 1.5 s: after 3 (0.03 s) the other 197
    # need 1.97 s, beyond THIN_SHARE (0.7) of the 1.47 s left (1.03 s); on 400 draws every
    # observation takes 0.004 s (0.8 s in all) and fits, so the pass stops to be run on them
    # (2000 and 1000 are not fewer than the draws). Run there, it does every observation:
    # the plain PSIS values of the 400 draws, no subsample.
    ll = log_lik(200)
    thin, thinned, (ps, index, est) = stop_then_thin(FakeSource(ll, clock, 0.01), 1.5)
    assert thin.draws == 400 and thin.every and clock.t - 1000.0 == pytest.approx(0.004 * 200
                                                                                   + 0.03)
    assert index is None and est is None
    rows = thinned.unconstrained[:, :, 0].ravel().astype(int)
    assert np.array_equal(ps.elpd_i, psis_loo(ll[rows], 1.0, chains=CHAINS).elpd_i)
    # where even 400 draws do not fit (0.02 s an observation: 1.6 s), the subsample as before
    src = FakeSource(ll, clock, 0.02)
    src.anytime_thin = True
    with time_budget(1.5):
        ps, index, est = anytime_pass(src, draws(), 1.0, 0.5, 3)
    assert index is not None and est["budget_pass"][0] < 200


def test_a_pass_too_slow_for_an_estimate_runs_on_fewer_draws_for_one(clock):
    # 200 observations at 0.2 s on the 1000 draws in a 3 s budget: after 3 (0.6 s) the 2.4 s
    # left hold 12 at most, fewer than the ANYTIME_MIN (20) an estimate of the rest needs, so
    # the old pass ran to the budget and was refused. No thinning fits every observation (on
    # 400 draws 200 x 0.08 s = 16 s), but on 400 the 20 take 1.6 s, within THIN_SHARE (0.7)
    # of the 2.4 s left: the pass stops to run on 400 draws, for some observations only.
    from stanlogz.crossval.psis_loo.loo import thin_for_pass

    ll = log_lik(200)
    # on 400 draws (0.08 s each) it does 20 and more, then stops: no time is left to
    # approximate the other 180 (0.02 s each), so the rest is estimated from those done
    thin, thinned, (ps, index, est) = stop_then_thin(FakeSource(ll, clock, 0.2), 3.0)
    assert (thin.draws, thin.every) == (400, False)
    _, note = thin_for_pass(draws(), 400, budget=True, every=False)
    assert "on 400 enough observations for an estimate of the rest do" in note
    assert index is not None and 20 <= index.size < 200 and est["approximation"] == "none"
    rows = thinned.unconstrained[:, :, 0].ravel().astype(int)
    assert np.array_equal(ps.elpd_i, psis_loo(ll[rows][:, index], 1.0, chains=CHAINS).elpd_i)
    # N times the mean of m: the subsampling se widened by Student's t (m - 1 df) over the
    # normal at ±2 (its coverage: benchmarks/anytime_few_coverage.py)
    from scipy import stats

    plain = subsample_estimates(np.zeros(200), index, ps.elpd_i, ps, [])["subsampling_se"]
    t = stats.t.ppf(0.5 + (2 * stats.norm.cdf(2.0) - 1) / 2, index.size - 1) / 2
    assert est["subsampling_se"] == pytest.approx(plain * t, rel=1e-12) and t > 1.04


def test_the_budget_spent_inside_an_observation_keeps_those_done_in_its_block(clock):
    # A quadrature source checks the run's budget at every node, so the budget can end inside
    # an observation (BudgetSpent). Its block held every observation done so far (one block:
    # 1000 draws x 50 columns is far below CHUNK_BYTES); they were dropped with it, and loo
    # was refused "after 0 of 50 observations" with 25 done (the hidden Markov model of the
    # bounded-time issue, 100 steps on the interpreter). Each observation here costs 1 s of
    # the injected clock and checks the budget as the quadrature does: in a 25.5 s budget
    # the 26th finds it spent, and the 25 done are kept.
    from stanlogz._util import deadline
    from stanlogz.crossval.observations.conditional_source import ClockedColumns

    ll = log_lik(50)

    class Quadrature(ClockedColumns):
        model, obs = SimpleNamespace(dim=1), SimpleNamespace(n=50)
        draw_shape = (CHAINS, PER_CHAIN)

        def column(self, i, unc):
            clock.t += 1.0
            deadline.check_spent("the fake quadrature")
            return ll[np.asarray(unc)[:, 0].astype(int), i]

    with time_budget(25.5):
        ps, index, est = anytime_pass(Quadrature(), draws(), 1.0, 0.5, 3)
    order = stream_rng(3, Stream.LOO_SUBSAMPLE).permutation(50)
    assert np.array_equal(index, np.sort(order[:25]))
    assert np.array_equal(ps.elpd_i, psis_loo(ll[:, index], 1.0, chains=CHAINS).elpd_i)
    assert est["budget_pass"] == (25, 50)


def test_an_approximation_slower_than_the_time_kept_ends_without_it(clock):
    # As in the test above, the pass stops after 104 of 200 in 1.5 s, keeping 0.002 s for
    # each of the 96 left (a fifth of an observation's time, for 100 of the 1000 draws). Here
    # an observation costs 0.01 s at any number of draws (AR(5)'s closed form on the
    # interpreter: its instances, not its draws, cost), so the approximation needs 0.96 s
    # where 0.19 s were kept. Its clock did not check the budget, and it ran 0.5 s past it
    # (on AR(5), past the backstop's grace: the run was refused after 276 s of a 255 s
    # budget). Now it is judged after three observations and ended: the rest is N times the
    # mean of those done, within the budget.
    ll = log_lik(200)
    with time_budget(1.5):
        ps, index, est = anytime_pass(FakeSource(ll, clock, 0.01, fixed_cost=True), draws(),
                                      1.0, 0.5, 3)
    assert index.size == 104 and est["approximation"] == "none"
    assert clock.t - 1000.0 <= 1.5


def test_a_difference_source_the_data_refuse_prices_no_pass(clock):
    # corpus soil_incubation with --obs-fields eCO2mean: an instance of 3 observations keeps
    # ts at 25 entries, which the program refuses. Pricing the pass for the budget must not
    # raise (loo then takes the conditional route, which answered in about a minute).
    from stanlogz.crossval.psis_loo.anytime import pass_reserve
    from stanlogz.errors import DataError

    class Refusing:
        source, _batch_failed = "difference", False
        obs = SimpleNamespace(n=25)
        model = SimpleNamespace(dim=2, instance_densities=lambda *a: None)

        def columns(self, index, unc):
            raise DataError("model rejects data with 3 observation(s)")

    with time_budget(555):
        assert pass_reserve(Refusing()) == (None, 0.0)


def test_a_pass_priced_beyond_the_budget_thins_before_it_starts(clock):
    # a quadrature pass priced before it starts (corpus iohmm_reg: one observation outlasted
    # the budget): 0.02 s a draw is 80 s on 4000 draws, beyond THIN_SHARE (0.7) of 100 s; on
    # 2000 draws 40 s fits, so the pass stops before its first observation with thin_to 2000
    def priced(per_draw: float) -> PassClock:
        return PassClock(None, 50, "conditional log-likelihood", clock=clock, draws=(4, 1000),
                         anytime=True, thin=True)

    with time_budget(100):
        pc = priced(0.02)
        assert pc.thin_before(lambda d: 0.02 * d) and pc.thin_to == 2000 and pc.stopped
        pc = priced(0.2)  # 800 s: 400 draws take 80 s, and a fifth of the whole (160 s),
        # so no thinning fits every observation; 20 of the 50 (ANYTIME_MIN, for an estimate
        # of the rest) take 320 s on every draw, 64 s on 400 (the fifth's share): those
        assert pc.thin_before(lambda d: 0.2 * d) and pc.thin_to == 400
        assert not pc.thin_every
        pc = priced(0.5)  # 2000 s: even the 20 take 160 s on 400 draws, beyond the 100 s
        # left but within the price's margin (EARLY_MARGIN, 3x): on every draw they would
        # take 800 s, a certain refusal, so the pass runs on 400 and its rate decides there
        assert pc.thin_before(lambda d: 0.5 * d) and pc.thin_to == 400
        pc = priced(2.0)  # 8000 s: the 20 take 640 s on 400 draws, beyond 3x the 100 s
        # left: refused before the pass, not after it has spent the budget
        with pytest.raises(OverBudget, match=r"would take about 2\.2 h here \(by its cost "
                                             r"estimate\)"):
            pc.thin_before(lambda d: 2.0 * d)
        pc = priced(0.01)  # 40 s on every draw: fits, nothing to thin
        assert not pc.thin_before(lambda d: 0.01 * d) and not pc.stopped
        assert not priced(0.02).thin_before(lambda d: None)  # no price: the pass decides
    # fewer observations than an estimate of the rest needs (stan_models/tests/
    # latent_poisson_lower1 under 6 s: 12, priced at 6 s on 4000 draws, 1.5 s left): on 400
    # draws the pass takes a fifth of the whole (1.2 s), beyond THIN_SHARE of what is left
    # (1.05 s) but within all of it; every draw would certainly be refused, so 400 is taken
    few = PassClock(None, 12, "integrated log-likelihood", clock=clock, draws=(4, 1000),
                    anytime=True, thin=True)
    with time_budget(1.5):
        assert few.thin_before(lambda d: 6.0 * d / 4000) and few.thin_to == 400
    few = PassClock(None, 12, "integrated log-likelihood", clock=clock, draws=(4, 1000),
                    anytime=True, thin=True)
    with time_budget(0.3):  # 1.2 s on 400 draws is beyond 3x the 0.3 s left: refused now
        with pytest.raises(OverBudget, match="by its cost estimate"):
            few.thin_before(lambda d: 6.0 * d / 4000)
    few = PassClock(None, 12, "integrated log-likelihood", clock=clock, draws=(4, 1000),
                    anytime=True, thin=True)
    with time_budget(1.1):  # 1.2 s on 400 draws is beyond all of 1.1 s but within the
        # price's margin, where every draw (6 s) is a certain refusal: 400 is tried
        assert few.thin_before(lambda d: 6.0 * d / 4000) and few.thin_to == 400


def test_an_observation_left_whose_approximation_is_poor_is_done_with_certainty(clock):
    # As above (stops after 104 of the seeded order), with one observation left out by the
    # order an outlier: y = 40 against t(4) noise, whose log-likelihood varies over the
    # approximation's 100 draws far beyond LOGLIK_VAR_HEAVY (its ratios are heavy whatever
    # k-hat reads there). Left to the random part, its approximation error (which the sample
    # of differences cannot see) would go into the total unseen; it is computed after the
    # approximation (0.01 s) and taken with certainty, with every other poorly approximated
    # one, and the rest is the difference estimator of the others (loo(subsample=m)'s,
    # certain stratum included).
    order = stream_rng(3, Stream.LOO_SUBSAMPLE).permutation(200)
    far = int(order[150])
    rng = np.random.default_rng(0)
    y = rng.standard_t(4, size=200)
    y[far] = 40.0
    mu = y.mean() + rng.normal(size=CHAINS * PER_CHAIN) / np.sqrt(200)
    ll = -0.5 * (y[None, :] - mu[:, None]) ** 2 - 0.5 * np.log(2 * np.pi)
    rows = np.unique(np.linspace(0, 999, 100).astype(int))
    approx = psis_loo(ll[rows], 1.0)
    assert approx.var_i[far] > LOGLIK_VAR_HEAVY  # the premise: a poor approximation
    with time_budget(1.5):
        ps, index, est = anytime_pass(FakeSource(ll, clock, 0.01), draws(), 1.0, 0.5, 3)
    certain_obs = np.nonzero((approx.khat > KHAT_BAD) | (approx.var_i > LOGLIK_VAR_HEAVY))[0]
    assert 1 <= certain_obs.size <= CERTAIN_MAX
    assert far in index and set(certain_obs) <= set(index)
    assert set(index) == set(order[:104]) | set(certain_obs)
    full = psis_loo(ll, 1.0, chains=CHAINS, keep_above=0.5)
    assert np.array_equal(ps.elpd_i, full.elpd_i[index])
    certain = np.isin(index, certain_obs)
    assert np.array_equal(est["certain"], certain)
    want = subsample_estimates(approx.elpd_i, index, full.elpd_i[index], ps, [], certain)
    assert est["elpd"] == pytest.approx(want["elpd"], rel=1e-12)
    assert est["subsampling_se"] == pytest.approx(want["subsampling_se"], rel=1e-12)
    # the outlier's value is in the total as it is (expansion over the others only)
    assert want["expansion"] == pytest.approx((200 - certain.sum()) / (~certain).sum())


def test_a_batched_pass_is_priced_on_a_sample_of_observations_scaled_to_all(monkeypatch):
    # posteriordb 2pl_latent_reg_irt (N = 7000, interpreted): pricing every observation's
    # instance at 8 and 136 points was itself an O(N²) pass, 286 s before sampling, and counting
    # the whole build again per block of the pass priced it at ~10 min for ~3. A source whose
    # batched call costs 5 ms, plus 1 ms per row built and 0.01 ms per row and point (a fake
    # clock), is priced on PRICE_OBSERVATIONS rows: each row's build once, each call's fixed
    # cost once per MAX_ROWS rows and per block of values, each draw every row. The per-call
    # path is priced too, and the cheaper of the two at the run's draws kept (the pass itself
    # keeps the faster at 256 draws or more).
    import math

    from stanlogz.crossval.psis_loo import anytime
    from stanlogz.crossval.psis_loo.anytime import (
        BATCH_MARGIN,
        INSTANCES_PER_OBSERVATION,
        PRICE_OBSERVATIONS,
        PSIS_VALUE_S,
        pass_reserve,
    )
    from stanlogz.stan.interpreted_pointwise import MAX_ROWS

    now = [0.0]
    monkeypatch.setattr(anytime.time, "perf_counter", lambda: now[0])
    n, c0, r, e = 7000, 5e-3, 1e-3, 1e-5
    seen: list[tuple[bool, int]] = []

    class Batched:
        source, _batch_failed = "difference", False
        obs = SimpleNamespace(n=n)
        model = SimpleNamespace(dim=3, instance_densities=lambda *a: None)
        call = 0.05  # the per-call path: seconds an instance, and e a point

        def columns(self, index, unc):  # batched
            seen.append((False, len(index)))
            now[0] += c0 + len(index) * (r + e * unc.shape[0])
            return np.zeros((unc.shape[0], len(index)))

        def per_call_columns(self, index, unc):
            seen.append((True, len(index)))
            now[0] += len(index) * (self.call + e * unc.shape[0])
            return np.zeros((unc.shape[0], len(index)))

    with time_budget(555):
        seconds, per_draw = pass_reserve(Batched())
    batched_calls = [k for failed, k in seen if not failed]
    assert batched_calls == [1, 1, PRICE_OBSERVATIONS, PRICE_OBSERVATIONS]
    fixed = c0 + r + 8 * e  # the timed call of one row at 8 points
    assert seconds == pytest.approx(BATCH_MARGIN * (n * r + math.ceil(n / MAX_ROWS) * fixed),
                                    rel=1e-9)
    calls_per_draw = 8 * n / anytime.CHUNK_BYTES
    assert per_draw == pytest.approx(BATCH_MARGIN * (n * e + fixed * calls_per_draw)
                                     + n * PSIS_VALUE_S, rel=1e-9)
    # per call at 2 ms an instance: the cheaper at 4000 draws, so its price is kept
    source = Batched()
    source.call = 2e-3
    with time_budget(555):
        seconds, per_draw = pass_reserve(source)
    assert seconds == pytest.approx(INSTANCES_PER_OBSERVATION * n * (2e-3 + e), rel=1e-9)
    assert per_draw == pytest.approx(n * (e + PSIS_VALUE_S), rel=1e-9)
