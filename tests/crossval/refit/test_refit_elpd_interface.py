"""LFO results read through the common elpd interface; ``mcse`` is the Monte Carlo se's
canonical name on K-fold and LFO results, ``mcse`` its former name."""

from __future__ import annotations

import math

import numpy as np

from stanlogz.crossval.elpd.base import ElpdResult
from stanlogz.crossval.refit.kfold import KFoldResult
from stanlogz.crossval.refit.lfo import LfoResult


def test_lfo_result_is_an_elpd_result() -> None:
    r = LfoResult(model="m", method="psis", min_train=5, ahead=1, origins=np.arange(5, 9),
                  elpd_t=np.array([-1.0, -1.2, -0.9, -1.1]),
                  mcse_t=np.array([0.01, 0.02, 0.01, 0.02]),
                  khat_t=np.full(4, np.nan), refits=[5], k_threshold=0.7, n_samples=400,
                  n_gradient_evals=0)
    assert isinstance(r, ElpdResult) and r.kind == "lfo"
    assert r.elpd == r.elpd_lfo and math.isnan(r.p) and r.n_obs == 4
    assert r.mcse == r.mc_se == math.sqrt(np.sum(r.mcse_t**2))
    np.testing.assert_array_equal(r.pointwise_mcse(), r.mcse_t)
    assert r.to_dict()["mcse"] == r.mcse


def test_kfold_keeps_mc_se_as_the_former_name() -> None:
    assert KFoldResult.mc_se.canonical == "mcse" and "mcse" in vars(KFoldResult)
