"""`management.platforms.vplex`: where the VPLEX management server is, the account as a reference, which cluster stands
in which site; a wrong value is refused naming its field path, before anything is contacted."""

from __future__ import annotations

from typing import Any

import pytest

from faults import sections
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from harness_platforms.vplex.section import VplexSection
from harness_platforms.vplex.view import VplexMetro

GOOD = {"endpoint": "https://192.0.2.150", "credential": {"username": "ro", "password": {"env": "VPLEX_PW"}},
        "clusters": {"cluster-1": "site-a", "cluster-2": "site-b"}, "consistency_groups": ["cg1"]}


def topology(**changed: Any) -> Topology:
    return parse_topology({
        "name": "metro", "sites": [
            {"name": "site-a", "subnets": ["192.0.2.0/26"], "hosts": [{"name": "a1", "address": "192.0.2.11"}]},
            {"name": "site-b", "subnets": ["192.0.2.64/26"], "hosts": [{"name": "b1", "address": "192.0.2.71"}]}],
        "management": {"platforms": {"vplex": {**GOOD, **changed}}}}, "metro.yaml")


def test_a_good_section_validates_and_its_password_is_a_reference_found_with_its_path() -> None:
    assert isinstance(sections.check(topology())["vplex"], VplexSection)
    assert [p for p, _ in sections.secret_refs(topology())] == ["management.platforms.vplex.credential.password"]


@pytest.mark.parametrize(("changed", "said"), [
    ({"endpoint": "http://192.0.2.150"}, "endpoint: .*http is for a loopback address only"),
    ({"endpoint": "https://ro:pw@192.0.2.150"}, "endpoint: .*no credential in the URL"),
    ({"endpoint": "https://192.0.2.150/vplex/v2"}, r"endpoint: .*the harness adds /vplex/v2"),
    ({"endpoint": "ftp://192.0.2.150"}, r"endpoint: .*https://HOST\[:PORT\]"),
    ({"credential": {"username": "ro", "password": "plain"}}, r"credential\.password"),
    ({"clusters": {"cluster-1": "site-a", "cluster-2": "site-a"}}, "clusters: .*two VPLEX clusters stand in one site"),
    ({"clusters": {"cluster 1": "site-a"}}, "clusters: .*not a VPLEX cluster name"),
    ({"consistency_groups": []}, "consistency_groups"),
    ({"consistency_groups": ["cg1", "cg1"]}, "consistency_groups: .*listed twice"),
    ({"timeout_s": 0}, "timeout_s"),
])
def test_a_wrong_value_is_refused_naming_its_field(changed: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError, match=f"management\\.platforms\\.vplex\\.{said}"):
        sections.check(topology(**changed))


def test_a_cluster_in_no_site_or_an_endpoint_inside_a_site_subnet_is_refused_by_the_observer() -> None:
    with pytest.raises(ConfigError, match=r"management\.platforms\.vplex\.clusters\.cluster-2: 'site-c' is no site"):
        VplexMetro.from_topology(topology(clusters={"cluster-1": "site-a", "cluster-2": "site-c"}))
    with pytest.raises(ConfigError, match=r"management\.platforms\.vplex\.endpoint: 192\.0\.2\.70 is inside "
                                          r"sites\[1\]\.subnets\[0\].*a partition would cut the harness off"):
        VplexMetro.from_topology(topology(endpoint="https://192.0.2.70"))
