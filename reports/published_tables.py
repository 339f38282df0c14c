"""The published tables of scenarios S1..S7 (shared/reference/scenarios.md), built from measured rows.

Each builder takes typed rows (from the analysis) and the user's thresholds, derives the
computed columns (% of baseline, drop %), and returns a generic `Table`. Default thresholds
are the examples scenarios.md gives; suites pass the topology's SLOs instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from reports.tables import Cell, CellVerdict, Column, Table, Threshold
from workloads.mail import InstanceResult, MailResults

# The smallest change of a key figure that may count as a regression across nights, in its unit: below these
# the lab's run-to-run wobble, and no change a change board would act on (24 ms of detection time).
SECONDS_FLOOR = 0.25
MS_FLOOR = 0.5
TPS_FLOOR = 10.0
IOPS_FLOOR = 5.0


def _pct(part: float | None, whole: float | None) -> float | None:
    if part is None or whole is None or whole == 0:
        return None
    return 100.0 * part / whole


def _drop_pct(before: float | None, after: float | None) -> float | None:
    share = _pct(after, before)
    return None if share is None else 100.0 - share


# --- S1: inter-site latency sweep -----------------------------------------------------------------

@dataclass(frozen=True)
class LatencyStep:
    """One RTT step of the sweep; the first step (lowest RTT) is the baseline."""

    rtt_ms: float
    tps: float
    avg_txn_ms: float
    p95_ms: float | None = None
    write_latency_ms: float | None = None


def s1_latency_table(steps: Sequence[LatencyStep], *, min_tps_pct: float = 80.0,
                     max_avg_txn_ms: float | None = None, title: str = "S1 inter-site latency sweep") -> Table:
    ordered = sorted(steps, key=lambda s: s.rtt_ms)
    baseline = ordered[0].tps if ordered else None
    rows: list[dict[str, Cell]] = [
        {"rtt_ms": s.rtt_ms, "tps": s.tps, "avg_txn_ms": s.avg_txn_ms, "p95_ms": s.p95_ms,
         "write_latency_ms": s.write_latency_ms, "tps_pct": _pct(s.tps, baseline)} for s in ordered]
    thresholds = [Threshold("tps_pct", ">=", min_tps_pct, "throughput kept")]
    if max_avg_txn_ms is not None:
        thresholds.append(Threshold("avg_txn_ms", "<=", max_avg_txn_ms, "transaction time"))
    columns = [Column("rtt_ms", "added RTT (ms)", "{:g}"), Column("tps", "TPS", better="higher", floor=TPS_FLOOR),
               Column("avg_txn_ms", "avg transaction (ms)", "{:.1f}", better="lower", floor=MS_FLOOR),
               Column("p95_ms", "p95 (ms)", "{:.1f}"),
               Column("write_latency_ms", "write latency (ms)", "{:.1f}"),
               Column("tps_pct", "TPS % of baseline", "{:.1f}")]
    if all(s.write_latency_ms is None for s in ordered):
        columns = [c for c in columns if c.key != "write_latency_ms"]
    table = Table(title, columns, rows, thresholds, notes=("Baseline = the lowest-RTT step.",))
    return replace(table, extra_lines=(_recommended_rtt(table),), overall_verdict=False)


def largest_kept_rtt(table: Table) -> float | None:
    """The largest RTT up to which every step passes: the figure a design review asks for (None: not even the first)."""
    best: float | None = None
    for row in table.rows:
        if table.row_verdict(row) is not CellVerdict.PASS or not isinstance(row["rtt_ms"], int | float):
            break
        best = float(row["rtt_ms"])
    return best


def _recommended_rtt(table: Table) -> str:
    best = largest_kept_rtt(table)
    if best is None:
        return "Recommended max RTT: none of the measured steps meets the thresholds"
    return f"Recommended max RTT: {best:g} ms"


# --- S2: component failure matrix ----------------------------------------------------------------

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
         "drop_pct": _drop_pct(f.tps_before, f.tps_after), "recover_s": f.recover_s, "resync_gb": f.resync_gb,
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


# --- S3: site failure -----------------------------------------------------------------------------

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
         "drop_pct": _drop_pct(f.tps_before, f.tps_after), "p95_before_ms": f.p95_before_ms,
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
         "drop_pct": _drop_pct(c.tps_before, c.tps_during), "outage_s": c.outage_s, "served_by": c.served_by,
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


# --- S4: application failover ---------------------------------------------------------------------

@dataclass(frozen=True)
class S4Row:
    """Phase durations in seconds, measured from the fault being in effect."""

    kind: str
    detect_s: float | None
    promote_s: float | None
    first_commit_s: float | None
    total_s: float | None
    client_reconnect_s: float | None
    lost_commits: int | None
    databases_online_s: float | None = None
    listener_s: float | None = None


def s4_failover_table(runs: Sequence[S4Row], *, max_total_s: float = 35.0, max_lost_commits: int = 0,
                      title: str = "S4 application failover") -> Table:
    rows: list[dict[str, Cell]] = [
        {"kind": r.kind, "detect_s": r.detect_s, "promote_s": r.promote_s, "databases_online_s": r.databases_online_s,
         "listener_s": r.listener_s, "first_commit_s": r.first_commit_s, "total_s": r.total_s,
         "client_reconnect_s": r.client_reconnect_s, "lost_commits": r.lost_commits} for r in runs]
    # SQL Server reports two more phases; a cluster that does not (the lab) gets no empty columns
    server_phases = [Column("databases_online_s", "databases online (s)", "{:.1f}"),
                     Column("listener_s", "listener (s)", "{:.1f}")]
    shown_phases = [c for c in server_phases if any(row[c.key] is not None for row in rows)]
    columns = [Column("kind", "failover", text=True),
               Column("detect_s", "detect (s)", "{:.1f}", better="lower", floor=SECONDS_FLOOR),
               Column("promote_s", "promote (s)", "{:.1f}"), *shown_phases,
               Column("first_commit_s", "first commit (s)", "{:.1f}"),
               Column("total_s", "total (s)", "{:.1f}", better="lower", floor=SECONDS_FLOOR),
               Column("client_reconnect_s", "client reconnect (s)", "{:.1f}", better="lower",
                      floor=SECONDS_FLOOR),
               Column("lost_commits", "lost commits", "{:d}", better="lower")]
    thresholds = [Threshold("total_s", "<=", max_total_s, "failover"),
                  Threshold("lost_commits", "<=", max_lost_commits, "acknowledged commits lost")]
    notes = ("detect = in effect → detected; promote = detected → promoted (the role change); "
             + ("databases online = promoted → every database online on the new primary; listener = → listener "
                "online; " if shown_phases else "")
             + "first commit = promoted → first commit; total = in effect → first commit.",)
    return Table(title, columns, rows, thresholds, notes)


@dataclass(frozen=True)
class StandbyLoss:
    """The standby's host lost under load: the primary must stay and the writers stall no longer than tolerated."""

    kind: str
    stall_s: float  # the longest commit gap the clients saw (0: none longer than the driver's gap threshold)
    lost_commits: int | None
    primary_stayed: bool
    at_risk_s: float | None  # fewer in-sync copies than before the fault, as the cluster said


def s4_standby_table(runs: Sequence[StandbyLoss], *, max_stall_s: float = 5.0, max_lost_commits: int = 0,
                     max_at_risk_s: float = 300.0, title: str = "S4 standby loss") -> Table:
    rows: list[dict[str, Cell]] = [
        {"kind": r.kind, "stall_s": r.stall_s, "lost_commits": r.lost_commits,
         "primary": "stayed" if r.primary_stayed else "moved", "at_risk_s": r.at_risk_s} for r in runs]
    columns = [Column("kind", "failure", text=True),
               Column("stall_s", "write stall (s)", "{:.2f}", better="lower", floor=SECONDS_FLOOR),
               Column("lost_commits", "lost commits", "{:d}", better="lower"),
               Column("primary", "primary", text=True),
               Column("at_risk_s", "time at risk (s)", "{:.0f}", better="lower", floor=1.0)]
    thresholds = [Threshold("stall_s", "<=", max_stall_s, "tolerated stall"),
                  Threshold("lost_commits", "<=", max_lost_commits, "acknowledged commits lost"),
                  Threshold("at_risk_s", "<=", max_at_risk_s, "time at risk")]
    return Table(title, columns, rows, thresholds, (
        "write stall = the longest commit gap the clients saw while the standby was lost; time at risk = how long "
        "the cluster said it held fewer in-sync copies than before the fault.",))


# --- S5: live migration across sites -------------------------------------------------------------

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
         "after_pct": _pct(s.tps_after, s.tps_before), "min_tps": s.min_tps, "migration_s": s.migration_s,
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


# --- S6: mixed-workload interference and N-1 ------------------------------------------------------

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


def _change_pct(alone: float | None, mixed: float | None) -> float | None:
    share = _pct(mixed, alone)
    return None if share is None else share - 100.0


def s6_interference_table(runs: Sequence[Interference], *, min_tps_kept_pct: float = 80.0, notes: Sequence[str] = (),
                          title: str = "S6 mixed-workload interference and N-1") -> Table:
    rows: list[dict[str, Cell]] = [
        {"configuration": r.configuration, "tps_alone": r.tps_alone, "tps_mixed": r.tps_mixed,
         "tps_change": _change_pct(r.tps_alone, r.tps_mixed), "txn_ms_alone": r.txn_ms_alone,
         "txn_ms_mixed": r.txn_ms_mixed, "iops_alone": r.iops_alone, "iops_mixed": r.iops_mixed,
         "iops_change": _change_pct(r.iops_alone, r.iops_mixed), "io_ms_alone": r.io_ms_alone,
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


# --- S6: the mail workload as an ESRP reviewer reads it -----------------------------------------------

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


# --- S7: backup under load --------------------------------------------------------------------------

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
         "tps_before": c.tps_before, "tps_during": c.tps_during, "tps_change": _change_pct(c.tps_before, c.tps_during),
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
