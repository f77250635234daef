"""The interpreted density backend: a Stan program run by stanli's interpreter, no C++ build.

:class:`InterpretedModel` is a :class:`~stanlogz.stan.model.StanModel` whose library is the
interpreter's one runtime (BridgeStan's C ABI) and whose program travels in the data. What the
interpreter offers: ``propto=True, jacobian=True`` densities and gradients, transforms, and
Stan's NUTS (its own sampler, :mod:`stanlogz.stan.interpreted_nuts`). What stanlogz adds:
``propto=False`` from the program rewritten to keep every constant
(:func:`~stanlogz.stan.constants.keep_constants`, checked against the compiled build where
the cache holds one: :mod:`stanlogz.stan.backend`) and the Hessian by central differences of
the gradient; its NUTS under a time budget stops past warmup or refuses in warmup as the
compiled one does. Everything else (``jacobian=False``) is refused in one line naming it,
or, under ``backend="auto"``, served by the compiled program, built on first need, with one
note.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._util.seeds import int_seed
from ..errors import BackendUnsupported, DataError, InputError, Route, StanCompileError
from ..toolchain.interpreter import (
    BUILDING,
    STANLI_VERSION,
    program_mir,
    refusing_fallback,
    runtime_library,
)
from .ffi import _load_library
from .inputs import DataLike, StanJson, data_to_json
from .messages import _data_error_message
from .model import StanModel
from .settings import NutsArgs

_P = ctypes.c_void_p

_EXTRA = {
    "bs_log_density": (ctypes.c_int, [_P, ctypes.c_bool, ctypes.c_bool, _P, _P, _P]),
    "bs_log_density_gradient": (ctypes.c_int, [_P, ctypes.c_bool, ctypes.c_bool, _P, _P, _P,
                                               _P]),
}


def _rebuild_interpreted(code: str, data_json: str, name: str, stan_file: str | None,
                         seed: int, auto: bool) -> InterpretedModel:
    """A pickled :class:`InterpretedModel` rebuilt from its program text and data."""
    return InterpretedModel(code, StanJson(data_json), name=name, stan_file=stan_file,
                            seed=seed, auto=auto)


class InterpretedModel(StanModel):
    """A Stan program run by the interpreter (stanli), instantiated with data.

    ``auto`` (``backend="auto"``): an operation the interpreter lacks builds the compiled
    program once and runs there, with one note through ``progress``; otherwise it raises
    :class:`~stanlogz.errors.BackendUnsupported`. ``no_fallback`` (default: ``auto``) refuses
    a program part the interpreter cannot compile (:class:`~stanlogz.errors.StanCompileError`)
    instead of running it through stanli's far slower MIR fallback.
    """

    backend = "interpreted"

    def __init__(
        self,
        code: str,
        data: DataLike = None,
        *,
        name: str = "model",
        stan_file: str | os.PathLike[str] | None = None,
        seed: int | None = None,
        auto: bool = False,
        progress: Callable[[str], None] | None = None,
        mir: str | None = None,
        lineage: dict[str, Any] | None = None,
        no_fallback: bool | None = None,
    ) -> None:
        from ..toolchain import sanitize_name

        self.code = code
        self.stan_file = Path(stan_file) if stan_file is not None else None
        self.data_json = data_to_json(data)
        self.seed = int_seed(seed)
        self.auto, self.progress = auto, progress
        self.name = sanitize_name(name)
        self.include_paths = [self.stan_file.parent] if self.stan_file is not None else []
        self.mir = mir if mir is not None else program_mir(code, self.include_paths)
        self.lib_path = runtime_library()
        self._lib = _load_library(self.lib_path)
        for fname, (restype, argtypes) in _EXTRA.items():
            fn = getattr(self._lib, fname)
            fn.restype, fn.argtypes = restype, argtypes
        self._ptr: int | None = None
        err = ctypes.c_void_p()
        # under auto (or asked), a program part the interpreter cannot compile (its MIR
        # fallback is far slower, and loses generated quantities where it fails) is refused:
        # auto then builds
        with refusing_fallback(auto if no_fallback is None else no_fallback):
            ptr = self._lib.bs_model_construct(self._payload().encode(), self.seed,
                                               ctypes.byref(err))
        if not ptr:
            text = self._take_error(err)
            part = re.search(r"no compiled path: (.*?)\. Unset", " ".join(text.split()))
            if part:  # auto's refusal of stanli's slow fallback (NO_FALLBACK)
                raise StanCompileError("the interpreter has no compiled path for part of this "
                                       f"program: {part.group(1)}")
            if "stanli compile" in text:  # the program, not the data: lowering refused it
                raise StanCompileError("the interpreter cannot run this program: "
                                       + " ".join(text.split()).replace("stanli compile: ", ""))
            raise DataError(_data_error_message(self.name, text, code))
        self._ptr = ptr
        self._dim = int(self._lib.bs_param_unc_num(ptr))
        self._has_nuts = False
        self._has_many = False
        self._local = threading.local()
        self._full: StanModel | None = None  # the constants-kept program (propto=False)
        self._compiled_model: StanModel | None = None  # auto's fallback, built on first need
        #: shared by this program's data instances (with_data): the compiled fallback
        self._lineage: dict[str, Any] = {} if lineage is None else lineage

    def _payload(self) -> str:
        """The data with the program under stanli's reserved key (how its runtime is told
        which program to run)."""
        from ..toolchain.interpreter import stanli_module

        extra = json.dumps({"__stanli": {"build_id": stanli_module().build_id(),
                                         "mir": self.mir, "name": self.name}})
        inner = self.data_json.strip()[1:-1].strip()  # spliced: large data is not parsed again
        return "{" + (inner + ", " if inner else "") + extra[1:]

    # ------------------------------------------------------------ construction

    def with_data(self, data: DataLike) -> InterpretedModel:
        """The same program with other data (no new parse). Data the interpreter cannot type
        (an empty integer array: JSON does not say it is one) are the compiled program's under
        auto, where the two backends' transforms agree; otherwise refused
        (:class:`BackendUnsupported`, route ``backend='compiled'``)."""
        try:
            return InterpretedModel(self.code, data, name=self.name, stan_file=self.stan_file,
                                    seed=self.seed, auto=self.auto, progress=self.progress,
                                    mir=self.mir, lineage=self._lineage)
        except StanCompileError as exc:
            detail = str(exc).replace("the interpreter cannot run this program: ", "")
            why = f"typing of these data ({detail})"
            compiled = self.compiled(why)  # refused here unless auto
            from .interpreted_constants import same_transform

            if not same_transform(self, compiled):
                route = Route(options={"backend": "compiled"})
                raise BackendUnsupported(
                    f"{self.name}: the interpreted backend offers no {why}, and the compiled "
                    f"one maps parameters differently; run with {route}",
                    routes=(route,)) from None
            return compiled.with_data(data)  # type: ignore[return-value]

    def with_every_constant(self) -> tuple[StanModel, bool]:
        """The model and ``propto`` flag giving this program's density with every constant:
        the constants-kept interpreted program with ``propto=True`` where it serves (its data
        instances are one construction each), else this one with ``propto=False``."""
        model, mine = self._serving(False, True)
        return (model, True) if mine and model is not self else (self, False)

    def bridgestan_model(self) -> Any:
        """A PyPI ``bridgestan.StanModel`` on the interpreter's runtime and this program."""
        import bridgestan

        with BUILDING:
            return bridgestan.StanModel(str(self.lib_path), self._payload(), seed=self.seed,
                                        warn=False)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as program text and data: unpickling parses it again (milliseconds)."""
        return (_rebuild_interpreted, (self.code, self.data_json, self.name,
                                       None if self.stan_file is None else str(self.stan_file),
                                       self.seed, self.auto))

    def __repr__(self) -> str:
        return f"InterpretedModel(name={self.name!r}, dim={self._dim}, stanli {STANLI_VERSION})"

    # ------------------------------------------------------------ what the interpreter lacks

    def compiled(self, why: str) -> StanModel:
        """The compiled program for an operation the interpreter lacks (``why`` names it):
        built once per program under ``auto`` (its data instances share it) with one note,
        else :class:`BackendUnsupported`."""
        if self._compiled_model is not None:
            return self._compiled_model
        if not self.auto:
            route = Route(options={"backend": "compiled"})
            raise BackendUnsupported(
                f"{self.name}: the interpreted backend (stanli {STANLI_VERSION}) offers no "
                f"{why}; run with {route} or auto", routes=(route,))
        data = StanJson(self.data_json)
        base = self._lineage.get("compiled")
        if base is None:
            if self.progress:
                self.progress(f"note: {self.name}: compiled backend for {why}, which the "
                              "interpreter lacks")
            base = (StanModel.from_file(self.stan_file, data, seed=self.seed,
                                        progress=self.progress)
                    if self.stan_file is not None else
                    StanModel.from_code(self.code, data, name=self.name, seed=self.seed,
                                        progress=self.progress))
            self._lineage["compiled"] = base
        self._compiled_model = (base if base.data_json == self.data_json
                                else base.with_data(data))
        return self._compiled_model

    def _serving(self, propto: bool, jacobian: bool) -> tuple[StanModel, bool]:
        """The model that serves these flags, and whether it is this interpreter's (called
        with ``propto=True``) or a compiled one (called with the flags as given)."""
        if not jacobian:
            return self.compiled("jacobian=False (the log density without the "
                                 "change-of-variables terms)"), False
        if not propto:
            from .interpreted_constants import constants_kept

            full = self._full
            if full is None:
                full = self._full = constants_kept(self)
            return full, isinstance(full, InterpretedModel)
        return self, True

    def _compiled_points(self, model: StanModel, xs: np.ndarray, gradient: bool) -> np.ndarray:
        """This interpreter's unconstrained points ``xs`` as the compiled ``model``'s: the same
        where the two transforms agree (checked once per program), else mapped through the
        constrained values (densities only: a gradient on the other scale is refused)."""
        if self._same_transform(model, None if gradient else "densities"):
            return xs
        return model.unconstrain_many(self.constrain_many(xs)[:, :self.param_num()])

    def _same_transform(self, model: StanModel, mappable: str | None) -> bool:
        """Whether the compiled ``model``'s unconstrained scale is this interpreter's (checked
        once per program). Where it is not, True never; False when ``mappable`` names what can
        be mapped through the constrained values, else :class:`BackendUnsupported`."""
        from .interpreted_constants import same_transform

        same = self._lineage.get("same_transform")
        if same is None:
            same = self._lineage["same_transform"] = same_transform(self, model)
        if same or mappable:
            return bool(same)
        route = Route(options={"backend": "compiled"})
        raise BackendUnsupported(
            f"{self.name}: the interpreter's parameter transform (Stan's newer simplex) differs "
            "from the compiled build's, so the compiled build cannot serve the interpreter's "
            f"points here; run with {route}", routes=(route,))

    # ------------------------------------------------------------ transforms

    def constrain_many(self, xs: np.ndarray, *, include_tp: bool = False,
                       include_gq: bool = False, seed: int | None = None) -> np.ndarray:
        """Constrained values at each row of ``xs`` (:meth:`StanModel.constrain_many`). stanli
        runs the whole program's checks, generated quantities included, even when only the
        parameters are asked for; where those checks fail (e.g. a generated integer left
        unassigned at an extreme point) the compiled build, which transforms the parameters
        alone, serves under ``auto`` (else :class:`BackendUnsupported`). Where the quantities
        asked for fail their own checks, :class:`~stanlogz.errors.InputError` as the compiled
        build's."""
        why = self._lineage.get("params_compiled")  # this program failed so before
        if why is None or include_tp or include_gq:
            try:
                return super().constrain_many(xs, include_tp=include_tp,
                                              include_gq=include_gq, seed=seed)
            except RuntimeError as exc:
                text = str(exc).strip()
                if include_tp or include_gq:
                    raise InputError(f"constrain failed for {self.name}: {text}") from None
                why = self._lineage["params_compiled"] = (
                    "transform of the parameters alone (it checks the generated quantities, "
                    f"and {text.removeprefix('stanli MIR check: ')})")
        compiled = self.compiled(why)
        self._same_transform(compiled, None)
        return compiled.constrain_many(self._points(xs), include_tp=False, include_gq=False,
                                       seed=seed)

    # ------------------------------------------------------------ densities

    def log_density(self, x: np.ndarray, *, propto: bool = False, jacobian: bool = True) -> float:
        """Log density at unconstrained ``x``; ``-inf`` where the program rejects it."""
        return float(self.log_density_many(self._point(x)[None, :], propto=propto,
                                           jacobian=jacobian)[0])

    def log_density_gradient(
        self, x: np.ndarray, *, propto: bool = False, jacobian: bool = True
    ) -> tuple[float, np.ndarray]:
        """Log density and its gradient at ``x`` (gradient NaN where the density is rejected)."""
        lp, grad = self.log_density_gradient_many(self._point(x)[None, :], propto=propto,
                                                  jacobian=jacobian)
        return float(lp[0]), grad[0]

    def log_density_many(
        self, xs: np.ndarray, *, propto: bool = False, jacobian: bool = True
    ) -> np.ndarray:
        """Log density at each row of ``xs`` (shape ``(n, dim)``)."""
        return self._many(xs, propto, jacobian, gradient=False)

    def log_density_gradient_many(
        self, xs: np.ndarray, *, propto: bool = False, jacobian: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Log densities ``(n,)`` and gradients ``(n, dim)`` at each row of ``xs``."""
        return self._many(xs, propto, jacobian, gradient=True)

    def _many(self, xs: np.ndarray, propto: bool, jacobian: bool, gradient: bool) -> Any:
        """Densities (and gradients) at the rows of ``xs`` from the model serving this
        ``propto``/``jacobian``: the interpreter's C ABI, or the compiled build at the points
        mapped to its transform."""
        xs = self._points(xs)
        model, mine = self._serving(propto, jacobian)
        if not mine:
            pts = self._compiled_points(model, xs, gradient)
            many = model.log_density_gradient_many if gradient else model.log_density_many
            return many(pts, propto=propto, jacobian=jacobian)
        assert isinstance(model, InterpretedModel)
        return model._native_gradient_many(xs) if gradient else model._native_many(xs)

    def log_density_hessian(
        self, x: np.ndarray, *, propto: bool = False, jacobian: bool = True
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """Log density, gradient and Hessian at ``x``: the Hessian by central differences of the
        autodiff gradient (fourth-order stencil, ~1e-8 relative, as the compiled backend's);
        ``(-inf, nan, nan)`` where rejected."""
        x = self._point(x)
        d = self._dim
        lp, grad = self.log_density_gradient(x, propto=propto, jacobian=jacobian)
        if not np.isfinite(lp):
            return -np.inf, np.full(d, np.nan), np.full((d, d), np.nan)
        h = 1e-3 * np.maximum(1.0, np.abs(x))
        pts = []
        for i in range(d):
            for s in (2.0, 1.0, -1.0, -2.0):
                y = x.copy()
                y[i] += s * h[i]
                pts.append(y)
        _, g = self.log_density_gradient_many(np.array(pts), propto=propto, jacobian=jacobian)
        g = g.reshape(d, 4, d)
        hess = (-g[:, 0] + 8 * g[:, 1] - 8 * g[:, 2] + g[:, 3]) / (12 * h[:, None])
        hess = 0.5 * (hess + hess.T)
        if not np.all(np.isfinite(hess)):
            return -np.inf, np.full(d, np.nan), np.full((d, d), np.nan)
        return lp, grad, hess

    def _native_many(self, xs: np.ndarray) -> np.ndarray:
        """``propto=True, jacobian=True`` densities through the runtime's C ABI (one call per
        point; the arguments' conversions are made once, the points passed by address)."""
        n = xs.shape[0]
        out = np.empty(n)
        err = ctypes.c_void_p()
        fn, ptr, err_ref = self._lib.bs_log_density, self._ptr, ctypes.byref(err)
        base, step = xs.ctypes.data, xs.strides[0]
        lp_base, lp_step = out.ctypes.data, out.strides[0]
        for i in range(n):
            if fn(ptr, True, True, base + i * step, lp_base + i * lp_step, err_ref):
                self._take_error(err)
                out[i] = -np.inf
        return out

    def _native_gradient_many(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``propto=True, jacobian=True`` densities and gradients through the C ABI."""
        n = xs.shape[0]
        out = np.empty(n)
        grads = np.empty((n, self._dim))
        err = ctypes.c_void_p()
        fn, ptr, err_ref = self._lib.bs_log_density_gradient, self._ptr, ctypes.byref(err)
        base, step = xs.ctypes.data, xs.strides[0]
        lp_base, g_base, g_step = out.ctypes.data, grads.ctypes.data, grads.strides[0]
        for i in range(n):
            if fn(ptr, True, True, base + i * step, lp_base + 8 * i, g_base + i * g_step,
                  err_ref):
                self._take_error(err)
                out[i] = -np.inf
                grads[i] = np.nan
        return out, grads

    def instance_densities(self, data: DataLike, fields: Sequence[str], size_name: str,
                           rows: Sequence[Sequence[int]], unc: np.ndarray, threads: int = 1,
                           timing: dict[str, float] | None = None) -> np.ndarray | None:
        """``(S, len(rows))`` densities of the data instances ``rows`` (observations of
        ``fields``, counted by ``size_name``) at the draws ``unc``, every constant and no
        Jacobian, in one batched pass on ``threads`` (``timing``: its build and evaluation
        seconds)
        (:mod:`stanlogz.stan.interpreted_pointwise`); None where
        the interpreter's constants-kept program does not serve or the batch cannot run."""
        from .interpreted_pointwise import instance_densities

        try:
            _, mine = self._serving(False, True)
        except BackendUnsupported:
            return None
        if not mine:
            return None
        return instance_densities(self, data, fields, size_name, rows, self._points(unc),
                                  threads, timing)

    # ------------------------------------------------------------ NUTS

    @property
    def nuts_takes_warm(self) -> bool:
        """stanli starts NUTS from a given step size and metric."""
        return True

    def nuts(self, settings: NutsArgs | None = None, **keywords: Any) -> Any:
        """Stan's NUTS (the interpreter's own, diagonal metric, CmdStan defaults):
        :func:`stanlogz.stan.interpreted_nuts.run_interpreted_nuts` (under a time budget as
        the compiled sampler: stopped past warmup, or refused in warmup with a route)."""
        from .interpreted_nuts import LostDraws, run_interpreted_nuts

        why = self._lineage.get("nuts_compiled")  # this program lost draws before
        if why is None:
            try:
                return run_interpreted_nuts(self, settings, **keywords)
            except LostDraws as exc:
                why = self._lineage["nuts_compiled"] = (
                    f"sampling here ({exc}; Stan's sampler keeps them)")
        compiled = self.compiled(why)  # BackendUnsupported unless auto
        self._same_transform(compiled, None)
        keywords.pop("warm", None)  # the interpreter's adapted start; the compiled adapts anew
        return compiled.nuts(settings, **keywords)

