"""Platforms from other packages: the `resilience_harness.platforms` entry-point group.

As pytest's `pytest11`: a distribution declares, in its packaging,

    [project.entry-points."resilience_harness.platforms"]
    pdu = "harness_pdu.platform:PLATFORM"

and the object it names is a `faults.platform.Platform`. The runs, dry-run, `plan`, the guardian
and `recover` all read the same group, so a fault a plug-in injected is reverted by whoever
finds it after a crash, in the same environment. `HARNESS_DISABLE_PLUGIN_AUTOLOAD` set to
anything but empty turns the discovery of other distributions off (as `PYTEST_DISABLE_PLUGIN_AUTOLOAD`
does for pytest); this package's own platforms, declared in the same group, are part of it and stay.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from faults.platform import Platform
from harness_kernel.errors import ConfigError

GROUP = "resilience_harness.platforms"
DISABLE = "HARNESS_DISABLE_PLUGIN_AUTOLOAD"
THIS_DISTRIBUTION = "resilience-harness"  # its own platforms are entries of the group too


@dataclass(frozen=True)
class Distribution:
    """The installed distribution a platform came from: what the journal records and a reverter names."""

    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class PluginPlatform:
    platform: Platform
    entry_point: str  # "name = module:attribute", as declared
    distribution: Distribution | None


def autoload_disabled(environ: Mapping[str, str] = os.environ) -> bool:
    return bool(environ.get(DISABLE, ""))


def discovered(environ: Mapping[str, str] = os.environ) -> list[PluginPlatform]:
    """Every platform the installed distributions declare: this package's own first, each group in the order
    of their names; this package's own alone if autoloading is disabled.

    A declaration that does not load, or loads something that is not a `Platform`, is an error
    naming the entry point and its distribution: a platform that silently vanished would leave
    a fault it injected without a reverter."""
    disabled = autoload_disabled(environ)
    found: list[PluginPlatform] = []
    for point in sorted(entry_points(group=GROUP), key=lambda p: (not _own(p), p.name)):  # this package's first
        if not disabled or _own(point):
            found.append(_load(point))
    return found


def _own(point: EntryPoint) -> bool:
    return point.dist is not None and point.dist.name == THIS_DISTRIBUTION


def _load(point: EntryPoint) -> PluginPlatform:
    dist = point.dist
    distribution = Distribution(dist.name, dist.version) if dist is not None else None
    where = f"entry point {point.name!r} of {distribution or 'an unnamed distribution'} ({GROUP})"
    try:
        platform = point.load()
    except Exception as exc:
        raise ConfigError(f"{where}: {point.value} does not load: {type(exc).__name__}: {exc}; uninstall it "
                          f"or set {DISABLE}=1") from None
    if not isinstance(platform, Platform):
        raise ConfigError(f"{where}: {point.value} is a {type(platform).__name__}, not a faults.platform.Platform")
    if platform.name != point.name:
        raise ConfigError(f"{where}: it declares platform {platform.name!r} under the name {point.name!r}; "
                          "the entry point is named after the platform")
    return PluginPlatform(platform, f"{point.name} = {point.value}", distribution)
