"""S1's published table (inter-site latency sweep): rows and thresholds in, a `Table` out (see `harness_suites.columns`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from harness_suites.columns import MS_FLOOR, TPS_FLOOR, pct
from reports.tables import Cell, CellVerdict, Column, Table, Threshold


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
         "write_latency_ms": s.write_latency_ms, "tps_pct": pct(s.tps, baseline)} for s in ordered]
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
