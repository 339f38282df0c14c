"""A plug-in platform's topology section is validated by its own model, with the core's field paths and secrets."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from faults import platforms, sections
from faults.catalogue import Catalogue, this_package
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from tests.unit.faults import toy_platform
from tests.unit.faults.test_catalogue import TOY
from tests.unit.faults.test_registry import EXAMPLE

WITH_TOY = this_package(TOY)
WITHOUT = this_package()
SECTION = {"address": "192.0.2.90", "credential": {"username": "admin", "password": {"env": "TOY_PASSWORD"}},
           "outlets": {"esx-a1": 3}}


def with_section(section: object) -> Topology:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["management"]["platforms"] = {"toy": section}
    return parse_topology(doc, str(EXAMPLE))


def test_the_section_reads_through_the_platforms_model() -> None:
    model = sections.section(with_section(SECTION), "toy", toy_platform.ToySection)
    assert (model.address, model.credential.username, model.outlets) == ("192.0.2.90", "admin", {"esx-a1": 3})


@pytest.mark.parametrize(("section", "error"), [
    ({**SECTION, "colour": "red"}, "management.platforms.toy.colour: unknown field"),
    ({**SECTION, "outlets": {"esx-a1": "three"}}, r"management.platforms.toy.outlets\['esx-a1'\]: Input should be a valid "
                                                  "integer"),
    ({"address": "192.0.2.90", "credential": {"username": "admin", "password": "hunter2"}},
     "management.platforms.toy.credential.password"),
])
def test_a_bad_section_is_an_error_naming_the_field_path(section: dict[str, object], error: str) -> None:
    with pytest.raises(ConfigError, match=error) as raised:
        sections.check(with_section(section), WITH_TOY)
    assert "hunter2" not in str(raised.value), "a value given where a reference belongs is never echoed"


def test_a_section_no_installed_platform_reads_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"management.platforms.toy: no installed platform reads it .*is its plug-in "
                                          r"installed\?"):
        sections.check(with_section(SECTION), WITHOUT)


def test_its_secret_references_are_checked_and_masked_like_the_cores() -> None:
    refs = sections.secret_refs(with_section(SECTION), WITH_TOY)
    assert [(path, ref.env) for path, ref in refs] == [("management.platforms.toy.credential.password", "TOY_PASSWORD")]


def of_kind(kind: str) -> Topology:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["kind"] = kind
    return parse_topology(doc, str(EXAMPLE))


def test_a_cluster_kind_is_the_lab_or_one_an_installed_platform_hosts() -> None:
    """A platform may host clusters (`kind: vsphere`, `kind: nutanix`); a kind nobody here hosts, or a platform that
    only acts on targets, is refused by name before anything is planned."""
    def toy(**changes: object) -> Catalogue:
        return this_package(dataclasses.replace(TOY, platform=dataclasses.replace(TOY.platform, **changes)))

    assert set(sections.check(of_kind("toy"), toy(hosts_clusters=True))) == {"vsan"}  # the sections it validated
    with pytest.raises(ConfigError, match=r"kind: 'toy' is no platform installed here \(known: nutanix, vsphere, toy2;"):
        sections.check(of_kind("toy"), toy(name="toy2", hosts_clusters=True))
    with pytest.raises(ConfigError, match=r"kind: 'toy' is no platform installed here"):
        sections.check(of_kind("toy"), WITH_TOY)
    with pytest.raises(ConfigError, match=r"kind: 'vsphre' is no platform installed here \(known: nutanix, vsphere;"):
        sections.check(of_kind("vsphre"), WITHOUT)
    with pytest.raises(ConfigError, match=r"kind: 'vsphere' is no platform installed here \(known: ;"):
        sections.check(of_kind("vsphere"), Catalogue.of(platforms.IN_TREE, []))  # vSphere is a platform like any


def test_a_database_kind_is_one_an_installed_platform_observes() -> None:
    """A plug-in may bring a database kind (its `databases` part); one nobody here observes is refused by name."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["databases"][0]["kind"] = "oracle-rac"
    topology = parse_topology(doc, str(EXAMPLE))  # the kernel takes any name: what is installed decides
    with pytest.raises(ConfigError, match=r"databases\[0\]\.kind: 'oracle-rac' is no database kind installed here "
                                          r"\(known: postgres, sqlserver-ag, sqlserver-fci; is its plug-in installed\?\)"):
        sections.check(topology, WITHOUT)
    brings = dataclasses.replace(TOY, platform=dataclasses.replace(TOY.platform, databases=(("oracle-rac", "x:Y"),)))
    assert set(sections.check(topology, this_package(brings))) == {"vsan"}
