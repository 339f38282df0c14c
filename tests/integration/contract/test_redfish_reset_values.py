"""Which ResetType values a BMC allows, where it publishes them: the action's annotation, or its ActionInfo.

A contract test: a BMC that publishes `@Redfish.ActionInfo` instead of the annotation cannot be
had here (the lab's sushy-tools emulator publishes the annotation). The payloads are DMTF's:
- ComputerSystem.v1_x, `#ComputerSystem.Reset`: "Services should include the @Redfish.AllowableValues
  annotation for this parameter to ensure compatibility with clients, even when ActionInfo has
  been implemented" (so some do not);
- ActionInfo.v1_x: `Parameters[]` with `Name`, `Required`, `DataType`, `AllowableValues`, at the
  URI the action's `@Redfish.ActionInfo` names (`/redfish/v1/Systems/{id}/ResetActionInfo`);
- ComputerSystem `UUID` and `SerialNumber`, what the system reports of the server it is.
The stand-in answers HTTPS with HTTP Basic, as the transport's default expects.
"""

from __future__ import annotations

import base64
import ssl
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from faults.base import FaultSpec, Uncertain
from faults.transports.redfish import RedfishClient
from harness_kernel.errors import ControlPlaneError
from harness_kernel.topology.management import RedfishEndpoint
from harness_lab.ca import LabCa
from harness_platforms.redfish.faults import Bmc, HostPowerOff
from tests.support.json_http import JsonHandler

SYSTEM = "/redfish/v1/Systems/1"
INFO = f"{SYSTEM}/ResetActionInfo"
UUID = "4c4c4544-0042-3510-8057-b4c04f4e4d32"
PASSWORD_ENV = "HARNESS_TEST_BMC_PASSWORD"


class StandInBmc:
    """One system; `action` is what its `#ComputerSystem.Reset` publishes, `info` its ActionInfo's parameters."""

    def __init__(self, ca: LabCa, password: str) -> None:
        self.action: dict[str, Any] = {}
        self.info: list[dict[str, Any]] = []
        expected = "Basic " + base64.b64encode(f"admin:{password}".encode()).decode()
        bmc = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                if self.headers.get("Authorization") != expected:
                    return self.reply({"error": {"code": "Base.1.0.GeneralError"}}, 401)
                if self.path == SYSTEM:
                    return self.reply({"@odata.id": SYSTEM, "Id": "1", "UUID": UUID, "SerialNumber": "CZ2001X7",
                                             "PowerState": "On", "Actions": {"#ComputerSystem.Reset": {
                                                 "target": f"{SYSTEM}/Actions/ComputerSystem.Reset", **bmc.action}}})
                if self.path == INFO and bmc.info:
                    return self.reply({"@odata.id": INFO, "Id": "ResetActionInfo", "Parameters": bmc.info})
                return self.reply({"error": {"code": "Base.1.0.ResourceMissingAtURI"}}, 404)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(ca.cert_file), str(ca.key_file))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def bmc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[StandInBmc, RedfishClient]]:
    ca = LabCa(tmp_path / "ca")
    ca.ensure("bmc contract")
    monkeypatch.setenv(PASSWORD_ENV, "bmc-Pw-7f3")
    stand_in = StandInBmc(ca, "bmc-Pw-7f3")
    endpoint = RedfishEndpoint.model_validate({
        "name": "bmc-esx-a1", "address": "127.0.0.1", "port": stand_in.server.server_port, "system_id": "1",
        "credential": {"username": "admin", "password": {"env": PASSWORD_ENV}}, "tls": {"ca_file": str(ca.ca_file)}})
    try:
        yield stand_in, RedfishClient(endpoint, "management.redfish[0]")
    finally:
        stand_in.server.shutdown()


def fault(client: RedfishClient, identity: tuple[str | None, str | None] | None = None) -> HostPowerOff:
    return HostPowerOff(FaultSpec("host-power-off", "host:esx-a1"), (Bmc("esx-a1", client),),
                        None if identity is None else (lambda host: identity))


def test_the_annotation_is_read_where_the_action_carries_it(bmc: tuple[StandInBmc, RedfishClient]) -> None:
    stand_in, client = bmc
    stand_in.action = {"ResetType@Redfish.AllowableValues": ["On", "ForceOff"]}
    assert client.allowed_resets() == ["On", "ForceOff"]


def test_without_the_annotation_the_values_are_read_from_the_action_info(bmc: tuple[StandInBmc, RedfishClient]) -> None:
    stand_in, client = bmc
    stand_in.action = {"@Redfish.ActionInfo": INFO}
    stand_in.info = [{"Name": "ResetType", "Required": True, "DataType": "String",
                      "AllowableValues": ["On", "ForceOff", "GracefulShutdown"]}]
    assert client.allowed_resets() == ["On", "ForceOff", "GracefulShutdown"]
    check = next(c for c in fault(client).checks() if "ResetType" in c.name)
    assert check.run() == "allowed: On, ForceOff, GracefulShutdown"


def test_an_action_info_without_force_off_fails_the_check_and_the_reset(bmc: tuple[StandInBmc, RedfishClient]) -> None:
    stand_in, client = bmc
    stand_in.action = {"@Redfish.ActionInfo": INFO}
    stand_in.info = [{"Name": "ResetType", "Required": True, "DataType": "String", "AllowableValues": ["On", "GracefulShutdown"]}]
    check = next(c for c in fault(client).checks() if "ResetType" in c.name)
    with pytest.raises(ControlPlaneError,
                       match=r"host esx-a1 does not allow ResetType ForceOff \(allowed: On, GracefulShutdown\)"):
        check.run()
    with pytest.raises(ControlPlaneError, match="ResetType ForceOff is not allowed here"):
        client.reset("ForceOff")


def test_a_bmc_that_publishes_neither_is_uncertain_not_a_pass(bmc: tuple[StandInBmc, RedfishClient]) -> None:
    _, client = bmc
    assert client.allowed_resets() is None
    check = next(c for c in fault(client).checks() if "ResetType" in c.name)
    with pytest.raises(Uncertain, match="publishes no allowable ResetType values"):
        check.run()


def test_the_system_says_which_server_it_powers_and_the_host_must_be_that_one(bmc: tuple[StandInBmc, RedfishClient]) -> None:
    stand_in, client = bmc
    stand_in.action = {"ResetType@Redfish.AllowableValues": ["On", "ForceOff"]}
    assert client.identity() == (UUID, "CZ2001X7")
    belongs = next(c for c in fault(client, (UUID.upper(), None)).checks() if "powers host" in c.name)
    assert belongs.run() == f"the BMC's system and host esx-a1 share UUID {UUID.upper()}"
    other = next(c for c in fault(client, ("4c4c4544-0042-3510-8057-b4c04f4e4d33", "CZ2001X8")).checks()
                 if "powers host" in c.name)
    with pytest.raises(ControlPlaneError, match=f"powers a server with UUID {UUID} .* but host esx-a1 is UUID "
                                                "4c4c4544-0042-3510-8057-b4c04f4e4d33 .*another server"):
        other.run()
    unknown = next(c for c in fault(client).checks() if "powers host" in c.name)
    with pytest.raises(Uncertain, match="no cluster manager in the topology"):
        unknown.run()
