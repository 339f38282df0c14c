"""The published tables of scenarios S1..S4 (shared/reference/scenarios.md), built from measured rows.

Each builder takes typed rows (from the analysis) and the user's thresholds, derives the
computed columns (% of baseline, drop %), and returns a generic `Table`. Default thresholds
are the examples scenarios.md gives; suites pass the topology's SLOs instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from reports.tables import Cell, Column, Table, Threshold, Verdict


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
    columns = [Column("rtt_ms", "added RTT (ms)", "{:g}"), Column("tps", "TPS"),
               Column("avg_txn_ms", "avg transaction (ms)", "{:.1f}"), Column("p95_ms", "p95 (ms)", "{:.1f}"),
               Column("write_latency_ms", "write latency (ms)", "{:.1f}"),
               Column("tps_pct", "TPS % of baseline", "{:.1f}")]
    if all(s.write_latency_ms is None for s in ordered):
        columns = [c for c in columns if c.key != "write_latency_ms"]
    table = Table(title, columns, rows, thresholds, notes=("Baseline = the lowest-RTT step.",))
    return replace(table, extra_lines=(_recommended_rtt(table),), overall_verdict=False)


def _recommended_rtt(table: Table) -> str:
    """The largest RTT up to which every step passes: the figure a design review asks for."""
    best: Cell = None
    for row in table.rows:
        if table.row_verdict(row) is Verdict.FAIL:
            break
        best = row["rtt_ms"]
    if best is None:
        return "Recommended max RTT: none of the measured steps meets the thresholds"
    return f"Recommended max RTT: {best:g} ms" if isinstance(best, int | float) else f"Recommended max RTT: {best}"


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
               Column("tps_after", "TPS after"), Column("drop_pct", "drop %", "{:.1f}"),
               Column("recover_s", "time to recover (s)", "{:.0f}"), Column("resync_gb", "resync (GB)", "{:.2f}"),
               Column("resync_rate", "resync rate (GB/min)", "{:.2f}"), Column("resync_eta_s", "resync ETA (s)", "{:.0f}"),
               Column("note", "note", text=True)]
    thresholds = [Threshold("drop_pct", "<=", 100.0 - min_tps_after_pct, "TPS after"),
                  Threshold("recover_s", "<=", max_recover_s, "recovery")]
    notes = ("Recovered = back inside the steady-state band for the sustained window.",
             "No time to recover (—) means the run ended before a new steady state.")
    return Table(title, columns, rows, thresholds, notes)


# --- S3: site failure -----------------------------------------------------------------------------

@dataclass(frozen=True)
class SiteFailure:
    site: str
    tps_before: float
    tps_after: float | None
    p95_before_ms: float | None
    p95_after_ms: float | None
    failover_s: float | None
    restarted: str = ""


def s3_site_table(failures: Sequence[SiteFailure], *, min_tps_after_pct: float = 80.0, max_failover_s: float = 35.0,
                  title: str = "S3 site failure") -> Table:
    rows: list[dict[str, Cell]] = [
        {"site": f.site, "tps_before": f.tps_before, "tps_after": f.tps_after,
         "drop_pct": _drop_pct(f.tps_before, f.tps_after), "p95_before_ms": f.p95_before_ms,
         "p95_after_ms": f.p95_after_ms, "failover_s": f.failover_s, "restarted": f.restarted or None} for f in failures]
    columns = [Column("site", "site lost", text=True), Column("tps_before", "TPS before"), Column("tps_after", "TPS after"),
               Column("drop_pct", "drop %", "{:.1f}"), Column("p95_before_ms", "p95 before (ms)", "{:.1f}"),
               Column("p95_after_ms", "p95 after (ms)", "{:.1f}"), Column("failover_s", "failover (s)", "{:.1f}"),
               Column("restarted", "restarted where", text=True)]
    thresholds = [Threshold("drop_pct", "<=", 100.0 - min_tps_after_pct, "TPS after"),
                  Threshold("failover_s", "<=", max_failover_s, "failover")]
    return Table(title, columns, rows, thresholds)


# --- S4: application failover ---------------------------------------------------------------------

@dataclass(frozen=True)
class FailoverPhases:
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


def s4_failover_table(runs: Sequence[FailoverPhases], *, max_total_s: float = 35.0, max_lost_commits: int = 0,
                      title: str = "S4 application failover") -> Table:
    rows: list[dict[str, Cell]] = [
        {"kind": r.kind, "detect_s": r.detect_s, "promote_s": r.promote_s, "databases_online_s": r.databases_online_s,
         "listener_s": r.listener_s, "first_commit_s": r.first_commit_s, "total_s": r.total_s,
         "client_reconnect_s": r.client_reconnect_s, "lost_commits": r.lost_commits} for r in runs]
    # SQL Server reports two more phases; a cluster that does not (the lab) gets no empty columns
    server_phases = [Column("databases_online_s", "databases online (s)", "{:.1f}"),
                     Column("listener_s", "listener (s)", "{:.1f}")]
    shown_phases = [c for c in server_phases if any(row[c.key] is not None for row in rows)]
    columns = [Column("kind", "failover", text=True), Column("detect_s", "detect (s)", "{:.1f}"),
               Column("promote_s", "promote (s)", "{:.1f}"), *shown_phases,
               Column("first_commit_s", "first commit (s)", "{:.1f}"),
               Column("total_s", "total (s)", "{:.1f}"), Column("client_reconnect_s", "client reconnect (s)", "{:.1f}"),
               Column("lost_commits", "lost commits", "{:d}")]
    thresholds = [Threshold("total_s", "<=", max_total_s, "failover"),
                  Threshold("lost_commits", "<=", max_lost_commits, "acknowledged commits lost")]
    notes = ("detect = in effect → detected; promote = detected → promoted (the role change); "
             + ("databases online = promoted → every database online on the new primary; listener = → listener "
                "online; " if shown_phases else "")
             + "first commit = promoted → first commit; total = in effect → first commit.",)
    return Table(title, columns, rows, thresholds, notes)
