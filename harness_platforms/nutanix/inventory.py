"""The topology's names as Prism knows them: the cluster, its hosts and the database nodes' VMs, found by name.

Prism addresses everything by `extId`; a topology names things. This module maps one to the other,
reading only, and says plainly what it cannot find (a name Prism does not know is the topology's
mistake or Prism's, never guessed around). A VM's power state and host, a host's maintenance state,
are read as the strings Prism sends: an unknown one is kept and shown, never coerced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faults.contract import ConfigError, DatabaseNode, Topology
from harness_platforms.nutanix.prism import PrismClient
from harness_platforms.nutanix.section import FIELD, NutanixSection

KNOWN_SHOWN = 10  # names an error lists when a name is not found


@dataclass(frozen=True)
class Vm:
    ext_id: str
    name: str
    power: str  # ON, OFF, PAUSED... as Prism says it
    host: str | None  # the host's extId
    etag: str | None


@dataclass(frozen=True)
class Host:
    ext_id: str
    name: str
    maintenance: str  # maintenanceState: "normal" outside maintenance (A-prism-maintenance-state)
    status: str  # nodeStatus


def vm_name(section: NutanixSection, node: DatabaseNode) -> str:
    return section.vms.get(node.name) or node.vm or node.name


def host_name(section: NutanixSection, host: str) -> str:
    return section.hosts.get(host, host)


def node_of(topology: Topology, database: str, node: str) -> DatabaseNode:
    return next(n for d in topology.databases if d.name == database for n in d.nodes if n.name == node)


@dataclass
class Inventory:
    client: PrismClient
    _cluster: str | None = None

    @property
    def section(self) -> NutanixSection:
        return self.client.section

    def cluster_id(self) -> str:
        """The extId of the section's cluster, found by name among Prism Central's clusters (read once)."""
        if self._cluster is None:
            clusters = self.client.get_all(self.client.paths.clusters(), "clusters")
            found = [c for c in clusters if c.get("name") == self.section.cluster]
            if len(found) != 1:
                names = sorted(str(c.get("name")) for c in clusters)
                known = ", ".join(names[:KNOWN_SHOWN]) + (f" and {len(names) - KNOWN_SHOWN} more"
                                                          if len(names) > KNOWN_SHOWN else "")
                raise ConfigError(f"{FIELD}.cluster: Prism knows {len(found)} clusters named "
                                  f"{self.section.cluster!r} (known: {known or 'none'})")
            self._cluster = str(found[0]["extId"])
        return self._cluster

    def cluster(self) -> dict[str, Any]:
        found = self.client.get(self.client.paths.cluster(self.cluster_id())).data
        return found if isinstance(found, dict) else {}

    def hosts(self) -> dict[str, Host]:
        """The cluster's hosts by their hostName."""
        rows = self.client.get_all(self.client.paths.hosts(self.cluster_id()), "hosts")
        return {str(h.get("hostName")): _host(h) for h in rows if h.get("extId")}

    def host(self, name: str) -> Host:
        found = self.hosts().get(name)
        if found is None:
            raise ConfigError(f"{FIELD}: Prism's cluster {self.section.cluster!r} has no host named {name!r} "
                              f"(set {FIELD}.hosts to map the topology's names to Prism's)")
        return found

    def host_etag(self, ext_id: str) -> str | None:
        return self.client.get(self.client.paths.host(self.cluster_id(), ext_id)).etag

    def vm(self, name: str) -> Vm:
        """The VM named `name` (exactly one), with the ETag of its own read (what a change sends back)."""
        listed = self.client.get_all(self.client.paths.vms_named(name), f"VMs named {name!r}")
        found = [v for v in listed if v.get("name") == name and v.get("extId")]
        if len(found) != 1:
            raise ConfigError(f"{FIELD}: Prism has {len(found)} VMs named {name!r}; the database node's VM must be "
                              f"one (set {FIELD}.vms to its name in Prism)")
        return self.vm_by_id(str(found[0]["extId"]))

    def vm_by_id(self, ext_id: str) -> Vm:
        read = self.client.get(self.client.paths.vm(ext_id))
        data = read.data if isinstance(read.data, dict) else {}
        host = (data.get("host") or {}).get("extId")
        return Vm(ext_id, str(data.get("name", "")), str(data.get("powerState", "no powerState")),
                  str(host) if host else None, read.etag)


def _host(row: dict[str, Any]) -> Host:
    return Host(str(row["extId"]), str(row.get("hostName", "")), str(row.get("maintenanceState", "unknown")),
                str(row.get("nodeStatus", "unknown")))
