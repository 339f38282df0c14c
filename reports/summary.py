"""The few lines a person watching the terminal reads at the end of a run: scenario, verdict, key numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

_VERDICTS = {
    "passed": "PASS",
    "findings": "PASS with findings",
    "failed": "FAIL  (SLO violated)",
    "error": "ERROR (harness or infrastructure broken)",
    "skipped": "SKIP",
    "inconclusive": "INCONCLUSIVE (not failed: --inconclusive fail)",
}


_COUNTED = {"findings": "passed with findings"}


@dataclass(frozen=True)
class Outcome:
    """One test's result as the plugin saw it; `status` is passed / findings / failed / error / skipped /
    inconclusive (`reports.outcome` orders them)."""

    test: str
    scenario: str
    status: str
    numbers: Mapping[str, str] = field(default_factory=dict)
    reason: str = ""
    findings: Sequence[str] = ()  # what no threshold judges: an outage inside a window meant to be steady


def _first_line(text: str, width: int = 110) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def format_summary(outcomes: Sequence[Outcome], report: str | None = None) -> str:
    """Plain text, no colours: it also ends up in CI logs."""
    if not outcomes:
        return "resilience summary: no experiment ran"
    lines = ["resilience summary"]
    for o in sorted(outcomes, key=lambda o: (o.scenario, o.test)):
        lines.append(f"  {o.scenario or '--':<4} {_VERDICTS.get(o.status, o.status.upper()):<42} {o.test}")
        if o.numbers:
            lines.append("       " + ", ".join(f"{k} {v}" for k, v in o.numbers.items()))
        if o.reason and o.status in ("failed", "error", "inconclusive"):
            lines.append(f"       why: {_first_line(o.reason)}")
        lines += [f"       finding: {_first_line(f)}" for f in o.findings]
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in _VERDICTS}
    lines.append("  " + ", ".join(f"{n} {_COUNTED.get(s, s)}" for s, n in counts.items() if n))
    if report:
        lines.append(f"  report: {report}")
    return "\n".join(lines)
