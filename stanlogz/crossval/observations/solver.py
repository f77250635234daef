"""How close the density difference's terms must sum to the whole data's difference
(:meth:`~.pointwise.PointwiseLogLik.check`): to rounding, or, in a program that calls a
numerical solver, to the solver's error."""

from __future__ import annotations

import re

from ...stan.constants import blank_comments

#: The density difference's terms must sum to the whole data's difference within this share
#: of the densities' scale (rounding) ...
SUM_RTOL = 1e-9
#: ... or, in a program with a numerical solver (an ODE, a 1-D integral, an algebraic
#: solver), within this many nats at each draw checked: its terms carry the solver's error
#: at the output times each instance asks for. Lotka-Volterra (rk45 at relative 1e-5,
#: absolute 1e-3) sums within 3e-5 near its posterior. An error of the sum's size in
#: elpd_loo is a few hundredths of its Monte Carlo se at the least.
SOLVER_SUM_ABS = 0.01
#: Before sampling, at random points (where a solver's error is larger: Lotka-Volterra up to
#: 0.37 nats, 7e-6 of the scale), a solver program's mismatch reads as the program's own
#: only beyond this share of the scale (posteriordb sir, whose observations depend on their
#: neighbours: 0.09-0.9); below, the draws decide.
SOLVER_PROBE_RTOL = 1e-3
SOLVER_CALL = re.compile(r"\b(?:integrate_ode_(?:rk45|bdf|adams)|ode_(?:rk45|bdf|adams|ckrk)"
                         r"(?:_tol)?|ode_adjoint_tol_ctl|integrate_1d|algebra_solver(?:_newton)?"
                         r"|solve_(?:newton|powell)(?:_tol)?|dae(?:_tol)?)\s*\(")


def calls_solver(code: str | None) -> bool:
    """Whether the program text ``code`` calls a numerical solver (``SOLVER_CALL``, outside
    comments and strings)."""
    return bool(SOLVER_CALL.search(blank_comments(code or "")))
