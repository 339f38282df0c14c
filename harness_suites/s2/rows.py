"""S2's row of a component failure, from its trials' findings: each figure the median of the trials."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from harness.analysis.resync import mean_rate_bps
from harness.experiment import Findings
from harness_suites.evidence import GB, median_of, tps_after
from harness_suites.s2.table import ComponentFailure


def component_row(label: str, findings: Findings, note: str = "") -> ComponentFailure:
    samples = [(p.t, p.bytes_left) for p in findings.resync]
    total = max((b for _, b in samples), default=0.0)
    rate = mean_rate_bps([s for s in samples if s[1] > 0] + ([(findings.resync_done_t, 0.0)]
                                                            if findings.resync_done_t else []))
    first_eta = next((p.eta_s for p in findings.resync if p.eta_s is not None), None)
    return ComponentFailure(
        failure=label, tps_before=findings.impact.before.mean, tps_after=tps_after(findings),
        recover_s=findings.impact.time_to_recover_s, resync_gb=total / GB if total else None,
        resync_gb_per_min=rate * 60 / GB if rate else None, resync_eta_s=first_eta, note=note)


def component_rows(label: str, trials: Sequence[Findings], note: str = "") -> ComponentFailure:
    """One row for the trials of a component failure: each figure the median of the trials."""
    rows = [component_row(label, f, note) for f in trials]
    if len(rows) == 1:
        return rows[0]
    return ComponentFailure(
        failure=label, tps_before=statistics.median(r.tps_before for r in rows),
        tps_after=median_of([r.tps_after for r in rows]), recover_s=median_of([r.recover_s for r in rows]),
        resync_gb=median_of([r.resync_gb for r in rows]), resync_gb_per_min=median_of([r.resync_gb_per_min for r in rows]),
        resync_eta_s=median_of([r.resync_eta_s for r in rows]),
        note=f"median of {len(rows)} trials" + (f"; {note}" if note else ""))
