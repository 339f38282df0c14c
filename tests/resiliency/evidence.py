"""Turning findings into a scenario's table rows and key numbers."""

from __future__ import annotations

from harness.analysis.resync import mean_rate_bps
from harness.clusters import FailoverForecast
from harness.experiment import Findings
from reports.scenario_tables import ComponentFailure

GB = 1e9


def tps_after(findings: Findings) -> float | None:
    """The level the business runs at once the fault is over (or, if it never ends, during it)."""
    reference = findings.impact.after or findings.impact.during
    return reference.mean if reference else None


def component_row(label: str, findings: Findings, note: str = "") -> ComponentFailure:
    samples = [(p.t, p.bytes_left) for p in findings.resync]
    total = max((b for _, b in samples), default=0.0)
    rate = mean_rate_bps([s for s in samples if s[1] > 0] + ([(findings.resync_done_t, 0.0)]
                                                            if findings.resync_done_t else []))
    first_eta = next((p.eta_s for p in findings.resync if p.eta_s is not None), None)
    return ComponentFailure(
        failure=label, tps_before=findings.impact.baseline.mean, tps_after=tps_after(findings),
        recover_s=findings.impact.time_to_recover_s, resync_gb=total / GB if total else None,
        resync_gb_per_min=rate * 60 / GB if rate else None, resync_eta_s=first_eta, note=note)


def fmt(value: float | None, unit: str = "", digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}{unit}"


def fmt_lost(lost: int | None) -> str:
    return "n/a (no ledger)" if lost is None else str(lost)


def forecast_beside_measured(forecast: FailoverForecast | None, detect_s: float | None,
                             client_rto_s: float | None) -> dict[str, str]:
    """The cluster's own prediction next to the measurement, for a cluster that makes one (SQL Server)."""
    if forecast is None:
        return {}
    return {"detection settings": forecast.detection,
            "detect: forecast / measured": f"{fmt(forecast.detection_s, ' s')} / {fmt(detect_s, ' s')}",
            "RTO: redo estimate / client measured": f"{fmt(forecast.rto_s, ' s')} / {fmt(client_rto_s, ' s')}",
            "RPO: log send queue before the fault": fmt(forecast.rpo_kb, " KB", 0)}
