"""The bound lab's topology and simulator config, generated without starting anything."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

from harness.cli import build_parser
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import LabSettings
from harness_lab.esxi import EsxiEndpoint
from harness_lab.layout import LabLayout
from harness_lab.redfish_emulator import system_id
from harness_lab.vsphere_binding import (
    Endpoints,
    LabCredentials,
    disk_group,
    env_names,
    simulator_config,
    topology_document,
)
from harness_platforms.vsphere.vsan.section import settings as vsan_settings

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMIsnTjQ227blpw/r2dBsGwEzHn5Vk/eMuW6U1h3BZeC"
SCRIPT = "/usr/lib/vmware/vsan/bin/vsanDiskFaultInjection.pyc"


@pytest.fixture
def layout(tmp_path: Path) -> LabLayout:
    return LabLayout.from_settings(LabSettings(prefix="hvst", state_dir=str(tmp_path / "lab")))


def endpoints(tmp_path: Path) -> Endpoints:
    esxi = tuple(EsxiEndpoint(h, 40000 + i, KEY) for i, h in enumerate(("esx-a1", "esx-a2", "esx-b1", "esx-b2")))
    return Endpoints(vcenter_port=8989, redfish_port=8443, esxi=esxi, router_host_key=KEY, ca_file=tmp_path / "ca.pem")


def test_the_generated_topology_validates_as_a_document_bound_to_the_lab(layout: LabLayout, tmp_path: Path) -> None:
    document = topology_document(layout, endpoints(tmp_path))
    text = yaml.safe_dump(document)
    topology = parse_topology(yaml.safe_load(text), "generated")
    assert topology.kind == "vsphere" and topology.lab is not None and topology.lab.prefix == "hvst"
    assert [h.name for h in topology.hosts()] == ["esx-a1", "esx-a2", "esx-b1", "esx-b2"]
    esx_a1 = topology.host("esx-a1")
    assert esx_a1.bmc == "bmc-esx-a1" and esx_a1.ssh == "esxi-esx-a1"
    assert esx_a1.disk_groups[0].cache == "naa.5000c5000a100"
    assert esx_a1.disk_groups[0].capacity == ["naa.5000c5000a101", "naa.5000c5000a102"]
    mgmt = topology.management
    assert mgmt.vcenter is not None and mgmt.vcenter.tls.verify and mgmt.vcenter.tls.ca_file == str(tmp_path / "ca.pem")
    assert (mgmt.vcenter.cluster, mgmt.vcenter.datacenter, mgmt.vcenter.port) == ("stretched-01", "dc-lab", 8989)
    bmc = next(r for r in mgmt.redfish if r.name == "bmc-esx-b2")
    assert bmc.system_id == system_id("hvst", "esx-b2") and bmc.tls.verify and bmc.port == 8443
    assert SCRIPT in vsan_settings(topology).disk_faults.permanent  # VMware's documented lines, the defaults
    assert {n.name: n.vm for n in topology.databases[0].nodes} == {"node-a": "pg-node-a", "node-b": "pg-node-b"}
    assert topology.witness is not None and topology.witness.name == "vsan-witness-01"
    allowed = set(topology.allow_list)
    assert {"host:esx-a2", "site:site-b", "disk:esx-a1/naa.5000c5000a100", "diskgroup:esx-b1/0",
            "link:site-a~site-b", "link:site-a~witness", "node:bench/node-a"} <= allowed
    for path, ref in topology.secret_refs():
        assert ref.env in env_names("hvst").values(), path


def test_no_secret_is_in_the_topology(layout: LabLayout, tmp_path: Path) -> None:
    credentials = LabCredentials.of_lab(tmp_path)
    text = yaml.safe_dump(topology_document(layout, endpoints(tmp_path)))
    assert credentials.vcenter_password not in text and credentials.bmc_password not in text
    assert credentials.vcenter_readonly_password not in text
    assert stat.S_IMODE((tmp_path / "credentials.json").stat().st_mode) == 0o600
    assert LabCredentials.of_lab(tmp_path) == credentials  # kept: exported variables stay valid


def test_the_simulator_config_follows_the_contract(tmp_path: Path) -> None:
    config = simulator_config("hvst", hook=["/py", "-m", "harness", "lab", "vm", "--prefix", "hvst"],
                              cert_file=tmp_path / "s.pem", key_file=tmp_path / "s.key", ready_file=tmp_path / "r.json")
    json.dumps(config)
    assert [s["name"] for s in config["sites"]] == ["site-a", "site-b"] and config["sites"][0]["preferred"]
    assert config["sites"][1]["hosts"][0] == {"name": "esx-b1", "disk_groups": [disk_group("esx-b1")],
                                              "uuid": system_id("hvst", "esx-b1")}  # what its BMC reports
    assert config["vms"][0] == {"name": "pg-node-a", "host": "esx-a1", "node": "node-a", "disk_gb": 8}
    assert config["model"]["io_pause_s"] < 4  # under the HA manager's detection time
    assert "password" not in config and config["password_env"] == "HARNESS_VSIM_PASSWORD"
    assert config["accounts"] == [{"username": "harness-readonly@vsphere.local",
                                   "password_env": "HARNESS_VSIM_READONLY_PASSWORD",
                                   "privileges": ["System.Anonymous", "System.View", "System.Read"]}]
    assert config["listen"].startswith("127.0.0.1:") and config["control_listen"].startswith("127.0.0.1:")


@pytest.mark.parametrize(("argv", "expected"), [
    (["power-off", "node-a"], {"vm_action": "power-off", "node": "node-a"}),
    (["power-on", "node-b"], {"vm_action": "power-on", "node": "node-b"}),
    (["io-pause", "node-a", "3"], {"vm_action": "io-pause", "node": "node-a", "seconds": 3.0}),
    (["io-load", "site-b", "40", "12.5"], {"vm_action": "io-load", "site": "site-b", "mb_per_s": 40.0, "seconds": 12.5}),
])
def test_lab_vm_parses_the_simulators_hook(argv: list[str], expected: dict[str, object]) -> None:
    args = build_parser().parse_args(["lab", "vm", "--prefix", "hvst", *argv])
    assert args.prefix == "hvst"
    assert {k: getattr(args, k) for k in expected} == expected


@pytest.mark.parametrize("argv", [["power-off", "node-c"], ["io-pause", "node-a", "-1"], ["io-load", "site-c", "1", "1"],
                                  ["io-pause", "node-a", "nan"]])
def test_lab_vm_refuses_what_the_lab_does_not_have(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["lab", "vm", *argv])


def test_a_model_parameter_changed_at_bind_keeps_its_type_and_unknown_ones_are_refused() -> None:
    from harness_kernel.errors import ConfigError
    from harness_lab.vsphere_binding import MODEL, model_with

    model = model_with({"component_mb": 128.0, "resync_rate_mb_s": 80})
    assert model["component_mb"] == 128 and isinstance(model["component_mb"], int)  # the simulator reads an integer
    assert model["resync_rate_mb_s"] == 80.0 and model["ha_restart_delay_s"] == MODEL["ha_restart_delay_s"]
    with pytest.raises(ConfigError, match=r"unknown model parameter.*component_gb"):
        model_with({"component_gb": 1})
    with pytest.raises(ConfigError, match="component_mb take whole numbers"):
        model_with({"component_mb": 0.5})
