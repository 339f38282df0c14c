"""What every fault is, whatever control plane it goes through.

A fault is built from a `FaultSpec` (serialisable, secret-free: it is what the journal
stores) and a backend. `plan()` must not contact anything: dry-run prints it.
"""

from __future__ import annotations

import enum
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.text import escaped

_INSTANCE = re.compile(r"[0-9a-f]{12}")
log = logging.getLogger(__name__)


class FaultState(enum.Enum):
    IN_EFFECT = "in-effect"
    CLEARED = "cleared"
    UNKNOWN = "unknown"


@dataclass
class UnknownState:
    """A check that cannot read its target answers UNKNOWN (fail closed) and says why, once per reason."""

    reason: str = ""

    def because(self, spec: FaultSpec, reason: str) -> FaultState:
        if reason != self.reason:
            log.warning("%s on %s: state unknown: %s", spec.kind, spec.target, reason)
            self.reason = reason
        return FaultState.UNKNOWN


def new_instance() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class FaultSpec:
    """What to break: the fault kind, the target name from the topology, and parameters.

    `target` is the allow-list name (``harness_kernel.topology.targets.Target`` parses it). `params`
    holds plain JSON values only, never credentials; `faults.kinds` validates them.
    """

    kind: str
    target: str
    params: Mapping[str, Any] = field(default_factory=dict)
    instance: str = field(default_factory=new_instance, compare=False)
    """This fault's own id (12 hex digits): a backend names what it creates on the target with it
    (nft table, qdisc tag, dead man's switch), so a revert, `recover` after a crash, or a dead
    man's undo touch exactly that and nothing of another fault or of the operator."""

    def __post_init__(self) -> None:
        if not _INSTANCE.fullmatch(self.instance):
            raise ConfigError(f"{self.kind} on {self.target}: instance must be 12 hex digits, not {self.instance!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "params": dict(self.params), "instance": self.instance}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FaultSpec:
        return cls(kind=str(data["kind"]), target=str(data["target"]), params=dict(data.get("params", {})),
                   instance=str(data["instance"]))


@dataclass(frozen=True)
class FaultPlan:
    """Human-readable plan: the steps of inject and revert, and the credentials they use."""

    spec: FaultSpec
    backend: str
    inject_steps: tuple[str, ...]
    revert_steps: tuple[str, ...]
    credentials: tuple[str, ...] = ()
    effects: frozenset[str] | None = field(default=None, kw_only=True)
    """Targets the fault cuts off or powers off, where that is more than its own target (a witness
    isolation cuts links, a site power-off powers off hosts); None: the target alone. The allow-list
    judges these (`faults.allowlist`)."""

    @property
    def effect_set(self) -> frozenset[str]:
        return self.effects if self.effects is not None else frozenset({self.spec.target})

    def render(self) -> str:
        """One line per step, whatever the values hold: an unprintable character is shown as `\\uXXXX`,
        so no value can add a line that looks like a step of its own."""
        lines = [f"{self.spec.kind} on {self.spec.target} via {self.backend}"]
        if self.spec.params:
            lines.append("  params: " + ", ".join(f"{k}={v}" for k, v in sorted(self.spec.params.items())))
        lines += [f"  inject: {s}" for s in self.inject_steps]
        lines += [f"  revert: {s}" for s in self.revert_steps]
        if self.credentials:
            lines.append("  credentials: " + ", ".join(self.credentials))
        if self.effect_set != {self.spec.target}:
            lines.append("  cuts or powers off: " + ", ".join(sorted(self.effect_set)))
        return "\n".join(escaped(line) for line in lines)


@runtime_checkable
class Fault(Protocol):
    """One failure on one target. `revert()` must be idempotent: recover may call it twice."""

    @property
    def spec(self) -> FaultSpec: ...

    def plan(self) -> FaultPlan: ...

    def inject(self) -> None: ...

    def check(self) -> FaultState: ...

    def revert(self) -> None: ...


@dataclass(frozen=True)
class OperationProgress:
    """How far an operation with an end (a backup) has got, as the server or the tool reports it."""

    running: bool
    bytes_done: float | None = None
    bytes_total: float | None = None
    percent: float | None = None  # where the server reports progress as a share only (SQL Server)
    started_wall: float | None = None  # the operation's own start and end (the tool's or server's clock)
    finished_wall: float | None = None
    error: str | None = None  # it ended without completing, in the tool's or server's words
    output: str | None = None  # where its result is (a backup's directory, file or URL): what a restore reads

    @property
    def completed(self) -> bool:
        return not self.running and self.error is None and self.finished_wall is not None


@runtime_checkable
class PlansOutput(Protocol):
    """An operation whose result's place is known before it runs (a backup's directory or file): a dry-run plans
    what reads it (a restore) from there."""

    @property
    def planned_output(self) -> str: ...


@runtime_checkable
class Operation(Protocol):
    """A fault that is an operation with an end (a backup): the suite measures it until it finishes.

    Its `check()` is IN_EFFECT while it runs or its output exists, CLEARED once revert stopped it
    and removed what it wrote.
    """

    def progress(self) -> OperationProgress: ...


@runtime_checkable
class Evidential(Protocol):
    """A fault that measures what it did, as its control plane timed it (a migration's duration)."""

    evidence: dict[str, Any]


@runtime_checkable
class Preflight(Protocol):
    """A fault that can check its control plane (reachable, trusted, able) before anything is journaled."""

    def preflight(self) -> None: ...


class Uncertain(HarnessError):
    """A check that cannot settle its question either way: `doctor` shows WARN, a run goes on and logs it."""


@dataclass(frozen=True)
class Check:
    """One read-only question a fault's preflight asks, worth its own row in `doctor`.

    `run` returns what it saw; it raises naming what is wrong (`Uncertain` when it cannot tell).
    """

    name: str
    run: Callable[[], str]
    fix: str
    where: str = ""  # the endpoint it asks, when not the backend's own (a site's power-off asks each host's BMC)


@runtime_checkable
class Checked(Protocol):
    """A fault whose preflight includes checks `doctor` shows one row each (privileges, a BMC's identity)."""

    def checks(self) -> Sequence[Check]: ...


def run_checks(checks: Sequence[Check]) -> None:
    """What a preflight does with its checks: any failure stops it; an uncertain one is logged, not fatal."""
    for check in checks:
        try:
            check.run()
        except Uncertain as exc:
            log.warning("%s: not settled: %s", check.name, exc)


@runtime_checkable
class DeadMansSwitch(Protocol):
    """A fault that can schedule its own revert on the target, for when the harness is cut off.

    `seconds` is always positive: the runner arms it for the fault's deadline (stated in the
    journal entry) plus a margin. `disarm_deadman` must be idempotent, as `revert` is.
    """

    def arm_deadman(self, seconds: float) -> None: ...

    def disarm_deadman(self) -> None: ...


@runtime_checkable
class NamedDeadMansSwitch(Protocol):
    """A dead man's switch named after its journal entry, so disarming one never touches another's.

    Before `arm_deadman` (and before `disarm_deadman` in `recover` and the guardian) the
    harness sets `deadman_marker` to `deadman_marker(entry_id, target)`. A backend embeds the
    marker in the target-side process and disarms by exactly that marker, for instance
    `pkill -f '[h]arness-deadman-<entry id>-...'`: it is a shell literal and no marker is a
    prefix of another.
    """

    deadman_marker: str | None


_UNSAFE = re.compile(r"[^A-Za-z0-9_.:~-]")


def deadman_marker(entry_id: str, target: str) -> str:
    """`harness-deadman-<entry id>-<target>.`: unique per journal entry, a literal for any shell.

    The entry id (fixed-length hex) makes it unique; the target is kept only for people
    reading `ps`, with anything a shell or a regular expression would interpret replaced.
    The closing `.` ends it, so no marker is a prefix of another for a longer target.
    """
    if not re.fullmatch(r"[0-9a-f]{12}", entry_id):
        raise ValueError(f"journal entry id {entry_id!r} is not 12 hex digits")
    readable = _UNSAFE.sub("_", target)[:64]
    return f"harness-deadman-{entry_id}-{readable}."
