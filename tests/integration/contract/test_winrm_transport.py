"""Contract: the WinRM transport against a WS-Management endpoint on 127.0.0.1.

What pywinrm sends (Create, Command with `powershell -encodedcommand`, Receive, Signal, Delete)
is answered as [MS-WSMV] describes; errors come back as powershell.exe writes them (CLIXML on
stderr, exit 1). See tests/support/wsman.py.
"""

from __future__ import annotations

import socket
import time

import pytest

from faults.transports.winrm import PREAMBLE, EndpointUnreachable, WinRmSession, clixml_message
from harness.errors import ConfigError, ControlPlaneError, CredentialRejectedError
from harness.topology.models import WinRmEndpoint
from tests.support.wsman import Answer, clixml_error, clixml_progress, running_wsman


def endpoint(port: int, *, address: str = "127.0.0.1", scheme: str = "http", transport: str = "basic") -> WinRmEndpoint:
    return WinRmEndpoint.model_validate({"name": "node1", "address": address, "port": port, "scheme": scheme,
                                         "transport": transport,
                                         "credential": {"username": "harness",
                                                        "password": {"env": "HARNESS_WINRM_PASSWORD"}}})


def echo(stdout: str = "", stderr: str = "", code: int = 0) -> Answer:
    """powershell.exe printing `stdout` (or the script it was given)."""
    return lambda script: (stdout or script, stderr, code)


def test_a_script_runs_with_its_preferences_set_and_every_shell_is_closed(winrm_password: str) -> None:
    with running_wsman(echo(), "harness", winrm_password) as wsman:
        out = WinRmSession(endpoint(wsman.port), "management.winrm[0]").run_ps("Get-ClusterNode", what="a query")
    assert out == PREAMBLE + "Get-ClusterNode"
    assert wsman.log.scripts == [PREAMBLE + "Get-ClusterNode"]
    assert wsman.log.actions == ["create", "command", "receive", "signal", "delete"]
    assert not wsman.log.open_shells


def test_json_of_one_object_or_of_none_comes_back_as_a_list(winrm_password: str) -> None:
    with running_wsman(echo('{"Name":"FCI01","State":"Up"}'), "harness", winrm_password) as one, \
            running_wsman(lambda s: ("", "", 0), "harness", winrm_password) as none:
        assert WinRmSession(endpoint(one.port), "w").run_json("x", what="q") == [{"Name": "FCI01", "State": "Up"}]
        assert WinRmSession(endpoint(none.port), "w").run_json("x", what="q") == []


def test_progress_records_on_stderr_with_exit_0_are_success(winrm_password: str) -> None:
    with running_wsman(echo("ok", clixml_progress()), "harness", winrm_password) as wsman:
        assert WinRmSession(endpoint(wsman.port), "w").run_ps("x", what="q") == "ok"


def test_a_powershell_error_is_reported_in_its_own_words_naming_the_endpoint(winrm_password: str) -> None:
    stderr = clixml_error("Move-ClusterGroup : The cluster node 'FCI02' is not available.")
    with running_wsman(lambda s: ("", stderr, 1), "harness", winrm_password) as wsman, \
            pytest.raises(ControlPlaneError) as caught:
        WinRmSession(endpoint(wsman.port), "w").run_ps("x", what="moving the role")
    message = str(caught.value)
    assert message == (f"winrm node1 (127.0.0.1:{wsman.port}): moving the role: Move-ClusterGroup : The cluster "
                       "node 'FCI02' is not available.")
    assert not isinstance(caught.value, EndpointUnreachable), "an answered error is not retried on another node"


def test_rejected_credentials_are_a_clear_error_without_the_password(winrm_password: str) -> None:
    with running_wsman(echo(), "harness", "another-password") as wsman, pytest.raises(EndpointUnreachable) as caught:
        WinRmSession(endpoint(wsman.port), "w").run_ps("x", what="reading the nodes")
    assert "credentials were rejected" in str(caught.value) and "winrm node1" in str(caught.value)
    assert isinstance(caught.value, CredentialRejectedError), "a refused login is bad input (exit 4)"
    assert winrm_password not in str(caught.value) and winrm_password not in repr(caught.value.__context__)


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
        endpoint(5985, address="sql01.example.net")
    with pytest.raises(ConfigError, match=r"management.winrm\[0\].scheme: plain http to sql01.example.net"):
        WinRmSession(endpoint(5985, address="sql01.example.net", transport="ntlm"), "management.winrm[0]").run_ps(
            "x", what="q")


def test_a_script_too_long_for_a_command_line_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ConfigError, match="over the 8164 a command line takes"):
        WinRmSession(endpoint(1), "w").run_ps("#" * 4000, what="q")


def test_the_error_text_of_clixml_keeps_error_records_only() -> None:
    stderr = (clixml_progress()[:-len("</Objs>")] + '<S S="Error">first_x000D__x000A_</S><S S="Error">second</S></Objs>')
    assert clixml_message(stderr.encode()) == "first\nsecond"
