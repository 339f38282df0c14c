"""Nutanix Prism (Central and Element) on 127.0.0.1, as the nutanix platform calls it: the contract tests' stand-in.

Written from Nutanix's generated v4 Go SDK (nutanix/ntnx-api-golang-clients: paths, field names,
enums), Nutanix's Ansible collection (how the power actions send If-Match, the maintenance body,
sample replies) and one public capture from a live AOS 6.8.1 cluster (jkmills/nutanix-mcp-server:
the v2 data-resiliency reply). Every value the platform reads or sends is a row of FACTS with its
source; nothing here was checked against a real Prism, so the tests built on it are
documentation-derived and unconfirmed until a capture from a real cluster replaces them.

It answers only the calls the platform makes. A VM change without `If-Match`, or with an ETag that is
no longer the entity's, is refused (412, assumed); a host's maintenance is taken without one, as
Nutanix's own client sends it. Each v4 namespace answers the version the SDK negotiates with
(`OPTIONS /api/<namespace>/unversioned/info`), and its paths at that version or an older v4 one;
a test may give a namespace an older release's version. A change whose `NTNX-Request-Id` was seen before
answers the first one's task and does nothing again; a task goes QUEUED, RUNNING, SUCCEEDED over a
few reads and its effect lands when it succeeds (a test may make the next one fail, or stall). It
keeps each VM's power and host, each host's maintenance, and the cluster's data resiliency (a test
drops the failures tolerable to 0 and raises the under-replicated bytes; reads then drain them). Two
listeners share it: Prism Central, and a Prism Element (the only one that serves v2) that still
answers when a test takes Prism Central away. Looser than the product: plain HTTP on loopback.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.support import variations
from tests.support.json_http import JsonHandler, loopback_origins
from tests.support.provenance import Fact, Facts

# the HTTP methods it reads from requests
OWN_TOKENS = frozenset({"GET", "POST", "OPTIONS"})
SDK = "nutanix/ntnx-api-golang-clients@5532819 "
ANS = "nutanix/nutanix.ansible@826678ba plugins/modules/"
ANS_HEAD = "nutanix/nutanix.ansible@159ec768 plugins/modules/"
PY_PKG = "ntnx-clustermgmt-py-client 4.3.2 (PyPI) ntnx_clustermgmt_py_client/"
PY_SDK = f"{PY_PKG}api_client.py "
JK = "jkmills/nutanix-mcp-server "
CAPTURE = (f"{JK}tests/test_health_check_tools.py (the live-capture version; platforms.md dates it fbe31298), "
           "captured from a live AOS 6.8.1 cluster; copied to tests/captures/nutanix/")

FACTS = Facts("prism", [
    Fact("version.vmm", "v4.3", "documented", f"{SDK}vmm-go-client/api/vm_api.go L2648",
         'uri := "/api/vmm/v4.3/ahv/config/vms/{extId}"'),
    Fact("version.clustermgmt", "v4.3", "documented", f"{SDK}clustermgmt-go-client/api/clusters_api.go L1613",
         'uri := "/api/clustermgmt/v4.3/config/clusters/{clusterExtId}/hosts/{extId}"'),
    Fact("version.prism", "v4.4", "documented", f"{SDK}prism-go-client/api/tasks_api.go L147",
         'uri := "/api/prism/v4.4/config/tasks/{extId}"'),
    Fact("action.power_off", "power-off", "documented", f"{SDK}vmm-go-client/api/vm_api.go L3755",
         'uri := "/api/vmm/v4.3/ahv/config/vms/{extId}/$actions/power-off"'),
    Fact("action.power_on", "power-on", "documented", f"{SDK}vmm-go-client/api/vm_api.go L3821",
         'uri := "/api/vmm/v4.3/ahv/config/vms/{extId}/$actions/power-on"'),
    Fact("action.guest_shutdown", "guest-shutdown", "documented", f"{SDK}vmm-go-client/api/vm_api.go L4382",
         'uri := "/api/vmm/v4.3/ahv/config/vms/{extId}/$actions/guest-shutdown"'),
    Fact("action.migrate", "migrate-to-host", "documented", f"{SDK}vmm-go-client/api/vm_api.go L3619",
         'uri := "/api/vmm/v4.3/ahv/config/vms/{extId}/$actions/migrate-to-host"'),
    Fact("action.enter", "enter-host-maintenance", "documented", f"{SDK}clustermgmt-go-client/api/clusters_api.go L1081",
         'uri := "/api/clustermgmt/v4.3/operations/clusters/{clusterExtId}/hosts/{extId}/$actions/enter-host-maintenance"'),
    Fact("action.exit", "exit-host-maintenance", "documented", f"{SDK}clustermgmt-go-client/api/clusters_api.go L1158",
         'uri := "/api/clustermgmt/v4.3/operations/clusters/{clusterExtId}/hosts/{extId}/$actions/exit-host-maintenance"'),
    Fact("action.compute", "compute-non-migratable-vms", "documented",
         f"{SDK}clustermgmt-go-client/api/clusters_api.go L298",
         'uri := "/api/clustermgmt/v4.3/config/clusters/{clusterExtId}/$actions/compute-non-migratable-vms"'),
    Fact("path.result", "non-migratable-vms-result", "documented", f"{SDK}clustermgmt-go-client/api/clusters_api.go L1861",
         'uri := "/api/clustermgmt/v4.3/config/clusters/{clusterExtId}/non-migratable-vms-result/{extId}"'),
    Fact("header.if_match", "If-Match", "documented", f"{SDK}vmm-go-client/README.md L294",
         "should be used as an [If-Match](https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/If-Match) header"),
    Fact("header.etag", "ETag", "documented", f"{SDK}vmm-go-client/README.md L294",
         "the [ETag](https://developer.mozilla.org/en-US/docs/Web/HTTP/Headers/ETag) header received in the response "
         "of a fetch (GET) operation"),
    Fact("header.etag_alternative", "X-Ntnx-Etag", "documented", f"{PY_SDK}(__add_header_to_reserved)",
         "if key == 'ETag' and not header_val and hasattr(response_data, \"getheaders\") and \"X-Ntnx-Etag\" in "
         "response_data.getheaders():"),
    Fact("version.info", "unversioned/info", "documented", f"{PY_SDK}(negotiate_version)",
         "response = self.__call_api('/api/clustermgmt/unversioned/info', 'OPTIONS',"),
    Fact("version.info_field", "data", "documented", f"{PY_SDK}(negotiate_version)",
         'server_version = response["data"]'),
    Fact("version.older_served", True, "assumed",
         "A-prism-api-version: a release serves the v4 paths of every version from v4.0 up to the one its "
         "unversioned/info answers (the SDK rewrites its paths to that version: `repl = '/\\g<namespace>/%s/"
         "\\g<suffix>' % self.negotiated_version`; no document lists what else a release serves)"),
    Fact("page.parameter", "$page", "documented", f"{PY_PKG}api/clusters_api.py (list_clusters)",
         "query_params.append(('$page', params['_page']))"),
    Fact("page.limit_parameter", "$limit", "documented", f"{PY_PKG}api/clusters_api.py (list_clusters)",
         "query_params.append(('$limit', params['_limit']))"),
    Fact("page.default_limit", 50, "documented", f"{PY_PKG}api/clusters_api.py (list_clusters, _limit)",
         "If the limit is not provided, a default value of 50 records will be returned in the result set."),
    Fact("page.max_limit", 100, "documented", f"{PY_PKG}api/clusters_api.py (list_clusters, _limit)",
         "Must be a positive integer between 1 and 100. Any number out of this range will lead to a validation "
         "error."),
    Fact("page.total", "totalAvailableResults", "documented",
         f"{PY_PKG}models/common/v1/response/ApiResponseMetadata.py",
         "'total_available_results': 'totalAvailableResults',"),
    Fact("header.request_id", "NTNX-Request-Id", "documented", f"{SDK}vmm-go-client/client/api_client.go L245",
         "// set NTNX-Request-Id header"),
    Fact("power.on", "ON", "documented", f"{ANS_HEAD}ntnx_vms_power_actions_v2.py L316",
         'if (vm.power_state == "ON" and state == "power_on") or ('),
    Fact("power.off", "OFF", "documented", f"{ANS_HEAD}ntnx_vms_power_actions_v2.py L317",
         'vm.power_state == "OFF" and state != "power_on"'),
    Fact("task.queued", "QUEUED", "documented", f"{SDK}prism-go-client/models/prism/v4/config/config_model.go L8765",
         '"QUEUED",'),
    Fact("task.running", "RUNNING", "documented", f"{SDK}prism-go-client/models/prism/v4/config/config_model.go L8766",
         '"RUNNING",'),
    Fact("task.succeeded", "SUCCEEDED", "documented",
         f"{SDK}prism-go-client/models/prism/v4/config/config_model.go L8768", '"SUCCEEDED",'),
    Fact("task.failed", "FAILED", "documented", f"{SDK}prism-go-client/models/prism/v4/config/config_model.go L8769",
         '"FAILED",'),
    Fact("task.ext_id_prefix", "ZXJnb24=", "documented", f"{ANS}ntnx_cluster_host_maintenance_v2.py (RETURN sample)",
         '"ext_id": "ZXJnb24=:0e040d14-5dcf-5302-8b48-d3c6cf115cd1",'),
    Fact("task.progress", "progressPercentage", "documented",
         f"{SDK}prism-go-client/models/prism/v4/config/config_model.go (Task)",
         'ProgressPercentage *int `json:"progressPercentage,omitempty"`'),
    Fact("host.normal", "normal", "documented", f"{ANS_HEAD}ntnx_hosts_info_v2.py L153 (RETURN sample)",
         '"maintenanceState": "normal",'),
    Fact("host.in_maintenance", "in_maintenance_mode", "assumed",
         "A-prism-maintenance-state: no document names the maintenanceState of a host in maintenance; the model serves "
         "a word other than normal"),
    Fact("host.node_status", "NORMAL", "documented", f"{ANS_HEAD}ntnx_hosts_info_v2.py L154 (RETURN sample)",
         '"nodeStatus": "NORMAL",'),
    Fact("body.should_shutdown", "shouldShutdownNonMigratableUvms", "documented",
         f"{SDK}clustermgmt-go-client/models/clustermgmt/v4/operations/operations_model.go (EnterHostMaintenanceSpec)",
         'ShouldShutdownNonMigratableUvms *bool `json:"shouldShutdownNonMigratableUvms,omitempty"`'),
    Fact("body.migrate_host", "host", "documented",
         f"{SDK}vmm-go-client/models/vmm/v4/ahv/config/config_model.go L30506 (VmMigrateToHostParams)",
         'Host *HostReference `json:"host"`'),
    Fact("result.vm_name", "vmName", "documented",
         f"{SDK}clustermgmt-go-client/models/clustermgmt/v4/config/config_model.go (NonMigratableVmInfo)",
         'VmName *string `json:"vmName,omitempty"`'),
    Fact("result.rel", "clustermgmt:config:non-migratable-vms-result", "assumed",
         "A-prism-non-migratable-result: no document says where the compute task names its result; the model names "
         "it among entitiesAffected with this rel (the sample's rels are clustermgmt:config:host and ...:cluster)"),
    Fact("etag.stale_status", 412, "assumed", "A-prism-stale-etag: no document gives the status of a change with a "
                                              "stale If-Match; 412 Precondition Failed is HTTP's"),
    Fact("etag.required", True, "stricter",
         "Nutanix's Ansible sends If-Match with every power action (`kwargs = {\"if_match\": etag}`); the SDK README: "
         "'Nutanix APIs require that concurrent updates are protected using ETag headers'; the model refuses a VM "
         "change without one"),
    Fact("maintenance.unguarded", True, "assumed",
         f"A-prism-maintenance-unguarded: {ANS}ntnx_cluster_host_maintenance_v2.py sends no If-Match "
         "(`resp = api_instance.enter_host_maintenance(clusterExtId=cluster_ext_id, extId=ext_id, body=spec)`), and "
         f"{PY_SDK}adds one only from an ETag the body carries (`if body and hasattr(body, \"get_reserved\") and "
         "'ETag' in body.get_reserved():`), which a new EnterHostMaintenanceSpec does not; so Prism takes a host's "
         "maintenance without If-Match"),
    Fact("request_id.dedup", True, "assumed",
         "A-prism-request-id-dedup: a change repeating an NTNX-Request-Id answers the first one's task and is not "
         "done again (the SDK sends the header for idempotency; no document states the reply)"),
    Fact("element.v4_reads", True, "assumed",
         "A-prism-element-reads: a Prism Element answers the v4 reads for its own cluster when Prism Central does not"),
    Fact("v2.base", "/api/nutanix/", "documented", f"{JK}src/nutanix_mcp/client.py (_get_pe_client)",
         'base_url=f"https://{pe_host}:{self.settings.port}/api/nutanix/{self.V2_VERSION}",'),
    Fact("v2.version", "v2.0", "documented", f"{JK}src/nutanix_mcp/client.py", 'V2_VERSION = "v2.0"'),
    Fact("v2.path", "cluster/domain_fault_tolerance_status", "documented", f"{JK}tests/test_health_check_tools.py",
         '"cluster/domain_fault_tolerance_status")'),
    Fact("v2.node", "NODE", "captured", CAPTURE, '"domain_type": "NODE",'),
    Fact("v2.disk", "DISK", "captured", CAPTURE, '"domain_type": "DISK",'),
    Fact("v2.static", "STATIC_CONFIGURATION", "captured", CAPTURE, '"STATIC_CONFIGURATION": {'),
    Fact("v2.extent_groups", "EXTENT_GROUPS", "captured", CAPTURE, '"EXTENT_GROUPS": {'),
    Fact("v2.tolerable", "number_of_failures_tolerable", "captured", CAPTURE, '"number_of_failures_tolerable": 1,'),
    Fact("v2.under_replicated", "cluster_under_replicated_data_bytes", "captured", CAPTURE,
         '"cluster_under_replicated_data_bytes": 0,'),
    Fact("v2.details.when_tolerable", 0, "captured",
         f"{CAPTURE}: both components tolerating 0 failures carry details {{message, attributes}}; the healthy ones "
         "carry null ('# Healthy components report details as null.' in the capture's file)",
         '"number_of_failures_tolerable": 0,'),
    Fact("v2.details.static_configuration", "Not enough nodes (hosts) in the cluster", "captured", CAPTURE,
         '"message": "Not enough nodes (hosts) in the cluster"'),
    Fact("v4.ft_current", "currentMaxFaultTolerance", "documented",
         f"{SDK}clustermgmt-go-client/models/clustermgmt/v4/config/config_model.go (FaultToleranceState)",
         'CurrentMaxFaultTolerance *int `json:"currentMaxFaultTolerance,omitempty"`'),
    Fact("v4.ft_desired", "desiredMaxFaultTolerance", "documented",
         f"{SDK}clustermgmt-go-client/models/clustermgmt/v4/config/config_model.go (FaultToleranceState)",
         'DesiredMaxFaultTolerance *int `json:"desiredMaxFaultTolerance,omitempty"`'),
])
"""Facts the Prism model serves, each with its source (tests/support/provenance.py)."""


def _v(fact: str) -> Any:
    return FACTS.value(fact)


@dataclass
class Task:
    ext_id: str
    effect: Any  # what lands when it succeeds (a callable), or None
    affected: list[dict[str, str]] = field(default_factory=list)
    reads: int = 0
    fails: bool = False
    stalls: bool = False
    done: bool = False


@dataclass
class PrismModel:
    """The cluster as a test sets it. `changes` is every change Prism accepted: (action, target, request id)."""

    user: str
    password: str
    cluster_name: str = "ahv-esrp-cluster"
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)  # extId -> host row
    vms: dict[str, dict[str, Any]] = field(default_factory=dict)  # extId -> VM row
    etags: dict[str, int] = field(default_factory=dict)
    tasks: dict[str, Task] = field(default_factory=dict)
    seen_ids: dict[str, str] = field(default_factory=dict)  # NTNX-Request-Id -> the task it started
    changes: list[tuple[str, str, str]] = field(default_factory=list)
    refused: list[tuple[str, int]] = field(default_factory=list)  # (path, status)
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (listener, method, path)
    non_migratable: dict[str, list[str]] = field(default_factory=dict)  # host extId -> VM names
    results: dict[str, list[str]] = field(default_factory=dict)
    polls_to_finish: int = 3
    fail_next: bool = False
    stall: bool = False
    changed_after_read: dict[str, int] = field(default_factory=dict)  # extId -> after which read it changes behind
    central_down: bool = False
    element_password: str | None = None  # a Prism Element with a login of its own (not Prism Central's)
    failures_tolerable: int = 1
    under_replicated: int = 0
    drain_per_read: int = 0
    cluster_id: str = "0006361b-6855-3644-7458-2268f8ffb2bd"
    versions: dict[str, str] = field(default_factory=dict)  # namespace -> the highest it serves (a test's older one)
    if_match_sent: list[tuple[str, bool]] = field(default_factory=list)  # (action, whether it carried If-Match)
    _ids: Iterator[int] = field(default_factory=itertools.count, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_host(self, name: str) -> str:
        ext_id = self._new_id("host")
        self.hosts[ext_id] = {"extId": ext_id, "hostName": name, "maintenanceState": _v("host.normal"),
                              "nodeStatus": _v("host.node_status")}
        return ext_id

    def add_vm(self, name: str, host: str, power: str | None = None) -> str:
        ext_id = self._new_id("vm")
        self.vms[ext_id] = {"extId": ext_id, "name": name, "powerState": power or _v("power.on"),
                            "host": {"extId": self.host_id(host)}, "cluster": {"extId": self.cluster_id}}
        return ext_id

    def host_id(self, name: str) -> str:
        return next(i for i, h in self.hosts.items() if h["hostName"] == name)

    def vm_id(self, name: str) -> str:
        return next(i for i, v in self.vms.items() if v["name"] == name)

    def vm_power(self, name: str) -> str:
        return str(self.vms[self.vm_id(name)]["powerState"])

    def vm_host(self, name: str) -> str:
        return str(self.hosts[self.vms[self.vm_id(name)]["host"]["extId"]]["hostName"])

    def in_maintenance(self, name: str) -> bool:
        return bool(self.hosts[self.host_id(name)]["maintenanceState"] != _v("host.normal"))

    def _new_id(self, kind: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{kind}-{next(self._ids)}"))

    # -- resiliency a test sets ------------------------------------------------------------------
    def node_lost(self, under_replicated: int, drain_per_read: int) -> None:
        """A node gone: nothing more tolerable, data to re-replicate, drained by `drain_per_read` bytes each read."""
        self.failures_tolerable, self.under_replicated, self.drain_per_read = 0, under_replicated, drain_per_read

    def _drain(self) -> None:
        if self.under_replicated:
            self.under_replicated = max(0, self.under_replicated - self.drain_per_read)
            if not self.under_replicated:
                self.failures_tolerable = 1

    def fault_tolerance(self) -> list[dict[str, Any]]:
        self._drain()

        def details(name: str, tolerable: int) -> dict[str, Any] | None:
            """Prism's reason for a component that tolerates no failure, as captured; null for a healthy one. Only
            STATIC_CONFIGURATION's words at 0 were captured: another component's are the stand-in's (shape only)."""
            if tolerable != _v("v2.details.when_tolerable"):
                return None
            said = _v("v2.details.static_configuration") if name == _v("v2.static") else f"(stand-in) {name} at 0"
            return {"message": said, "attributes": {}}

        def component(name: str, tolerable: int) -> dict[str, Any]:
            return {"component_type": name, _v("v2.tolerable"): tolerable, "details": details(name, tolerable),
                    "under_computation": False, "last_updated_time_in_usecs": 1786890305000000}

        return [{"domain_type": _v(domain), "component_fault_tolerance_status": {
                    _v(name): component(_v(name), self.failures_tolerable)},
                 _v("v2.under_replicated"): self.under_replicated, "cluster_non_fault_tolerant_entries": 0}
                for domain, name in (("v2.node", "v2.static"), ("v2.disk", "v2.extent_groups"))]

    def other_clusters(self) -> list[dict[str, Any]]:
        """The clusters Prism Central manages besides this one: 120 under `pagination` (more than any page holds)."""
        count = OTHER_CLUSTERS if variations.PAGINATION in variations.served(variations.PRISM) else 0
        return [{"extId": str(uuid.uuid5(uuid.NAMESPACE_OID, f"other-cluster-{n}")), "name": f"other-cluster-{n:02d}"}
                for n in range(count)]

    def cluster(self) -> dict[str, Any]:
        return {"extId": self.cluster_id, "name": self.cluster_name, "config": {
            "buildInfo": {"version": "stand-in (documentation-derived)"},
            "faultToleranceState": {_v("v4.ft_current"): self.failures_tolerable, _v("v4.ft_desired"): 1}}}

    # -- entities and their ETags ------------------------------------------------------------------
    def etag(self, ext_id: str) -> str:
        return f'W/"{ext_id}:{self.etags.get(ext_id, 0)}"'

    def touch(self, ext_id: str) -> None:
        self.etags[ext_id] = self.etags.get(ext_id, 0) + 1

    def read(self, ext_id: str) -> str:
        """The ETag a read answers; an entity told to change behind its reader does so right after that read."""
        etag = self.etag(ext_id)
        if ext_id in self.changed_after_read:
            self.changed_after_read[ext_id] -= 1
            if not self.changed_after_read[ext_id]:
                del self.changed_after_read[ext_id]
                self.touch(ext_id)
        return etag

    # -- changes and tasks -------------------------------------------------------------------------
    def change(self, path: str, headers: dict[str, str], entity: str, action: str, effect: Any,
               affected: list[dict[str, str]] | None = None, *, unguarded: bool = False) -> tuple[int, Any]:
        """A change Prism takes, or refuses for its If-Match; `unguarded`: one Nutanix's own client sends without
        If-Match (a host's maintenance), taken without one."""
        request_id = headers.get(str(_v("header.request_id")).lower(), "")  # HTTP header names: any case
        if request_id in self.seen_ids and FACTS.as_documented("request_id.dedup"):
            return 202, {"data": {"extId": self.seen_ids[request_id]}}
        if_match = headers.get(str(_v("header.if_match")).lower())
        self.if_match_sent.append((action, if_match is not None))
        checked = not (unguarded and FACTS.as_documented("maintenance.unguarded"))
        if entity and checked and (if_match != self.etag(entity)) \
                and (if_match or FACTS.as_documented("etag.required")):
            status = int(_v("etag.stale_status"))
            self.refused.append((path, status))
            return status, {"data": {"error": [{"message": f"stale or missing If-Match for {entity}"}]}}
        task = Task(f"{_v('task.ext_id_prefix')}:{self._new_id('task')}", effect, affected or [],
                    fails=self.fail_next, stalls=self.stall)
        self.fail_next = False
        self.tasks[task.ext_id] = task
        if request_id:
            self.seen_ids[request_id] = task.ext_id
        self.changes.append((action, entity, request_id))
        return 202, {"data": {"extId": task.ext_id, "$objectType": "prism.v4.config.TaskReference"}}

    def task(self, ext_id: str) -> dict[str, Any] | None:
        task = self.tasks.get(ext_id)
        if task is None:
            return None
        task.reads += 1
        if task.stalls and self.stall:
            status = _v("task.running")
        elif task.fails and task.reads >= self.polls_to_finish:
            status = _v("task.failed")
        elif task.reads >= self.polls_to_finish:
            status = _v("task.succeeded")
            if not task.done and task.effect is not None:
                task.effect()
            task.done = True
        else:
            status = _v("task.queued") if task.reads == 1 else _v("task.running")
        progress = 100 if status == _v("task.succeeded") else min(90, 30 * task.reads)
        reply = {"extId": ext_id, "status": status, _v("task.progress"): progress,
                 "entitiesAffected": task.affected}
        if status == _v("task.failed"):
            reply["errorMessages"] = [{"message": "the stand-in was told to fail this task"}]
        return reply

    # -- effects -------------------------------------------------------------------------------------
    def set_power(self, vm: str, power: str) -> None:
        self.vms[vm]["powerState"] = power
        self.touch(vm)

    def move(self, vm: str, host: str) -> None:
        self.vms[vm]["host"] = {"extId": host}
        self.touch(vm)

    def serves(self, namespace: str, version: str) -> bool:
        """Whether `/api/<namespace>/<version>/...` is served: the highest version, and older v4 ones."""
        highest = self.highest(namespace)
        if version == highest:
            return True
        older = re.fullmatch(r"v4\.(\d+)", version)
        return bool(older and FACTS.as_documented("version.older_served")
                    and int(older.group(1)) < int(highest.split(".")[1]))

    def highest(self, namespace: str) -> str:
        return self.versions.get(namespace) or str(_v(f"version.{namespace}"))

    def maintenance(self, host: str, entering: bool) -> None:
        self.hosts[host]["maintenanceState"] = _v("host.in_maintenance") if entering else _v("host.normal")
        self.touch(host)
        if entering:
            others = [h for h in self.hosts if h != host and self.hosts[h]["maintenanceState"] == _v("host.normal")]
            for vm in [v for v, row in self.vms.items() if row["host"]["extId"] == host and others]:
                self.move(vm, others[0])

    @contextmanager
    def serving(self) -> Iterator[tuple[str, str]]:
        """(Prism Central's origin, a Prism Element's origin), both on 127.0.0.1, while the block runs."""
        with loopback_origins(_handler(self, "central"), _handler(self, "element")) as (central, element):
            yield central, element


def _handler(model: PrismModel, role: str) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def do_OPTIONS(self) -> None:
            self._answer("OPTIONS")

        @property
        def served_variations(self) -> set[str]:
            return variations.served(variations.PRISM, self.excluded)

        def _answer(self, method: str) -> None:
            if role == "central" and model.central_down:
                self.close_connection = True  # as a Prism lost with its site: no answer at all
                return
            password = model.element_password if role == "element" and model.element_password else model.password
            expected = "Basic " + base64.b64encode(f"{model.user}:{password}".encode()).decode()
            if self.headers.get("Authorization") != expected:
                self.reply({"data": {"error": [{"message": "Authentication required"}]}}, 401)
                return
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            with model.lock:
                model.requests.append((role, method, url.path))
                status, reply, etag = _route(model, role, method, [unquote(p) for p in url.path.split("/")],
                                             parse_qs(url.query), {k.lower(): v for k, v in self.headers.items()}, body,
                                             url.path)
            named = "header.etag_alternative" if variations.X_NTNX_ETAG in self.served_variations else "header.etag"
            self.reply(reply, status, {str(_v(named)): etag} if etag else None)

    return Handler


NAMESPACES = ("vmm", "clustermgmt", "prism")
OTHER_CLUSTERS = 120  # more than the largest page holds (100)
NOT_FOUND: tuple[int, Any, str | None] = (404, {"data": {"error": [{"message": "no such entity"}]}}, None)


def _route(model: PrismModel, role: str, method: str, parts: list[str], query: dict[str, list[str]],
           headers: dict[str, str], body: Any, path: str) -> tuple[int, Any, str | None]:
    """What Prism answers `method /parts...` (parts[0] is the empty string before the first slash)."""
    v2 = f"{_v('v2.base')}{_v('v2.version')}/{_v('v2.path')}"
    if "/".join(parts) == v2.rstrip("/"):
        return (200, model.fault_tolerance(), None) if role == "element" else NOT_FOUND
    if role == "element" and not FACTS.as_documented("element.v4_reads"):
        return NOT_FOUND
    namespace = parts[2] if len(parts) > 3 and parts[:2] == ["", "api"] else ""
    if namespace in NAMESPACES and "/".join(parts[3:]) == _v("version.info") and method == "OPTIONS":
        return 200, {str(_v("version.info_field")): model.highest(namespace)}, None
    if namespace not in NAMESPACES or not model.serves(namespace, parts[3]):
        return NOT_FOUND
    if namespace == "vmm" and parts[4:7] == ["ahv", "config", "vms"]:
        return _vms(model, method, parts[7:], query, headers, body, path)
    if namespace == "clustermgmt":
        return _clusters(model, method, parts[4:], query, headers, body, path)
    if namespace == "prism" and parts[4:6] == ["config", "tasks"] and len(parts) == 7 and method == "GET":
        task = model.task(parts[6])
        return (200, {"data": task}, None) if task else NOT_FOUND
    return NOT_FOUND


def _page(items: list[dict[str, Any]], query: dict[str, list[str]]) -> tuple[int, Any, str | None]:
    """One page of a v4 list, as `$page` and `$limit` ask it (a limit out of range is a validation error)."""
    try:
        limit = int(query.get(str(_v("page.limit_parameter")), [str(_v("page.default_limit"))])[0])
        page = int(query.get(str(_v("page.parameter")), ["0"])[0])
    except ValueError:
        limit = page = -1
    if not 1 <= limit <= int(_v("page.max_limit")) or page < 0:
        return 400, {"data": {"error": [{"message": "$page or $limit out of range"}]}}, None
    return 200, {"data": items[page * limit:(page + 1) * limit],
                 "metadata": {str(_v("page.total")): len(items)}}, None


def _vms(model: PrismModel, method: str, rest: list[str], query: dict[str, list[str]], headers: dict[str, str],
         body: Any, path: str) -> tuple[int, Any, str | None]:
    if not rest and method == "GET":
        wanted = query.get("$filter", [""])[0]
        name = wanted[len("name eq '"):-1] if wanted.startswith("name eq '") and wanted.endswith("'") else None
        return _page([v for v in model.vms.values() if name is None or v["name"] == name], query)
    if not rest or rest[0] not in model.vms:
        return NOT_FOUND
    vm = rest[0]
    if len(rest) == 1 and method == "GET":
        return 200, {"data": model.vms[vm]}, model.read(vm)
    if len(rest) != 3 or rest[1] != "$actions" or method != "POST":
        return NOT_FOUND
    action = rest[2]
    effects = {_v("action.power_off"): lambda: model.set_power(vm, _v("power.off")),
               _v("action.guest_shutdown"): lambda: model.set_power(vm, _v("power.off")),
               _v("action.power_on"): lambda: model.set_power(vm, _v("power.on"))}
    if action == _v("action.migrate"):
        to = ((body or {}).get(_v("body.migrate_host")) or {}).get("extId")
        if to not in model.hosts:
            return 400, {"data": {"error": [{"message": f"no host {to}"}]}}, None
        effects[action] = lambda: model.move(vm, to)
    if action not in effects:
        return NOT_FOUND
    status, reply = model.change(path, headers, vm, action, effects[action])
    return status, reply, None


def _clusters(model: PrismModel, method: str, rest: list[str], query: dict[str, list[str]], headers: dict[str, str],
              body: Any, path: str) -> tuple[int, Any, str | None]:
    if rest == ["config", "clusters"] and method == "GET":
        return _page([*model.other_clusters(), model.cluster()], query)
    if rest[1:3] != ["clusters", model.cluster_id]:
        return NOT_FOUND
    tail = rest[3:]
    if rest[0] == "config" and not tail and method == "GET":
        return 200, {"data": model.cluster()}, None
    if rest[0] == "config" and tail == ["hosts"] and method == "GET":
        return _page(list(model.hosts.values()), query)
    if rest[0] == "config" and len(tail) == 2 and tail[0] == "hosts" and tail[1] in model.hosts and method == "GET":
        return 200, {"data": model.hosts[tail[1]]}, model.read(tail[1])
    if rest[0] == "config" and tail == ["$actions", _v("action.compute")] and method == "POST":
        hosts = list((body or {}).get("hosts") or [])
        result = f"result-{len(model.results)}"
        model.results[result] = [vm for h in hosts for vm in model.non_migratable.get(h, [])]
        status, reply = model.change(path, headers, "", str(_v("action.compute")), None,
                                     [{"extId": result, "rel": str(_v("result.rel"))}])
        return status, reply, None
    if rest[0] == "config" and len(tail) == 2 and tail[0] == _v("path.result") and tail[1] in model.results \
            and method == "GET":
        return 200, {"data": {"extId": tail[1], "vms": [{_v("result.vm_name"): name, "nonMigratableVmReason": "pinned"}
                                                         for name in model.results[tail[1]]]}}, None
    if rest[0] == "operations" and len(tail) == 4 and tail[0] == "hosts" and tail[1] in model.hosts \
            and tail[2] == "$actions" and method == "POST":
        host, action = tail[1], tail[3]
        if action == _v("action.enter"):
            stranded = model.non_migratable.get(host) and not (body or {}).get(_v("body.should_shutdown"))
            if stranded:
                return 400, {"data": {"error": [{"message": "non-migratable VMs on the host"}]}}, None
            status, reply = model.change(path, headers, host, action, lambda: model.maintenance(host, True),
                                         unguarded=True)
            return status, reply, None
        if action == _v("action.exit"):
            status, reply = model.change(path, headers, host, action, lambda: model.maintenance(host, False),
                                         unguarded=True)
            return status, reply, None
    return NOT_FOUND
