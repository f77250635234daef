"""Monotone rational-quadratic splines with linear tails: smooth bijections of R, vectorized over
a batch of independent 1-D maps (one per column)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Rows up to which a spline's bins are found by comparing with every knot at once.
FEW_ROWS = 16


@dataclass
class RQSpline:
    """``K`` monotone maps R -> R, each through knots ``(xk[k], yk[k])`` with slopes ``dk[k]``.

    Inside the knots each map is the rational-quadratic interpolant of Gregory & Delbourgo;
    outside it continues linearly with the end slopes, so it is a C1 bijection of R.
    """

    xk: np.ndarray  # (K, M) strictly increasing
    yk: np.ndarray  # (K, M) strictly increasing
    dk: np.ndarray  # (K, M) positive

    def _bins(self, knots: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Flat indices ``k * M + j`` of the bin ``[knots[k, j], knots[k, j+1])`` holding each
        ``v[:, k]`` (end bins extended to infinity)."""
        kdim, m = knots.shape
        if v.shape[0] <= FEW_ROWS:
            # a few rows (one point's gradient in an annealing chain): one comparison with
            # every knot counts the knots at or below each value, searchsorted's "right" index,
            # without a Python loop over the maps (8 times faster at one row and 60 maps)
            j = np.count_nonzero(knots[None, :, :] <= v[:, :, None], axis=2)
            return np.clip(j - 1, 0, m - 2) + m * np.arange(kdim)[None, :]
        vt = np.ascontiguousarray(v.T)
        j = np.empty(vt.shape, dtype=np.intp)
        # one small sorted search per map (cache-resident knots) beats one search over all
        for k in range(kdim):
            j[k] = np.searchsorted(knots[k], vt[k], side="right")
        return np.clip(j.T - 1, 0, m - 2) + m * np.arange(kdim)[None, :]

    def _gather(self, idx: np.ndarray) -> tuple[np.ndarray, ...]:
        xk, yk, dk = self.xk.ravel(), self.yk.ravel(), self.dk.ravel()
        return (xk.take(idx), xk.take(idx + 1), yk.take(idx), yk.take(idx + 1), dk.take(idx),
                dk.take(idx + 1))

    def forward(self, x: np.ndarray, second: bool = False) -> tuple[np.ndarray, ...]:
        """Values and slopes at ``x`` (shape ``(n, K)``); with ``second`` also 2nd derivatives."""
        idx = self._bins(self.xk, x)
        x0, x1, y0, y1, d0, d1 = self._gather(idx)
        w, h = x1 - x0, y1 - y0
        s = h / w
        xi = np.clip((x - x0) / w, 0.0, 1.0)
        om = xi * (1.0 - xi)
        c = d1 + d0 - 2.0 * s
        den = s + c * om
        y = y0 + h * (s * xi**2 + d0 * om) / den
        num_d = d1 * xi**2 + 2.0 * s * om + d0 * (1.0 - xi) ** 2
        dy = s**2 * num_d / den**2
        lo = x < self.xk[:, 0]
        hi = x > self.xk[:, -1]
        y = np.where(lo, self.yk[:, 0] + self.dk[:, 0] * (x - self.xk[:, 0]), y)
        y = np.where(hi, self.yk[:, -1] + self.dk[:, -1] * (x - self.xk[:, -1]), y)
        dy = np.where(lo, self.dk[:, 0], np.where(hi, self.dk[:, -1], dy))
        if not second:
            return y, dy
        # d/dxi of num_d/den^2, divided by w
        dnum = 2.0 * d1 * xi + 2.0 * s * (1.0 - 2.0 * xi) - 2.0 * d0 * (1.0 - xi)
        dden = c * (1.0 - 2.0 * xi)
        d2y = s**2 * (dnum * den - 2.0 * num_d * dden) / den**3 / w
        d2y = np.where(lo | hi, 0.0, d2y)
        return y, dy, d2y

    def inverse(self, y: np.ndarray, slopes: bool = False
                ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The ``x`` with ``forward(x) == y`` (closed form: a quadratic in each bin); with
        ``slopes`` also the forward map's derivative at that ``x``."""
        idx = self._bins(self.yk, y)
        x0, x1, y0, y1, d0, d1 = self._gather(idx)
        w, h = x1 - x0, y1 - y0
        s = h / w
        c = d1 + d0 - 2.0 * s
        t = np.clip(y - y0, 0.0, h)
        a = h * (s - d0) + t * c
        b = h * d0 - t * c
        cc = -s * t
        disc = np.maximum(b * b - 4.0 * a * cc, 0.0)
        xi = 2.0 * cc / (-b - np.sqrt(disc))
        xi = np.clip(np.where(t <= 0, 0.0, xi), 0.0, 1.0)
        x = x0 + xi * w
        lo = y < self.yk[:, 0]
        hi = y > self.yk[:, -1]
        x = np.where(lo, self.xk[:, 0] + (y - self.yk[:, 0]) / self.dk[:, 0], x)
        x = np.where(hi, self.xk[:, -1] + (y - self.yk[:, -1]) / self.dk[:, -1], x)
        if not slopes:
            return x
        om = xi * (1.0 - xi)
        den = s + c * om
        dy = s**2 * (d1 * xi**2 + 2.0 * s * om + d0 * (1.0 - xi) ** 2) / den**2
        dy = np.where(lo, self.dk[:, 0], np.where(hi, self.dk[:, -1], dy))
        return x, dy
