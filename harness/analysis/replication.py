"""The replication a trial ran with, against the one the topology's policy promises.

Readings come from the cluster (at the experiment's start, before each fault, during it, after
recovery); this module only judges them. A run against a cluster weaker than its policy (asynchronous where the business
expects synchronous commit) proves nothing by losing no commit: the loss an asynchronous
failover can cause depends on how far the standby lagged at the crash, which a quiet night
may hide. So such a run is flagged, and its "0 lost" is not judged a pass unless the user
accepts the weaker mode knowingly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

STRENGTH = {"none": 0, "asynchronous": 1, "synchronous": 2}  # "unknown" is neither: said, never judged weaker or stronger
START, BEFORE, DURING, AFTER = "at the experiment's start", "before the fault", "during the fault", "after recovery"
FIRST_CONTACT = "at first contact"  # doctor's reading, before any run
MET = (FIRST_CONTACT, START, BEFORE)  # the readings of what a fault meets
ACCEPT_OPTION = "--accept-weaker-replication"


@dataclass(frozen=True)
class ReplicationReading:
    t: float  # on the harness's timeline
    when: str  # START, BEFORE, DURING or AFTER
    mode: str  # synchronous, asynchronous or unknown
    read_from: str  # what the cluster said, quoted

    def describe(self) -> str:
        return f"{self.when} (+{self.t:.1f} s): {self.mode}, read from {self.read_from}"


def weaker_than_policy(policy: str, readings: Sequence[ReplicationReading]) -> str | None:
    """The first reading a fault met (at the experiment's start or just before the fault) that is weaker than
    `policy`, as a sentence for the report's first screen; None when none is. During a fault a cluster may run
    alone on purpose (its time at risk says how long), and an unknown mode is quoted, not flagged."""
    for reading in readings:
        if reading.when not in MET or reading.mode not in STRENGTH:
            continue
        if STRENGTH[reading.mode] < STRENGTH[policy]:
            return (f"replication weaker than the policy: the cluster ran {reading.mode} {reading.when} (read from "
                    f"{reading.read_from}), the topology expects {policy}")
    return None


def lost_commits_not_judged(weaker: str | None, lost: int | None, maximum: int, accepted: bool) -> str | None:
    """Why a lost-commit count within its threshold is no pass: the run was weaker than the policy and the user did
    not accept that. A count over its threshold is judged all the same (a loss is a loss)."""
    if weaker is None or accepted or lost is None or lost > maximum:
        return None
    return f"{weaker}; {lost} lost is no evidence for the policy ({ACCEPT_OPTION} judges it knowingly)"
