"""A platform's part of a draft topology (`harness discover`), as the command and a platform share it.

Discover starts from the platform that drafts a whole topology (a `TopologyDrafter`: vSphere, from
vCenter's hosts, VMs and disk groups) and asks each other platform that declares a `drafter` for
its part (a `Drafter`): the database entries, its `management` sections and comments saying what a
topology does not hold. Drafters only read; the command watches the wire while they do and refuses
a draft for which anything but a read was sent.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


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


@runtime_checkable
class TopologyDrafter(Protocol):
    """The platform a draft starts from: it reads the cluster, names its VMs, and writes the whole draft."""

    def read(self) -> None:
        """Read what the platform says (trust settled first; only reads: the caller watches the wire)."""

    def close(self) -> None:
        """Log out; called inside the caller's watch, whether `read` finished or not."""

    def vms(self) -> list[SeenVm]: ...

    def drafted(self, parts: Sequence[DraftPart]) -> str:
        """The draft topology, as YAML with comments, with the other platforms' parts in it; it loads as it is."""


DrafterFactory = Callable[[Mapping[str, Any]], "Drafter | TopologyDrafter | None"]
"""A platform's `drafter`: given the command's arguments by name, its drafter, or None when none was asked for;
raises ConfigError naming the argument that is missing."""

DraftOptions = Callable[[argparse.ArgumentParser], None]
"""A platform's `drafter_options`: declares the options its drafter reads on `harness discover`'s parser."""
