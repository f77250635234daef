"""Toolchain and model-API benchmark: build times, gradient throughput, NUTS speed.

Run: ``python3 -m benchmarks.toolchain [--skip-runtime]``. The cold runtime build (bridge object
and precompiled header, once per toolchain) happens in a temporary cache and takes minutes on a
busy machine; ``--skip-runtime`` reuses the user cache's runtime for the cold model build.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT  # noqa: E402
from stanlogz.stan.model import StanModel  # noqa: E402
from stanlogz.toolchain import build, cache_root, ensure_base, find_toolchain  # noqa: E402

PROGRAMS = ROOT / "stan_models" / "tests"


def rate(fn, seconds: float = 1.0) -> float:
    """Calls per second of ``fn`` over about ``seconds``."""
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(200):
            fn()
        n += 200
        elapsed = time.perf_counter() - start
        if elapsed > seconds:
            return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-runtime", action="store_true",
                        help="do not time the one-off runtime build in an empty cache")
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    tc = find_toolchain()
    user_base = ensure_base(tc)
    program = PROGRAMS / "normal.stan"
    tmp = Path(tempfile.mkdtemp(prefix="stanlogz-bench-"))
    old = os.environ.get("STANLOGZ_CACHE")
    try:
        os.environ["STANLOGZ_CACHE"] = str(tmp / "cache")
        if args.skip_runtime:
            (cache_root() / "base" / user_base.name).symlink_to(user_base)
        else:
            t = time.perf_counter()
            ensure_base(tc)
            rows.append(("runtime build (once per toolchain)", f"{time.perf_counter() - t:.1f} s"))
        t = time.perf_counter()
        build(program)
        rows.append(("cold model build (normal.stan)", f"{time.perf_counter() - t:.1f} s"))
    finally:
        if old is None:
            os.environ.pop("STANLOGZ_CACHE", None)
        else:
            os.environ["STANLOGZ_CACHE"] = old
        shutil.rmtree(tmp, ignore_errors=True)

    models = {name: StanModel.from_file(PROGRAMS / f"{name}.stan", PROGRAMS / f"{name}.json",
                                        seed=1)
              for name in ("normal", "eight_schools", "transforms")}
    t = time.perf_counter()
    for _ in range(20):
        StanModel.from_file(program, PROGRAMS / "normal.json")
    per_load = (time.perf_counter() - t) / 20 * 1e3
    rows.append(("cached load (build + construct)", f"{per_load:.1f} ms"))

    for name in ("eight_schools", "transforms"):
        model = models[name]
        bs = model.bridgestan_model()
        x = np.random.default_rng(0).normal(scale=0.3, size=model.dim)
        xs = np.random.default_rng(1).normal(scale=0.3, size=(2000, model.dim))
        r_bs = rate(lambda bs=bs, x=x: bs.log_density_gradient(x, propto=False))
        r_ours = rate(lambda model=model, x=x: model.log_density_gradient(x))
        t = time.perf_counter()
        reps = 5
        for _ in range(reps):
            model.log_density_gradient_many(xs)
        r_batch = reps * len(xs) / (time.perf_counter() - t)
        rows.append((f"gradients/s {name} (dim {model.dim}) bridgestan.StanModel",
                     f"{r_bs:,.0f}"))
        rows.append((f"gradients/s {name} StanModel.log_density_gradient", f"{r_ours:,.0f}"))
        rows.append((f"gradients/s {name} log_density_gradient_many", f"{r_batch:,.0f}"))

    for name, model in models.items():
        fit = model.nuts(chains=4, warmup=1000, draws=1000, seed=1)
        per_1000 = fit.seconds / 4  # 4 chains x (1000 warmup + 1000 draws), run in parallel
        rows.append((f"NUTS {name}: s per 1000 draws (+1000 warmup), 4 chains parallel",
                     f"{per_1000:.3f} s (wall {fit.seconds:.2f} s, "
                     f"{fit.n_gradient_evals:,} grads)"))

    width = max(len(k) for k, _ in rows)
    print(f"{'measure':<{width}}  value")
    print("-" * (width + 30))
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
