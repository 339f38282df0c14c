"""What a platform is, as data: the descriptor every platform declares, in the tree or in a plug-in.

A platform is a control plane that acts on targets (vSphere, vSAN, a BMC, the router, the
embedded lab). Its descriptor is SDK-free: backends are `"module:Class"` strings imported only
when chosen, so a descriptor can be read (by dry-run, `plan`, the guardian) on a machine that
lacks the platform's SDK. Which platform serves a fault kind on a target is decided by the
backends' *conditions*, named predicates over the target and the topology, in the order the
catalogue lists them; no code branches on a kind's or a platform's name.

Target kinds are closed (`TargetKind`): a platform acts on hosts, sites, links, disks,
databases, nodes and processes as the topology names them; it may bring fault kinds of its
own on those targets, and a topology section of its own under `management.platforms.<name>`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from faults.assumptions import Assumption
from faults.base import Check
from faults.kinds import FaultKind
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target, TargetKind

Test = Callable[[Target, Topology], bool]
HostIdentity = tuple[str | None, str | None]  # a server's SMBIOS UUID and serial number, None where unknown
PlatformChecks = Callable[[Topology], Sequence[Check]]  # a platform's `checks`: its doctor rows, one per check


@dataclass(frozen=True)
class Condition:
    """A named predicate over a target and its topology: when a backend is the one that acts."""

    says: str  # how the plan and the errors name it, e.g. "the host has a BMC"
    holds: Test

    def __str__(self) -> str:
        return self.says


ALWAYS = Condition("always", lambda target, topology: True)


@dataclass(frozen=True)
class Backend:
    """One fault kind on one platform: the class that builds it and when it is the one that acts.

    A *fallback* is chosen only when no other backend's condition holds (the graceful vSphere
    shutdown after a BMC's power-off)."""

    kind: str
    path: str  # "module:Class" with `from_spec(spec, params, target, topology)`
    when: Condition = ALWAYS
    fallback: bool = False


@dataclass(frozen=True)
class Platform:
    """A platform's descriptor: what it serves and what it brings (see the module docstring).

    - `kinds`: fault kinds it defines, on existing target kinds (an in-tree kind is never redefined);
    - `section`: the pydantic model of `management.platforms.<name>` in a topology, if it has one;
    - `cluster_part`: `"module:Class"` with `from_topology(topology)`, a read-only part of the cluster
      view (`preflight()`, `describe()` for the report's environment), built when the section is present;
    - `probes`: `"module:function"` read-only checks, `function(topology) -> str` (what was seen), which
      raise naming what is wrong; the doctor and the preflight run them;
    - `observers`: `"module:Class"` read-only samplers with `from_topology(topology)` and
      `sample() -> Mapping[str, float]`, recorded into the run's history;
    - `databases`: (`databases[].kind`, `"module:Class"` with `from_topology(topology)`) pairs, the
      cluster part that observes a database of that kind (SQL Server's availability group view);
    - `cluster`: `"module:Class"` with `hosting(topology, database) -> Cluster`, the cluster view of a
      `kind: <name>` topology around the database's own part (vSphere's: where each VM runs, vSAN);
      without one, a platform that hosts clusters lets the database's part be the cluster (Nutanix);
    - `checks`: `"module:function"`, `function(topology) -> Sequence[Check]`, read-only checks the doctor
      shows one row each (none where the topology does not use the platform);
    - `drafter_options`: `"module:function"`, `function(parser)`, declaring on `harness discover`'s
      `argparse` parser the options its drafter reads (in a group of its own);
    - `identifies_hosts`: `"module:function"`, `function(topology) -> Callable[[host], HostIdentity] | None`,
      how the platform's manager reads a host's hardware identity (a BMC's backend compares it);
    - `drafter`: `"module:function"`, `function(arguments) -> Drafter | None`, the part of a draft
      topology it reads (`harness discover`), given the command's arguments by name;
    - `extra`: the pip extra that installs its SDK, named when an import fails.
    """

    name: str
    backends: tuple[Backend, ...]
    kinds: tuple[FaultKind, ...] = ()
    section: type[BaseModel] | None = None
    section_at: str | None = None
    """The key under `management` its section has always had (vSAN's `vsan`); None: `management.platforms.<name>`."""
    cluster_part: str | None = None
    probes: tuple[str, ...] = ()
    observers: tuple[str, ...] = ()
    extra: str | None = None
    summary: str = ""
    realises: tuple[tuple[str, str], ...] = field(default=())
    """(intent, fault kind) pairs this platform adds to an intent's candidates, after the in-tree ones."""
    assumptions: tuple[Assumption, ...] = ()
    """What its backends assume where no document settles it (`faults.assumptions`'s one protocol)."""
    hosts_clusters: bool = False
    """A topology may say `kind: <this platform's name>`: its clusters run on it (Nutanix AHV's on Prism)."""
    databases: tuple[tuple[str, str], ...] = ()
    cluster: str | None = None
    checks: tuple[str, ...] = ()
    drafter: str | None = None
    drafter_options: str | None = None
    identifies_hosts: str | None = None
    not_offered: tuple[tuple[str, str], ...] = ()
    """(fault kind or intent, reason) pairs this platform deliberately does not serve: the dry-run and the
    README name each with its reason, so a missing fault reads as a decision, not an oversight."""


# -- conditions the in-tree platforms use -----------------------------------------------------------

def _database_kind(target: Target, topology: Topology) -> str:
    kinds = {d.name: d.kind for d in topology.databases}
    return kinds.get(target.parts[0], "") if target.kind in (TargetKind.DATABASE, TargetKind.NODE) else ""


def database_kind(*kinds: str) -> Condition:
    return Condition(f"the database is {' or '.join(kinds)}",
                     lambda target, topology: _database_kind(target, topology) in kinds)


ON_THE_LAB = Condition("the embedded lab", lambda target, topology: topology.kind == "lab")
PATH_OF_THE_LAB = Condition(
    "the embedded lab, or a topology bound to it (its inter-site path is the lab's)",
    lambda target, topology: topology.kind == "lab" or topology.lab is not None)
REAL_CLUSTER = Condition("a real cluster (not the embedded lab)", lambda target, topology: topology.kind != "lab")
