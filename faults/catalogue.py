"""Every platform this installation has: the in-tree ones, then the plug-ins', checked once.

The catalogue is what the registry resolves against: the fault kinds (in-tree and the
plug-ins'), and per kind the backends in the order they are tried. A plug-in may add
platforms, kinds, and backends for in-tree kinds; it may not claim a (kind, platform) pair the
tree serves, redefine an in-tree kind, or reuse another plug-in's platform name: each is
refused naming the distribution, before anything is planned.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from faults.assumptions import Assumption
from faults.kinds import KINDS, FaultKind
from faults.platform import Backend, Platform
from faults.platforms import IN_TREE
from faults.plugins import DISABLE, THIS_DISTRIBUTION, Distribution, PluginPlatform, autoload_disabled, discovered
from harness_kernel.errors import ConfigError


@dataclass(frozen=True)
class Served:
    """One backend of one platform, with where the platform came from (None: this package)."""

    platform: Platform
    backend: Backend
    origin: Distribution | None

    @property
    def pair(self) -> tuple[str, str]:
        return self.backend.kind, self.platform.name


@dataclass(frozen=True)
class Catalogue:
    platforms: tuple[Platform, ...]
    origins: Mapping[str, Distribution | None]
    kinds: Mapping[str, FaultKind]

    @classmethod
    def of(cls, in_tree: tuple[Platform, ...], plugins: list[PluginPlatform]) -> Catalogue:
        kinds = dict(KINDS)
        own = [p.platform for p in plugins if p.distribution and p.distribution.name == THIS_DISTRIBUTION]
        tree_pairs = {(b.kind, p.name) for p in (*in_tree, *own) for b in p.backends}
        origins: dict[str, Distribution | None] = {p.name: None for p in in_tree}
        platforms = list(in_tree)
        for plugin in plugins:
            platform, origin = plugin.platform, plugin.distribution
            who = f"platform {platform.name!r} of {origin or 'an unnamed distribution'}"
            if platform.name in origins and origins[platform.name] is not None:
                raise ConfigError(f"{who}: {origins[platform.name]} declares a platform of that name already")
            for kind in platform.kinds:
                if kind.name in kinds:
                    raise ConfigError(f"{who}: fault kind {kind.name!r} is defined already; a plug-in brings "
                                      "kinds of its own or serves existing ones, it does not redefine them")
                kinds[kind.name] = kind
            for backend in () if any(platform is o for o in own) else platform.backends:
                if (backend.kind, platform.name) in tree_pairs:
                    raise ConfigError(f"{who}: ({backend.kind}, {platform.name}) is served by this package; a "
                                      "plug-in may not claim it")
            origins[platform.name] = origin
            platforms.append(platform)
        catalogue = cls(tuple(platforms), origins, kinds)
        for platform in catalogue.platforms:
            for backend in platform.backends:
                if backend.kind not in kinds:
                    raise ConfigError(f"platform {platform.name!r}: a backend for {backend.kind!r}, which is no "
                                      f"fault kind (known: {', '.join(sorted(kinds))})")
        return catalogue

    def kind(self, name: str) -> FaultKind:
        try:
            return self.kinds[name]
        except KeyError:
            raise ConfigError(f"unknown fault kind {name!r}; known: {', '.join(sorted(self.kinds))}") from None

    def served(self, kind: str) -> list[Served]:
        """The backends of `kind` in the order they are tried: every platform's in order, fallbacks last."""
        found = [Served(p, b, self.origins[p.name]) for p in self.platforms for b in p.backends if b.kind == kind]
        return [s for s in found if not s.backend.fallback] + [s for s in found if s.backend.fallback]

    def platform(self, name: str) -> Platform | None:
        return next((p for p in self.platforms if p.name == name), None)

    def assumptions(self) -> tuple[Assumption, ...]:
        """Every assumption of this installation: each platform's own, in the catalogue's order."""
        return tuple(a for p in self.platforms for a in p.assumptions)

    def pairs(self) -> dict[tuple[str, str], str]:
        """(fault kind, platform) -> "module:Class", as testinfra's BACKENDS."""
        return {(b.kind, p.name): b.path for p in self.platforms for b in p.backends}


def installed(environ: Mapping[str, str] = os.environ) -> Catalogue:
    """The catalogue of this environment (plug-ins unless autoloading is disabled), read once per process."""
    return _installed(autoload_disabled(environ))


def this_package(*plugins: PluginPlatform) -> Catalogue:
    """This package's platforms (the in-tree ones and its own entry points), with `plugins` after them."""
    return Catalogue.of(IN_TREE, [*discovered({DISABLE: "1"}), *plugins])


@functools.cache
def _installed(disabled: bool) -> Catalogue:
    return this_package() if disabled else Catalogue.of(IN_TREE, discovered({}))


def named(path: str) -> Any:
    """What `module:Qual.Name` names (a class, a function); ImportError if the module or the name is missing."""
    module_name, _, qualname = path.partition(":")
    found: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ImportError(f"{module_name} has no {qualname}") from None
    return found
