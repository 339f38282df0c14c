"""S4's published table (application failover): rows and thresholds in, a `Table` out (see `harness_suites.columns`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness_suites.columns import SECONDS_FLOOR
from reports.tables import Cell, Column, Table, Threshold


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
