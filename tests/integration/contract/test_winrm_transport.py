"""Contract: the WinRM transport against a WS-Management endpoint on 127.0.0.1, logged in to as Windows' listener asks.

What pywinrm sends (Create, Command with `powershell -encodedcommand`, Receive until Done,
Signal, Delete) is answered as [MS-WSMV] describes; errors come back as powershell.exe writes
them (CLIXML on stderr, exit 1). The login is the transport's default: NTLM inside Negotiate
over https, the throwaway certificate as trust path and the channel binding checked; over http
to this machine every message is sealed with the NTLM context. See tests/support/wsman.py,
wsman_auth.py and the sources of what they serve in wsman_facts.py.
"""

from __future__ import annotations

import hashlib
import secrets
import socket
import time
from pathlib import Path

import pytest

from faults.transports.winrm import PREAMBLE, EndpointUnreachable, LoginRejected, WinRmSession, clixml_message
from harness_kernel.errors import ConfigError, ControlPlaneError, CredentialRejectedError
from harness_kernel.topology.management import WinRmEndpoint
from tests.support import variations
from tests.support.wsman import Answer, clixml_error, clixml_progress, output_pieces, running_wsman
from tests.support.wsman_auth import WsmanSite
from tests.support.wsman_facts import FACTS

ACCOUNT = "EXAMPLE\\harness"


def endpoint(port: int, site: WsmanSite | None = None, *, address: str = "127.0.0.1", **settings: str) -> WinRmEndpoint:
    """node1's endpoint as a topology names it: scheme and transport left to their defaults unless given; the
    site's certificate as its trust path."""
    tls = {"ca_file": str(site.certificate)} if site else {}
    return WinRmEndpoint.model_validate({"name": "node1", "address": address, "port": port, "tls": tls, **settings,
                                         "credential": {"username": ACCOUNT,
                                                        "password": {"env": "HARNESS_WINRM_PASSWORD"}}})


def echo(stdout: str = "", stderr: str = "", code: int = 0) -> Answer:
    """powershell.exe printing `stdout` (or the script it was given)."""
    return lambda script: (stdout or script, stderr, code)


def test_by_default_a_script_runs_over_https_with_ntlm_bound_to_the_listeners_certificate(
        winrm_password: str, wsman_site: WsmanSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variations.ENV, variations.without(variations.RETRY_AFTER))  # it counts the messages
    with running_wsman(echo(), ACCOUNT, winrm_password, site=wsman_site) as wsman:
        node = endpoint(wsman.port, wsman_site)
        out = WinRmSession(node, "management.winrm[0]").run_ps("Get-ClusterNode", what="a query")
    assert (node.scheme, node.transport, node.tls.verify) == ("https", "ntlm", True), "the production default"
    assert out == PREAMBLE + "Get-ClusterNode"
    assert wsman.log.scripts == [PREAMBLE + "Get-ClusterNode"]
    assert wsman.log.logins == [ACCOUNT], "one NTLM login, its channel binding matched, for the whole exchange"
    assert wsman.log.refusals == []
    assert wsman.log.actions == ["create", "command", "receive", "signal", "delete"]
    assert not wsman.log.open_shells


def test_json_of_one_object_or_of_none_comes_back_as_a_list(winrm_password: str, wsman_site: WsmanSite) -> None:
    with running_wsman(echo('{"Name":"FCI01","State":"Up"}'), ACCOUNT, winrm_password, site=wsman_site) as one, \
            running_wsman(lambda s: ("", "", 0), ACCOUNT, winrm_password, site=wsman_site) as none:
        assert WinRmSession(endpoint(one.port, wsman_site), "w").run_json("x", what="q") == [
            {"Name": "FCI01", "State": "Up"}]
        assert WinRmSession(endpoint(none.port, wsman_site), "w").run_json("x", what="q") == []


def test_progress_records_on_stderr_with_exit_0_are_success(winrm_password: str, wsman_site: WsmanSite) -> None:
    with running_wsman(echo("ok", clixml_progress()), ACCOUNT, winrm_password, site=wsman_site) as wsman:
        assert WinRmSession(endpoint(wsman.port, wsman_site), "w").run_ps("x", what="q") == "ok"


def test_a_powershell_error_is_reported_in_its_own_words_naming_the_endpoint(
        winrm_password: str, wsman_site: WsmanSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variations.ENV, variations.without(variations.RETRY_AFTER))  # it counts the messages
    stderr = clixml_error("Move-ClusterGroup : The cluster node 'FCI02' is not available.")
    with running_wsman(lambda s: ("", stderr, 1), ACCOUNT, winrm_password, site=wsman_site, receives=3) as wsman, \
            pytest.raises(ControlPlaneError) as caught:
        WinRmSession(endpoint(wsman.port, wsman_site), "w").run_ps("x", what="moving the role")
    message = str(caught.value)
    assert message == (f"winrm node1 (127.0.0.1:{wsman.port}): moving the role: Move-ClusterGroup : The cluster "
                       "node 'FCI02' is not available.")
    assert wsman.log.states == ["Running", "Running", "Done"], "the error record arrived in three pieces"
    assert not isinstance(caught.value, EndpointUnreachable), "an answered error is not retried on another node"


def test_output_streamed_over_several_receives_is_reassembled_in_order(
        winrm_password: str, wsman_site: WsmanSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variations.ENV, variations.without(variations.RETRY_AFTER))  # it counts the messages
    stdout = "".join(f"Knoten {i}: ✓ bereit\n" for i in range(10))
    pieces = output_pieces(stdout.encode(), 4)
    assert any(_cut_inside_a_character(piece) for piece in pieces), "a piece ends inside a UTF-8 character"
    with running_wsman(echo(stdout, clixml_progress()), ACCOUNT, winrm_password, site=wsman_site, receives=4) as wsman:
        out = WinRmSession(endpoint(wsman.port, wsman_site), "w").run_ps("x", what="q")
    assert out == stdout
    assert wsman.log.states == ["Running", "Running", "Running", "Done"], "Receive until Done, as [MS-WSMV] streams"
    assert wsman.log.actions == ["create", "command", "receive", "receive", "receive", "receive", "signal", "delete"]


def _cut_inside_a_character(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def test_a_wrong_password_is_refused_as_a_credential_rejection_without_the_password(
        winrm_password: str, wsman_site: WsmanSite) -> None:
    listeners_password = "Other-" + secrets.token_urlsafe(12)
    with running_wsman(echo(), ACCOUNT, listeners_password, site=wsman_site) as wsman, \
            pytest.raises(LoginRejected) as caught:
        WinRmSession(endpoint(wsman.port, wsman_site), "w").run_ps("x", what="reading the nodes")
    assert "credentials were rejected" in str(caught.value) and "winrm node1" in str(caught.value)
    assert isinstance(caught.value, CredentialRejectedError), "a refused login is bad input (exit 4)"
    assert wsman.log.refusals == ["credentials"] and wsman.log.scripts == []
    for secret in (winrm_password, listeners_password):
        assert secret not in str(caught.value) and secret not in repr(caught.value.__context__)


@pytest.mark.parametrize("binding, refusal", [
    ("absent", "channel binding absent"),
    ("all-zero", "channel binding absent"),  # [MS-NLMP]: "An all-zero value ... indicate[s] absence"
    ("of another certificate", "channel binding mismatch"),  # the TLS channel ends at a relay, not the listener
])
def test_a_client_without_the_listeners_channel_binding_is_refused(
        binding: str, refusal: str, winrm_password: str, wsman_site: WsmanSite, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if binding == "absent":  # requests_ntlm sends no MsvAvChannelBindings when it has no certificate hash
        monkeypatch.setattr("requests_ntlm.requests_ntlm._get_certificate_hash", lambda der: None)
    elif binding == "all-zero":  # the client's MD5 of the bindings comes out as sixteen zero bytes
        monkeypatch.setattr("spnego._ntlm.md5", lambda data: bytes(16))
    else:
        relay = WsmanSite.create(tmp_path / "relay").certificate_der
        monkeypatch.setattr("requests_ntlm.requests_ntlm._get_certificate_hash", lambda der: hashlib.sha256(relay).digest())
    with running_wsman(echo(), ACCOUNT, winrm_password, site=wsman_site) as wsman, \
            pytest.raises(LoginRejected, match="credentials were rejected"):
        WinRmSession(endpoint(wsman.port, wsman_site), "w").run_ps("x", what="q")
    assert wsman.log.refusals == [refusal]
    assert wsman.log.logins == [] and wsman.log.scripts == []


def test_a_listener_certificate_outside_the_trust_path_is_refused(winrm_password: str, wsman_site: WsmanSite) -> None:
    with running_wsman(echo(), ACCOUNT, winrm_password, site=wsman_site) as wsman, \
            pytest.raises(EndpointUnreachable, match="CERTIFICATE_VERIFY_FAILED") as caught:
        WinRmSession(endpoint(wsman.port), "w").run_ps("x", what="q")  # no ca_file: the system's trust store
    assert not isinstance(caught.value, LoginRejected)
    assert wsman.log.logins == [] and wsman.log.scripts == [], "nothing was sent over an unverified channel"


def test_over_http_to_this_machine_every_message_is_sealed_with_the_ntlm_context(
        winrm_password: str, wsman_site: WsmanSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variations.ENV, variations.without(variations.RETRY_AFTER))  # it counts the messages
    with running_wsman(echo(), ACCOUNT, winrm_password, site=wsman_site, scheme="http") as wsman:
        out = WinRmSession(endpoint(wsman.port, scheme="http"), "w").run_ps("Get-ClusterNode", what="q")
    assert out == PREAMBLE + "Get-ClusterNode"
    assert wsman.log.logins == [ACCOUNT]
    assert wsman.log.bodies == ["sealed"] * 5 and len(wsman.log.wire) == 5
    readable = [b"Envelope", b"powershell", b"schemas.microsoft.com"]
    assert not [word for body in wsman.log.wire for word in readable if word in body], "no envelope crossed readable"
    assert all(body.startswith(b"--Encrypted Boundary\r\n") for body in wsman.log.wire)


def test_over_http_a_plaintext_message_is_refused_as_allow_unencrypted_false_does(
        winrm_password: str, wsman_site: WsmanSite) -> None:
    from winrm.exceptions import InvalidCredentialsError
    from winrm.protocol import Protocol

    with running_wsman(echo(), ACCOUNT, winrm_password, site=wsman_site, scheme="http") as wsman:
        plaintext = Protocol(wsman.url, transport="ntlm", username=ACCOUNT, password=winrm_password,
                             message_encryption="never", ca_trust_path=str(wsman_site.certificate), proxy=None)
        with pytest.raises(InvalidCredentialsError):
            plaintext.open_shell()
    assert wsman.log.refusals == ["unencrypted body over http"]
    assert wsman.log.actions == [] and wsman.log.bodies == []


def test_an_unreachable_endpoint_fails_within_its_bound(winrm_password: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    started = time.monotonic()
    with pytest.raises(EndpointUnreachable, match=rf"winrm node1 \(127.0.0.1:{port}\): reading the nodes"):
        WinRmSession(endpoint(port), "w").run_ps("x", what="reading the nodes")
    assert time.monotonic() - started < 5


def test_plain_http_is_refused_to_any_address_but_this_machine(winrm_password: str) -> None:
    with pytest.raises(ValueError, match="sends the password readable"):  # Basic: refused when the topology loads
        endpoint(5985, address="sql01.example.net", scheme="http", transport="basic")
    with pytest.raises(ConfigError, match=r"management.winrm\[0\].scheme: plain http to sql01.example.net"):
        WinRmSession(endpoint(5985, address="sql01.example.net", scheme="http"), "management.winrm[0]").run_ps(
            "x", what="q")


def test_a_script_too_long_for_a_command_line_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ConfigError, match="over the 8164 a command line takes"):
        WinRmSession(endpoint(1), "w").run_ps("#" * 4000, what="q")


def test_the_error_text_of_clixml_keeps_error_records_only() -> None:
    stderr = (clixml_progress()[:-len("</Objs>")] + '<S S="Error">first_x000D__x000A_</S><S S="Error">second</S></Objs>')
    assert clixml_message(stderr.encode()) == "first\nsecond"


def test_every_fact_the_stand_in_serves_has_a_source_and_a_documented_one_its_value_in_its_quote() -> None:
    assert FACTS.problems() == []
