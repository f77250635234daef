"""The ground floor of the elpd estimates (issue 34): the results' common interface
(:class:`~.base.ElpdResult`), PSIS of the pointwise values (:mod:`.psis`) and the choice of the
pointwise log-likelihood a program's elpd is computed from (:mod:`.routes`)."""
