"""The nutanix platform's parts read alone: its section, its request ids, its resiliency parser, its plans.

The parser is fed the one recorded Prism response that is public (a live AOS 6.8.1 capture, see
tests/captures/nutanix/README.md); everything else here is built from Nutanix's SDK and documents."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from faults import registry
from faults.base import FaultSpec
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_platforms.nutanix.api import REQUEST_ID_NAMESPACE, request_id
from harness_platforms.nutanix.resiliency import parse_v2, with_v4

ROOT = Path(__file__).parents[4]
CAPTURE = ROOT / "tests" / "captures" / "nutanix" / "domain_fault_tolerance_status.aos-6.8.1.json"


def topology(**section: Any) -> Topology:
    return parse_topology({
        "name": "ahv-unit", "kind": "nutanix",
        "sites": [{"name": "site-a", "hosts": [{"name": "ahv-a1", "address": "192.0.2.11"}]},
                  {"name": "site-b", "hosts": [{"name": "ahv-b1", "address": "192.0.2.71"}]}],
        "databases": [{"name": "db", "kind": "sqlserver-ag", "endpoint": "192.0.2.100", "database": "bench",
                       "nodes": [{"name": "sql01", "host": "ahv-a1", "vm": "sql01-vm"}]}],
        "management": {"platforms": {"nutanix": {
            "endpoint": "https://203.0.113.10:9440", "cluster": "c1",
            "credential": {"username": "op", "password": {"env": "NX_PW"}}, **section}}},
        "allow_list": ["node:db/sql01", "host:ahv-a1"]}, "ahv.yaml")


def plan_of(kind: str, target: str, instance: str = "0123456789ab", **section: Any) -> str:
    return registry.build(FaultSpec(kind, target, instance=instance), topology(**section)).plan().render()


@pytest.mark.parametrize(("field", "value", "said"), [
    ("endpoint", "http://203.0.113.10:9440", "management.platforms.nutanix.endpoint: .*http only to a loopback"),
    ("endpoint", "https://op:pw@203.0.113.10", "management.platforms.nutanix.endpoint: .*no credential"),
    ("fallback_endpoints", ["https://203.0.113.21/api"], r"management.platforms.nutanix.fallback_endpoints\[0\]: "
                                                         ".*the server alone"),
    ("api_versions", {"vmm": "v3"}, "management.platforms.nutanix.api_versions.vmm"),
    ("vms", {"sql01": "bad/name"}, "management.platforms.nutanix.vms: .*not a name as Prism shows one"),
])
def test_a_wrong_section_field_is_named_by_its_path(field: str, value: Any, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        registry.build(FaultSpec("vm-power-off", "node:db/sql01"), topology(**{field: value}))


def test_a_request_id_is_derived_from_the_journaled_instance_and_the_operation_alone() -> None:
    """Stable across processes (a retried revert after a crash sends the same id), distinct per operation and
    per fault, and a UUID as Prism's header expects."""
    first = request_id("0123456789ab", "revert power-on")
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first)
    assert first == str(uuid.uuid5(REQUEST_ID_NAMESPACE, "0123456789ab:revert power-on"))
    assert first == request_id("0123456789ab", "revert power-on")
    assert first != request_id("0123456789ab", "inject power-off")
    assert first != request_id("ba9876543210", "revert power-on")


def test_the_plan_lists_each_request_with_method_path_headers_body_and_its_request_id() -> None:
    text = plan_of("vm-power-off", "node:db/sql01")
    power_off = (f"POST https://203.0.113.10:9440/api/vmm/v4.3/ahv/config/vms/{{extId of VM sql01-vm}}/$actions/power-off "
                 "[Authorization: Basic *** (management.platforms.nutanix.credential); If-Match: <ETag of GET "
                 "/api/vmm/v4.3/ahv/config/vms/{extId of VM sql01-vm}>; NTNX-Request-Id: "
                 f"{request_id('0123456789ab', 'inject power-off')} (inject power-off)] body none")
    assert f"  inject: {power_off}" in text.splitlines()
    assert f"NTNX-Request-Id: {request_id('0123456789ab', 'revert power-on')} (revert power-on)" in text
    assert "/api/prism/v4.4/config/tasks/{extId of the task}" in text and "every 2 s until SUCCEEDED" in text
    assert "NX_PW" not in text and "credentials: management.platforms.nutanix.credential.password" in text


def test_the_api_version_of_each_namespace_is_a_section_setting() -> None:
    text = plan_of("host-maintenance", "host:ahv-a1", api_versions={"clustermgmt": "v4.0", "prism": "v4.0"})
    assert "/api/clustermgmt/v4.0/operations/clusters/{extId of cluster c1}/hosts/{extId of host ahv-a1}/$actions/" \
           "enter-host-maintenance" in text
    assert '{"shouldRollbackOnFailure": true, "shouldShutdownNonMigratableUvms": false, "timeoutSeconds": 1800}' in text
    assert "/api/prism/v4.0/config/tasks/" in text


def test_vsan_s_evacuation_mode_is_refused_on_nutanix_rather_than_ignored() -> None:
    with pytest.raises(ConfigError, match=r"params\.vsan_mode is vSAN's; it means nothing on Nutanix"):
        registry.build(FaultSpec("host-maintenance", "host:ahv-a1", {"vsan_mode": "noAction"}), topology())


def test_the_recorded_aos_6_8_1_reply_parses_as_a_bare_list_with_uppercase_components() -> None:
    """The capture's node domain tolerates 0 failures (too few nodes): not OK, and it says why."""
    state = parse_v2(json.loads(CAPTURE.read_text()))
    assert (state.failures_tolerable, state.under_replicated_bytes, state.ok) == (0, 0.0, False)
    assert state.weakest == ("NODE/FREE_SPACE: Cluster does not have enough capacity to tolerate a node failure",
                             "NODE/STATIC_CONFIGURATION: Not enough nodes (hosts) in the cluster")
    assert state.words["DISK/METADATA"] == "2" and state.words["DISK/EXTENT_GROUPS"] == "1"
    assert state.figures() == {"resiliency ok": 0.0, "fault tolerance (failures tolerable)": 0.0,
                               "under-replicated bytes": 0.0}
    assert parse_v2({"domain_fault_tolerance_status": json.loads(CAPTURE.read_text())}) == state


def test_the_invented_dict_wrapper_that_once_passed_green_elsewhere_is_refused() -> None:
    """jkmills' first fixture (lowercase keys under a dict) read as a list: no component, so nothing tolerable."""
    invented = {"domain_fault_tolerance_status": [{"domain_type": "NODE", "component_fault_tolerance_status": {
        "static_configuration": {"current_max_fault_tolerance": 1}}}]}
    state = parse_v2(invented)
    assert state.failures_tolerable is None and not state.ok
    with pytest.raises(Exception, match="expected a list of domains"):
        parse_v2({"entities": []})


def test_a_v4_cluster_reply_adds_its_fault_tolerance_and_a_shortfall_is_not_ok() -> None:
    healthy = [{"domain_type": "NODE", "component_fault_tolerance_status": {"STATIC_CONFIGURATION": {
        "number_of_failures_tolerable": 1}}, "cluster_under_replicated_data_bytes": 0}]
    base = parse_v2(healthy)
    assert base.ok
    cluster = {"extId": "c", "config": {"faultToleranceState": {"currentMaxFaultTolerance": 0,
                                                                "desiredMaxFaultTolerance": 1,
                                                                "domainAwarenessLevel": "NODE"}}}
    both = with_v4(base, cluster)
    assert (both.current_ft, both.desired_ft, both.ok) == (0, 1, False)
    assert both.figures()["fault tolerance desired (v4)"] == 1.0
    assert with_v4(base, {"name": "no config"}).ok
