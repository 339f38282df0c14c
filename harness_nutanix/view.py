"""What Nutanix adds to the cluster view, read-only: discovery against the topology, the resiliency gate, the observer.

- `NutanixView` (the cluster part): `preflight()` refuses to start while Prism and the topology disagree
  (a host or a node's VM Prism does not have, a VM on another host than the topology says) or while the
  cluster's data resiliency is not OK; `describe()` names the cluster and its resiliency for the report.
- `Resilience` (the observer): each second, the failures the cluster tolerates and the bytes left to
  re-replicate, read from the first Prism Element that answers (after a site loss, the survivor's).
- `probe`: Prism answers with this login, the cluster is there, and its resiliency as it stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from faults.sections import section
from harness_kernel.errors import ConfigError, HarnessError
from harness_kernel.topology.models import Topology
from harness_nutanix.inventory import Inventory, host_name, vm_name
from harness_nutanix.prism import PrismClient
from harness_nutanix.resiliency import Resiliency, parse_v2, with_v4
from harness_nutanix.section import FIELD, NAME, NutanixSection


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
    """Read-only: Prism answers with this login, knows the cluster, and says how resilient it is now."""
    view = NutanixView.from_topology(topology)
    cluster = view.inventory.cluster()
    version = ((cluster.get("config") or {}).get("buildInfo") or {}).get("version", "version not reported")
    return f"cluster {view.inventory.section.cluster} ({version}): {view.resiliency().describe()}"
