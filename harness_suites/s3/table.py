"""S3's published table (site failure): rows and thresholds in, a `Table` out (see `harness_suites.columns`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness_suites.columns import SECONDS_FLOOR, drop_pct
from reports.tables import Cell, Column, Table, Threshold


@dataclass(frozen=True)
class S3Row:
    site: str
    tps_before: float
    tps_after: float | None
    p95_before_ms: float | None
    p95_after_ms: float | None
    failover_s: float | None
    restarted: str = ""


def s3_site_table(failures: Sequence[S3Row], *, min_tps_after_pct: float = 80.0, max_failover_s: float = 35.0,
                  title: str = "S3 site failure") -> Table:
    rows: list[dict[str, Cell]] = [
        {"site": f.site, "tps_before": f.tps_before, "tps_after": f.tps_after,
         "drop_pct": drop_pct(f.tps_before, f.tps_after), "p95_before_ms": f.p95_before_ms,
         "p95_after_ms": f.p95_after_ms, "failover_s": f.failover_s, "restarted": f.restarted or None} for f in failures]
    columns = [Column("site", "site lost", text=True), Column("tps_before", "TPS before"), Column("tps_after", "TPS after"),
               Column("drop_pct", "drop %", "{:.1f}", better="lower", points=True),
               Column("p95_before_ms", "p95 before (ms)", "{:.1f}"),
               Column("p95_after_ms", "p95 after (ms)", "{:.1f}"),
               Column("failover_s", "failover (s)", "{:.1f}", better="lower", floor=SECONDS_FLOOR),
               Column("restarted", "restarted where", text=True)]
    thresholds = [Threshold("drop_pct", "<=", 100.0 - min_tps_after_pct, "TPS after"),
                  Threshold("failover_s", "<=", max_failover_s, "failover")]
    return Table(title, columns, rows, thresholds)


@dataclass(frozen=True)
class PartitionRow:
    """A cut that moves no power (the inter-site link, the witness): what the storage decided beside what the
    business felt. `served_by`, `replica`, `link`, `arbiter`: the metro observer's states while the cut held."""

    case: str
    tps_before: float
    tps_during: float | None  # the steady level while cut (None: none was reached)
    tps_after: float | None
    outage_s: float | None
    served_by: str
    replica: str
    link: str
    arbiter: str
    in_sync_after_revert_s: float | None
    mean_tps_during: float | None = None  # every second of the cut, a stop included


def s3_partition_table(cases: Sequence[PartitionRow], *, min_tps_after_pct: float = 80.0,
                       max_in_sync_s: float = 300.0, max_stall_s: float | None = None,
                       title: str = "S3 partitions: what the storage decided") -> Table:
    """`max_stall_s` (`slo.partition_stall_max_s`) judges the seconds without a commit while cut; unset, they are
    shown, not judged (the scenario says a stop only the revert ended as a finding)."""
    rows: list[dict[str, Cell]] = [
        {"case": c.case, "tps_before": c.tps_before, "mean_tps_during": c.mean_tps_during,
         "tps_during": c.tps_during, "tps_after": c.tps_after,
         "drop_pct": drop_pct(c.tps_before, c.tps_during), "outage_s": c.outage_s, "served_by": c.served_by,
         "replica": c.replica, "link": c.link, "arbiter": c.arbiter, "in_sync_s": c.in_sync_after_revert_s}
        for c in cases]
    columns = [Column("case", "cut", text=True), Column("tps_before", "TPS before"),
               Column("mean_tps_during", "TPS while cut (mean)"),
               Column("tps_during", "TPS while cut (steady)"),
               Column("drop_pct", "drop % while cut", "{:.1f}", better="lower", points=True),
               Column("tps_after", "TPS after revert"),
               Column("outage_s", "no commit (s)", "{:.0f}", better="lower"),
               Column("served_by", "served by (storage said)", text=True),
               Column("replica", "replica", text=True), Column("link", "link", text=True),
               Column("arbiter", "arbiter", text=True),
               Column("in_sync_s", "in sync again (s after revert)", "{:.1f}", better="lower", floor=SECONDS_FLOOR)]
    thresholds = [Threshold("drop_pct", "<=", 100.0 - min_tps_after_pct, "TPS while cut"),
                  Threshold("in_sync_s", "<=", max_in_sync_s, "time at risk"),
                  *([Threshold("outage_s", "<=", max_stall_s, "stop of commits")] if max_stall_s is not None else [])]
    return Table(title, columns, rows, thresholds)
