"""bridgesampling's names and printed displays of evidence results:
:class:`~stanlogz.estimators.base.EvidenceResult` and the comparison of several programs
(``stanlogz.ComparisonResult``)."""

from __future__ import annotations

from typing import Any

from .._util.display import Display, Section, View, alias, per_result


class EvidenceNames(Display):
    """bridgesampling's names on an evidence result, and its printed table."""

    logml = alias("log_z", "bridgesampling's name for ``log_z`` (the log marginal "
                  "likelihood).", float)

    se = alias("log_z_se", "Short name for ``log_z_se``.", float)

    def _display(self) -> View:
        lo, hi = self.interval()
        rows = [["log Z", self.log_z, self.log_z_se, lo, hi]]
        head = (f"{type(self).__name__}: {self.method}, {self.n_draws} draws, "
                f"{self.n_evals} density evaluations, {self.seconds:.1f} s")
        df = "" if self.log_z_df is None else f" (Student-t, {self.log_z_df:.0f} df)"
        table = Section("", ["", "Estimate", "SE", "95% low" + df, "high"], rows)
        return View(head, [table], [f"warning: {w}" for w in self.warnings])


class ComparisonNames(Display):
    """Printed table of the evidence comparison of several programs."""

    log_z = per_result("log_z", "log Z of each program (in the order given).")

    log_z_se = per_result("log_z_se", "se of each program's log Z (in the order given).")

    def _display(self) -> View:
        rows: list[list[Any]] = [[r[0], *r[1:]] for r in self.table()]
        head = (f"{type(self).__name__}: log evidence of {len(self.names)} programs; "
                f"log_bf against the best ({self.names[self.best]})")
        notes = [f"warning ({n}): {w}" for n, r in zip(self.names, self.results, strict=True)
                 for w in r.warnings]
        return View(head, [Section("", ["", *self.header[1:]], rows)], notes)
