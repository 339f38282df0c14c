"""S2's published table (component failures): rows and thresholds in, a `Table` out (see `harness_suites.columns`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness_suites.columns import drop_pct
from reports.tables import Cell, Column, Table, Threshold


@dataclass(frozen=True)
class ComponentFailure:
    """`note` says e.g. that one lab analog serves two fault kinds (disk = disk group with dedup)."""

    failure: str
    tps_before: float
    tps_after: float | None
    recover_s: float | None
    resync_gb: float | None = None
    resync_gb_per_min: float | None = None
    resync_eta_s: float | None = None
    note: str = ""


def s2_failure_table(failures: Sequence[ComponentFailure], *, min_tps_after_pct: float = 80.0,
                     max_recover_s: float = 900.0, title: str = "S2 component failure matrix") -> Table:
    rows: list[dict[str, Cell]] = [
        {"failure": f.failure, "tps_before": f.tps_before, "tps_after": f.tps_after,
         "drop_pct": drop_pct(f.tps_before, f.tps_after), "recover_s": f.recover_s, "resync_gb": f.resync_gb,
         "resync_rate": f.resync_gb_per_min, "resync_eta_s": f.resync_eta_s, "note": f.note or None} for f in failures]
    columns = [Column("failure", "failure", text=True), Column("tps_before", "TPS before"),
               Column("tps_after", "TPS after"), Column("drop_pct", "drop %", "{:.1f}", better="lower", points=True),
               Column("recover_s", "time to recover (s)", "{:.0f}", better="lower", floor=1.0),
               Column("resync_gb", "resync (GB)", "{:.2f}"),
               Column("resync_rate", "resync rate (GB/min)", "{:.2f}"),
               Column("resync_eta_s", "resync ETA (s)", "{:.0f}", better="lower", floor=1.0),
               Column("note", "note", text=True)]
    thresholds = [Threshold("drop_pct", "<=", 100.0 - min_tps_after_pct, "TPS after"),
                  Threshold("recover_s", "<=", max_recover_s, "recovery")]
    notes = ("Recovered = back inside the steady-state band for the sustained window.",
             "No time to recover (—) means the run ended before a new steady state.")
    return Table(title, columns, rows, thresholds, notes)
