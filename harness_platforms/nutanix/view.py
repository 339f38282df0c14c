"""What Nutanix adds to the cluster view, read-only: discovery against the topology, the resiliency gate, the observer.

- `NutanixView` (the cluster part): `preflight()` refuses to start while Prism and the topology disagree
  (a host or a node's VM Prism does not have, a VM on another host than the topology says) or while the
  cluster's data resiliency is not OK; `describe()` names the cluster and its resiliency for the report.
- `Resilience` (the observer): each second, the failures the cluster tolerates and the bytes left to
  re-replicate, read from the first Prism Element that answers (after a site loss, the survivor's).
- `probe`: Prism answers with this login, the cluster is there, and its resiliency as it stands.
- `probe_elements`: each listed Prism Element answers a v4 read with the section's login (A-prism-element-reads: what
  is read there after a site loss).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from faults.contract import ConfigError, HarnessError, Topology, Uncertain, section
from harness_platforms.nutanix.inventory import Inventory, host_name, vm_name
from harness_platforms.nutanix.prism import PrismClient
from harness_platforms.nutanix.resiliency import Resiliency, parse_v2, with_v4
from harness_platforms.nutanix.section import FIELD, NAME, NutanixSection


def _inventory(topology: Topology) -> Inventory:
    return Inventory(PrismClient(section(topology, NAME, NutanixSection)))


@dataclass
class _Reads:
    """Built from the topology alone (nothing contacted until asked)."""

    topology: Topology
    inventory: Inventory

    @classmethod
    def from_topology(cls, topology: Topology) -> Self:
        return cls(topology, _inventory(topology))

    def resiliency(self) -> Resiliency:
        """v2 from a Prism Element (the survivor's, after a site loss), with v4's fault tolerance where Prism Central
        answers it."""
        state = parse_v2(self.inventory.client.fault_tolerance().body)
        try:
            return with_v4(state, self.inventory.cluster())
        except HarnessError:
            return state  # Prism Central may be gone with its site: v2 alone still says it


class NutanixView(_Reads):
    """The cluster part: Prism's inventory as the topology says it, and the data resiliency OK."""

    def mismatches(self) -> list[str]:
        section_ = self.inventory.section
        hosts = self.inventory.hosts()
        by_id = {h.ext_id: name for name, h in hosts.items()}
        found = [f"{FIELD}.hosts: host {h.name} is {host_name(section_, h.name)!r} in Prism, which has no such host "
                 f"(it has: {', '.join(sorted(hosts)) or 'none'})"
                 for h in self.topology.hosts() if host_name(section_, h.name) not in hosts]
        for database in self.topology.databases:
            for node in database.nodes:
                name = vm_name(section_, node)
                try:
                    vm = self.inventory.vm(name)
                except ConfigError as exc:
                    found.append(str(exc))
                    continue
                runs_on = by_id.get(vm.host or "", vm.host or "no host")
                if node.host and runs_on != host_name(section_, node.host):
                    found.append(f"databases[{database.name}].nodes[{node.name}].host: {node.host}, but Prism runs "
                                 f"VM {name} on {runs_on}")
        return found

    def preflight(self) -> None:
        wrong = self.mismatches()
        if wrong:
            raise HarnessError(f"{self.inventory.client.where()}: the topology and Prism disagree: " + "; ".join(wrong))
        state = self.resiliency()
        if not state.ok:
            raise HarnessError(f"{self.inventory.client.where()}: cluster {self.inventory.section.cluster!r} data "
                               f"resiliency is not OK ({state.describe()}): no run starts until it is")

    def describe(self) -> Mapping[str, str]:
        return {"nutanix": f"cluster {self.inventory.section.cluster} via Prism Central "
                           f"{self.inventory.section.endpoint}: {self.resiliency().describe()}"}


class Resilience(_Reads):
    """The observer: failures tolerable and under-replicated bytes (and v4's fault tolerance where it answers)."""

    def sample(self) -> Mapping[str, float]:
        return self.resiliency().figures()


def probe(topology: Topology) -> str:
    """Read-only: Prism answers with this login, knows the cluster, says how resilient it is now, and which version
    of each v4 namespace it is asked at (negotiated as the SDK does: A-prism-api-version)."""
    view = NutanixView.from_topology(topology)
    client = view.inventory.client
    cluster = view.inventory.cluster()
    asked = client.versions(client.reading_from)  # the origin that answered: Prism Element's after a site loss
    configured = client.section.api_versions.model_dump()
    versions = ", ".join(f"{namespace} {version}" + ("" if version == configured[namespace] else
                                                     f" (Prism serves no newer; the section's {configured[namespace]})")
                         for namespace, version in asked.items())
    version = ((cluster.get("config") or {}).get("buildInfo") or {}).get("version", "version not reported")
    return (f"cluster {view.inventory.section.cluster} ({version}; API versions asked: {versions}): "
            f"{view.resiliency().describe()}")


def probe_elements(topology: Topology) -> str:
    """Read-only, A-prism-element-reads: each Prism Element the section lists answers a v4 read of its cluster with the
    section's login, as the harness reads it when Prism Central is lost with its site. One that does not is a WARN:
    the run goes on, but after such a loss the faults' states are read from nowhere (UNKNOWN, never CLEARED)."""
    client = _inventory(topology).client
    elements = range(1, len(client.section.origins))
    if not elements:
        return "no Prism Element listed (fallback_endpoints): every read goes to Prism Central"
    answered, refused = [], []
    for index in elements:
        try:
            client.get_from(index, client.paths.clusters())
            answered.append(client.where(index))
        except HarnessError as exc:
            refused.append(str(exc))
    if refused:
        raise Uncertain("assumption A-prism-element-reads does not hold here: " + "; ".join(refused)
                        + (f" (answered: {', '.join(answered)})" if answered else ""))
    return f"{', '.join(answered)} answer{'s' if len(answered) == 1 else ''} the v4 reads with this login"
