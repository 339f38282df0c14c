"""S6's published table (mixed workloads and N-1): rows and thresholds in, a `Table` out (see `harness_suites.columns`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness_suites.columns import IOPS_FLOOR, MS_FLOOR, change_pct
from reports.tables import Cell, Column, Table, Threshold
from workloads.mail import InstanceResult, MailResults


@dataclass(frozen=True)
class Interference:
    """Each workload alone, then together, in one configuration (all nodes, or N-1)."""

    configuration: str
    tps_alone: float | None
    tps_mixed: float | None
    txn_ms_alone: float | None
    txn_ms_mixed: float | None
    iops_alone: float | None
    iops_mixed: float | None
    io_ms_alone: float | None
    io_ms_mixed: float | None


def s6_interference_table(runs: Sequence[Interference], *, min_tps_kept_pct: float = 80.0, notes: Sequence[str] = (),
                          title: str = "S6 mixed-workload interference and N-1") -> Table:
    rows: list[dict[str, Cell]] = [
        {"configuration": r.configuration, "tps_alone": r.tps_alone, "tps_mixed": r.tps_mixed,
         "tps_change": change_pct(r.tps_alone, r.tps_mixed), "txn_ms_alone": r.txn_ms_alone,
         "txn_ms_mixed": r.txn_ms_mixed, "iops_alone": r.iops_alone, "iops_mixed": r.iops_mixed,
         "iops_change": change_pct(r.iops_alone, r.iops_mixed), "io_ms_alone": r.io_ms_alone,
         "io_ms_mixed": r.io_ms_mixed} for r in runs]
    columns = [Column("configuration", "configuration", text=True), Column("tps_alone", "TPS alone"),
               Column("tps_mixed", "TPS mixed"), Column("tps_change", "TPS change %", "{:+.2f}", better="higher", points=True),
               Column("txn_ms_alone", "avg txn alone (ms)", "{:.1f}"), Column("txn_ms_mixed", "avg txn mixed (ms)", "{:.1f}"),
               Column("iops_alone", "I/O IOPS alone"), Column("iops_mixed", "I/O IOPS mixed"),
               Column("iops_change", "IOPS change %", "{:+.2f}", better="higher", points=True),
               Column("io_ms_alone", "I/O latency alone (ms)", "{:.2f}"),
               Column("io_ms_mixed", "I/O latency mixed (ms)", "{:.2f}")]
    thresholds = [Threshold("tps_change", ">=", min_tps_kept_pct - 100.0, "TPS kept with the I/O workload")]
    return Table(title, columns, rows, thresholds, (
        "alone = each workload by itself; mixed = both at once; change % = mixed against alone "
        "(the published shape: TPS -3.81 %, mail IOPS -12 %)", *notes))


def esrp_table(results: MailResults, *, configuration: str, window_s: float, db_read_max_ms: float | None = None,
               log_write_max_ms: float | None = None, notes: Sequence[str] = (),
               title: str = "S6 mail workload, ESRP style") -> Table:
    """Per instance and in total: database IOPS achieved against target, database read and log write latency
    (mean, 95th, 99th percentile), as a Jetstress result reports them. Judged only where the user set a
    limit (no source with a default was found)."""
    def row(r: InstanceResult) -> dict[str, Cell]:
        return {"instance": r.name, "target_iops": r.target_db_iops, "db_iops": r.db_iops,
                "achieved_pct": 100 * r.db_achieved if r.db_achieved is not None else None,
                "db_read_ms": r.db_read.mean_ms, "db_read_p95_ms": r.db_read.percentiles_ms.get(95.0),
                "db_read_p99_ms": r.db_read.percentiles_ms.get(99.0), "db_write_ms": r.db_write.mean_ms,
                "log_iops": r.log_iops, "log_write_ms": r.log_write.mean_ms,
                "log_write_p95_ms": r.log_write.percentiles_ms.get(95.0),
                "log_write_p99_ms": r.log_write.percentiles_ms.get(99.0)}
    columns = [Column("instance", "instance", text=True), Column("target_iops", "DB target IOPS"),
               Column("db_iops", "DB IOPS", better="higher", floor=IOPS_FLOOR), Column("achieved_pct", "achieved %", "{:.1f}"),
               Column("db_read_ms", "DB read avg (ms)", "{:.2f}", better="lower", floor=MS_FLOOR),
               Column("db_read_p95_ms", "DB read p95 (ms)", "{:.2f}"), Column("db_read_p99_ms", "DB read p99 (ms)", "{:.2f}"),
               Column("db_write_ms", "DB write avg (ms)", "{:.2f}"), Column("log_iops", "log writes/s"),
               Column("log_write_ms", "log write avg (ms)", "{:.2f}", better="lower", floor=MS_FLOOR),
               Column("log_write_p95_ms", "log write p95 (ms)", "{:.2f}"),
               Column("log_write_p99_ms", "log write p99 (ms)", "{:.2f}")]
    thresholds = [t for t in (
        Threshold("db_read_ms", "<=", db_read_max_ms, "database read latency") if db_read_max_ms is not None else None,
        Threshold("log_write_ms", "<=", log_write_max_ms, "log write latency") if log_write_max_ms is not None else None)
        if t is not None]
    return Table(title, columns, [row(r) for r in (*results.instances, results.total())], thresholds, (
        f"{configuration}, over {window_s:g} s: each instance a database (random 32 KiB, 60 % reads, at its target "
        "rate) and its log (sequential synchronous 4 KiB writes); latencies are fio's completion latencies",
        *(() if thresholds else ("not judged: no latency limit set (--mail-db-read-ms, --mail-log-write-ms); "
                                 "no source with a default was found",)),
        *notes), verdict_column=bool(thresholds))
