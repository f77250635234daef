"""A compiled Stan program with data: log density, gradients, transforms and Stan's NUTS.

:class:`StanModel` satisfies the :class:`stanlogz.densities.target.Target` protocol. Log densities
default to the *full* normalized density (all constants, ``propto=False``) on the unconstrained
scale including the change-of-variables Jacobian (``jacobian=True``), which is what evidence needs.
"""

from __future__ import annotations

import ctypes
import json
import numbers
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..api import read_data
from ..errors import DataError, InitializationError, InputError, StanlogzError, ToolchainError
from ..parallel.shipping import LibraryRef, library_ref, resolve_library
from ..toolchain import build

Progress = Callable[[str], None] | None
DataLike = None | Mapping[str, Any] | str | os.PathLike[str]

_P = ctypes.c_void_p
_B = ctypes.c_bool
_I = ctypes.c_int
_D = ctypes.c_double
_U = ctypes.c_uint

_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "bs_model_construct": (_P, [ctypes.c_char_p, _U, _P]),
    "bs_model_destruct": (None, [_P]),
    "bs_free_error_msg": (None, [_P]),
    "bs_name": (ctypes.c_char_p, [_P]),
    "bs_param_names": (ctypes.c_char_p, [_P, _B, _B]),
    "bs_param_unc_names": (ctypes.c_char_p, [_P]),
    "bs_param_num": (_I, [_P, _B, _B]),
    "bs_param_unc_num": (_I, [_P]),
    "bs_param_unconstrain": (_I, [_P, _P, _P, _P]),
    "bs_param_unconstrain_json": (_I, [_P, ctypes.c_char_p, _P, _P]),
    "bs_log_density_hessian": (_I, [_P, _B, _B, _P, _P, _P, _P, _P]),
    "slz_log_density_many": (_I, [_P, _B, _B, _I, _P, _P, _P, _P]),
    "slz_log_density_gradient_many": (_I, [_P, _B, _B, _I, _P, _P, _P, _P, _P]),
    "slz_param_constrain_many": (_I, [_P, _B, _B, _I, _P, _U, _P, _P]),
    "slz_nuts_ctl": (_I, [_P, _I, _I, _I, _U, _D, _I, _D, _P, _P, _P, _P, _P, _P, _P, _P]),
}
_NUTS_COLUMNS = [
    "lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__",
    "energy__",
]

# Progress lines during NUTS: at most one per PROGRESS_INTERVAL_S seconds, each when some chain
# has passed another tenth of its iterations; the sampler thread is polled every _POLL_S.
PROGRESS_INTERVAL_S = 1.0
_POLL_S = 0.05

_libs: dict[str, ctypes.CDLL] = {}
_libs_lock = threading.Lock()


def _load_library(path: Path) -> ctypes.CDLL:
    key = str(path)
    with _libs_lock:
        lib = _libs.get(key)
        if lib is None:
            try:
                lib = ctypes.CDLL(key)
            except OSError as exc:
                raise StanlogzError(f"cannot load model library {key}: {exc}") from exc
            for fname, (restype, argtypes) in _SIGNATURES.items():
                fn = getattr(lib, fname, None)
                if fn is not None:
                    fn.restype = restype
                    fn.argtypes = argtypes
            _libs[key] = lib
        return lib


# Models rebuilt by unpickling, shared while alive: tasks that carry the same program and data
# (one pickle each, e.g. in a process pool) bind the data once per process.
_rebuilt: weakref.WeakValueDictionary[tuple[str, str, str, int], StanModel] = \
    weakref.WeakValueDictionary()


def _rebuild_model(ref: LibraryRef, data_json: str, name: str, code: str,
                   stan_file: str | None, seed: int) -> StanModel:
    """A pickled :class:`StanModel` rebuilt here: library by reference, data instance anew."""
    path = resolve_library(ref)
    key = (str(path), data_json, name, seed)
    with _libs_lock:
        model = _rebuilt.get(key)
    if model is None:
        model = StanModel(path, json.loads(data_json), name=name, code=code,
                          stan_file=stan_file, seed=seed)
        with _libs_lock:
            _rebuilt[key] = model
    return model


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def data_to_json(data: DataLike) -> str:
    """Stan JSON text from ``None``, a dict, a path to a ``.json`` file, or JSON text (files and
    text are read and checked by :func:`stanlogz.api.read_data`)."""
    if data is not None and not isinstance(data, Mapping):
        data = read_data(data)
    return json.dumps({str(k): _jsonable(v) for k, v in (data or {}).items()})


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray | np.generic):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and not np.isfinite(value):
        return "NaN" if np.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _random_seed() -> int:
    return int(np.random.SeedSequence().generate_state(1)[0] & 0x7FFFFFFF)


def _norm_seed(seed: int | None) -> int:
    if seed is None:
        return _random_seed()
    if int(seed) < 0:
        raise InputError(f"seed must be >= 0, got {seed}")
    return int(seed) % (2**32)


@dataclass
class NutsOutput:
    """Draws and adaptation results of Stan's NUTS (diagonal metric), one row per kept draw."""

    constrained: np.ndarray  # (chains, draws, param_num(include_tp=True, include_gq=True))
    unconstrained: np.ndarray  # (chains, draws, dim)
    constrained_names: list[str]
    sampler: dict[str, np.ndarray]  # lp__, accept_stat__, ... each (chains, draws)
    step_size: np.ndarray  # (chains,) adapted
    inv_metric: np.ndarray  # (chains, dim) adapted diagonal
    seconds: float
    n_gradient_evals: int  # total leapfrog steps, warmup included
    max_treedepth: int
    seed: int


class StanModel:
    """A Stan program compiled into a shared library, instantiated with data."""

    def __init__(
        self,
        lib_path: str | os.PathLike[str],
        data: DataLike = None,
        *,
        name: str | None = None,
        code: str = "",
        stan_file: str | os.PathLike[str] | None = None,
        seed: int | None = None,
    ) -> None:
        self.lib_path = Path(lib_path)
        self.code = code
        self.stan_file = Path(stan_file) if stan_file is not None else None
        self.data_json = data_to_json(data)
        self.seed = _norm_seed(seed)
        self._lib = _load_library(self.lib_path)
        self._ptr: int | None = None
        err = ctypes.c_void_p()
        ptr = self._lib.bs_model_construct(self.data_json.encode(), self.seed, ctypes.byref(err))
        if not ptr:
            label = name or self.lib_path.stem.removeprefix("lib")
            raise DataError(_data_error_message(label, self._take_error(err), code))
        self._ptr = ptr
        self.name = name or self._lib.bs_name(ptr).decode().removesuffix("_model")
        self._dim = int(self._lib.bs_param_unc_num(ptr))
        self._has_nuts = hasattr(self._lib, "slz_nuts_ctl")
        self._has_many = hasattr(self._lib, "slz_log_density_many")
        self._local = threading.local()

    # ------------------------------------------------------------ construction

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        data: DataLike = None,
        *,
        seed: int | None = None,
        progress: Progress = None,
    ) -> StanModel:
        """Compile (or load from the cache) the ``.stan`` file at ``path`` and bind ``data``."""
        result = build(Path(path), progress=progress)
        return cls(result.lib_path, data, name=result.name, code=result.code,
                   stan_file=Path(path).resolve(), seed=seed)

    @classmethod
    def from_code(
        cls,
        code: str,
        data: DataLike = None,
        *,
        name: str = "model",
        seed: int | None = None,
        progress: Progress = None,
    ) -> StanModel:
        """Compile (or load from the cache) Stan program text and bind ``data``."""
        result = build(code, name=name, progress=progress)
        return cls(result.lib_path, data, name=result.name, code=result.code, seed=seed)

    def with_data(self, data: DataLike) -> StanModel:
        """The same compiled program with other data (no rebuild)."""
        return StanModel(self.lib_path, data, name=self.name, code=self.code,
                         stan_file=self.stan_file, seed=self.seed)

    def bridgestan_model(self) -> Any:
        """A PyPI ``bridgestan.StanModel`` on this library and data."""
        import bridgestan

        return bridgestan.StanModel(str(self.lib_path), self.data_json, seed=self.seed,
                                    warn=False)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as the library's reference and the data, never C pointers: unpickling (on a
        cluster worker, say) loads the library from that machine's cache, or has it sent once
        (:mod:`stanlogz.parallel.shipping`), and builds the data instance there."""
        return (_rebuild_model, (library_ref(self.lib_path), self.data_json, self.name,
                                 self.code, None if self.stan_file is None else
                                 str(self.stan_file), self.seed))

    def __del__(self) -> None:
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._lib.bs_model_destruct(ptr)
            self._ptr = None

    def __repr__(self) -> str:
        return f"StanModel(name={self.name!r}, dim={self._dim}, lib={str(self.lib_path)!r})"

    # ------------------------------------------------------------ names and sizes

    @property
    def dim(self) -> int:
        """Number of unconstrained parameters."""
        return self._dim

    def param_names(self, include_tp: bool = False, include_gq: bool = False) -> list[str]:
        """Constrained parameter names in Stan's ``a.1`` style."""
        text = self._lib.bs_param_names(self._ptr, include_tp, include_gq).decode()
        return text.split(",") if text else []

    def param_unc_names(self) -> list[str]:
        """Unconstrained parameter names."""
        text = self._lib.bs_param_unc_names(self._ptr).decode()
        return text.split(",") if text else []

    def param_num(self, include_tp: bool = False, include_gq: bool = False) -> int:
        """Number of constrained values (optionally with transformed parameters / GQs)."""
        return int(self._lib.bs_param_num(self._ptr, include_tp, include_gq))

    # ------------------------------------------------------------ densities

    def log_density(self, x: np.ndarray, *, propto: bool = False, jacobian: bool = True) -> float:
        """Log density at unconstrained ``x``; ``-inf`` where the program rejects it."""
        if not self._has_many:
            return float(self.log_density_many(self._point(x)[None, :], propto=propto,
                                               jacobian=jacobian)[0])
        s = self._scratch()
        if np.shape(x) != s.x.shape:
            raise InputError(f"{self.name}: point must have shape ({self._dim},), "
                             f"got {np.shape(x)}")
        s.x[:] = x
        rc = self._lib.slz_log_density_many(self._ptr, propto, jacobian, 1, s.x_ptr, s.lp_ptr,
                                            s.status_ptr, s.err_ref)
        if rc:
            raise StanlogzError(f"log density of {self.name} failed at "
                                f"{_condense_stan(self._take_error(s.err))}")
        return float(s.lp[0])

    def log_density_gradient(
        self, x: np.ndarray, *, propto: bool = False, jacobian: bool = True
    ) -> tuple[float, np.ndarray]:
        """Log density and its gradient at ``x`` (gradient NaN where the density is rejected)."""
        if not self._has_many:
            lp, grad = self.log_density_gradient_many(self._point(x)[None, :], propto=propto,
                                                      jacobian=jacobian)
            return float(lp[0]), grad[0]
        s = self._scratch()
        if np.shape(x) != s.x.shape:
            raise InputError(f"{self.name}: point must have shape ({self._dim},), "
                             f"got {np.shape(x)}")
        s.x[:] = x
        rc = self._lib.slz_log_density_gradient_many(self._ptr, propto, jacobian, 1, s.x_ptr,
                                                     s.lp_ptr, s.grad_ptr, s.status_ptr,
                                                     s.err_ref)
        if rc:
            raise StanlogzError(f"log density gradient of {self.name} failed at "
                                f"{_condense_stan(self._take_error(s.err))}")
        return float(s.lp[0]), s.grad.copy()

    def _scratch(self) -> _Scratch:
        local = self._local
        s = getattr(local, "s", None)
        if s is None:
            s = local.s = _Scratch(self._dim)
        return s

    def log_density_many(
        self, xs: np.ndarray, *, propto: bool = False, jacobian: bool = True
    ) -> np.ndarray:
        """Log density at each row of ``xs`` (shape ``(n, dim)``) in one native call."""
        xs = self._points(xs)
        if not self._has_many:
            return self._bridgestan_many(xs, propto, jacobian)
        n = xs.shape[0]
        out = np.empty(n)
        status = np.empty(n, dtype=np.intc)
        err = ctypes.c_void_p()
        rc = self._lib.slz_log_density_many(self._ptr, propto, jacobian, n, xs.ctypes.data,
                                            out.ctypes.data, status.ctypes.data,
                                            ctypes.byref(err))
        if rc:
            raise StanlogzError(f"log density of {self.name} failed at "
                                f"{_condense_stan(self._take_error(err))}")
        return out

    def log_density_gradient_many(
        self, xs: np.ndarray, *, propto: bool = False, jacobian: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """Log densities ``(n,)`` and gradients ``(n, dim)`` at each row of ``xs``."""
        xs = self._points(xs)
        n = xs.shape[0]
        out = np.empty(n)
        grads = np.empty((n, self._dim))
        if not self._has_many:
            for i in range(n):
                out[i], grads[i] = self._bridgestan_gradient(xs[i], propto, jacobian)
            return out, grads
        status = np.empty(n, dtype=np.intc)
        err = ctypes.c_void_p()
        rc = self._lib.slz_log_density_gradient_many(
            self._ptr, propto, jacobian, n, xs.ctypes.data, out.ctypes.data, grads.ctypes.data,
            status.ctypes.data, ctypes.byref(err))
        if rc:
            raise StanlogzError(f"log density gradient of {self.name} failed at "
                                f"{_condense_stan(self._take_error(err))}")
        return out, grads

    def log_density_hessian(
        self, x: np.ndarray, *, propto: bool = False, jacobian: bool = True
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """Log density, gradient and Hessian at ``x`` (Hessian by central differences of the
        autodiff gradient, ~1e-8 relative accuracy); ``(-inf, nan, nan)`` where rejected."""
        x = self._point(x)
        d = self._dim
        lp = ctypes.c_double()
        grad = np.empty(d)
        hess = np.empty((d, d))
        err = ctypes.c_void_p()
        rc = self._lib.bs_log_density_hessian(self._ptr, propto, jacobian, x.ctypes.data,
                                              ctypes.byref(lp), grad.ctypes.data,
                                              hess.ctypes.data, ctypes.byref(err))
        if rc:
            self._take_error(err)
            return -np.inf, np.full(d, np.nan), np.full((d, d), np.nan)
        return float(lp.value), grad, hess

    # ------------------------------------------------------------ transforms

    def constrain(
        self,
        x: np.ndarray,
        *,
        include_tp: bool = False,
        include_gq: bool = False,
        seed: int | None = None,
    ) -> np.ndarray:
        """Constrained values (``param_names`` order) at unconstrained ``x``."""
        return self.constrain_many(self._point(x)[None, :], include_tp=include_tp,
                                   include_gq=include_gq, seed=seed)[0]

    def constrain_many(
        self,
        xs: np.ndarray,
        *,
        include_tp: bool = False,
        include_gq: bool = False,
        seed: int | None = None,
    ) -> np.ndarray:
        """Constrained values at each row of ``xs``; shape ``(n, param_num(...))``. Generated
        quantities draw from one RNG seeded with ``seed`` (random when None)."""
        xs = self._points(xs)
        n = xs.shape[0]
        out = np.empty((n, self.param_num(include_tp, include_gq)))
        if not self._has_many:
            bs = self._bs_cache()
            rng = bs.new_rng(_norm_seed(seed))
            for i in range(n):
                out[i] = bs.param_constrain(xs[i], include_tp=include_tp,
                                            include_gq=include_gq, rng=rng)
            return out
        err = ctypes.c_void_p()
        rc = self._lib.slz_param_constrain_many(self._ptr, include_tp, include_gq, n,
                                                xs.ctypes.data, _norm_seed(seed),
                                                out.ctypes.data, ctypes.byref(err))
        if rc:
            raise InputError(f"constrain failed for {self.name} at "
                             f"{_condense_stan(self._take_error(err))}")
        return out

    def unconstrain(self, theta: np.ndarray) -> np.ndarray:
        """Unconstrained point from flat constrained parameters (``param_names()`` order)."""
        k = self.param_num()
        theta = np.ascontiguousarray(theta, dtype=float)
        if theta.shape != (k,):
            raise InputError(f"{self.name}: constrained parameters must have shape ({k},), "
                             f"got {theta.shape}")
        out = np.empty(self._dim)
        err = ctypes.c_void_p()
        rc = self._lib.bs_param_unconstrain(self._ptr, theta.ctypes.data, out.ctypes.data,
                                            ctypes.byref(err))
        if rc:
            raise InputError(f"cannot unconstrain for {self.name}: "
                             f"{_with_variable(self.code, self._take_error(err))}")
        return out

    def unconstrain_many(self, thetas: np.ndarray) -> np.ndarray:
        """:meth:`unconstrain` for each row of ``thetas``."""
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        out = np.empty((thetas.shape[0], self._dim))
        for i, theta in enumerate(thetas):
            out[i] = self.unconstrain(theta)
        return out

    def unconstrain_dict(self, values: Mapping[str, Any]) -> np.ndarray:
        """Unconstrained point from named constrained values, e.g. ``{"mu": 1.0}``."""
        out = np.empty(self._dim)
        err = ctypes.c_void_p()
        text = data_to_json(values).encode()
        rc = self._lib.bs_param_unconstrain_json(self._ptr, text, out.ctypes.data,
                                                 ctypes.byref(err))
        if rc:
            raise InputError(f"cannot unconstrain for {self.name}: "
                             f"{_with_variable(self.code, self._take_error(err))}")
        return out

    # ------------------------------------------------------------ NUTS

    def nuts(
        self,
        *,
        chains: int = 4,
        warmup: int = 1000,
        draws: int = 1000,
        seed: int | None = None,
        adapt_delta: float = 0.8,
        max_treedepth: int = 10,
        init: None | Mapping[str, Any] | Sequence[Mapping[str, Any]] = None,
        init_radius: float = 2.0,
        thin: int = 1,
        save_warmup: bool = False,
        progress: Progress = None,
    ) -> NutsOutput:
        """Stan's NUTS with diagonal-metric adaptation (CmdStan defaults), chains in parallel.

        With ``save_warmup`` the kept warmup draws come first in every array. ``init`` is
        None (uniform(-init_radius, init_radius) on the unconstrained scale), a dict of
        constrained values for all chains, or one dict per chain. ``progress`` gets a start and
        an end line and, at most once per ``PROGRESS_INTERVAL_S`` seconds, the iteration of
        chains that passed another tenth of their iterations. Ctrl-C (KeyboardInterrupt) stops
        all chains at their next iteration and is re-raised; the draws do not depend on either.
        """
        if not self._has_nuts:
            raise ToolchainError(f"{self.lib_path.name} has no stanlogz NUTS entry (built with "
                                 "the bridgestan backend or an older stanlogz); rebuild it or "
                                 "sample with cmdstanpy instead")
        _check(self._dim > 0, f"{self.name} has no parameters to sample")
        for label, v, lo in (("chains", chains, 1), ("warmup", warmup, 0), ("draws", draws, 1),
                             ("thin", thin, 1), ("max_treedepth", max_treedepth, 1)):
            _check(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= lo,
                   f"{label} must be an integer >= {lo}, got {v!r}")
        chains, warmup, draws, thin = int(chains), int(warmup), int(draws), int(thin)
        max_treedepth = int(max_treedepth)
        _check(0.0 < adapt_delta < 1.0, f"adapt_delta must be in (0, 1), got {adapt_delta}")
        _check(init_radius >= 0.0, f"init_radius must be >= 0, got {init_radius}")
        seed = _norm_seed(seed)
        init_buffers = self._init_jsons(init, chains)
        init_array = (ctypes.c_char_p * chains)(*init_buffers) if init_buffers else None
        rows = warmup + draws
        k = self.param_num(True, True)
        d = self._dim
        raw = np.zeros((chains, rows, len(_NUTS_COLUMNS) + k))
        unc = np.zeros((chains, rows, d))
        step = np.zeros(chains)
        inv_metric = np.zeros((chains, d))
        if progress:
            progress(f"sampling {self.name}: {chains} chains x ({warmup} warmup + {draws} draws)")
        err = ctypes.c_void_p()
        iterations = np.zeros(chains, dtype=np.int64)
        stop = ctypes.c_int(0)
        status: list[int] = []

        def run() -> None:
            status.append(self._lib.slz_nuts_ctl(
                self._ptr, chains, warmup, draws, seed, adapt_delta, max_treedepth, init_radius,
                ctypes.cast(init_array, ctypes.c_void_p) if init_buffers else None,
                raw.ctypes.data, unc.ctypes.data, step.ctypes.data, inv_metric.ctypes.data,
                iterations.ctypes.data, ctypes.byref(stop), ctypes.byref(err)))

        start = time.perf_counter()
        ticker = _NutsProgress(progress, warmup, rows, start) if progress else None
        try:
            _run_stoppable(run, stop, lambda: ticker.poll(iterations) if ticker else None,
                           name=f"stanlogz-nuts-{self.name}")
        except BaseException:
            if err.value:
                self._take_error(err)
            raise
        seconds = time.perf_counter() - start
        rc = status[0] if status else 2
        if rc == 1:
            raise InitializationError(self._init_failure(self._take_error(err)))
        if rc:
            log = self._take_error(err)
            raise StanlogzError(f"NUTS failed for {self.name}: {stan_failure_cause(log)}",
                                log=log.replace(" | ", "\n"))
        n_grad = int(raw[:, :, _NUTS_COLUMNS.index("n_leapfrog__")].sum())
        keep = np.arange(warmup, rows, thin)
        if save_warmup:
            keep = np.concatenate([np.arange(0, warmup, thin), keep])
        raw = raw[:, keep]
        if progress:
            progress(f"sampled {self.name} in {seconds:.2f} s")
        return NutsOutput(
            constrained=np.ascontiguousarray(raw[:, :, len(_NUTS_COLUMNS):]),
            unconstrained=np.ascontiguousarray(unc[:, keep]),
            constrained_names=self.param_names(True, True),
            sampler={c: np.ascontiguousarray(raw[:, :, i]) for i, c in enumerate(_NUTS_COLUMNS)},
            step_size=step,
            inv_metric=inv_metric,
            seconds=seconds,
            n_gradient_evals=n_grad,
            max_treedepth=max_treedepth,
            seed=seed,
        )

    # ------------------------------------------------------------ helpers

    def _init_jsons(self, init: Any, chains: int) -> list[bytes] | None:
        if init is None:
            return None
        if isinstance(init, Mapping):
            inits = [init] * chains
        elif isinstance(init, Sequence) and not isinstance(init, str):
            inits = list(init)
            if len(inits) != chains:
                raise InputError(f"init has {len(inits)} entries for {chains} chains")
        else:
            raise InputError("init must be None, a dict of constrained values, or a list of dicts")
        for item in inits:
            if not isinstance(item, Mapping):
                raise InputError("each init must be a dict of constrained values")
        return [data_to_json(i).encode() for i in inits]

    def _init_failure(self, message: str) -> str:
        reasons = re.findall(r"Exception:\s*([^|]+)", message)
        reason = _with_variable(self.code, reasons[-1]) if reasons else _condense_stan(message)
        return (f"NUTS initialization failed for {self.name}: no finite log density and "
                f"gradient in Stan's 100 attempts; reason: {reason}")

    def _point(self, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.shape != (self._dim,):
            raise InputError(f"{self.name}: point must have shape ({self._dim},), got {x.shape}")
        return x

    def _points(self, xs: np.ndarray) -> np.ndarray:
        xs = np.ascontiguousarray(xs, dtype=np.float64)
        if xs.ndim == 1 and xs.shape[0] == self._dim:
            xs = xs[None, :]
        if xs.ndim != 2 or xs.shape[1] != self._dim:
            raise InputError(f"{self.name}: points must have shape (n, {self._dim}), "
                             f"got {xs.shape}")
        return xs

    def _take_error(self, err: ctypes.c_void_p) -> str:
        if not err.value:
            return "unknown error"
        msg = ctypes.string_at(err.value).decode(errors="replace")
        self._lib.bs_free_error_msg(err)
        err.value = None  # freed: never read or freed again (the per-thread buffer is reused)
        return msg

    def _bridgestan_many(self, xs: np.ndarray, propto: bool, jacobian: bool) -> np.ndarray:
        bs = self._bs_cache()
        out = np.empty(xs.shape[0])
        for i, x in enumerate(xs):
            try:
                out[i] = bs.log_density(x, propto=propto, jacobian=jacobian)
            except RuntimeError:
                out[i] = -np.inf
        return out

    def _bridgestan_gradient(self, x: np.ndarray, propto: bool,
                             jacobian: bool) -> tuple[float, np.ndarray]:
        try:
            return self._bs_cache().log_density_gradient(x, propto=propto, jacobian=jacobian)
        except RuntimeError:
            return -np.inf, np.full(self._dim, np.nan)

    def _bs_cache(self) -> Any:
        if getattr(self, "_bs", None) is None:
            self._bs = self.bridgestan_model()
        return self._bs


def _run_stoppable(call: Callable[[], None], stop: ctypes.c_int, poll: Callable[[], None],
                   *, name: str) -> None:
    """Run ``call`` (a blocking library call watching ``stop``) in a worker thread, calling
    ``poll`` while it runs. On an exception here, KeyboardInterrupt included, sets ``stop``,
    waits for ``call`` to return (it writes into the caller's arrays) and re-raises."""
    worker = threading.Thread(target=call, name=name, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(_POLL_S)
            if worker.is_alive():
                poll()
    except BaseException:
        stop.value = 1
        while worker.is_alive():
            try:
                worker.join(_POLL_S)
            except KeyboardInterrupt:
                continue
        raise


class _NutsProgress:
    """Per-chain iteration progress lines for a running NUTS call, throttled."""

    def __init__(self, progress: Callable[[str], None], warmup: int, total: int,
                 start: float) -> None:
        self.progress = progress
        self.warmup = warmup
        self.total = total
        self.last = start
        self.reported: list[int] = []

    def poll(self, iterations: np.ndarray) -> None:
        """Report the chains that passed another tenth of their iterations since last time."""
        now = time.perf_counter()
        if now - self.last < PROGRESS_INTERVAL_S:
            return
        done = [int(i) for i in iterations]  # read once: the sampler keeps counting
        if not self.reported:
            self.reported = [0] * len(done)
        tenths = [10 * i // self.total for i in done]
        moved = [c for c, t in enumerate(tenths) if t > self.reported[c]]
        if not moved:
            return
        self.progress("; ".join(f"chain {c + 1}: iteration {done[c]}/{self.total} "
                                f"({'warmup' if done[c] <= self.warmup else 'sampling'})"
                                for c in moved))
        for c in moved:
            self.reported[c] = tenths[c]
        self.last = now


class _Scratch:
    """Per-thread buffers (and their addresses) for single-point native calls."""

    def __init__(self, dim: int) -> None:
        self.x = np.zeros(dim)
        self.grad = np.zeros(dim)
        self.lp = np.zeros(1)
        self.status = np.zeros(1, dtype=np.intc)
        self.err = ctypes.c_void_p()
        self.err_ref = ctypes.byref(self.err)
        self.x_ptr = self.x.ctypes.data
        self.grad_ptr = self.grad.ctypes.data
        self.lp_ptr = self.lp.ctypes.data
        self.status_ptr = self.status.ctypes.data


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise InputError(message)


def _data_error_message(label: str, message: str, code: str) -> str:
    text = _condense_stan(message).replace("processing stage=data initialization; ", "")
    found = re.search(r"variable(?: name)?=([A-Za-z_]\w*)", text)
    var = found.group(1) if found else _declared_at(code, text)
    where = f", variable '{var}'" if var else ""
    return f"data for {label}{where}: {text}"


def _declared_at(code: str, message: str) -> str | None:
    """The variable declared on the program line a Stan message points at, if any."""
    found = re.search(r"line (\d+)", message)
    lines = code.splitlines()
    if not found or not 0 < int(found.group(1)) <= len(lines):
        return None
    line = lines[int(found.group(1)) - 1].split("//")[0].strip()
    line = re.sub(r"<[^<>]*>|\[[^\[\]]*\]", "", line)
    decl = re.search(r"([A-Za-z_]\w*)\s*(?:=[^;]*)?;\s*$", line)
    return decl.group(1) if decl else None


def _with_variable(code: str, message: str) -> str:
    text = _condense_stan(message)
    var = _declared_at(code, text)
    return f"variable '{var}': {text}" if var else text


def _condense_stan(message: str) -> str:
    """One line from a Stan C++ exception message, without boilerplate."""
    text = _one_line(message)
    text = re.sub(r"^Exception:\s*", "", text)
    return re.sub(r"^\w+_namespace::\w+:\s*", "", text)


# Lines of Stan's sampler log that carry no information about a failure.
_STAN_LOG_NOISE = re.compile(
    r"^(Gradient evaluation took|\d+ transitions using|Adjust your expectations|Iteration:|"
    r"Elapsed Time|$)")


def stan_failure_cause(log: str) -> str:
    """One line from Stan's sampler log (entries joined by " | "): the first cause, each message
    once, timing chatter dropped."""
    seen: list[str] = []
    for entry in log.split(" | "):
        entry = re.sub(r"^chain \d+ stopped early:\s*", "", _condense_stan(entry)).strip()
        if not _STAN_LOG_NOISE.match(entry) and entry not in seen:
            seen.append(entry)
    if not seen:
        return "Stan's sampler stopped without a message"
    causes = [e for e in seen if not e.startswith("Exception")]
    context = [e.rstrip(".") for e in seen if e.startswith("Exception")]
    head = "; ".join(causes or context)
    tail = f" ({'; '.join(context)})" if causes and context else ""
    return head + tail + " [--verbose shows Stan's log]"

