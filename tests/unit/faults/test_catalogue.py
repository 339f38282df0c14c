"""The platforms an installation has: the tree's, then the plug-ins' (entry points), checked before anything is planned.

Which backend acts is data: the descriptors' conditions, in catalogue order, or the topology's
`owners`. A plug-in adds platforms and kinds; it cannot take over what the tree serves.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from faults import registry
from faults.base import FaultSpec
from faults.catalogue import Catalogue, installed, this_package
from faults.plugins import DISABLE, GROUP, Distribution, PluginPlatform, discovered
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from tests.unit.faults import toy_platform
from tests.unit.faults.test_registry import EXAMPLE, example

TOY = PluginPlatform(toy_platform.PLATFORM, "toy = tests.unit.faults.toy_platform:PLATFORM",
                     Distribution("harness-toy", "1.2.3"))


def with_toy() -> Catalogue:
    return this_package(TOY)


def plugin(platform: object, name: str = "toy") -> PluginPlatform:
    return PluginPlatform(platform, f"{name} = x:Y", Distribution("harness-toy", "1.2.3"))  # type: ignore[arg-type]


def test_a_plugin_serves_an_in_tree_kind_where_the_tree_has_only_a_fallback() -> None:
    topology = example(without_bmc="esx-b1")
    served = {host: registry.resolve(FaultSpec("host-power-off", f"host:{host}"), topology, with_toy()).platform
              for host in ("esx-a1", "esx-b1")}
    assert served == {"esx-a1": "redfish",  # the tree's BMC power-off comes first
                      "esx-b1": "toy"}  # before the graceful vSphere shutdown, the fallback
    assert registry.resolve(FaultSpec("host-power-off", "host:esx-b1"), topology).platform == "vsphere"


def test_a_plugin_brings_kinds_of_its_own_on_the_closed_target_kinds() -> None:
    resolved = registry.resolve(FaultSpec("outlet-cycle", "host:esx-a1"), example(), with_toy())
    assert (resolved.kind.target.value, resolved.platform) == ("host", "toy")
    with pytest.raises(ConfigError, match="unknown fault kind 'outlet-cycle'"):
        registry.resolve(FaultSpec("outlet-cycle", "host:esx-a1"), example(), this_package())


@pytest.mark.parametrize(("platform", "refusal"), [
    (toy_platform.CLAIMS_THE_LAB, r"\(host-crash, lab\) is served by this package; a plug-in may not claim it"),
    (toy_platform.REDEFINES_A_KIND, "fault kind 'latency' is defined already"),
    (toy_platform.UNKNOWN_KIND, "a backend for 'host-melt', which is no fault kind"),
])
def test_a_plugin_cannot_take_over_what_the_tree_serves(platform: object, refusal: str) -> None:
    with pytest.raises(ConfigError, match=refusal):
        this_package(plugin(platform, getattr(platform, "name", "toy")))


def test_two_plugins_of_one_platform_name_are_refused_naming_both() -> None:
    other = PluginPlatform(toy_platform.PLATFORM, "toy = other:PLATFORM", Distribution("harness-toy-fork", "0.1"))
    with pytest.raises(ConfigError, match=r"platform 'toy' of harness-toy-fork 0\.1: harness-toy 1\.2\.3 declares"):
        this_package(TOY, other)


def test_the_journal_record_names_the_plugin_distribution_and_the_tree_names_none() -> None:
    topology = example(without_bmc="esx-b1")
    assert registry.resolve(FaultSpec("outlet-cycle", "host:esx-a1"), topology, with_toy()).record() == {
        "platform": "toy", "backend": "faults.backends.process:ProcessFreeze", "distribution": "harness-toy",
        "version": "1.2.3"}
    assert registry.resolve(FaultSpec("host-power-off", "host:esx-a1"), topology).record() == {
        "platform": "redfish", "backend": "harness_platforms.redfish.faults:HostPowerOff"}


def test_a_reverter_without_the_plugin_that_injected_names_it() -> None:
    record = {"platform": "toy", "backend": "faults.backends.process:ProcessFreeze", "distribution": "harness-toy",
              "version": "1.2.3"}
    spec = FaultSpec("host-power-off", "host:esx-b1")
    with pytest.raises(ConfigError, match=r"injected by platform toy of harness-toy 1.2.3, which this installation "
                                          r"lacks: install it \(pip install 'harness-toy==1.2.3'\)"):
        registry.rebuild(spec, example(), record, this_package())


def test_a_reverter_rebuilds_the_class_that_injected_whatever_the_registry_would_pick_today() -> None:
    record = {"platform": "vsphere", "backend": "harness_platforms.vsphere.faults:HostShutdown"}
    spec = FaultSpec("host-power-off", "host:esx-b1")
    assert registry.resolve(spec, example(), with_toy()).platform == "toy"
    assert type(registry.rebuild(spec, example(), record, with_toy())).__name__ == "HostShutdown"
    with pytest.raises(ConfigError, match="is not a process of the topology"):  # an older release's entry: as then,
        registry.rebuild(spec, example(), {}, with_toy())  # by today's choice (the toy's ProcessFreeze)


def owned(owners: dict[str, str]) -> Topology:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["owners"] = owners
    return parse_topology(doc, str(EXAMPLE))


def test_the_topology_names_the_owner_of_a_target_where_the_inferred_one_is_not_wanted() -> None:
    spec = FaultSpec("latency", "link:site-a~site-b", {"rtt_ms": 4})
    assert registry.resolve(spec, owned({})).platform == "router"
    assert registry.resolve(spec, owned({"link:site-a~site-b": "lab"})).platform == "lab"
    with pytest.raises(ConfigError, match=r"owners\['link:site-a~site-b'\]: no platform named 'pdu'"):
        registry.resolve(spec, owned({"link:site-a~site-b": "pdu"}))
    with pytest.raises(registry.NoBackendError, match="owners names redfish, which has no latency backend"):
        registry.build(spec, owned({"link:site-a~site-b": "redfish"}))
    with pytest.raises(ConfigError, match="owners: 'link:site-z~site-y' names no target in this topology"):
        owned({"link:site-z~site-y": "lab"})


def installed_distribution(site: Path, value: str, name: str = "toy") -> None:
    """A distribution as pip leaves it in site-packages: its metadata and its entry points."""
    info = site / "harness_toy-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-toy\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [{GROUP}]
        {name} = {value}
        """))


def test_plugins_are_found_through_their_entry_points_and_only_this_packages_own_when_autoloading_is_off(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    installed_distribution(tmp_path, "tests.unit.faults.toy_platform:PLATFORM")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = {p.platform.name: str(p.distribution) for p in discovered({})}
    assert found["toy"] == "harness-toy 1.2.3"
    assert found["nutanix"].startswith("resilience-harness "), "shipped in the plug-in shape, found the same way"
    own = {p.platform.name: str(p.distribution) for p in discovered({DISABLE: "1"})}
    assert set(own) == {"nutanix", "redfish", "sqlserver", "vplex", "vsan", "vsphere", "wsfc"}, \
        "this package's platforms are not plug-ins to it"
    assert all(d.startswith("resilience-harness ") for d in own.values())
    assert installed({DISABLE: "1"}).platform("toy") is None
    assert installed({DISABLE: "1"}).platform("sqlserver") is not None


@pytest.mark.parametrize(("value", "name", "refusal"), [
    ("tests.unit.faults.no_such_module:PLATFORM", "toy", r"entry point 'toy' of harness-toy 1.2.3 .* does not load: "
                                                         r"ModuleNotFoundError.*set HARNESS_DISABLE_PLUGIN_AUTOLOAD=1"),
    ("tests.unit.faults.toy_platform:NOT_A_PLATFORM", "toy", "is a dict, not a faults.platform.Platform"),
    ("tests.unit.faults.toy_platform:PLATFORM", "pdu", "declares platform 'toy' under the name 'pdu'"),
])
def test_a_plugin_that_does_not_load_is_named_not_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str,
                                                          name: str, refusal: str) -> None:
    installed_distribution(tmp_path, value, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=refusal):
        discovered({})


@pytest.mark.parametrize(("before", "now"), [  # as the releases before the platforms' folder journaled them
    ("harness_nutanix.faults:VmPowerOff", "harness_platforms.nutanix.faults:VmPowerOff"),
    ("faults.backends.sqlserver.faults:AgFailover", "harness_platforms.sqlserver.faults:AgFailover"),
    ("faults.backends.sqlserver_backup:SqlServerBackup", "harness_platforms.sqlserver.backup:SqlServerBackup"),
    ("faults.backends.sqlserver_restore:SqlServerRestore", "harness_platforms.sqlserver.restore:SqlServerRestore"),
    ("faults.backends.wsfc.faults:FciRoleMove", "harness_platforms.sqlserver.wsfc.faults:FciRoleMove"),
    ("faults.backends.vsphere.faults:HostShutdown", "harness_platforms.vsphere.faults:HostShutdown"),
    ("faults.backends.vsphere.qos:DiskIopsLimit", "harness_platforms.vsphere.qos:DiskIopsLimit"),
    ("faults.backends.vsan.faults:DiskFailure", "harness_platforms.vsphere.vsan.faults:DiskFailure"),
    ("faults.backends.redfish:HostPowerOff", "harness_platforms.redfish.faults:HostPowerOff"),
])
def test_an_entry_journaled_before_a_platform_moved_is_rebuilt_from_where_its_class_lives_now(before: str,
                                                                                                now: str) -> None:
    assert registry.moved(before) == now
    assert registry.named(registry.moved(before)).__name__ == now.partition(":")[2]
    assert registry.moved("faults.backends.lab:HostCrash") == "faults.backends.lab:HostCrash"  # not moved
