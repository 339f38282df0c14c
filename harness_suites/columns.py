"""What the suites' tables share: the smallest change of a figure that counts across nights, and percentages.

Each suite builds its own published table (`harness_suites/<sN>/table.py`, shared/reference/scenarios.md):
its builder takes typed rows (from the analysis) and the user's thresholds, derives the computed columns
(% of baseline, drop %) and returns a generic `Table`. Default thresholds are the examples scenarios.md
gives; the suites pass the topology's SLOs instead. The numbers here are the ones every table reads alike.
"""

from __future__ import annotations

# The smallest change of a key figure that may count as a regression across nights, in its unit: below these
# the lab's run-to-run wobble, and no change a change board would act on (24 ms of detection time).
SECONDS_FLOOR = 0.25
MS_FLOOR = 0.5
TPS_FLOOR = 10.0
IOPS_FLOOR = 5.0


def pct(part: float | None, whole: float | None) -> float | None:
    if part is None or whole is None or whole == 0:
        return None
    return 100.0 * part / whole


def drop_pct(before: float | None, after: float | None) -> float | None:
    share = pct(after, before)
    return None if share is None else 100.0 - share


def change_pct(alone: float | None, mixed: float | None) -> float | None:
    share = pct(mixed, alone)
    return None if share is None else share - 100.0
