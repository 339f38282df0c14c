"""The history is the contract: every event kind a plot or an analysis reads is written by some role."""

from __future__ import annotations

import re
from pathlib import Path

from harness_kernel.history import EventKind
from reports.plots import MARKED_EVENTS

ROOT = Path(__file__).resolve().parents[4]
WRITES = re.compile(r"(?:\.record\(|ServerEvent\([^)]*?)\s*(?:kind=)?EventKind\.([A-Z_]+)|(EventKind\.[A-Z_]+) if ")
READS = re.compile(r"\.(?:events|first|last)\(\s*EventKind\.([A-Z_]+)")


def sources(*packages: str) -> str:
    return "\n".join(path.read_text() for package in packages for path in (ROOT / package).rglob("*.py"))


def written() -> set[EventKind]:
    text = sources("harness", "faults", "workloads", "harness_platforms")
    kinds = {EventKind[m.group(1)] for m in WRITES.finditer(text) if m.group(1)}
    # a cluster names its HA manager's events in a conditional expression: EventKind.DETECTED if ... else ...
    kinds |= {EventKind[name] for name in re.findall(r"EventKind\.([A-Z_]+) if ", text)}
    kinds |= {EventKind[name] for name in re.findall(r"else\s+EventKind\.([A-Z_]+)", text)}
    return kinds


def test_every_event_kind_a_plot_or_an_analysis_reads_is_written_by_someone() -> None:
    read = set(MARKED_EVENTS) | {EventKind[m.group(1)] for m in READS.finditer(sources("harness/analysis", "reports"))}
    assert read - written() == set()


def test_first_commit_is_written_by_the_experiment() -> None:
    assert EventKind.FIRST_COMMIT in written()
