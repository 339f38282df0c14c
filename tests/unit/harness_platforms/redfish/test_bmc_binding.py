"""Whether a BMC's system and a host are one server: by UUID (in either SMBIOS byte order), else serial."""

from __future__ import annotations

import uuid

import pytest

from faults.base import Uncertain
from harness_platforms.redfish.faults import same_server

HOST = "4c4c4544-0042-3510-8057-b4c04f4e4d32"


def test_the_same_uuid_in_any_case_or_braces_is_the_same_server() -> None:
    assert same_server((HOST.upper(), None), (HOST, None)) == f"UUID {HOST}"
    assert same_server(("{" + HOST + "}", None), (HOST, "X")) == f"UUID {HOST}"


def test_a_uuid_with_its_first_three_fields_byte_swapped_is_the_same_server_and_says_so() -> None:
    swapped = str(uuid.UUID(bytes_le=uuid.UUID(HOST).bytes))
    assert swapped == "44454c4c-4200-1035-8057-b4c04f4e4d32"
    assert "byte-swapped" in str(same_server((swapped, None), (HOST, None)))


def test_another_uuid_is_another_server_even_when_the_serials_agree() -> None:
    assert same_server(("4c4c4544-0042-3510-8057-b4c04f4e4d33", "SN1"), (HOST, "SN1")) is None


def test_serials_decide_only_where_a_uuid_is_missing() -> None:
    assert same_server((None, "cz2001x7 "), (HOST, "CZ2001X7")) == "serial number CZ2001X7"
    assert same_server((None, "CZ2001X8"), (HOST, "CZ2001X7")) is None


def test_nothing_to_compare_is_uncertain_not_a_match() -> None:
    with pytest.raises(Uncertain, match="neither a UUID nor a serial number"):
        same_server((None, None), (HOST, None))
