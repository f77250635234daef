"""The Jacobian adjustment that puts elpd of a program on a transformed outcome on the scale of
the original outcome, so that programs for ``y`` and for ``log y`` can be compared.

A program for z = g(y) gives log p(z_i | y₋ᵢ); the density of y_i is
p(y_i | y₋ᵢ) = p(g(y_i) | ...) |g'(y_i)|, so each pointwise elpd (and lppd) gains
log |g'(y_i)|, computed from the outcome on its original scale ``y``:

=========  ===========  ==============================
transform  z = g(y)     log |g'(y)|
=========  ===========  ==============================
log        log y        −log y
log1p      log(1 + y)   −log(1 + y)
sqrt       √y           −log 2 − ½ log y
logit      logit y      −log y − log(1 − y)
=========  ===========  ==============================

The adjustment is exact (no Monte Carlo error): p_loo / p_waic, the k̂ and the Monte Carlo se
do not change; the between-observation se is recomputed from the adjusted pointwise values.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._util.sum_se import sum_se
from ...errors import InputError, option

#: transform name -> (log |g'(y)|, the support of y it needs).
TRANSFORMS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "log": (lambda y: -np.log(y), "y > 0"),
    "log1p": (lambda y: -np.log1p(y), "y > -1"),
    "sqrt": (lambda y: -math.log(2.0) - 0.5 * np.log(y), "y > 0"),
    "logit": (lambda y: -np.log(y) - np.log1p(-y), "0 < y < 1"),
}

_SUPPORT = {"y > 0": lambda y: y > 0, "y > -1": lambda y: y > -1,
            "0 < y < 1": lambda y: (y > 0) & (y < 1)}


def log_jacobian(transform: str, y: Any) -> np.ndarray:
    """log |g'(y_i)| of each observation for the transform ``transform`` (see the table)."""
    if transform not in TRANSFORMS:
        raise InputError(f"jacobian transform must be one of {', '.join(TRANSFORMS)}, got "
                         f"{transform!r}")
    try:
        arr = np.asarray(y, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError("the outcome for the Jacobian must be numbers") from None
    fn, support = TRANSFORMS[transform]
    ok = _SUPPORT[support](arr)
    if not np.all(ok):
        i = int(np.argmin(ok))
        raise InputError(f"the {transform} transform needs {support}; observation {i + 1} is "
                         f"{arr[i]:g}")
    return fn(arr)


def jacobian_adjusted(result: Any, transform: str, y: Any) -> Any:
    """A LOO or WAIC result of a program for z = g(y), put on the scale of y.

    A program that models a transformed outcome z = g(y) (``log(y)``, ``sqrt(y)``, ...) has its
    elpd on the scale of z; adding log |g'(y_i)| to each pointwise value puts it on the scale
    of y, so it can be compared with a program that models y itself.

    Parameters
    ----------
    result : LooResult or WaicResult
        The result of the program for z (not subsampled).
    transform : {"log", "log1p", "sqrt", "logit"}
        g.
    y : array_like
        The outcome on its original scale, one value per observation.

    Returns
    -------
    LooResult or WaicResult
        A copy with ``elpd_i``, the fixed points and the total shifted and the se recomputed.

    Raises
    ------
    InputError
        An unknown transform, ``y`` outside its support, a count of ``y`` that is not the
        number of observations, or a subsampled LOO.

    See Also
    --------
    stanlogz.loo_compare : compare the adjusted result with the program for y.

    Examples
    --------
    >>> import numpy as np, stanlogz
    >>> y = np.array([1.0, 2.0, 4.0])
    >>> ll = np.random.default_rng(0).normal(-1.0, 0.1, size=(4, 100, 3))
    >>> r = stanlogz.loo(ll)
    >>> a = stanlogz.jacobian_adjusted(r, "log", y)
    >>> bool(np.isclose(a.elpd_loo, r.elpd_loo - np.log(y).sum()))
    True
    """
    adj = log_jacobian(transform, y)
    n = result.n_obs
    if adj.size != n:
        raise InputError(f"the outcome for the Jacobian has {adj.size} values for {n} "
                         "observations")
    if getattr(result, "sample_index", None) is not None:
        raise InputError("a subsampled LOO has pointwise values for the sampled observations "
                         "only; run without subsample to adjust it")
    elpd_i = result.elpd_i + adj
    se = sum_se(elpd_i)
    if hasattr(result, "elpd_loo"):
        fixed = [dataclasses.replace(f, elpd=f.elpd + adj[f.index],
                                     psis_elpd=f.psis_elpd + adj[f.index],
                                     ci=None if f.ci is None else
                                     (f.ci[0] + adj[f.index], f.ci[1] + adj[f.index]))
                 for f in result.fixed]
        return dataclasses.replace(result, elpd_loo=result.elpd_loo + float(adj.sum()), se=se,
                                   elpd_i=elpd_i, psis_elpd_i=result.psis_elpd_i + adj,
                                   lppd_i=result.lppd_i + adj, fixed=fixed,
                                   warnings=list(result.warnings))
    return dataclasses.replace(result, elpd_waic=result.elpd_waic + float(adj.sum()), se=se,
                               elpd_i=elpd_i, lppd_i=result.lppd_i + adj,
                               warnings=list(result.warnings))


def parse_jacobian(text: str) -> tuple[str, str]:
    """``"log:y"`` -> ``("log", "y")`` (the command line's jacobian option)."""
    transform, sep, var = text.partition(":")
    if not sep or not var.strip() or transform.strip() not in TRANSFORMS:
        raise InputError(f"{option('jacobian')} must be TRANSFORM:VAR with TRANSFORM one of "
                         f"{', '.join(TRANSFORMS)} and VAR the data variable holding the "
                         f"outcome on its original scale, got {text!r}")
    return transform.strip(), var.strip()


def outcome_from_data(data: Any, var: str) -> np.ndarray:
    """The data variable ``var`` (the outcome on its original scale) of a data dict or file."""
    from ...stan.inputs import read_data

    d = read_data(data)
    if not d:
        raise InputError(f"{option('jacobian')} needs {option('data')} with the outcome on its "
                         "original scale")
    if var not in d:
        raise InputError(f"{option('jacobian')}: no data variable named {var!r}")
    return np.asarray(d[var], dtype=float)
