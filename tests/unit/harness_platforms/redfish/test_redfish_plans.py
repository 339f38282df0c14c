"""The redfish backend's plans and refusals from the example topology, contacting nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from faults import registry
from faults.base import Fault, FaultSpec
from faults.transports.redfish import RedfishClient
from harness_kernel.errors import ConfigError, ControlPlaneError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.management import RedfishEndpoint
from harness_kernel.topology.models import Topology
from harness_platforms.redfish.faults import HostPowerOff, SitePowerOff

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "stretched-2plus2.yaml"


@pytest.fixture(scope="module")
def topology() -> Topology:
    """The example, with site-b's hosts left without a BMC."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    for host in doc["sites"][1]["hosts"]:
        del host["bmc"]
    return parse_topology(doc, str(EXAMPLE))


def build(cls: type[HostPowerOff] | type[SitePowerOff], spec: FaultSpec, topology: Topology) -> Fault:
    resolved = registry.resolve(spec, topology)
    fault: Fault = cls.from_spec(spec, resolved.params, resolved.target, topology)
    return fault


def test_host_power_off_plans_force_off_then_on_through_the_hosts_bmc(topology: Topology) -> None:
    spec = FaultSpec("host-power-off", "host:esx-a1")
    assert registry.resolve(spec, topology).platform == "redfish"
    fault = build(HostPowerOff, spec, topology)
    assert isinstance(fault, Fault)
    plan = fault.plan()
    assert plan.backend == "redfish"
    assert len(plan.inject_steps) == 1 and "ResetType=ForceOff" in plan.inject_steps[0]
    assert "bmc-esx-a1 (192.0.2.211:443)" in plan.inject_steps[0]
    assert "discovered from /redfish/v1/Systems" in plan.inject_steps[0]
    assert "ResetType=On" in plan.revert_steps[0] and "PowerState On" in plan.revert_steps[0]
    assert plan.credentials == ("management.redfish[0].credential.password",)


def test_building_resolves_no_credential(topology: Topology) -> None:
    """The example's BMC passwords live in a keyring this machine lacks: building and planning must not ask."""
    fault = build(HostPowerOff, FaultSpec("host-power-off", "host:esx-a2"), topology)
    assert "bmc-esx-a2" in fault.plan().render()


def test_site_power_off_takes_every_host_of_the_site(topology: Topology) -> None:
    fault = build(SitePowerOff, FaultSpec("site-power-off", "site:site-a"), topology)
    plan = fault.plan()
    assert [s.split(":")[0] for s in plan.inject_steps] == ["esx-a1", "esx-a2"]
    assert plan.credentials == ("management.redfish[0].credential.password", "management.redfish[1].credential.password")


def test_site_power_off_is_refused_naming_the_hosts_without_a_bmc(topology: Topology) -> None:
    with pytest.raises(ConfigError, match=r"hosts without a BMC: esx-b1, esx-b2"):
        build(SitePowerOff, FaultSpec("site-power-off", "site:site-b"), topology)


def test_host_power_off_on_a_host_without_a_bmc_is_refused(topology: Topology) -> None:
    with pytest.raises(ConfigError, match="host esx-b1: no BMC"):
        build(HostPowerOff, FaultSpec("host-power-off", "host:esx-b1"), topology)


def test_a_pinned_system_id_is_used_as_given() -> None:
    endpoint = RedfishEndpoint.model_validate({"name": "bmc1", "address": "192.0.2.9", "system_id": "System.Embedded.1",
                                               "credential": {"username": "u", "password": {"env": "HARNESS_TEST_UNSET"}}})
    assert RedfishClient(endpoint, "management.redfish[0]").system_path() == "/redfish/v1/Systems/System.Embedded.1"


def test_an_unreachable_bmc_is_retried_within_bounds_and_named_without_its_secret() -> None:
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ["HARNESS_TEST_BMC_SECRET"] = "s3cret-not-shown"
    try:
        endpoint = RedfishEndpoint.model_validate({
            "name": "bmc1", "address": "127.0.0.1", "port": port, "system_id": "1",
            "credential": {"username": "u", "password": {"env": "HARNESS_TEST_BMC_SECRET"}}})
        client = RedfishClient(endpoint, "management.redfish[0]", attempts=2, retry_window_s=5)
        with pytest.raises(ControlPlaneError) as caught:
            client.power_state()
    finally:
        del os.environ["HARNESS_TEST_BMC_SECRET"]
    message = str(caught.value)
    assert f"redfish bmc1 (127.0.0.1:{port})" in message and "after 2 attempts" in message
    assert "s3cret" not in message
