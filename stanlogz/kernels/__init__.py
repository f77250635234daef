"""MCMC transitions and their couplings as small pure functions (BlackJAX style).

Every kernel has ``init(position, logdensity_grad_fn) -> state`` and
``step(rng, state, logdensity_grad_fn, ...) -> (state, info)`` with an explicit
``numpy.random.Generator``; the deterministic core takes its random numbers as arguments so that
couplings can share them.
"""
