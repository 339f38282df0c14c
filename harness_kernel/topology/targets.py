"""Fault targets: `kind:path` names that the allow-list, the journal and the faults share.

Parsed once into a `Target`; nothing else takes these strings apart. Paths by kind:
``host:esx-a1``, ``site:site-a``, ``witness:w1``, ``link:site-a~site-b`` (the two ends),
``disk:esx-a1/naa.5000...`` and ``diskgroup:esx-a1/0`` (host / device or index),
``database:sql01``, ``node:<db>/<node>``, ``process:<name>``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from harness_kernel.errors import ConfigError


class TargetKind(enum.StrEnum):
    HOST = "host"
    SITE = "site"
    WITNESS = "witness"
    LINK = "link"
    DISK = "disk"
    DISK_GROUP = "diskgroup"
    DATABASE = "database"
    NODE = "node"
    PROCESS = "process"


_PARTS = {TargetKind.LINK: ("~", 2), TargetKind.DISK: ("/", 2), TargetKind.DISK_GROUP: ("/", 2),
          TargetKind.NODE: ("/", 2)}


@dataclass(frozen=True, order=True)
class Target:
    kind: TargetKind
    path: str

    @classmethod
    def parse(cls, text: str) -> Target:
        kind, sep, path = str(text).partition(":")
        if not sep or not path:
            raise ConfigError(f"target {text!r}: expected KIND:NAME, e.g. host:esx-a1")
        try:
            target_kind = TargetKind(kind)
        except ValueError:
            raise ConfigError(f"target {text!r}: unknown kind {kind!r}; known: "
                              f"{', '.join(k.value for k in TargetKind)}") from None
        target = cls(target_kind, path)
        target.parts  # noqa: B018 - validates the path's shape
        return target

    @classmethod
    def of(cls, kind: TargetKind, *parts: object) -> Target:
        """A target from its components (a link's two ends, a disk's host and device, a node's database and name):
        the one way code builds a target name, so no f-string spells the format again."""
        sep, count = _PARTS.get(kind, ("", 1))
        if len(parts) != count:
            raise ConfigError(f"a {kind} target has {count} part(s), not {len(parts)}: {parts!r}")
        target = cls(kind, sep.join(str(p) for p in parts))
        target.parts  # noqa: B018 - validates each part (none empty)
        return target

    @property
    def parts(self) -> tuple[str, ...]:
        """The path's components: a link's two ends, a disk's host and device, a node's database and name."""
        sep, count = _PARTS.get(self.kind, ("", 1))
        if count == 1:
            return (self.path,)
        parts = tuple(self.path.split(sep, count - 1))
        if len(parts) != count or not all(parts):
            raise ConfigError(f"target {self}: a {self.kind} target is {self.kind}:A{sep}B")
        return parts

    @property
    def name(self) -> str:
        """The last component: the host, site, node or device named."""
        return self.parts[-1]

    def __str__(self) -> str:
        return f"{self.kind}:{self.path}"


def shown(text: str) -> str:
    """A target as a title shows it, its path ("diskgroup:esx-b1/0" -> "esx-b1/0"); text that is no target, as is."""
    try:
        return Target.parse(text).path
    except ConfigError:
        return text
