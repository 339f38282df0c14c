"""A rack PDU's Redfish service, read and switched with the standard library: every request bounded.

Redfish's power distribution model: `/redfish/v1/PowerEquipment/RackPDUs/<pdu>` (a
PowerDistribution) and its `Outlets/<id>`, each with `PowerState` and the `#Outlet.PowerControl`
action (`{"PowerState": "On" | "Off"}`), refused by the service while `PowerControlLocked` is
true. Errors name the PDU, never the credential.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from faults.contract import ControlPlaneError, CredentialRejectedError, resolve_secret
from harness_pdu.section import PduSection

FIELD = "management.platforms.pdu"
POLL_S = 0.2


@dataclass
class RackPdu:
    section: PduSection

    @property
    def where(self) -> str:
        return f"pdu {self.section.address}:{self.section.port}"

    @property
    def path(self) -> str:
        return f"/redfish/v1/PowerEquipment/RackPDUs/{self.section.rack_pdu}"

    def outlet_path(self, outlet: str) -> str:
        return f"{self.path}/Outlets/{outlet}"

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        credential = self.section.credential
        password = resolve_secret(credential.password, f"{FIELD}.credential.password").reveal()
        token = base64.b64encode(f"{credential.username}:{password}".encode()).decode()
        request = urllib.request.Request(self.section.base() + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Authorization": f"Basic {token}", "Accept": "application/json",
                                                  "Content-Type": "application/json", "OData-Version": "4.0"})
        context = None
        if self.section.scheme == "https":
            context = ssl.create_default_context(cafile=self.section.ca_file)
            if not self.section.verify_tls:
                context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        try:
            with urllib.request.urlopen(request, timeout=self.section.timeout_s, context=context) as reply:
                raw = reply.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 401:
                raise CredentialRejectedError(f"{self.where}: {method} {path} refused the login (HTTP 401): check "
                                              f"{FIELD}.credential") from None
            raise ControlPlaneError(f"{self.where}: {method} {path} -> HTTP {exc.code}: {_message(exc)}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ControlPlaneError(f"{self.where}: unreachable ({reason})") from None
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise ControlPlaneError(f"{self.where}: {method} {path}: the reply is not JSON") from None

    def info(self) -> dict[str, Any]:
        found = self._request("GET", self.path)
        if not isinstance(found, dict):
            raise ControlPlaneError(f"{self.where}: {self.path} is not a PowerDistribution")
        return found

    def outlet(self, outlet: str) -> dict[str, Any]:
        found = self._request("GET", self.outlet_path(outlet))
        if not isinstance(found, dict) or not isinstance(found.get("PowerState"), str):
            raise ControlPlaneError(f"{self.where}: {self.outlet_path(outlet)} reports no PowerState")
        return found

    def power_state(self, outlet: str) -> tuple[str, bool]:
        """The outlet's PowerState and whether it is still changing (`PowerStateInTransition`)."""
        found = self.outlet(outlet)
        return str(found["PowerState"]), bool(found.get("PowerStateInTransition", False))

    def switch(self, outlet: str, state: str) -> None:
        """`#Outlet.PowerControl` as the outlet names its target; refused here, plainly, if the outlet is locked."""
        found = self.outlet(outlet)
        if found.get("PowerControlLocked"):
            raise ControlPlaneError(f"{self.where}: outlet {outlet} has PowerControlLocked: it cannot be switched")
        action = (found.get("Actions") or {}).get("#Outlet.PowerControl") or {}
        target = action.get("target") or f"{self.outlet_path(outlet)}/Actions/Outlet.PowerControl"
        self._request("POST", str(target), {"PowerState": state})

    def wait(self, outlet: str, state: str) -> float:
        """Until the outlet is `state` and not in transition; seconds waited, bounded by switch_timeout_s."""
        started = time.monotonic()
        while True:
            seen, moving = self.power_state(outlet)
            if seen == state and not moving:
                return time.monotonic() - started
            if time.monotonic() - started > self.section.switch_timeout_s:
                raise ControlPlaneError(f"{self.where}: outlet {outlet} still {seen} after "
                                        f"{self.section.switch_timeout_s:g} s (waiting for {state})")
            time.sleep(POLL_S)


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        error = json.loads(exc.read()).get("error", {})
        extended = error.get("@Message.ExtendedInfo") or [{}]
        return str(extended[0].get("Message") or error.get("message") or exc.reason)[:300]
    except Exception:
        return str(exc.reason)[:300]
