"""A capture keeps the fields the parsers read and nothing else; pyVmomi still reads what is kept."""

from __future__ import annotations

import io
import json

from faults.transports.http_recording import withheld
from harness.capture import scrub
from harness.capture.store import request_key

ENVELOPE = ('<?xml version="1.0" encoding="UTF-8"?>\n<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/'
            'encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/'
            'XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>{}</soapenv:Body>'
            '</soapenv:Envelope>')
FETCH = ENVELOPE.format('<Fetch xmlns="urn:vim25"><_this type="SessionManager">SessionManager</_this>'
                        '<prop>currentSession</prop></Fetch>')
SESSION = ENVELOPE.format(
    '<FetchResponse xmlns="urn:vim25"><returnval xsi:type="UserSession"><key>52b1-key</key>'
    '<userName>VSPHERE.LOCAL\\harness</userName><fullName>Harness Operator</fullName>'
    '<loginTime>2026-11-26T20:00:00Z</loginTime><lastActiveTime>2026-11-26T20:00:00Z</lastActiveTime>'
    '<locale>en</locale><messageLocale>en</messageLocale><extensionSession>false</extensionSession>'
    '<ipAddress>192.0.2.40</ipAddress><userAgent>pyvmomi</userAgent><callCount>3</callCount></returnval>'
    '</FetchResponse>')
HOST_INFO = ENVELOPE.format(
    '<RetrievePropertiesExResponse xmlns="urn:vim25"><returnval><objects><obj type="HostSystem">host-18</obj>'
    '<propSet><name>hardware.systemInfo</name><val xsi:type="HostSystemInfo"><vendor>Dell Inc.</vendor>'
    '<model>PowerEdge R650</model><uuid>4c4c4544-0042-3010-8052-b4c04f4d3233</uuid>'
    '<serialNumber>4B2RM33</serialNumber></val></propSet>'
    '<propSet><name>runtime.host</name><val xsi:type="ManagedObjectReference" type="HostSystem">host-18</val>'
    '</propSet></objects></returnval></RetrievePropertiesExResponse>')


def test_a_user_session_keeps_its_key_and_user_and_loses_address_agent_and_full_name() -> None:
    dropped: set[str] = set()
    kept = scrub.soap_answer(SESSION, FETCH, dropped)
    assert "52b1-key" in kept and "harness" in kept
    assert "192.0.2.40" not in kept and "Harness Operator" not in kept and "pyvmomi" not in kept
    assert {"UserSession.ipAddress", "UserSession.fullName", "UserSession.userAgent"} <= dropped


def test_pyvmomi_reads_a_scrubbed_answer_as_the_object_it_was() -> None:
    from faults.transports.vcenter import sdk

    s = sdk()
    from pyVmomi import SoapAdapter

    kept = scrub.soap_answer(SESSION, FETCH, set())
    session = SoapAdapter.SoapResponseDeserializer(None).Deserialize(io.BytesIO(kept.encode()), s.vim.UserSession)
    assert (session.key, session.userName, session.ipAddress) == ("52b1-key", "VSPHERE.LOCAL\\harness", "")  # unset


def test_a_data_object_nobody_reads_whole_leaves_with_its_serial_number_and_references_stay() -> None:
    dropped: set[str] = set()
    kept = scrub.soap_answer(HOST_INFO, "", dropped)
    assert "4B2RM33" not in kept and "PowerEdge" not in kept and "4c4c4544" not in kept
    assert "HostSystemInfo.serialNumber" in dropped and "HostSystemInfo.uuid" in dropped
    assert kept.count("host-18") == 2  # the object and the reference value: how a reader follows the inventory
    assert 'xmlns:xsd="http://www.w3.org/2001/XMLSchema"' in kept  # the prefix `xsi:type` values name stays declared


def test_a_redfish_system_keeps_power_reset_and_identity_and_loses_the_rest() -> None:
    dropped: set[str] = set()
    body = json.dumps({"@odata.id": "/redfish/v1/Systems/1", "PowerState": "On", "UUID": "u", "SerialNumber": "s",
                       "Manufacturer": "Dell", "EthernetInterfaces": {"@odata.id": "/x"},
                       "Actions": {"#ComputerSystem.Reset": {"target": "/r", "ResetType@Redfish.AllowableValues": ["On"]}}})
    kept = json.loads(scrub.redfish_answer(body, "/redfish/v1/Systems/1", dropped))
    assert kept == {"@odata.id": "/redfish/v1/Systems/1", "PowerState": "On", "UUID": "u", "SerialNumber": "s",
                    "Actions": {"#ComputerSystem.Reset": {"target": "/r", "ResetType@Redfish.AllowableValues": ["On"]}}}
    assert {"redfish: Manufacturer", "redfish: EthernetInterfaces"} <= dropped


def test_a_commands_output_is_kept_only_where_a_reader_parses_it() -> None:
    dropped: set[str] = set()
    assert scrub.command_output("nft list tables", "table inet harness\n", dropped) == "table inet harness\n"
    assert scrub.command_output("python /opt/inject.py -h", "usage: -p -t -c\n", dropped) == "usage: -p -t -c\n"
    assert scrub.command_output("hostname", "esx-07.corp.example\n", dropped) == ""
    assert dropped == {"ssh: the output of 'hostname' (only its exit status is read)"}


def test_a_login_request_never_reaches_a_capture_with_its_password() -> None:
    body = b"<Login><userName>admin</userName><password>s3cr&amp;t</password></Login>"
    assert withheld(body) == b"<Login><userName>admin</userName><password>(withheld)</password></Login>"


def test_a_replay_matches_requests_whatever_view_the_session_made_and_however_the_aliases_sort() -> None:
    def body(view: str, uuids: list[str]) -> dict[str, str]:
        inner = "".join(f"<uuids>{u}</uuids>" for u in uuids)
        return {"method": "POST", "path": "/sdk", "body": ENVELOPE.format(
            f'<QueryVsanObjects xmlns="urn:vim25"><_this versionId="8.0" type="ContainerView">{view}</_this>'
            f"{inner}</QueryVsanObjects>")}
    one = request_key("soap", body("session[52b1]aaaa-1111", ["b", "a"]))
    assert one == request_key("soap", body("session[77ff]bbbb-2222", ["a", "b"]))
    assert one != request_key("soap", body("session[52b1]aaaa-1111", ["a", "c"]))

