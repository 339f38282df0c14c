"""What the fuzz tests share: the hypothesis profiles and the tally of what was tried.

`HARNESS_FUZZ` picks the profile: `ci` (default) is derandomized, the same few thousand
inputs on every run; `long` is a larger random run, on demand. Each test prints its figures
(see them with `pytest -s`) and appends them as JSON to `$HARNESS_FUZZ_SUMMARY` when set.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings

from tests.unit.harness_kernel.topology.topology_strategies import Case

settings.register_profile("ci", max_examples=3000, derandomize=True, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=50_000, derandomize=False, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = settings.get_profile(os.environ.get("HARNESS_FUZZ", "ci"))


class Tally:
    """What the fuzzer tried and what came of it, per field."""

    def __init__(self) -> None:
        self.tried = self.accepted = self.refused = 0
        self.refused_at: Counter[str] = Counter()
        self.edits: dict[str, Counter[str]] = {}
        self.notes: Counter[str] = Counter()
        self.started = time.monotonic()

    def record(self, case: Case, refusal: str | None) -> None:
        self.tried += 1
        outcome = "refused" if refusal else "accepted"
        if refusal:
            self.refused += 1
            self.refused_at[re.sub(r"\[(\d+|'[^']*'|\"[^\"]*\")\]", "[]", refusal)] += 1
        else:
            self.accepted += 1
        for where, _how in case.edits or [("(unedited)", "")]:
            self.edits.setdefault(where, Counter())[outcome] += 1

    def summary(self, title: str) -> dict[str, Any]:
        return {"title": title, "tried": self.tried, "accepted": self.accepted, "refused": self.refused,
                "seconds": round(time.monotonic() - self.started, 1),
                "refused_at": dict(self.refused_at.most_common()),
                "edits": {k: dict(v) for k, v in sorted(self.edits.items())}, "notes": dict(self.notes)}


def report(summary: dict[str, Any]) -> None:
    print(f"\n{summary['title']}: {summary['tried']} inputs, {summary['accepted']} accepted, "
          f"{summary['refused']} refused, {summary['seconds']} s")
    for path, count in summary["refused_at"].items():
        print(f"  refused at {path}: {count}")
    for path, outcomes in summary["edits"].items():
        print(f"  edited {path}: {outcomes}")
    for note, count in summary["notes"].items():
        print(f"  note: {note}: {count}")
    if target := os.environ.get("HARNESS_FUZZ_SUMMARY"):
        with Path(target).open("a") as out:
            out.write(json.dumps(summary) + "\n")
