"""Which backend serves a fault kind on a target: resolved from data, imported on use.

The catalogue (`faults.catalogue`: the in-tree platforms, then the plug-ins') lists per kind
the backends in the order they are tried; the first whose condition holds for the target on
this topology acts, unless the topology's `owners` names the platform outright. No backend
imports this file, and an SDK a user does not need is never imported. Every class named in a
descriptor has `from_spec(spec, params, target, topology)`; a unit test builds and plans each.

The journal stores each spec with the class that acted and the platform that declares it
(`acting`), so `recover` rebuilds that very class after a crash (`rebuild`), or names what is
missing; it never substitutes what the registry would pick today.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from faults import allowlist
from faults.base import Fault, FaultPlan, FaultSpec
from faults.catalogue import Catalogue, Served, installed
from faults.catalogue import named as named
from faults.contract import BackendClass
from faults.kinds import FaultKind, Params
from faults.plugins import DISABLE, THIS_DISTRIBUTION
from harness_kernel.errors import ConfigError, TargetNotAllowedError
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target


class NoBackendError(ConfigError):
    """The fault kind is known but nothing in this installation serves it on that target."""


@dataclass(frozen=True)
class Resolved:
    """A spec checked against the kind table and the topology: what the backend is built from."""

    spec: FaultSpec
    kind: FaultKind
    target: Target
    params: Params
    served: Served | None  # None: nothing here serves this kind on this target
    tried: tuple[Served, ...] = ()

    @property
    def platform(self) -> str | None:
        return self.served.platform.name if self.served else None

    def record(self) -> dict[str, str]:
        """The platform, its backend and the distribution it came from (empty: nothing serves it here)."""
        return _record(self.served) if self.served is not None else {}


def _record(served: Served) -> dict[str, str]:
    """A plug-in's distribution is named, for a reverter to say what to install; this package's own platforms
    (in the tree or behind its entry points) are part of the harness that reverts."""
    origin = served.origin
    foreign = origin is not None and origin.name != THIS_DISTRIBUTION
    return {"platform": served.platform.name, "backend": served.backend.path,
            **({"distribution": origin.name, "version": origin.version} if origin and foreign else {})}


def serving(kind: FaultKind, target: Target, topology: Topology, catalogue: Catalogue) -> tuple[Served | None,
                                                                                                tuple[Served, ...]]:
    """The backend that acts on `target` for `kind` (or None), and every one that was considered."""
    tried = tuple(catalogue.served(kind.name))
    owner = topology.owners.get(str(target))
    if owner is not None:
        if catalogue.platform(owner) is None:
            raise ConfigError(f"owners[{str(target)!r}]: no platform named {owner!r} in this installation (known: "
                              f"{', '.join(p.name for p in catalogue.platforms)})")
        return next((s for s in tried if s.platform.name == owner), None), tried
    return next((s for s in tried if s.backend.when.holds(target, topology)), None), tried


def resolve(spec: FaultSpec, topology: Topology, catalogue: Catalogue | None = None) -> Resolved:
    """Kind, target and params validated (errors name the field), and the backend chosen; contacts nothing."""
    catalogue = catalogue or installed()
    kind = catalogue.kind(spec.kind)
    target = Target.parse(spec.target)
    if target.kind is not kind.target:
        raise ConfigError(f"{spec.kind}: target {spec.target!r} is a {target.kind}; this fault acts on a {kind.target}")
    if str(target) not in topology.targets():
        raise ConfigError(f"{spec.kind}: target {spec.target!r} is not in topology {topology.name!r}")
    served, tried = serving(kind, target, topology, catalogue)
    return Resolved(spec, kind, target, kind.parse_params(spec.params), served, tried)


def acting(fault: Fault, topology: Topology, catalogue: Catalogue | None = None) -> dict[str, str]:
    """What the journal keeps of the object that acts: its class as `module:Class`, which a reverter rebuilds after a
    crash, and the platform (and plug-in distribution) that declares that class for its kind, if one does.

    A hand-built fault is journaled as itself, not as the backend the registry would pick. A class that no reverter
    could import again (defined in `__main__` or inside a function, or without `from_spec`) is refused here, before
    the journal and the fault: after a crash nothing could revert it."""
    kind = type(fault)
    path = f"{kind.__module__}:{kind.__qualname__}"
    what = f"{fault.spec.kind} on {fault.spec.target}"
    why = _not_rebuildable(path) or ("" if _found(path) is kind else "not importable by that name")
    if not why and not callable(getattr(kind, "from_spec", None)):
        why = "without from_spec(spec, params, target, topology)"
    if why:
        raise ConfigError(f"{what}: its class {path} is {why}, so no reverter could rebuild it after a crash; "
                          "define it at the top level of an importable module, with from_spec")
    declared = next((s for s in (catalogue or installed()).served(fault.spec.kind) if s.backend.path == path), None)
    return _record(declared) if declared is not None else {"backend": path}


def rebuild(spec: FaultSpec, topology: Topology, record: dict[str, str], catalogue: Catalogue | None = None) -> Fault:
    """The fault a journal entry names, as the class that injected it (`acting`), for a reverter; fail closed.

    Only an installed class that has the fault's methods is imported and built; anything else is refused, naming
    the class and, for a plug-in's, the distribution to install. A record without a class (an entry of an older
    release) is resolved as it was then."""
    path = record.get("backend")
    if not path:
        return build(spec, topology, catalogue)
    catalogue = catalogue or installed()
    platform = record.get("platform")
    if platform and catalogue.platform(platform) is None:
        what = f"{spec.kind} on {spec.target} was injected by platform {platform}"
        if record.get("distribution"):
            origin = f"{record['distribution']} {record.get('version', '')}".strip()
            raise ConfigError(f"{what} of {origin}, which this installation lacks: install it (pip install "
                              f"'{record['distribution']}=={record.get('version', '')}') or let plug-ins load "
                              f"({DISABLE} unset), then recover again")
        raise ConfigError(f"{what}, which this installation lacks")
    path = moved(path)
    why = _not_rebuildable(path)
    if why:
        raise ConfigError(f"{spec.kind} on {spec.target}: the journal names {path} {why}; nothing rebuilds it")
    try:
        kind = named(path)
    except ImportError as exc:
        raise ConfigError(f"{spec.kind} on {spec.target}: the journal names {path}, which cannot be imported here "
                          f"({exc}); recover where it is installed, or install it") from None
    if not isinstance(kind, type) or not all(callable(getattr(kind, m, None)) for m in _FAULT_METHODS):
        raise ConfigError(f"{spec.kind} on {spec.target}: the journal names {path}, which is not a fault class "
                          f"(it needs {', '.join(_FAULT_METHODS)}); nothing was acted on")
    backend: BackendClass = named(path)  # the same object, checked above
    resolved = resolve(spec, topology, catalogue)
    fault = backend.from_spec(spec, resolved.params, resolved.target, topology)
    if not isinstance(fault, Fault):
        raise ConfigError(f"{spec.kind} on {spec.target}: {path}.from_spec built no fault; nothing was acted on")
    return fault


_FAULT_METHODS = ("from_spec", "plan", "inject", "check", "revert")

MOVED: tuple[tuple[str, str], ...] = (
    ("harness_nutanix.", "harness_platforms.nutanix."),
    ("faults.backends.sqlserver.", "harness_platforms.sqlserver."),
    ("faults.backends.sqlserver_backup:", "harness_platforms.sqlserver.backup:"),
    ("faults.backends.sqlserver_restore:", "harness_platforms.sqlserver.restore:"),
    ("faults.backends.wsfc.", "harness_platforms.sqlserver.wsfc."),
    ("faults.backends.vsphere.", "harness_platforms.vsphere."),
    ("faults.backends.vsan.", "harness_platforms.vsphere.vsan."),
    ("faults.backends.redfish:", "harness_platforms.redfish.faults:"),
)
"""Modules this package moved (old prefix, new): an entry an earlier release journaled is rebuilt from where its
class lives now, after an upgrade between a crash and `recover`. Only this package's own moves are listed."""


def moved(path: str) -> str:
    """A journaled class path, where this release keeps that class."""
    return next((new + path[len(old):] for old, new in MOVED if path.startswith(old)), path)


def _not_rebuildable(path: str) -> str:
    module, _, qualname = path.partition(":")
    if module == "__main__":
        return "defined in __main__"
    if "<locals>" in qualname:
        return "defined inside a function"
    return ""


def _found(path: str) -> object:
    try:
        return named(path)
    except ImportError:
        return None


def supports(spec: FaultSpec, topology: Topology) -> bool:
    """A backend serves this spec's kind on its target here."""
    return resolve(spec, topology).served is not None


def build(spec: FaultSpec, topology: Topology, catalogue: Catalogue | None = None) -> Fault:
    """The fault object for `spec`, constructed without contacting anything (dry-run relies on it)."""
    resolved = resolve(spec, topology, catalogue)
    if resolved.served is None:
        raise NoBackendError(f"{spec.kind} on {spec.target}: nothing in this installation serves it on this "
                             f"target ({_why_not(resolved, topology)})")
    backend: BackendClass = _load(resolved.served)
    return backend.from_spec(spec, resolved.params, resolved.target, topology)


def _why_not(resolved: Resolved, topology: Topology) -> str:
    owner = topology.owners.get(str(resolved.target))
    if owner is not None:
        return f"owners names {owner}, which has no {resolved.kind.name} backend"
    if not resolved.tried:
        return "no platform has a backend for this fault kind"
    return "; ".join(f"{s.platform.name} needs {s.backend.when}" for s in resolved.tried)


class EffectNotAllowedError(TargetNotAllowedError):
    """The target is allowed, but the fault would cut or power off something the allow-list does not cover."""

    def __init__(self, spec: FaultSpec, uncovered: list[str]) -> None:
        self.uncovered = uncovered
        super().__init__(f"{spec.kind} on {spec.target}: it cuts or powers off {', '.join(uncovered)}, which no "
                         "allow_list entry covers")


def permit(plan: FaultPlan, topology: Topology, *, allow_destructive: bool) -> None:
    """The one allow-list rule, for the runner, `--dry-run` and `plan` alike.

    Every fault kind is destructive: its target must be on the topology's allow-list, so must
    everything its plan says it cuts off or powers off (`faults.allowlist`), and a topology
    other than the embedded lab also needs the run's explicit `--allow-destructive`.
    """
    spec = plan.spec
    if spec.target not in topology.allow_list:
        raise TargetNotAllowedError(f"{spec.kind}: target {spec.target!r} is not in the allow_list of topology "
                                    f"{topology.name!r}")
    beyond = allowlist.uncovered(plan.effect_set, topology)
    if beyond:
        raise EffectNotAllowedError(spec, beyond)
    if topology.kind != "lab" and not allow_destructive:
        raise TargetNotAllowedError(f"{spec.kind} on {spec.target}: destructive faults on topology {topology.name!r} "
                                    "need --allow-destructive")


def not_allowed(plan: FaultPlan, topology: Topology) -> str | None:
    """Why the allow-list refuses this plan, in the words dry-run and `plan` print; None if it does not."""
    try:
        permit(plan, topology, allow_destructive=True)
    except EffectNotAllowedError as exc:
        return f"it cuts or powers off {', '.join(exc.uncovered)}, which no allow_list entry covers"
    except TargetNotAllowedError:
        return "target is not in the allow_list"
    return None


def _load(served: Served) -> Any:
    module_name, _, attribute = served.backend.path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra, origin = served.platform.extra, served.origin
        package = origin.name if origin else "resilience-harness"
        hint = f"; install it with: pip install '{package}[{extra}]'" if extra else ""
        raise ConfigError(f"the {served.platform.name} backend needs {exc.name or 'a missing package'}{hint}") from None
    return getattr(module, attribute)
