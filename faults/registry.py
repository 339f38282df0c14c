"""Build faults from specs: the one place that knows which backend serves which kind.

The journal stores specs, so `recover` rebuilds the very same fault after a crash.
"""

from __future__ import annotations

from collections.abc import Callable

from faults.base import Fault, FaultSpec
from harness.errors import ConfigError
from harness.topology.models import Topology

Builder = Callable[[FaultSpec, Topology], Fault]


ANY_PLATFORM = "*"


class FaultFactory:
    """Builders by (fault kind, platform): a 'latency' fault is the lab's on the lab and the
    router backend's on a vSphere topology."""

    def __init__(self) -> None:
        self._builders: dict[tuple[str, str], Builder] = {}

    def register(self, kind: str, builder: Builder, platforms: tuple[str, ...] = (ANY_PLATFORM,)) -> None:
        for platform in platforms:
            if (kind, platform) in self._builders:
                raise ValueError(f"fault kind {kind!r} registered twice for {platform}")
            self._builders[(kind, platform)] = builder

    def kinds(self, platform: str | None = None) -> list[str]:
        return sorted({k for k, p in self._builders if platform is None or p in (platform, ANY_PLATFORM)})

    def supports(self, kind: str, platform: str) -> bool:
        return (kind, platform) in self._builders or (kind, ANY_PLATFORM) in self._builders

    def build(self, spec: FaultSpec, topology: Topology) -> Fault:
        """Construct without contacting anything (dry-run relies on it)."""
        builder = self._builders.get((spec.kind, topology.kind)) or self._builders.get((spec.kind, ANY_PLATFORM))
        if builder is None:
            raise ConfigError(f"fault kind {spec.kind!r} has no backend for a {topology.kind} topology here; "
                              f"known: {', '.join(self.kinds(topology.kind))}")
        if spec.target not in topology.targets():
            raise ConfigError(f"fault {spec.kind}: target {spec.target!r} is not in topology {topology.name!r}")
        return builder(spec, topology)


def default_factory() -> FaultFactory:
    """Every backend available in this installation."""
    from faults.backends import lab, process, router

    factory = FaultFactory()
    process.register(factory)
    lab.register(factory)
    router.register(factory)
    return factory
