"""S7's published table (backup under load): rows and thresholds in, a `Table` out (see `harness_suites.columns`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness_suites.columns import change_pct
from reports.tables import Cell, Column, Table, Threshold


@dataclass(frozen=True)
class BackupUnderLoad:
    case: str
    size_mb: float | None
    duration_s: float | None
    tps_before: float
    tps_during: float | None
    p95_before_ms: float | None
    p95_during_ms: float | None
    completed: bool = True
    iops_limit: int | None = None  # the vSAN IOPS limit on the disk it wrote to (S7's QoS comparison)
    rate_modelled: bool = False  # the platform's model set its rate (the bound lab's limit)

    @property
    def mb_s(self) -> float | None:
        return self.size_mb / self.duration_s if self.size_mb is not None and self.duration_s else None


def s7_backup_table(cases: Sequence[BackupUnderLoad], *, min_tps_kept_pct: float = 80.0,
                    title: str = "S7 backup under load", operation: str = "backup") -> Table:
    """A backup's table, or a restore's (`operation`): the same columns, the copy's size and rate."""
    rows: list[dict[str, Cell]] = [
        {"case": c.case, "iops_limit": c.iops_limit, "size_mb": c.size_mb, "duration_s": c.duration_s,
         "mb_s": None if c.rate_modelled else c.mb_s, "mb_s_modelled": c.mb_s if c.rate_modelled else None,
         "tps_before": c.tps_before, "tps_during": c.tps_during, "tps_change": change_pct(c.tps_before, c.tps_during),
         "p95_before_ms": c.p95_before_ms, "p95_during_ms": c.p95_during_ms,
         "completed": 1 if c.completed else 0} for c in cases]
    limits = [Column("iops_limit", "IOPS limit (VSAN.iopsLimit)", "{:d}")] if any(c.iops_limit for c in cases) else []
    modelled = ([Column("mb_s_modelled", "throughput, the model's (MB/s)", "{:.1f}")]
                if any(c.rate_modelled for c in cases) else [])
    columns = [Column("case", operation, text=True), *limits, Column("size_mb", "size (MB)", "{:,.1f}"),
               Column("duration_s", "duration (s)", "{:.1f}"),
               Column("mb_s", "throughput (MB/s)", "{:.1f}", better="higher", floor=0.5), *modelled,
               Column("tps_before", "TPS before"), Column("tps_during", "TPS during"),
               Column("tps_change", "TPS impact %", "{:+.2f}", better="higher", points=True),
               Column("p95_before_ms", "p95 before (ms)", "{:.1f}"),
               Column("p95_during_ms", "p95 during (ms)", "{:.1f}"), Column("completed", "completed (1 = yes)", "{:d}")]
    thresholds = [Threshold("tps_change", ">=", min_tps_kept_pct - 100.0, f"TPS kept during the {operation}"),
                  Threshold("completed", ">=", 1, f"{operation} completed")]
    return Table(title, columns, rows, thresholds)
