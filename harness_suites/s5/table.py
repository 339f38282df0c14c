"""S5's published table (live migration across sites): rows and thresholds in, a `Table` out (see `harness_suites.columns`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness_suites.columns import SECONDS_FLOOR, TPS_FLOOR, pct
from reports.tables import Cell, Column, Table, Threshold


@dataclass(frozen=True)
class MigrationStep:
    """One migration at one added RTT; `stun_s` is the longest commit gap the clients saw during it."""

    rtt_ms: float
    tps_before: float
    tps_during: float | None
    tps_after: float | None
    min_tps: float | None
    migration_s: float | None
    stun_s: float | None
    drs: str = ""  # how DRS may act on the migrated VM (its automation level and should rule), or what it did


def s5_migration_table(steps: Sequence[MigrationStep], *, min_tps_after_pct: float = 80.0, max_stun_s: float = 5.0,
                       gap_threshold_s: float = 0.5, notes: Sequence[str] = (),
                       title: str = "S5 live migration across sites") -> Table:
    rows: list[dict[str, Cell]] = [
        {"rtt_ms": s.rtt_ms, "tps_before": s.tps_before, "tps_during": s.tps_during, "tps_after": s.tps_after,
         "after_pct": pct(s.tps_after, s.tps_before), "min_tps": s.min_tps, "migration_s": s.migration_s,
         "stun_s": s.stun_s} for s in sorted(steps, key=lambda s: s.rtt_ms)]
    columns = [Column("rtt_ms", "added RTT (ms)", "{:g}"), Column("tps_before", "TPS before"),
               Column("tps_during", "TPS during"), Column("tps_after", "TPS after"),
               Column("after_pct", "after % of before", "{:.1f}"),
               Column("min_tps", "min TPS (per s)", better="higher", floor=TPS_FLOOR),
               Column("migration_s", "migration (s)", "{:.1f}", better="lower", floor=SECONDS_FLOOR),
               Column("stun_s", "stun seen by clients (s)", "{:.2f}", better="lower",
                      floor=SECONDS_FLOOR)]
    thresholds = [Threshold("after_pct", ">=", min_tps_after_pct, "TPS after"),
                  Threshold("stun_s", "<=", max_stun_s, "tolerated stall", none_holds=True)]
    return Table(title, columns, rows, thresholds, (
        "during = the migration task, start to end; migration = the platform's task (vCenter: start to complete "
        "time); stun = the longest commit gap the clients saw in it "
        f"(— = none longer than {gap_threshold_s:g} s, the driver's gap threshold)", *notes))
