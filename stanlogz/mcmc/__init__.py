"""Markov chains: HMC and RWMH transitions, their couplings, unbiased MCMC, paths and annealing.

Every kernel (``hmc``, ``rwmh``) has ``init(position, logdensity_grad_fn) -> state`` and
``step(rng, state, logdensity_grad_fn, ...) -> (state, info)`` with an explicit
``numpy.random.Generator``; the deterministic core takes its random numbers as arguments so that
``couplings`` can share them. ``unbiased`` runs coupled chains to their meeting time; ``paths``,
``annealing`` and ``schedules`` move between a base and a target.
"""
