"""Every registered (fault kind, platform) pair builds and plans from a topology alone, contacting nothing.

The registry imports backends from strings, which import-linter cannot see; this test is what
guards those imports. Which backend acts is data (the platforms' descriptors and the topology's
`owners`), so these specs also say which platform a target goes to.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from faults import platforms, registry
from faults.base import FaultPlan, FaultSpec
from faults.catalogue import Catalogue, this_package
from faults.kinds import KINDS, LatencyParams
from faults.plugins import PluginPlatform
from harness_kernel.errors import ConfigError, TargetNotAllowedError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import LabSettings, Topology
from harness_kernel.topology.targets import Target, TargetKind
from harness_lab.layout import LabLayout
from harness_platforms.sqlserver.platform import SQLSERVER
from harness_platforms.vsphere import platform as vsphere

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "stretched-2plus2.yaml"
FCI_EXAMPLE = EXAMPLE.with_name("stretched-fci.yaml")
PARAMS: dict[str, dict[str, object]] = {"latency": {"rtt_ms": 4.0}, "backup": {"destination": "/srv/backup"},
                                        "restore": {"backup": "/srv/backup/b", "destination": "/srv/restore"},
                                        "disk-iops-limit": {"iops_limit": 400}}


def example(without_bmc: str = "esx-b1") -> Topology:
    """The shipped example, one host left without a BMC (vCenter is its only control), and a local process."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    for site in doc["sites"]:
        for entry in site["hosts"]:
            if entry["name"] == without_bmc:
                del entry["bmc"]
    doc["processes"] = [{"name": "victim", "pidfile": "/nonexistent/victim.pid", "executable": "/bin/sh"}]
    return parse_topology(doc, str(EXAMPLE))


def fci_example() -> Topology:
    """The shipped FCI example: its database role is a WSFC role."""
    return parse_topology(yaml.safe_load(FCI_EXAMPLE.read_text()), str(FCI_EXAMPLE))


def lab() -> Topology:
    return LabLayout.from_settings(LabSettings(prefix="hunit")).topology()


def postgres_example() -> Topology:
    """The shipped example with its database a PostgreSQL cluster (pg_auto_failover on the same VMs)."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["databases"] = [{"name": "pg-01", "kind": "postgres", "endpoint": "192.0.2.21,192.0.2.22", "port": 5432,
                         "database": "bench", "nodes": [{"name": "pg01", "host": "esx-a1"},
                                                        {"name": "pg02", "host": "esx-b1"}]}]
    doc["allow_list"] = [t for t in doc["allow_list"] if not t.startswith(("database:", "node:"))] + ["database:pg-01"]
    return parse_topology(doc, str(EXAMPLE))


def spec_for(kind: str, platform: str, topology: Topology) -> FaultSpec | None:
    """A spec of `kind` on the first target of the right kind that `platform` serves."""
    for text in sorted(topology.targets()):
        spec = FaultSpec(kind, text, PARAMS.get(kind, {}))
        if Target.parse(text).kind is KINDS[kind].target and registry.resolve(spec, topology).platform == platform:
            return spec
    return None


# Nutanix's pairs act on a `kind: nutanix` topology: its own spec builds and plans them (harness_platforms/nutanix)
@pytest.mark.parametrize(("kind", "platform"), sorted(p for p in this_package().pairs() if p[1] != "nutanix"))
def test_every_registered_pair_builds_and_plans_without_contacting_anything(kind: str, platform: str) -> None:
    topology = {"lab": lab, "wsfc": fci_example, "postgres": postgres_example}.get(platform, example)()
    spec = spec_for(kind, platform, topology)
    assert spec is not None, f"no target in the {topology.name} topology is served by {platform} for {kind}"
    assert registry.resolve(spec, topology).platform == platform
    plan = registry.build(spec, topology).plan()
    assert isinstance(plan, FaultPlan)
    assert plan.inject_steps and plan.revert_steps


def test_every_registered_kind_is_in_the_kind_table() -> None:
    catalogue = this_package()
    assert {kind for kind, _ in catalogue.pairs()} <= set(catalogue.kinds)
    assert set(KINDS) <= set(catalogue.kinds)


def test_the_platform_follows_the_target() -> None:
    topology = example()
    on = {str(target): registry.resolve(FaultSpec(kind, str(target), PARAMS.get(kind, {})), topology).platform
          for kind, target in [("latency", "link:site-a~site-b"), ("witness-isolation", "witness:vsan-witness-01"),
                               ("disk-failure", "disk:esx-b2/naa.5000c500b2b2b201"), ("role-move", "database:sql-ag-01"),
                               ("host-power-off", "host:esx-a1"), ("host-power-off", "host:esx-b1")]}
    assert on == {"link:site-a~site-b": "router", "witness:vsan-witness-01": "router",
                  "disk:esx-b2/naa.5000c500b2b2b201": "vsan", "database:sql-ag-01": "sqlserver",
                  "host:esx-a1": "redfish",  # it has a BMC
                  "host:esx-b1": "vsphere"}
    # an FCI's role is a WSFC role (Move-ClusterGroup); an AG's is moved with T-SQL, never with cluster cmdlets
    assert registry.resolve(FaultSpec("role-move", "database:sql-fci-01"), fci_example()).platform == "wsfc"


def test_a_kind_without_a_backend_here_is_a_clear_error_not_a_crash() -> None:
    with pytest.raises(registry.NoBackendError, match=r"storage-loss on node:sql-ag-01/sql02: nothing in this "
                                                      r"installation serves it on this target \(lab needs the embedded lab\)"):
        registry.build(FaultSpec("storage-loss", "node:sql-ag-01/sql02"), example())
    with pytest.raises(registry.NoBackendError, match="no platform has a backend for this fault kind"):
        only_vsphere = Catalogue.of((), [PluginPlatform(vsphere.VSPHERE, "vsphere = x:Y", None)])
        registry.build(FaultSpec("host-crash", "host:esx-a1"), example(), only_vsphere)


def test_params_are_validated_once_with_the_field_named() -> None:
    with pytest.raises(ConfigError, match=r"latency: params.loss_pct: Input should be less than or equal to 100"):
        registry.resolve(FaultSpec("latency", "link:site-a~site-b", {"rtt_ms": 4, "loss_pct": 150}), example())
    with pytest.raises(ConfigError, match=r"params.rtt_ms: Field required"):
        registry.resolve(FaultSpec("latency", "link:site-a~site-b"), example())
    with pytest.raises(ConfigError, match=r"params.colour: unknown field"):
        registry.resolve(FaultSpec("latency", "link:site-a~site-b", {"rtt_ms": 1, "colour": "red"}), example())
    resolved = registry.resolve(FaultSpec("latency", "link:site-a~site-b", {"rtt_ms": 4}), example())
    assert resolved.params == LatencyParams(rtt_ms=4.0)


def test_a_target_of_the_wrong_kind_or_outside_the_topology_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match="target 'site:site-a' is a site; this fault acts on a host"):
        registry.resolve(FaultSpec("host-crash", "site:site-a"), example())
    with pytest.raises(ConfigError, match="target 'host:esx-z9' is not in topology"):
        registry.resolve(FaultSpec("host-crash", "host:esx-z9"), example())
    with pytest.raises(ConfigError, match="unknown fault kind 'host-melt'"):
        registry.resolve(FaultSpec("host-melt", "host:esx-a1"), example())


def test_a_missing_optional_sdk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    sqlserver = replace(SQLSERVER, backends=tuple(
        replace(b, path="harness_platforms.no_such_sdk_backend:AgFailover") for b in SQLSERVER.backends))
    own = PluginPlatform(sqlserver, "sqlserver = harness_platforms.sqlserver.platform:SQLSERVER", None)
    monkeypatch.setattr(registry, "installed", lambda: Catalogue.of(platforms.IN_TREE, [own]))
    with pytest.raises(ConfigError, match=r"pip install 'resilience-harness\[sqlserver\]'"):
        registry.build(FaultSpec("role-move", "database:sql-ag-01"), example())


def planned(spec: FaultSpec, topology: Topology) -> FaultPlan:
    return registry.build(spec, topology).plan()


def test_the_allow_list_rule_is_one_rule() -> None:
    topology = example()
    registry.permit(planned(FaultSpec("host-power-off", "host:esx-a2"), topology), topology, allow_destructive=True)
    with pytest.raises(TargetNotAllowedError, match="not in the allow_list"):
        registry.permit(planned(FaultSpec("disk-failure", "disk:esx-b2/naa.5000c500b2b2b201"), topology), topology,
                        allow_destructive=True)
    with pytest.raises(TargetNotAllowedError, match="need --allow-destructive"):
        registry.permit(planned(FaultSpec("host-power-off", "host:esx-a2"), topology), topology, allow_destructive=False)
    registry.permit(planned(FaultSpec("host-crash", "host:host-a"), lab()), lab(), allow_destructive=False)


def test_targets_parse_and_print_kind_and_path() -> None:
    link = Target.parse("link:site-a~site-b")
    assert (link.kind, link.parts, str(link)) == (TargetKind.LINK, ("site-a", "site-b"), "link:site-a~site-b")
    assert Target.parse("disk:esx-b2/naa.5000c500b2b2b201").parts == ("esx-b2", "naa.5000c500b2b2b201")
    assert Target.parse("node:bench/node-a").name == "node-a"
    for bad in ("esx-a1", "host:", "moon:x", "link:site-a", "node:bench/"):
        with pytest.raises(ConfigError, match="target"):
            Target.parse(bad)
