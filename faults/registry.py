"""Which backend serves a fault kind on a target: resolved from data, imported on use.

The catalogue (`faults.catalogue`: the in-tree platforms, then the plug-ins') lists per kind
the backends in the order they are tried; the first whose condition holds for the target on
this topology acts, unless the topology's `owners` names the platform outright. No backend
imports this file, and an SDK a user does not need is never imported. Every class named in a
descriptor has `from_spec(spec, params, target, topology)`; a unit test builds and plans each.

The journal stores specs and the platform that served them, so `recover` rebuilds the very same
fault after a crash, or names the plug-in that is missing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from faults import allowlist
from faults.base import Fault, FaultPlan, FaultSpec
from faults.catalogue import Catalogue, Served, installed
from faults.kinds import FaultKind, Params
from faults.plugins import DISABLE
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
        """What the journal keeps of the choice: the platform, its backend and the distribution it came from."""
        if self.served is None:
            return {}
        origin = self.served.origin
        return {"platform": self.served.platform.name, "backend": self.served.backend.path,
                **({"distribution": origin.name, "version": origin.version} if origin else {})}


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


def check_record(spec: FaultSpec, topology: Topology, record: dict[str, str], catalogue: Catalogue | None = None) -> None:
    """A reverter acts with the backend that injected (`Resolved.record()` in the journal), or names what is missing.

    A record without a platform (an entry of an older release) is resolved as it was then."""
    catalogue = catalogue or installed()
    platform = record.get("platform")
    if not platform:
        return
    what = f"{spec.kind} on {spec.target} was injected by platform {platform}"
    origin = f"{record['distribution']} {record.get('version', '')}".strip() if record.get("distribution") else ""
    if catalogue.platform(platform) is None:
        if origin:
            raise ConfigError(f"{what} of {origin}, which this installation lacks: install it (pip install "
                              f"'{record['distribution']}=={record.get('version', '')}') or let plug-ins load "
                              f"({DISABLE} unset), then recover again")
        raise ConfigError(f"{what}, which this installation lacks")
    now = resolve(spec, topology, catalogue).record()
    if (now.get("platform"), now.get("backend")) != (platform, record.get("backend")):
        acting = f"{now['platform']} ({now['backend']})" if now else "nothing"
        raise ConfigError(f"{what} ({record.get('backend')}){' of ' + origin if origin else ''}; here it would be "
                          f"{acting}: a fault is reverted by the backend that injected it, not another")


def supports(spec: FaultSpec, topology: Topology) -> bool:
    """A backend serves this spec's kind on its target here."""
    return resolve(spec, topology).served is not None


def build(spec: FaultSpec, topology: Topology, catalogue: Catalogue | None = None) -> Fault:
    """The fault object for `spec`, constructed without contacting anything (dry-run relies on it)."""
    resolved = resolve(spec, topology, catalogue)
    if resolved.served is None:
        raise NoBackendError(f"{spec.kind} on {spec.target}: nothing in this installation serves it on this "
                             f"target ({_why_not(resolved, topology)})")
    backend: Any = _load(resolved.served)
    fault: Fault = backend.from_spec(spec, resolved.params, resolved.target, topology)
    return fault


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
