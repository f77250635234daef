import numpy as np

from stanlogz.densities.gaussian import GaussianTarget
from stanlogz.mcmc import hmc


def test_hmc_preserves_standard_normal_moments():
    # 4000 HMC transitions on N(0, I_2); the chain is nearly independent (L*eps ~ pi/2), so the
    # MCSE of the mean is ~ 1/sqrt(4000) = 0.016 and of the variance ~ sqrt(2/4000) = 0.022:
    # tolerances of 0.08 are ~5 sigma.
    t = GaussianTarget(np.zeros(2))
    rng = np.random.default_rng(1)
    s = hmc.init(np.ones(2), t.log_density_gradient)
    xs = []
    for _ in range(4000):
        s, _ = hmc.step(rng, s, t.log_density_gradient, 0.3, 5)
        xs.append(s.position)
    xs = np.array(xs)
    assert np.all(np.abs(xs.mean(0)) < 0.08)
    assert np.all(np.abs(xs.var(0) - 1) < 0.1)
