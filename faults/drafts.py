"""A platform's part of a draft topology (`harness discover`), as the command and a platform share it.

Discover starts from the hypervisor (vCenter: hosts, VMs, disk groups) and asks each platform that
declares a `drafter` for its part: the database entries, its `management` sections and comments
saying what a topology does not hold. A drafter only reads; the command watches the wire while it
does and refuses a draft for which anything but a read was sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class SeenVm:
    """A VM the hypervisor's discovery saw: its name, and the host it runs on now (None: not running)."""

    name: str
    host: str | None


@dataclass(frozen=True)
class DraftPart:
    databases: list[dict[str, Any]] = field(default_factory=list)  # entries of the topology's `databases`
    management: dict[str, Any] = field(default_factory=dict)  # sections under `management`, by key
    comments: list[str] = field(default_factory=list)  # "# ..." lines: what was seen that a topology does not hold


class Drafter(Protocol):
    def read(self) -> None:
        """Read what the platform says (only reads: the caller watches the wire)."""

    def drafted(self, vms: Sequence[SeenVm]) -> DraftPart:
        """The part of the draft from what `read` saw, each node matched to the VM of its name."""


DrafterFactory = Callable[[Mapping[str, Any]], "Drafter | None"]
"""A platform's `drafter`: given the command's arguments by name, its drafter, or None when none was asked for;
raises ConfigError naming the argument that is missing."""
