"""Intents: what a suite asks for ("the host loses power"), above the fault kinds that realise it.

A suite names an intent and a target; the intent lists the fault kinds that can realise it,
in order of preference, each with the params it implies. The first kind that a backend serves
on that target, on this topology, is the one journaled and injected: `host-power-loss` is the
lab's node crash on the lab, a BMC's power-off on a host with a BMC, and the graceful vSphere
shutdown only where the topology opted into it (that backend refuses otherwise, in the plan).
Plug-ins add kinds to an intent (`Platform.realises`), after the in-tree ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from faults import registry
from faults.base import FaultSpec
from faults.catalogue import Catalogue, installed
from harness_kernel.errors import ConfigError
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target, TargetKind


@dataclass(frozen=True)
class Way:
    """One fault kind that realises an intent, with the params the intent implies for it."""

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Intent:
    name: str
    target: TargetKind
    ways: tuple[Way, ...]
    summary: str


def _intent(name: str, target: TargetKind, summary: str, *ways: Way | str) -> Intent:
    return Intent(name, target, tuple(w if isinstance(w, Way) else Way(w) for w in ways), summary)


INTENTS: dict[str, Intent] = {i.name: i for i in (
    _intent("host-power-loss", TargetKind.HOST, "the host stops at once, as if its power were cut",
            "host-crash", "host-power-off"),
    _intent("host-hang", TargetKind.HOST, "the host stops answering but keeps its state", "host-hang"),
    _intent("site-power-loss", TargetKind.SITE, "every host of the site stops at once", "site-failure",
            "site-power-off"),
    _intent("capacity-device-failure", TargetKind.DISK, "one capacity device fails",
            Way("disk-failure", {"device": "capacity"})),
    _intent("disk-group-failure", TargetKind.DISK_GROUP, "a disk group fails (its cache device)",
            "disk-group-failure"),
    _intent("role-switchover", TargetKind.DATABASE, "the primary role moves on purpose to another node",
            "role-switchover", "role-move"),
    _intent("link-latency", TargetKind.LINK, "the inter-site link gets added round-trip time", "latency"),
    _intent("link-partition", TargetKind.LINK, "the inter-site link drops traffic", "link-partition"),
    _intent("witness-isolation", TargetKind.WITNESS, "the witness is cut off from the sites", "witness-isolation"),
    _intent("site-isolation", TargetKind.SITE, "the site is cut off from every other", "site-isolation"),
    _intent("host-maintenance", TargetKind.HOST, "the host enters maintenance mode, then leaves it",
            "host-maintenance"),
    _intent("vm-migrate", TargetKind.NODE, "the node's VM moves to another host, then back", "vm-migrate"),
    _intent("process-freeze", TargetKind.PROCESS, "a local process tree is frozen", "process-freeze"),
    _intent("storage-loss", TargetKind.NODE, "a replica's storage is lost and rebuilt", "storage-loss"),
    _intent("replication-async", TargetKind.DATABASE, "the standby leaves the write quorum: commits are "
            "acknowledged by the primary alone", "replication-async"),
    _intent("disk-iops-limit", TargetKind.NODE, "a virtual disk of the node's VM gets an IOPS limit, then loses it",
            "disk-iops-limit"),
    _intent("backup", TargetKind.DATABASE, "a full backup of the database runs under load", "backup"),
    _intent("restore", TargetKind.DATABASE, "a copy of the database is restored beside it under load", "restore"),
)}


def intent(name: str) -> Intent:
    try:
        return INTENTS[name]
    except KeyError:
        raise ConfigError(f"unknown intent {name!r}; known: {', '.join(sorted(INTENTS))}") from None


def ways(of: Intent, catalogue: Catalogue) -> tuple[Way, ...]:
    """The intent's kinds in order: the in-tree ones, then those plug-ins add."""
    added = tuple(Way(kind) for p in catalogue.platforms for name, kind in p.realises if name == of.name)
    return of.ways + added


def realise(name: str, target: str, topology: Topology, params: Mapping[str, Any] | None = None,
            catalogue: Catalogue | None = None) -> FaultSpec | None:
    """The spec that realises the intent on `target` here (the first kind a backend serves), or None."""
    catalogue = catalogue or installed()
    wanted = intent(name)
    if Target.parse(target).kind is not wanted.target:
        raise ConfigError(f"{name}: target {target!r} is not a {wanted.target}")
    for way in ways(wanted, catalogue):
        spec = FaultSpec(way.kind, target, {**way.params, **(params or {})})
        if registry.resolve(spec, topology, catalogue).served is not None:
            return spec
    return None


def described(name: str, target: str, topology: Topology, params: Mapping[str, Any] | None = None,
              catalogue: Catalogue | None = None) -> FaultSpec:
    """The spec to plan for the intent on `target`: the realising one, else its most general kind (which
    the plan then shows as served by nothing here, with what each platform needs)."""
    catalogue = catalogue or installed()
    spec = realise(name, target, topology, params, catalogue)
    if spec is not None:
        return spec
    last = ways(intent(name), catalogue)[-1]
    return FaultSpec(last.kind, target, {**last.params, **(params or {})})
