"""Capture doctor's run into a directory; replay a capture and say whether doctor reaches the same rows."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from faults.transports.odbc import connecting_with
from harness.capture import store
from harness.capture.replay import serving
from harness.doctor import Findings, examine
from harness.names import Resolver, system_resolver
from harness_kernel.topology.loader import load_topology
from harness_kernel.topology.models import Topology


def capture(topology: Topology, topology_text: str, directory: Path, *,
            resolve: Resolver = system_resolver) -> Findings:
    """Doctor, with every answer kept; the capture written to `directory` (scrubbed and aliased)."""
    findings = examine(topology, capture=True, resolve=resolve)
    store.write(directory, topology, topology_text, [asdict(r) for r in findings.rows], findings.exchanges,
                simulator=topology.lab is not None, exit_code=findings.exit_code)
    return findings


@dataclass
class Replayed:
    findings: Findings
    differences: list[str] = field(default_factory=list)  # rows the replay judged otherwise than the live run
    not_replayed: dict[str, str] = field(default_factory=dict)  # row -> why a replay does not judge it
    misses: list[str] = field(default_factory=list)  # requests the capture did not hold
    compared: int = 0


def replay(directory: Path) -> Replayed:
    """Doctor against loopback servers answering from the capture; compared row by row with the live run."""
    saved = store.read(directory)
    with serving(saved) as served, _environment(served.env), connecting_with(served.connector), \
            tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "topology.yaml"
        path.write_text(yaml.safe_dump(served.topology, sort_keys=False))
        findings = examine(load_topology(path), open_keyring=False, resolve=_no_names)
        misses = served.misses
    result = Replayed(findings, misses=misses)
    local_checks = {str(r["check"]) for r in saved.rows if store.not_replayed(r, saved.topology)}
    live = {store.comparable(r): r for r in saved.rows}
    now = {store.comparable(r): r["status"] for r in (asdict(row) for row in findings.rows)}
    for row in saved.rows:
        why = store.not_replayed(row, saved.topology)
        if why:
            result.not_replayed[f"{row['where']}: {row['check']}"] = why
            continue
        result.compared += 1
        seen = now.get(store.comparable(row))
        if seen != row["status"]:
            result.differences.append(f"{row['where']}: {row['check']}: live {row['status']}, replay {seen or 'absent'}")
    for row in (asdict(r) for r in findings.rows):
        if store.comparable(row) not in live and row["check"] not in local_checks \
                and not store.not_replayed(row, saved.topology):
            result.differences.append(f"{row['where']}: {row['check']}: replay {row['status']}, absent live")
    return result


def _no_names(name: str) -> list[str]:
    """A replay resolves no name: names are judged live only (`store.LOCAL_ROWS`)."""
    return []


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """The replayed topology's secret references, set for the replay and restored after."""
    saved: dict[str, Any] = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

