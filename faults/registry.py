"""Build faults from specs: the one place that knows which backend serves which kind.

The journal stores specs, so `recover` rebuilds the very same fault after a crash.
"""

from __future__ import annotations

from collections.abc import Callable

from faults.base import Fault, FaultSpec
from harness.errors import ConfigError
from harness.topology.models import Topology

Builder = Callable[[FaultSpec, Topology], Fault]


class FaultFactory:
    def __init__(self) -> None:
        self._builders: dict[str, Builder] = {}

    def register(self, kind: str, builder: Builder) -> None:
        if kind in self._builders:
            raise ValueError(f"fault kind {kind!r} registered twice")
        self._builders[kind] = builder

    def kinds(self) -> list[str]:
        return sorted(self._builders)

    def build(self, spec: FaultSpec, topology: Topology) -> Fault:
        """Construct without contacting anything (dry-run relies on it)."""
        builder = self._builders.get(spec.kind)
        if builder is None:
            raise ConfigError(f"fault kind {spec.kind!r} is not known here; known: {', '.join(self.kinds())}")
        if spec.target not in topology.targets():
            raise ConfigError(f"fault {spec.kind}: target {spec.target!r} is not in topology {topology.name!r}")
        return builder(spec, topology)


def default_factory() -> FaultFactory:
    """Every backend available in this installation."""
    from faults.backends import process

    factory = FaultFactory()
    process.register(factory)
    return factory
