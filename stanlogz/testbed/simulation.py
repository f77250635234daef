"""Data simulated from the model by a Stan *simulation program*, with the parameters that
generated it: an exact posterior draw in the main program's unconstrained space."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util.seeds import int_seed
from ..draws.core import group_flat_names
from ..errors import DataError, InputError
from ..stan.program import StanProgram


@dataclass
class Simulation:
    """One simulated data set with the parameters that produced it.

    ``data`` is everything the main program reads (simulation data merged with the simulated
    data); ``params`` the true parameter values (constrained); ``x_true`` the same point in the
    main program's unconstrained space — an exact posterior sample; ``model`` the main program
    with ``data``.
    """

    data: dict[str, Any]
    params: dict[str, Any]
    x_true: np.ndarray
    model: StanProgram
    seed: int


def split_variables(names: Sequence[str], values: np.ndarray) -> dict[str, Any]:
    """Stan flat output (``"mu"``, ``"beta.1"``, ``"L.2.1"``...) as variables, column-major."""
    values = np.asarray(values, dtype=float).ravel()
    if values.size != len(names):
        raise DataError(f"simulation produced {values.size} values for {len(names)} names")
    out: dict[str, Any] = {}
    for name, (shape, cols) in group_flat_names(list(names)).items():
        v = values[cols]
        out[name] = float(v[0]) if shape == () else v.reshape(shape, order="F")
    return out


def _stan_value(v: Any) -> Any:
    """A JSON-friendly Stan data value; integer-valued numbers become ints (a real accepts an
    int, but an int variable rejects 1.0)."""
    a = np.asarray(v, dtype=float)
    if np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2**31):
        a = a.astype(int)
    return a.item() if a.ndim == 0 else a.tolist()


def _param_bases(model: StanProgram) -> list[str]:
    return list(dict.fromkeys(n.split(".")[0] for n in model.param_names()))


def _binder(main: Any) -> Callable[[dict[str, Any]], Any]:
    """data -> main program with that data, for a StanModel or a ``.stan`` path."""
    if isinstance(main, str | os.PathLike):
        from ..stan.inputs import check_stan_file
        from ..stan.model import StanModel

        path = check_stan_file(main)
        built: list[Any] = []

        def bind(data: dict[str, Any]) -> Any:
            if not built:
                built.append(StanModel.from_file(path, data))
                return built[0]
            return built[0].with_data(data)

        return bind
    if not callable(getattr(main, "with_data", None)):
        raise InputError(f"main program must be a StanModel or a .stan path, not "
                         f"{type(main).__name__}")
    return main.with_data


def simulate(
    main: Any, sim: Any, *, seed: int | None = None, sim_data: dict[str, Any] | None = None
) -> Simulation:
    """Simulate data and true parameters with ``sim`` and attach the data to ``main``.

    ``sim`` is a :class:`stanlogz.stan.model.StanModel` of the simulation program built with its
    data,
    ``sim_data``, which is also passed on to the main program. ``main`` is the main program as a
    StanModel (any data) or a ``.stan`` path.
    """
    bind = _binder(main)
    seed = int_seed(None) if seed is None else int(seed)  # fresh entropy, recorded
    names = sim.param_names(include_gq=True)
    if not names:
        raise DataError("the simulation program generates no quantities")
    flat = sim.constrain(np.zeros(0), include_gq=True, seed=seed)
    sims = split_variables(names, flat)
    data = {k: _stan_value(v) for k, v in (sim_data or {}).items()}
    data.update({k: _stan_value(v) for k, v in sims.items()})
    # Stan ignores unknown data variables, so the program can be built once with everything
    # to learn its parameter names, then again with the data alone.
    bases = _param_bases(bind(data))
    missing = [b for b in bases if b not in sims]
    if missing:
        raise DataError(f"the simulation program does not generate parameter {missing[0]!r}")
    params = {b: sims[b] for b in bases}
    data = {k: v for k, v in data.items() if k not in params}
    model = bind(data)
    x_true = np.asarray(model.unconstrain_dict(params), dtype=float)
    if not np.isfinite(model.log_density(x_true)):
        raise DataError("the simulated parameters have zero density under the main program")
    return Simulation(data=data, params=params, x_true=x_true, model=model, seed=seed)


def prior_draws(main: Any, sim: Any, n: int, *, seed: int | None = None) -> np.ndarray:
    """``n`` exact prior draws in ``main``'s unconstrained space, from the simulation program.

    ``main`` is the main program with data (e.g. :attr:`Simulation.model`); each run of the
    simulation program's generated quantities gives one prior draw of the parameters.
    """
    if int(n) < 1:
        raise InputError(f"number of prior draws must be >= 1, got {n}")
    seed = int_seed(None) if seed is None else int(seed)
    names = sim.param_names(include_gq=True)
    flat = sim.constrain_many(np.zeros((int(n), 0)), include_gq=True, seed=seed)
    bases = _param_bases(main)
    out = np.empty((int(n), main.dim))
    for i, row in enumerate(flat):
        v = split_variables(names, row)
        out[i] = main.unconstrain_dict({b: v[b] for b in bases})
    return out
