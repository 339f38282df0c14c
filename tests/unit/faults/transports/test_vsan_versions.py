"""The vSAN API version is the newest one vCenter offers that this pyVmomi speaks, read from vCenter's document."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from faults.transports.vsan_versions import from_pyvmomi, negotiated, offered
from harness_kernel.errors import ControlPlaneError

# The shape VMware documents for vimServiceVersions.xml, with urn:vsan and pyVmomi's vSAN version ids.
DOCUMENT = """<?xml version="1.0" encoding="UTF-8"?>
<namespaces version="1.0">
 <namespace>
  <name>urn:vsan</name>
  <version>8.0.0.3</version>
  <priorVersions>
   <version>8.0.0.2</version>
   <version>vSAN 7.0U3</version>
  </priorVersions>
 </namespace>
</namespaces>
"""


def test_the_offered_ids_are_the_version_then_the_prior_versions() -> None:
    assert offered(DOCUMENT, "vc:443") == ["8.0.0.3", "8.0.0.2", "vSAN 7.0U3"]


def test_pyvmomi_names_the_ids_and_the_newest_it_speaks_wins() -> None:
    assert from_pyvmomi(["8.0.0.3", "8.0.0.2"], "vc:443") == "vsan.version.version22"
    assert from_pyvmomi(["99.9.9.9", "vSAN 7.0U3"], "vc:443") == "vsan.version.version18"


def test_an_id_newer_than_this_pyvmomi_is_skipped_not_guessed() -> None:
    names = {"9.9": "vsan.version.future", "8.0.0.1": "vsan.version.version20"}
    assert negotiated(["9.9", "8.0.0.1"], "vc:443", names.get, lambda name: name != "vsan.version.future") == \
        "vsan.version.version20"


@pytest.mark.parametrize(("document", "said"), [
    ("<html>not found</html>", "expected <namespaces version=\"1.0\">"),
    ("not xml at all", "is not XML"),
    (DOCUMENT.replace("urn:vsan", "urn:vim25"), "offers no urn:vsan namespace"),
])
def test_a_document_that_is_not_a_versions_list_fails_naming_the_override(document: str, said: str) -> None:
    with pytest.raises(ControlPlaneError, match=re.escape("set management.vsan.api_version")) as refused:
        offered(document, "vc:443")
    assert said in str(refused.value)


def test_nothing_this_pyvmomi_speaks_fails_naming_what_was_offered() -> None:
    with pytest.raises(ControlPlaneError, match=re.escape("offers 0.1, 0.2, none of which this pyVmomi speaks")):
        from_pyvmomi(["0.1", "0.2"], "vc:443")


def test_the_sdk_helper_that_turns_tls_verification_off_is_never_called() -> None:
    """vsanapiutils.GetLatestVmodlVersion opens its URL with verification off for the whole process."""
    root = Path(__file__).resolve().parents[4]
    callers = [p for folder in ("faults", "harness", "workloads", "reports") for p in (root / folder).rglob("*.py")
               if "GetLatestVmodlVersion(" in p.read_text()]
    assert callers == []
