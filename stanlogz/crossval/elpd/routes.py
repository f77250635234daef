"""Which pointwise quantity PSIS-LOO of a program uses: the ``log_lik`` generated quantity, the
density difference (factorized programs), or the conditional log p(y_i | y₋ᵢ, θ) obtained by
normalizing the program's density over y_i
(:mod:`~stanlogz.crossval.observations.conditional`, else by quadrature or a sum over the
support: :mod:`~stanlogz.crossval.observations.nonfactorized`) for programs with
per-observation or linked latents and for non-factorized likelihoods (Bürkner, Gabry & Vehtari
2021); a one-line refusal with the routes that work when none applies."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..._util import deadline
from ..._util.arrays import even_rows
from ..._util.progress import duration
from ...errors import (
    BackendUnsupported,
    BudgetSpent,
    DataError,
    InputError,
    Route,
    StanlogzError,
)
from ...stan.code import data_names
from ...stan.program import StanProgram
from ..observations.conditional import (
    AmbiguousResponse,
    ConditionalLogLik,
    NotGaussian,
    latent_coordinates,
)
from ..observations.conditional_source import ConditionalSourceBase
from ..observations.integrated import IntegratedSource
from ..observations.nonfactorized import NoConditional, NonFactorizedSource
from ..observations.observations import Observations, lfo_route
from ..observations.pointwise import PointwiseLogLik
from ..observations.solver import SOLVER_PROBE_RTOL
from ..observations.splitcheck import SplitError, check_split

#: Observations from which the conditional log-likelihood's quadrature (a full-density
#: evaluation per node, per observation and draw: cost growing as N²) takes too long to be the
#: route a refusal names first (1192 observations took ~30 h at 4000 draws).
MANY_OBSERVATIONS = 200

#: The random points :func:`refusal_before_draws` checks the density difference at: the
#: first ``PROBE_ROWS`` where the whole data's density is finite (a quarter of posteriordb
#: sir's were, its ODE's states negative at the others) ...
PROBE_ROWS = 4

def general_routes(obs: Observations) -> tuple[Route, ...]:
    """The refit routes of a program without a pointwise LOO: leave-future-out for time
    series (from 90% of the observations, a command that runs as named), K-fold over groups
    for blocks of exchangeable observations."""
    return (lfo_route(obs),
            Route("kfold", {"group": ...}, note="over blocks of exchangeable observations"))


#: The route besides :func:`block_routes` that needs no command: a per-observation log_lik.
BLOCK_LOG_LIK = ("a log_lik generated quantity with one entry per observation (the sum of its "
                 "values' terms)")


def block_routes(obs: Observations) -> tuple[Route, ...]:
    """The refit route for a program whose observed values have several entries per
    observation (a row each, e.g. one subject's sequence of trials): K-fold holds out whole
    observations (and :data:`BLOCK_LOG_LIK` gives PSIS-LOO over them)."""
    return (Route("kfold", {"obs": obs.size_name}, note="(each fold holds out whole "
                  "observations, every value of one together)"),)


class ConditionalSource(ConditionalSourceBase):
    """The pointwise interface of :class:`PointwiseLogLik` (``columns``, ``column``,
    ``chunks``, ``check``) over :class:`ConditionalLogLik`: log p(y_i | y₋ᵢ, θ) with the
    observation's latents integrated out where the density is Gaussian in them."""

    def __init__(self, model: StanProgram, data: Mapping[str, Any], obs: Observations,
                 response: str | None = None) -> None:
        self.model, self.data, self.obs = model, dict(data), obs
        self.cl = ConditionalLogLik(model, data, obs, response)
        self.checked = True

    def column(self, i: int, unc: np.ndarray) -> np.ndarray:
        """log p(y_i | y₋ᵢ, θ) at unconstrained draws ``unc``."""
        return self.cl.column(i, unc)


def pointwise_source(model: StanProgram, data: Mapping[str, Any], obs: Observations, log_lik: str,
                     rows: np.ndarray, check: bool = True) -> Any:
    """The pointwise log-likelihood for ``loo``: ``log_lik`` (``"auto"``, ``"log_lik"``,
    ``"difference"`` or ``"conditional"``), checked at the unconstrained draws ``rows``.
    ``"auto"`` takes the generated quantity, else the density difference when it is a valid
    pointwise log-likelihood, else the conditional one; a one-line :class:`InputError` with the
    routes that work when none applies. ``check=False`` (subsampling, large N) keeps the
    density difference unchecked here: the caller checks it on its own points."""
    if log_lik == "conditional":
        return _conditional(model, data, obs, rows, None)
    if log_lik == "integrated":  # one latent per observation integrated out (:mod:`.integrated`)
        src = IntegratedSource(model, data, obs)
        src.check(rows)
        return src
    pw = PointwiseLogLik(model, data, obs, log_lik)
    if log_lik == "auto" and pw.source == "log_lik":
        integ = _per_observation_latents(model, data, obs, rows)
        if integ is not None:
            return integ
    if pw.source != "difference" or log_lik == "difference" or not check:
        return pw
    try:
        pw.check(rows)
        return pw
    except BackendUnsupported:  # the backend, not the program: its route is the answer
        raise
    except StanlogzError as exc:  # per-observation latents, dependence, a refused instance
        return _conditional(model, data, obs, rows, exc)


def conditional_instead(pw: PointwiseLogLik, rows: np.ndarray, why: Exception) -> Any:
    """The conditional source in place of the density difference ``pw`` whose check failed
    with ``why`` (a subsampled LOO checks the difference on its own points, after the source
    was chosen), tried at ``rows``."""
    return _conditional(pw.model, pw.data, pw.obs, rows, why)


def _conditional(model: StanProgram, data: Mapping[str, Any], obs: Observations, rows: np.ndarray,
                 why: Exception | None) -> Any:
    """The conditional source (Gaussian closed form, else quadrature over y_i or a sum over
    its integer support; the integrated one first where the closed form fails and it applies),
    tried at ``rows`` before the full pass."""
    try:
        try:
            src = NonFactorizedSource(model, data, obs)
        except InputError as exc:  # e.g. no single response array (counts r out of trials n)
            integ = _integrated(model, data, obs, rows)  # needs none
            if integ is not None:
                return integ
            if isinstance(exc, AmbiguousResponse) and obs.n >= MANY_OBSERVATIONS:
                raise InputError(_many_observations(model, obs, exc),
                                 routes=Route("kfold")) from None
            raise
        probe = [0, obs.n - 1]
        t0 = time.perf_counter()
        try:
            if not all(src.gaussian(i, rows) for i in probe):
                integ = _integrated(model, data, obs, rows)
                if integ is not None:
                    return integ
            src.columns(probe, rows)
            src.trial = (time.perf_counter() - t0, len(probe), len(rows))
        except BudgetSpent:
            raise _probe_over_budget(src, obs, probe, len(rows),
                                     time.perf_counter() - t0) from None
    except (NotGaussian, NoConditional) as exc:
        reason = ("its density is not a sum of independent per-observation terms, and "
                  if why is not None else "")
        detail = str(exc).split(": ", 1)[-1]
        routes = block_routes(obs) if exc.several_values else general_routes(obs)
        text = ", ".join(map(str, routes)) + (f", or {BLOCK_LOG_LIK}" if exc.several_values
                                              else "")
        raise InputError(f"no valid pointwise LOO for {model.name}: {reason}{detail}; use "
                         f"{text}", routes=routes) from None
    return src


def _probe_over_budget(src: NonFactorizedSource, obs: Observations, probe: list[int], n_rows: int,
                       elapsed: float) -> deadline.OverBudget:
    """The refusal of a conditional source whose trial on the observations ``probe`` at
    ``n_rows`` draws outlasted the run's time budget after ``elapsed`` seconds. The pass does
    the same work for each observation (its closed-form check, then its quadrature) at the
    posterior draws, at least as costly per observation as at these few, so it takes at least
    ``N`` times the trial's time per observation tried (iohmm_reg, an HMM of 500 steps: six
    minutes inside y[1] at 3 draws, where the refusal used to name twice the budget)."""
    total = deadline.budget_seconds() or elapsed
    least = elapsed / len(probe) * obs.n
    routes = (*general_routes(obs),
              deadline.as_option(deadline.whole_budget(least, elapsed),
                                 "at least, for the whole run"))
    label = " and ".join(src.quad._label(i) for i in probe)
    return deadline.OverBudget(
        f"the time budget of {duration(total)} ran out while the conditional log-likelihood "
        f"was tried on {label} at {n_rows} draws ({duration(elapsed)}, unfinished): its pass "
        f"over the {obs.n} observations at the posterior draws would take at least "
        f"{duration(least)} here; run with " + ", or ".join(map(str, routes)), routes=routes)


KFOLD_NOTE = "(10 refits, each fold's held-out density exact)"


def _many_observations(model: StanProgram, obs: Observations, exc: AmbiguousResponse) -> str:
    """The refusal of a program whose observed values are not named, with too many
    observations for the conditional quadrature: the routes that answer in bounded time
    first."""
    fields = ", ".join(exc.fields)
    return (f"no valid pointwise LOO for {model.name}: its density is not a sum of independent "
            f"per-observation terms and no array is named as the observed values ({fields}); "
            f"use {Route('kfold', note=KFOLD_NOTE)}, or add a log_lik generated quantity with "
            "one entry per observation; "
            f"{Route(options={'obs_fields': [exc.example]})} would normalize the density over "
            f"each of the {obs.n} values by quadrature, a cost growing as N² (hours for a "
            "thousand observations)")


def refusal_before_draws(pw: PointwiseLogLik, log_lik: str, rows: np.ndarray
                         ) -> InputError | None:
    """The refusal :func:`pointwise_source` would give after sampling, found before it from
    the program's structure alone, or None.

    ``log_lik="auto"`` on a program without a ``log_lik`` takes the density difference when it
    factorizes, else the conditional route, which needs one observed array per observation.
    The difference's check is made at ``rows`` (random unconstrained points; those where the
    density or a term is not finite are dropped): a finite mismatch there is structural (the
    same at every draw), and so is a data instance the program refuses. When it fails and
    neither the conditional nor the integrated source can even be built from the data, no
    draw changes the outcome, so the one-line refusal (with its routes) comes before NUTS
    instead of after it. Anything else returns None: the choice
    is then made at the posterior draws as before. The sources are tried first: when one can
    be built the answer is None whatever the check says, and the check costs a pass over all
    the observations (57 s of 2pl_latent_reg_irt's 7,000 on the interpreter, then repeated at
    the draws).
    """
    model, data, obs = pw.model, pw.data, pw.obs  # pw: loo's early source of ``log_lik``
    if log_lik != "auto" or pw.source != "difference" or model.dim == 0:  # dim 0: no draws
        return None
    for source in (NonFactorizedSource, IntegratedSource):
        try:
            source(model, data, obs)
            return None  # it may apply at the draws
        except StanlogzError:
            pass
    try:
        rows = np.asarray(rows, dtype=float).reshape(-1, model.dim)
        rows = rows[np.isfinite(model.log_density_many(rows))][:PROBE_ROWS]
    except StanlogzError:  # the whole data's density fails: the sampler says why
        return None
    try:
        ll = pw.columns(range(obs.n), rows)
        keep = np.all(np.isfinite(ll), axis=1)
        if not keep.any():
            return None
        pw.check(rows[keep], ll[keep])
        return None  # it factorizes here: decided at the draws
    except InputError as exc:
        if type(exc) is not InputError:  # a budget, a backend: not the check's mismatch
            return None
        if pw.solver and pw.gap is not None and pw.gap[1] <= SOLVER_PROBE_RTOL:  # solver
            return None  # error at these points, perhaps: the draws decide (looser there)
        why = exc  # a finite mismatch: the density does not factorize
    except DataError as exc:  # an instance with fewer observations refused: the data's shape
        why = exc  # (posteriordb kronecker_gp --obs n1: x1 is declared with n1 entries)
    except StanlogzError:
        return None
    try:  # neither source can be built: the refusal the draws would end in, word for word
        _conditional(model, data, obs, rows, why)
    except InputError as refusal:
        return refusal
    return None


def _integrated(model: StanProgram, data: Mapping[str, Any], obs: Observations, rows: np.ndarray
                ) -> IntegratedSource | None:
    """The integrated log-likelihood (one independent latent per observation), when it
    applies at ``rows``; None otherwise."""
    try:
        src = IntegratedSource(model, data, obs)
        src.check(rows)
        src.columns([0, obs.n - 1], rows)
    except StanlogzError:
        return None
    return src


def mm_route() -> str:
    """What a refit refusal advises: moment matching needs no refit."""
    return f"moment-match them instead ({Route(options={'fix': 'mm'})})"


def refit_data_error(model: StanProgram, data: Mapping[str, Any], obs: Observations
                     ) -> str | None:
    """Why the program refuses its data without one observation (so no refit can run), in one
    line without Stan's text; None when it accepts them. Arrays of length n left out of the
    observation fields (``obs_fields=["n"]`` where N, x1, x2 are per-observation too) are
    named."""
    try:
        model.with_data(obs.without(data, [0]))
    except DataError:
        declared = set(data_names(getattr(model, "code", None)))  # a data file may hold more
        whole = [k for k, v in data.items() if k not in obs.fields and np.ndim(v) >= 1
                 and len(v) == obs.n and (not declared or k in declared)]
        why = (f"the per-observation arrays {', '.join(whole)} are not among the observation "
               f"fields ({', '.join(obs.fields)}), so they keep {obs.n} entries"
               if whole else f"its data with {obs.size_name} = {obs.n - 1} are refused")
        return f"the program refuses its data without an observation: {why}"
    except StanlogzError:
        return None
    return None


def _per_observation_latents(model: StanProgram, data: Mapping[str, Any], obs: Observations,
                             rows: np.ndarray) -> IntegratedSource | None:
    """The integrated source in place of a ``log_lik`` generated quantity when the program has
    exactly one latent coordinate per observation (found from the program: the parameters
    with one entry per observation) and the integrated route applies at ``rows``; None
    otherwise (the ``log_lik`` route is kept). A ``log_lik`` conditional on such a latent makes
    heavy-tailed PSIS ratios (each latent is informed by its observation alone); integrated,
    elpd_loo is the LOO of the marginal predictive p(y_i | y₋ᵢ) either way."""
    try:
        lat = latent_coordinates(model, data, obs)
    except StanlogzError:
        return None
    if obs.n < 2 or not all(c.size == 1 for c in lat):
        return None
    integ = _integrated(model, data, obs, rows)
    if integ is not None:
        integ.chosen = ("log-lik integrated: one latent per observation, integrated out "
                        "instead of the log_lik conditional on it "
                        f"({Route(options={'log_lik': 'log_lik'})} keeps the generated "
                        "quantity)")
    return integ


def exact_split_error(pw: Any, unc: np.ndarray, i: int) -> SplitError | None:
    """Why exact refits of ``pw``'s program (leaving out observation ``i``) would not give its
    held-out values (:func:`check_split` at three of the draws ``unc``), or None."""
    rows = even_rows(len(unc), 3)
    try:
        check_split(pw.model, pw.data, pw.obs, i, unc[rows])
    except SplitError as err:
        return err
    return None


def refit_refusal(err: SplitError | str, n_bad: int, threshold: float,
                  above: bool = True) -> str:
    """The warning of a refused refit (a split error, or :func:`refit_data_error`'s line with
    the moment-matching route) of ``n_bad`` observations, ``above`` the k̂ threshold or not
    (the self-check's and the k̂ band's refits are below it)."""
    tail = f"; {mm_route()}" if isinstance(err, str) else ""
    which = (f"{n_bad} observation(s) have Pareto k-hat above {threshold:.2f} and" if above
             else f"the {n_bad} observation(s)")
    return f"{which} cannot be refitted: {err}{tail}"
