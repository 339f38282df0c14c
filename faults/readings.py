"""What a cluster part reads of its cluster, as values: the words a platform's view and the suites share.

A platform's cluster part (in its folder, below the harness) returns these; the harness's
protocols (`harness.clusters`: `Cluster`, `Forecasting`, `CountsCopies`, `ReadsReplication`, ...)
ask for them. They live here, in the layer a platform may import, so that a view in
`harness_platforms/<name>/` builds the same objects the in-harness views build.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class ResyncSample:
    bytes_left: float
    bytes_total: float | None = None
    eta_s: float | None = None  # the control plane's own estimate, when it gives one


@dataclass(frozen=True)
class DataDevice:
    """A storage device that holds a component of a node's data, as the storage layer reports it."""

    host: str
    device: str  # canonical name, e.g. naa.5000c500a1a1a101
    group: int  # index of its disk group on the host
    tier: str  # "cache" or "capacity"


@dataclass(frozen=True)
class FailoverForecast:
    """What the cluster's own settings and queues predict for a failover, read before the fault.

    The report prints it next to what was measured: the detection settings beside the measured
    detection time, the redo-queue RTO and log-send-queue RPO estimates beside the measured RTO
    and lost commits.
    """

    detection: str  # the settings as the cluster states them
    detection_s: float | None  # the detection time they imply
    rto_s: float | None  # redo queue / redo rate of the failover target
    rpo_kb: float | None  # log not yet sent to the failover target
    basis: str  # where each figure came from


@dataclass(frozen=True)
class CopiesSample:
    """How many copies of the data a commit reaches right now, as the cluster itself says (never inferred from
    the harness's own events): the HA manager's view and the database's, the smaller one counted.

    `in_sync` is None when nothing confirms any copy (no primary answers): that counts as at risk. `states` is
    what it was read from, quoted in the report beside the time at risk.
    """

    in_sync: int | None
    states: str
    modelled: bool = False  # a platform's model gave it (the bound lab's vSAN objects), not the cluster


ReplicationMode = Literal["synchronous", "asynchronous", "none", "unknown"]  # none: no copy elsewhere


@dataclass(frozen=True)
class ReplicationState:
    """The replication a cluster runs with now, as the cluster says it (never assumed from its design).

    `mode` is what a commit waits for: synchronous when it is acknowledged only once another copy has it,
    asynchronous when another copy follows later, none when there is no other copy to follow.
    `read_from` quotes what it was read from, for the report. `settings` are the cluster's own switches that
    make the mode, by name (`replication-quorum node-b: true`): what a recovery compares and puts back.
    """

    mode: ReplicationMode
    read_from: str
    settings: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.mode}, read from {self.read_from}"


@dataclass(frozen=True)
class ModelledLimit:
    """How a platform that cannot limit a disk's IOPS models the limit for an operation writing to that disk."""

    max_rate: str  # the operation's rate cap (pg_basebackup's --max-rate form: "12800k")
    model: str  # the words the report uses for it
