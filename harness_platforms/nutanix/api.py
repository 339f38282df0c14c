"""The Prism calls the platform makes, as data: each path, and each change's stable request id.

Paths are those of Nutanix's generated v4 SDK (nutanix/ntnx-api-golang-clients: vmm `vm_api.go`,
clustermgmt `clusters_api.go`, prism `tasks_api.go`) with the version segment the section sets,
and Prism Element's v2 data-resiliency read (`/api/nutanix/v2.0/cluster/domain_fault_tolerance_status`,
as the client that captured it from AOS 6.8.1 asks it).

`NTNX-Request-Id` makes a change idempotent on Prism's side. Ours is derived, never random:
uuid5 of a namespace of the harness's own and `<fault instance>:<operation>`, so the journal
entry (which holds the instance) says which id every change of the fault sent, the plan shows
it before anything is sent, and a revert retried after a crash sends the very same id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from urllib.parse import quote

from harness_platforms.nutanix.section import ApiVersions

REQUEST_ID_NAMESPACE = uuid.UUID("4e1f7c3a-9b2d-5e60-8a17-6c0d2b9f3e41")
V2_FAULT_TOLERANCE = "/api/nutanix/v2.0/cluster/domain_fault_tolerance_status"


def request_id(instance: str, operation: str) -> str:
    """The `NTNX-Request-Id` of one operation of one fault (`inject power-off`, `revert power-on`)."""
    return str(uuid.uuid5(REQUEST_ID_NAMESPACE, f"{instance}:{operation}"))


def _segment(value: str) -> str:
    if value.startswith("{") and value.endswith("}"):
        return value  # a plan's placeholder ({extId of VM sql01-vm}): shown as it reads
    return quote(value, safe=":=")  # a task's extId is `<base64>=:<uuid>`, as Prism writes it


@dataclass(frozen=True)
class Paths:
    versions: ApiVersions

    def _vmm(self) -> str:
        return f"/api/vmm/{self.versions.vmm}/ahv/config/vms"

    def vms_named(self, name: str) -> str:
        return f"{self._vmm()}?$filter=" + quote(f"name eq '{name}'", safe="")

    def vm(self, ext_id: str) -> str:
        return f"{self._vmm()}/{_segment(ext_id)}"

    def vm_action(self, ext_id: str, action: str) -> str:
        return f"{self.vm(ext_id)}/$actions/{action}"

    def clusters(self) -> str:
        return f"/api/clustermgmt/{self.versions.clustermgmt}/config/clusters"

    def cluster(self, ext_id: str) -> str:
        return f"{self.clusters()}/{_segment(ext_id)}"

    def hosts(self, cluster: str) -> str:
        return f"{self.cluster(cluster)}/hosts"

    def host(self, cluster: str, ext_id: str) -> str:
        return f"{self.hosts(cluster)}/{_segment(ext_id)}"

    def host_action(self, cluster: str, ext_id: str, action: str) -> str:
        return (f"/api/clustermgmt/{self.versions.clustermgmt}/operations/clusters/{_segment(cluster)}/hosts/"
                f"{_segment(ext_id)}/$actions/{action}")

    def compute_non_migratable(self, cluster: str) -> str:
        return f"{self.cluster(cluster)}/$actions/compute-non-migratable-vms"

    def non_migratable_result(self, cluster: str, ext_id: str) -> str:
        return f"{self.cluster(cluster)}/non-migratable-vms-result/{_segment(ext_id)}"

    def task(self, ext_id: str) -> str:
        return f"/api/prism/{self.versions.prism}/config/tasks/{_segment(ext_id)}"
