"""Why the two backends' gradients of posteriordb's kronecker_gp differ (2e-2 relative).

``python3 -m benchmarks.kronecker_gradient`` evaluates the gradient of the program at the
second check point of :func:`stanlogz.stan.backend.check_points` on the interpreter and on the
compiled build (needs it in the cache: ``python3 -m benchmarks.backends corpus --build --only
synthetic_grid_RBF_kernels-kronecker_gp``), compares both with a fourth-order central
difference at three step sizes, and prints the spectrum of the program's ``Sigma1``: where the
components that reach ``eigenvectors_sym(Sigma1)`` (``var1``, ``bw1``) disagree with the
difference, ``Sigma1`` has many eigenvalues equal to its jitter to rounding, where the
eigenvector adjoint (terms 1 / (λ_i − λ_j)) is ill-conditioned.
"""

from __future__ import annotations

import json

import numpy as np

from benchmarks.backends import CORPUS


def main() -> None:
    from stanlogz.stan.backend import check_points
    from stanlogz.stan.interpreted import InterpretedModel
    from stanlogz.stan.model import StanModel
    from stanlogz.toolchain.interpreter import cached_library

    folder = CORPUS / "synthetic_grid_RBF_kernels-kronecker_gp"
    code = (folder / "model.stan").read_text()
    data = json.loads((folder / "data.json").read_text())
    interp = InterpretedModel(code, data, name="model", stan_file=folder / "model.stan", seed=1)
    lib = cached_library(code, "model", [folder])
    if lib is None:
        raise SystemExit("the compiled build is not cached; see the module docstring")
    compiled = StanModel(lib, data, name="model", code=code, seed=1)
    x = check_points(interp.dim)[1]
    g_i = interp.log_density_gradient(x, propto=True)[1]
    g_c = compiled.log_density_gradient(x, propto=True)[1]

    def diff(i: int, h: float) -> float:
        e = np.zeros(x.size)
        e[i] = h
        f = [compiled.log_density(x + t * e, propto=True) for t in (2, 1, -1, -2)]
        return (-f[0] + 8 * f[1] - 8 * f[2] + f[3]) / (12 * h)

    rel = np.abs(g_i - g_c) / np.maximum(1, np.abs(g_c))
    print("| component | interpreted | compiled | difference h=1e-3 | 1e-4 | 1e-5 |")
    print("|---|---|---|---|---|---|")
    for i in np.argsort(-rel)[:4]:
        print(f"| {i} | {g_i[i]:.9g} | {g_c[i]:.9g} | "
              + " | ".join(f"{diff(i, h):.9g}" for h in (1e-3, 1e-4, 1e-5)) + " |")
    theta = interp.constrain(x)
    x1 = np.asarray(data["x1"], dtype=float)
    sigma1 = theta[0] * np.exp(-(x1[:, None] - x1[None, :]) ** 2 * theta[1]) + 1e-5 * np.eye(
        x1.size)
    ev = np.linalg.eigvalsh(sigma1)
    print(f"Sigma1 (var1 {theta[0]:.4g}, bw1 {theta[1]:.4g}): {(ev < 1e-4).sum()} of {ev.size} "
          f"eigenvalues below 1e-4, smallest gap {np.diff(ev).min():.2g}; worst relative "
          f"difference of the two gradients {rel.max():.2g}")


if __name__ == "__main__":
    main()
