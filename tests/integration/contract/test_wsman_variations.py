"""The WS-Management stand-in serves every variation SOAP over HTTP allows: header case and chunking on the wire,
the envelope under other prefixes and indented (the same elements, the same text), the headers and stream ends a
Windows listener adds, a Receive's streams in either order, and the operation-timeout fault before the output;
and the WinRM transport reads its commands' output through all of them at once."""

from __future__ import annotations

import base64
import http.client
import xml.etree.ElementTree as ET

import pytest

from faults.transports.winrm import PREAMBLE, WinRmSession, encoded_command
from harness_kernel.topology.management import WinRmEndpoint
from tests.support import variations
from tests.support.wsman import SHELL, SOAP, Shells, WsmanLog, envelope, running_wsman, timeout_fault
from tests.support.wsman_facts import text

RECEIVE = f"{SHELL}/Receive"
BODY = (f'<rsp:ReceiveResponse><rsp:Stream Name="stdout" CommandId="C1">aGk=</rsp:Stream>'
        f'<rsp:CommandState CommandId="C1" State="{text("receive.state.Done")}"><rsp:ExitCode>0</rsp:ExitCode>'
        "</rsp:CommandState></rsp:ReceiveResponse>")


def tree(xml: str) -> tuple[object, ...]:
    """An element as a namespace-aware reader sees it: its expanded name, attributes, text and children."""
    def shape(element: ET.Element) -> tuple[object, ...]:
        return (element.tag, sorted(element.attrib.items()), (element.text or "").strip(),
                [shape(child) for child in element])
    return shape(ET.fromstring(xml))


def serve(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    monkeypatch.setenv(variations.ENV, ",".join(names))


def test_other_prefixes_and_whitespace_change_no_element_its_namespace_or_its_text() -> None:
    plain = envelope(RECEIVE, "uuid:1", BODY, 200, set())
    varied = envelope(RECEIVE, "uuid:1", BODY, 200, {variations.NAMESPACE_PREFIXES, variations.XML_WHITESPACE})
    assert "<env:Envelope" in varied and f'xmlns="{SHELL}"' in varied and "<ReceiveResponse>" in varied
    assert "\n  <" in varied and ">aGk=</Stream>" in varied, "whitespace between elements, never inside one"
    assert tree(varied) == tree(plain)


def test_a_qname_in_a_faults_text_follows_its_renamed_prefix() -> None:
    varied = envelope(RECEIVE, "uuid:1", timeout_fault(), 500, {variations.NAMESPACE_PREFIXES})
    assert "<env:Value>env:Receiver</env:Value>" in varied and "<env:Value>wsman:TimedOut</env:Value>" in varied
    assert tree(varied) != tree(envelope(RECEIVE, "uuid:1", timeout_fault(), 500, set())), \
        "the values' prefixes changed with their declarations"
    assert 'xmlns:env="http://www.w3.org/2003/05/soap-envelope"' in varied


def test_extra_fields_adds_the_headers_and_language_a_windows_listener_sends() -> None:
    varied = ET.fromstring(envelope(RECEIVE, "uuid:1", BODY, 200, {variations.EXTRA_FIELDS}))
    header = {child.tag.split("}")[1]: child.text for child in varied.find("{*}Header") or []}
    assert header["Action"] == f"{RECEIVE}Response" and header["To"] == text("reply.to")
    assert (header["MessageID"] or "").startswith("uuid:") and header["RelatesTo"] == "uuid:1"
    assert varied.get("{http://www.w3.org/XML/1998/namespace}lang") == text("reply.lang")


def command_request(script: str) -> str:
    return f"<rsp:CommandLine><rsp:Command>powershell -encodedcommand {encoded_command(script)}</rsp:Command></rsp:CommandLine>"


def receive_request(command_id: str) -> str:
    return f'<rsp:Receive><rsp:DesiredStream CommandId="{command_id}">stdout stderr</rsp:DesiredStream></rsp:Receive>'


def streams(body: str) -> list[tuple[str | None, str | None, str | None]]:
    return [(s.get("Name"), s.get("End"), s.text) for s in ET.fromstring(f'<r xmlns:rsp="{SHELL}">{body}</r>').iter()
            if s.tag == f"{{{SHELL}}}Stream"]


def test_a_receive_serves_its_streams_in_either_order_ends_them_and_first_times_out_when_asked() -> None:
    log = WsmanLog()
    shells = Shells(lambda script: ("out", "err", 0), log, receives=1)
    _, created = shells.act("command", command_request("x"), set())
    command_id = ET.fromstring(f'<r xmlns:rsp="{SHELL}">{created}</r>').findtext(f".//{{{SHELL}}}CommandId") or ""
    asked = {variations.RETRY_AFTER, variations.MEMBER_ORDER, variations.EXTRA_FIELDS}
    status, fault = shells.act("receive", receive_request(command_id), asked)
    assert status == 500 and f'Code="{text("timeout.code")}"' in fault
    status, body = shells.act("receive", receive_request(command_id), asked)
    b64 = base64.b64encode
    assert status == 200 and streams(body) == [
        ("stderr", None, b64(b"err").decode()), ("stdout", None, b64(b"out").decode()),
        ("stderr", "true", None), ("stdout", "true", None)]
    assert log.states == ["TimedOut", "Done"]


def test_header_case_and_chunking_reach_the_wire(winrm_password: str, monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, variations.LOWERCASE_HEADERS, variations.CHUNKED)
    create = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" '
              'xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing"><s:Header>'
              "<a:Action>http://schemas.xmlsoap.org/ws/2004/09/transfer/Create</a:Action>"
              "<a:MessageID>uuid:7</a:MessageID></s:Header><s:Body/></s:Envelope>")
    basic = "Basic " + base64.b64encode(f"harness:{winrm_password}".encode()).decode()
    with running_wsman(lambda s: ("", "", 0), "harness", winrm_password) as wsman:
        connection = http.client.HTTPConnection(wsman.address, wsman.port, timeout=5)
        connection.request("POST", "/wsman", create, {"Authorization": basic, "Content-Type": SOAP})
        response = connection.getresponse()
        raw = response.read()
    names = [name for name, _ in response.getheaders() if name not in ("Server", "Date")]  # http.server's own
    assert names and all(name == name.lower() for name in names) and "content-type" in names
    assert response.getheader("Transfer-Encoding") == "chunked" and response.getheader("Content-Length") is None
    assert ET.fromstring(raw).findtext(".//{*}RelatesTo") == "uuid:7"


def test_the_transport_reads_its_output_through_every_variation_at_once(
        winrm_password: str, monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, "all")
    with running_wsman(lambda script: ("Knoten ✓\n", "", 0), "harness", winrm_password, receives=2) as wsman:
        node = WinRmEndpoint.model_validate({
            "name": "node1", "address": wsman.address, "port": wsman.port, "scheme": "http", "transport": "basic",
            "credential": {"username": "harness", "password": {"env": "HARNESS_WINRM_PASSWORD"}}})
        out = WinRmSession(node, "management.winrm[0]").run_ps("Get-ClusterNode", what="a query")
    assert out == "Knoten ✓\n"
    assert wsman.log.scripts == [PREAMBLE + "Get-ClusterNode"]
    assert wsman.log.states == ["TimedOut", "Running", "Done"], "asked again after the timeout, then until Done"
