"""The evidence estimators users choose by name (``method``), each with its options class.

Every estimator function has the signature
``fn(target, draws, *, seed=None, **options) -> EvidenceResult``, where ``target`` follows
:class:`stanlogz.densities.target.Target` and ``draws`` are posterior draws in unconstrained
space shaped ``(chains, n, dim)``. A :class:`Method` names the function (imported on first use),
its :class:`~stanlogz.estimators.options.MethodOptions` class and whether it takes the sampling
cost of the draws (``n_sampling_evals``) as a budget.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from . import options as o
from .base import EvidenceResult

Estimator = Callable[..., EvidenceResult]


@dataclass(frozen=True)
class Method:
    """An evidence estimator: its name, its function (or ``"module:function"``, imported on
    first use), its options class and whether it takes ``n_sampling_evals``."""

    name: str
    fn: str | Estimator
    Options: type[o.MethodOptions]
    summary: str = ""
    takes_n_sampling_evals: bool = False

    def function(self) -> Estimator:
        """The estimator function."""
        if callable(self.fn):
            return self.fn
        module, attr = self.fn.split(":")
        return getattr(importlib.import_module(module), attr)

    def options(self, values: o.MethodOptions | Mapping[str, Any] | None = None
                ) -> o.MethodOptions:
        """Validated options (InputError naming the method and what it takes)."""
        if isinstance(values, self.Options):
            return values
        if isinstance(values, o.MethodOptions):
            raise InputError(f"method {self.name} takes {self.Options.__name__}, not "
                             f"{type(values).__name__}")
        return self.Options.parse(dict(values or {}))

    def run(self, target: Any, draws: np.ndarray, *, seed: Any = None,
            options: o.MethodOptions | Mapping[str, Any] | None = None,
            n_sampling_evals: int | None = None, progress: Any = None) -> EvidenceResult:
        """The estimate of log Z of ``target`` from ``draws`` with these options;
        ``progress`` reaches the estimators that report steps (those taking ``progress``)."""
        kwargs = self.options(options).kwargs()
        if self.takes_n_sampling_evals:
            kwargs["n_sampling_evals"] = n_sampling_evals
        fn = self.function()
        if progress is not None and "progress" in inspect.signature(fn).parameters:
            kwargs["progress"] = progress
        return fn(target, draws, seed=seed, **kwargs)


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("gbs", "stanlogz.estimators.bridge.bridge:gbs", o.GbsOptions,
           "Gaussianized bridge sampling (the default)", takes_n_sampling_evals=True),
    Method("gis", "stanlogz.estimators.bridge.baselines:gis", o.GisOptions,
           "Gaussianized importance sampling"),
    Method("ghm", "stanlogz.estimators.bridge.baselines:ghm", o.GhmOptions,
           "Gaussianized harmonic mean"),
    Method("bridge-gaussian", "stanlogz.estimators.bridge.baselines:bridge_gaussian",
           o.BridgeGaussianOptions, "bridge sampling with a Gaussian proposal"),
    Method("bridge-warp3", "stanlogz.estimators.bridge.baselines:bridge_warp3",
           o.BridgeWarp3Options, "Warp-III bridge sampling"),
    Method("laplace", "stanlogz.estimators.bridge.baselines:laplace", o.LaplaceOptions,
           "Laplace approximation at the mode"),
    Method("ais", "stanlogz.estimators.annealing.ais:ais_estimate", o.AisOptions,
           "annealed importance sampling (a stochastic lower bound)"),
    Method("rais", "stanlogz.estimators.annealing.ais:rais_estimate", o.RaisOptions,
           "reverse AIS (an upper bound from exact posterior draws)"),
    Method("ups", "stanlogz.estimators.ups.ups:ups_estimate", o.UpsOptions,
           "unbiased path sampling"),
    Method("smc", "stanlogz.estimators.annealing.smc:smc_estimate", o.SmcOptions,
           "adaptive-tempering sequential Monte Carlo"),
)}


def lookup(name: str) -> Method:
    """The :class:`Method` registered under ``name`` (InputError listing the choices)."""
    if name not in METHODS:
        raise InputError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
    return METHODS[name]


def get_method(name: str) -> Estimator:
    """The estimator function registered under ``name``."""
    return lookup(name).function()
