"""The ctypes table of a compiled Stan library (BridgeStan's C ABI plus stanlogz's batched calls
and NUTS), loaded once per process, and per-thread scratch buffers for single-point calls."""

from __future__ import annotations

import contextlib
import ctypes
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StanlogzError

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
    "slz_nuts_run": (_I, [_P, _I, _I, _I, _U, _D, _I, _D, _P, _D, _P, _P, _P, _P, _P, _P, _P,
                          _P, _P]),
}


_libs: dict[str, ctypes.CDLL] = {}


_libs_lock = threading.Lock()


def _preload_runtime() -> None:
    """Load this environment's TBB globally before any model library: a cached library may have
    been linked in another virtual environment (the cache is shared, its rpath points there),
    and the dynamic loader then reuses the already-loaded library of the same soname."""
    if _libs:
        return
    from ..toolchain.locate import httpstan_dir

    with contextlib.suppress(Exception):  # the library's own rpath is the fallback
        for so in sorted((httpstan_dir() / "lib").glob("libtbb.so.*")):
            ctypes.CDLL(str(so), mode=ctypes.RTLD_GLOBAL)


def _load_library(path: Path) -> ctypes.CDLL:
    key = str(path)
    with _libs_lock:
        lib = _libs.get(key)
        if lib is None:
            _preload_runtime()
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
