"""A compiled Stan program with data: log density, gradients, transforms and Stan's NUTS.

:class:`StanModel` satisfies the :class:`stanlogz.densities.target.Target` protocol. Log densities
default to the *full* normalized density (all constants, ``propto=False``) on the unconstrained
scale including the change-of-variables Jacobian (``jacobian=True``), which is what evidence needs.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._util.progress import Progress
from .._util.seeds import int_seed
from ..errors import DataError, InputError, StanlogzError
from ..parallel.shipping import LibraryRef, library_ref, resolve_library
from ..toolchain import build
from .ffi import _libs_lock, _load_library, _Scratch
from .inputs import DataLike, StanJson, data_to_json, json_fragments, json_with_field
from .messages import _condense_stan, _data_error_message, _with_variable
from .nuts import NutsOutput, run_nuts
from .settings import NutsArgs

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
        model = StanModel(path, StanJson(data_json), name=name, code=code,
                          stan_file=stan_file, seed=seed)
        with _libs_lock:
            _rebuilt[key] = model
    return model


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
        self.seed = int_seed(seed)
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
        self._has_nuts = hasattr(self._lib, "slz_nuts_run")
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

    def with_field(self, field: str, value: Any) -> StanModel:
        """The same program with the data variable ``field`` set to ``value`` and the rest of
        its data as they are: the others' JSON text is written once per model and reused
        (the conditional log-likelihood builds dozens of instances per observation, each
        differing from the data in one value)."""
        frags = self.__dict__.get("_fragments")
        if frags is None:
            frags = self._fragments = json_fragments(self.data_json)
        return self.with_data(json_with_field(frags, field, value))

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

    @property
    def nuts_takes_warm(self) -> bool:
        """Whether :meth:`nuts` takes ``warm=`` (a run's last draws, step sizes and metrics):
        a library with stanlogz's NUTS entry."""
        return self._has_nuts

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

    def constrain(self, x: np.ndarray, **flags: Any) -> np.ndarray:
        """Constrained values (``param_names`` order) at unconstrained ``x``: :meth:`constrain_many`
        of one point, with its keywords (``include_tp``, ``include_gq``, ``seed``)."""
        return self.constrain_many(self._point(x)[None, :], **flags)[0]

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
            rng = bs.new_rng(int_seed(seed))
            for i in range(n):
                out[i] = bs.param_constrain(xs[i], include_tp=include_tp,
                                            include_gq=include_gq, rng=rng)
            return out
        err = ctypes.c_void_p()
        rc = self._lib.slz_param_constrain_many(self._ptr, include_tp, include_gq, n,
                                                xs.ctypes.data, int_seed(seed),
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

    def nuts(self, settings: NutsArgs | None = None, **keywords: Any) -> NutsOutput:
        """Stan's NUTS with diagonal-metric adaptation (CmdStan defaults), chains in parallel:
        :func:`stanlogz.stan.nuts.run_nuts` on this program, with its keywords (``seed``,
        ``init``, ``save_warmup``, ``progress``, and overrides of single fields of ``settings``,
        a :class:`~stanlogz.stan.settings.NutsArgs`)."""
        return run_nuts(self, settings, **keywords)

    # ------------------------------------------------------------ helpers

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


