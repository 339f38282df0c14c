"""The cluster's data resiliency as Prism states it: how many failures it tolerates now, and what is left to rebuild.

Two readings, parsed into one typed state:
- Prism Element v2 `domain_fault_tolerance_status`: a **bare list** of domains (NODE, DISK, ...), each with
  `component_fault_tolerance_status` keyed by UPPERCASE component names (STATIC_CONFIGURATION,
  EXTENT_GROUPS, ...), each holding `number_of_failures_tolerable`, and per domain
  `cluster_under_replicated_data_bytes`. That shape is a capture from a live AOS 6.8.1 cluster
  (tests/captures/nutanix/); a dict-wrapped variant is read too. No rebuild ETA exists in any
  public API: the rebuild's progress is the under-replicated bytes trending to 0.
- the v4 cluster's `config.faultToleranceState` (`currentMaxFaultTolerance`, `desiredMaxFaultTolerance`).

"OK" is: every component of the NODE and DISK domains tolerates at least one failure, nothing is
under-replicated, and (where v4 says) the current fault tolerance is the desired one. A component
still `under_computation` is not OK either: Prism has not settled it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from faults.contract import ControlPlaneError

DOMAINS = ("NODE", "DISK")


@dataclass(frozen=True)
class Resiliency:
    failures_tolerable: int | None  # the least over NODE and DISK components; None: none reported
    under_replicated_bytes: float | None
    computing: tuple[str, ...] = ()  # components still under computation
    weakest: tuple[str, ...] = ()  # "NODE/STATIC_CONFIGURATION: Not enough nodes (hosts) in the cluster"
    current_ft: int | None = None
    desired_ft: int | None = None
    words: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (self.failures_tolerable is not None and self.failures_tolerable >= 1
                and not self.under_replicated_bytes and not self.computing
                and (self.current_ft is None or self.desired_ft is None or self.current_ft >= self.desired_ft))

    def describe(self) -> str:
        said = [f"failures tolerable {self.failures_tolerable}", f"under-replicated {self.under_replicated_bytes} B"]
        if self.current_ft is not None:
            said.append(f"fault tolerance {self.current_ft} of {self.desired_ft} desired")
        if self.computing:
            said.append("under computation: " + ", ".join(self.computing))
        if self.weakest:
            said.append("weakest: " + "; ".join(self.weakest))
        return ", ".join(said)

    def figures(self) -> dict[str, float]:
        """What the observer records each second (a figure that is not reported is left out, never 0)."""
        found: dict[str, float] = {"resiliency ok": 1.0 if self.ok else 0.0}
        if self.failures_tolerable is not None:
            found["fault tolerance (failures tolerable)"] = float(self.failures_tolerable)
        if self.under_replicated_bytes is not None:
            found["under-replicated bytes"] = float(self.under_replicated_bytes)
        if self.current_ft is not None:
            found["fault tolerance current (v4)"] = float(self.current_ft)
        if self.desired_ft is not None:
            found["fault tolerance desired (v4)"] = float(self.desired_ft)
        return found


def parse_v2(body: Any) -> Resiliency:
    """`domain_fault_tolerance_status` as a bare list (or wrapped in a dict under that name)."""
    domains = body.get("domain_fault_tolerance_status") if isinstance(body, dict) else body
    if not isinstance(domains, list):
        raise ControlPlaneError(f"domain_fault_tolerance_status: expected a list of domains, got "
                                f"{type(domains).__name__}")
    tolerable: list[int] = []
    under: list[float] = []
    computing: list[str] = []
    weakest: list[tuple[int, str]] = []
    words: dict[str, str] = {}
    for domain in (d for d in domains if isinstance(d, dict)):
        kind = str(domain.get("domain_type", "?"))
        if isinstance(domain.get("cluster_under_replicated_data_bytes"), int | float):
            under.append(float(domain["cluster_under_replicated_data_bytes"]))
        components = domain.get("component_fault_tolerance_status") or {}
        for name, component in (components.items() if isinstance(components, dict) else ()):
            if not isinstance(component, dict):
                continue
            count = component.get("number_of_failures_tolerable")
            words[f"{kind}/{name}"] = str(count)
            if kind not in DOMAINS or not isinstance(count, int):
                continue
            tolerable.append(count)
            if component.get("under_computation"):
                computing.append(f"{kind}/{name}")
            message = (component.get("details") or {}).get("message") if isinstance(component.get("details"),
                                                                                     dict) else None
            weakest.append((count, f"{kind}/{name}" + (f": {message}" if message else "")))
    least = min(tolerable) if tolerable else None
    return Resiliency(least, max(under) if under else None, tuple(computing),
                      tuple(sorted(w for c, w in weakest if c == least)), words=words)


def with_v4(state: Resiliency, cluster: Mapping[str, Any]) -> Resiliency:
    """The v4 cluster's `config.faultToleranceState` added to a v2 reading (absent fields stay None)."""
    ft = ((cluster.get("config") or {}).get("faultToleranceState") or {}) if isinstance(cluster, Mapping) else {}
    current, desired = ft.get("currentMaxFaultTolerance"), ft.get("desiredMaxFaultTolerance")
    return Resiliency(state.failures_tolerable, state.under_replicated_bytes, state.computing, state.weakest,
                      current if isinstance(current, int) else None, desired if isinstance(desired, int) else None,
                      state.words)
