"""A VM's storage policy as PBM serves it: whether its data has a copy in each site of a stretched cluster."""

from __future__ import annotations

import pytest
from pyVmomi import pbm

from harness_platforms.vsphere.policies import StoragePolicy, rules_of


def capability_profile(**rules: object) -> pbm.profile.CapabilityBasedProfile:
    """A profile shaped as PbmRetrieveContent returns one: VSAN rules in a sub-profile's capabilities."""
    capabilities = [pbm.capability.CapabilityInstance(
        id=pbm.capability.CapabilityMetadata.UniqueId(namespace="VSAN", id=name),
        constraint=[pbm.capability.ConstraintInstance(propertyInstance=[
            pbm.capability.PropertyInstance(id=name, value=value)])]) for name, value in rules.items()]
    return pbm.profile.CapabilityBasedProfile(
        name="p", constraints=pbm.profile.SubProfileCapabilityConstraints(subProfiles=[
            pbm.profile.SubProfileCapabilityConstraints.SubProfile(name="VSAN sub-profile", capability=capabilities)]))


def test_rules_are_read_as_namespace_dot_id_with_their_value_as_text() -> None:
    rules = rules_of(capability_profile(hostFailuresToTolerate=1, locality="None", iopsLimit=500))
    assert rules == {"VSAN.hostFailuresToTolerate": "1", "VSAN.locality": "None", "VSAN.iopsLimit": "500"}


@pytest.mark.parametrize(("rules", "mirrored"), [
    ({"VSAN.hostFailuresToTolerate": "1", "VSAN.locality": "None"}, True),  # dual site mirroring
    ({"VSAN.hostFailuresToTolerate": "1"}, True),  # no locality rule keeps the data in one site
    ({"VSAN.hostFailuresToTolerate": "0", "VSAN.locality": "Preferred Fault Domain"}, False),
    ({"VSAN.hostFailuresToTolerate": "0", "VSAN.locality": "Secondary Fault Domain"}, False),
    ({"VSAN.hostFailuresToTolerate": "0", "VSAN.locality": "None"}, False),  # no site protection
    ({"VVOL.replication": "on"}, None),  # no vSAN rules: not said
])
def test_site_mirroring_is_site_tolerance_one_without_a_locality(rules: dict[str, str], mirrored: bool | None) -> None:
    assert StoragePolicy("p", rules).site_mirrored is mirrored
