"""The density-difference columns from one batched call where the model offers one.

The interpreter (:meth:`~stanlogz.stan.interpreted.InterpretedModel.instance_densities`)
evaluates many data instances per draw in native code, where the per-call path pays ~0.8 µs
of Python per density. Each block is checked against the per-call path at its first and last
observation (1e-9 relative: both sum the same double-precision terms), and the per-call path
takes over for good when the batched one disagrees, cannot run the program, or is measured
slower per value (a program whose instances are costly to evaluate in the interpreter's
value-only functions).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..._util.threads import n_threads

#: Draws of the per-call check (and of its timing).
CHECK_DRAWS = 24

#: Observations of the first block on which the two paths are timed.
PROBE = 48

#: Fewest draws at which the two are timed (fewer: the batched path runs, cheap either way).
MEASURE_DRAWS = 256


def _per_call(pw: Any, obs: list[int], b: int, unc: np.ndarray) -> tuple[np.ndarray, float]:
    """The per-call values of one instance at ``unc`` and the seconds per value that path
    would take at ``n_draws`` draws (its instance built once, then one call per draw)."""
    t0 = time.perf_counter()
    inst = pw._instance(obs)
    first = inst.log_density_many(unc[:1])
    t1 = time.perf_counter()
    rest = inst.log_density_many(unc[1:])
    t2 = time.perf_counter()
    with np.errstate(invalid="ignore"):
        want = np.concatenate([first, rest]) - pw.bases()[b].log_density_many(unc)
    return want, (t1 - t0, (t2 - t1) / max(len(unc) - 1, 1))


def _run(pw: Any, index: list[int], unc: np.ndarray, threads: int,
         timing: dict[str, float] | None = None) -> np.ndarray | None:
    """The batched columns of ``index``, checked against the per-call path at its first and
    last observation (None on any failure, which turns the batched path off for ``pw``)."""
    refs = pw.references()
    pairs = [pw._pair(i) for i in index]
    nb = len(refs) if len(refs) > 1 and any(b for _, b in pairs) else 1
    values = pw.model.instance_densities(pw.data, pw.obs.fields, pw.obs.size_name,
                                         [*refs[:nb], *(obs for obs, _ in pairs)], unc,
                                         threads, timing)
    if values is None:
        pw._batch_failed = True
        return None
    with np.errstate(invalid="ignore"):  # inf - inf: the check reports it
        out = values[:, nb:] - values[:, [b for _, b in pairs]]
    s = unc.shape[0]
    rows = np.unique(np.linspace(0, s - 1, min(s, CHECK_DRAWS)).astype(int))
    per_call = 0.0
    for j in sorted({0, len(index) - 1}):
        obs, b = pairs[j]
        want, (build, call) = _per_call(pw, obs, b, unc[rows])
        per_call = max(per_call, build / s + call)
        got = out[rows, j]
        with np.errstate(invalid="ignore"):
            ok = (got == want) | (np.abs(got - want) <= 1e-9 * (1 + np.abs(want)))
        if not np.all(ok | (np.isnan(got) & np.isnan(want))):
            pw._batch_failed = True
            return None
    if timing is not None:
        timing["per_call"] = per_call
    return out


def batched_columns(pw: Any, index: list[int], unc: np.ndarray) -> np.ndarray | None:
    """``(S, len(index))`` columns of the :class:`~.pointwise.PointwiseLogLik` ``pw`` from its
    model's batched call, or None (the caller runs the per-call path). The first call at
    ``MEASURE_DRAWS`` or more draws times the batched path on ``PROBE`` observations against
    the per-call one and keeps the faster for the pass."""

    if getattr(pw.model, "instance_densities", None) is None or not index or pw._batch_failed:
        return None
    parts, done = [], list(index)
    if not pw._batch_measured and unc.shape[0] >= MEASURE_DRAWS:
        timing: dict[str, float] = {}
        probe = _run(pw, index[:PROBE], unc, 1, timing)
        if probe is None:
            return None
        pw._batch_measured = True
        if timing["evaluate"] / probe.size >= timing["per_call"]:
            pw._batch_failed = True  # the per-call path is faster for this program
            return None
        parts.append(probe)
        index = index[PROBE:]
    if index:
        rest = _run(pw, index, unc, n_threads())
        if rest is None:
            return None
        parts.append(rest)
    if pw._clock is not None:
        pw._clock.update(len(done), obs=done)
    return np.hstack(parts)
