"""Bad input gets one clear line naming the file, the field or the target — before any fault."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness_kernel.errors import ConfigError, MissingCredentialError
from harness_kernel.topology.credentials import Secret, SecretRef, resolve_secret
from harness_kernel.topology.loader import load_topology

ROOT = Path(__file__).parents[4]
EXAMPLE = ROOT / "examples" / "stretched-2plus2.yaml"


def example() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_the_shipped_example_describes_a_two_plus_two_stretched_cluster_with_a_witness():
    topology = load_topology(EXAMPLE)
    assert [len(site.hosts) for site in topology.sites] == [2, 2]
    assert topology.witness is not None
    assert all(host.bmc and host.ssh for host in topology.hosts())  # power and disk faults need both
    assert [node.vm for node in topology.databases[0].nodes] == ["sql01-vm", "sql02-vm"]
    assert "disk:esx-b1/naa.5000c500b1b1b101" in topology.allow_list
    assert topology.host("esx-a1").disk_groups[0].cache == "naa.5000c500a1a1a100"


def test_malformed_yaml_names_the_file_and_line(tmp_path):
    path = write(tmp_path, "name: x\nsites: [\n  - {name: a\n")
    with pytest.raises(ConfigError, match=rf"^{path}:\d+:\d+: malformed YAML"):
        load_topology(path)


def test_an_unknown_field_is_named_with_its_path(tmp_path):
    data = example()
    data["sites"][0]["hosts"][1]["bmcc"] = "oops"
    with pytest.raises(ConfigError, match=r"sites\[0\]\.hosts\[1\]\.bmcc: unknown field"):
        load_topology(write(tmp_path, data))


def test_a_missing_required_field_is_named(tmp_path):
    data = example()
    del data["management"]["vcenter"]["cluster"]
    with pytest.raises(ConfigError, match=r"management\.vcenter\.cluster: Field required"):
        load_topology(write(tmp_path, data))


def test_an_allow_list_entry_that_names_no_target_is_rejected(tmp_path):
    data = example()
    data["allow_list"].append("host:esx-c9")
    at = len(data["allow_list"]) - 1
    with pytest.raises(ConfigError, match=rf"allow_list\[{at}\]: 'host:esx-c9' names no target"):
        load_topology(write(tmp_path, data))


def test_a_reference_to_an_unknown_endpoint_is_rejected(tmp_path):
    data = example()
    data["sites"][1]["hosts"][0]["bmc"] = "bmc-nowhere"
    with pytest.raises(ConfigError, match=r"sites\[1\]\.hosts\[0\]\.bmc: no redfish endpoint named 'bmc-nowhere'"):
        load_topology(write(tmp_path, data))


def test_a_credential_value_in_the_file_is_not_accepted(tmp_path):
    data = example()
    data["management"]["vcenter"]["credential"]["password"] = "hunter2"
    with pytest.raises(ConfigError, match=r"management\.vcenter\.credential\.password"):
        load_topology(write(tmp_path, data))


def test_a_missing_credential_names_the_field_and_the_variable():
    ref = SecretRef(env="HARNESS_TEST_UNSET_VARIABLE")
    with pytest.raises(MissingCredentialError,
                       match=r"management\.vcenter\.credential\.password: the environment variable named at "
                             r"management\.vcenter\.credential\.password\.env is not set"):
        resolve_secret(ref, "management.vcenter.credential.password", environ={})


def test_a_resolved_secret_never_prints_its_value():
    secret = resolve_secret(SecretRef(env="PW"), "x", environ={"PW": "s3cr3t-value"})
    assert isinstance(secret, Secret)
    assert "s3cr3t-value" not in repr(secret) and "s3cr3t-value" not in str(secret) and "s3cr3t-value" not in f"{secret}"
    assert secret.reveal() == "s3cr3t-value"


def test_a_missing_credential_stops_a_pytest_run_before_any_test(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", str(ROOT / "tests" / "unit" / "test_timeline.py"),
         "--topology", str(EXAMPLE), "--state-dir", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert result.returncode == 4
    assert "missing credentials: management.vcenter.credential.password: the environment variable named at " \
           "management.vcenter.credential.password.env is not set" \
        in result.stderr


def test_an_unknown_topology_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"nowhere\.yaml: topology file not found"):
        load_topology(tmp_path / "nowhere.yaml")
