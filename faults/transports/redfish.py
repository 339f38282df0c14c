"""A small Redfish client for a host's BMC: reset a system and read its power state.

DMTF Redfish (DSP0266): `POST /redfish/v1/Systems/<id>/Actions/ComputerSystem.Reset` with a
`ResetType` the system lists in `ResetType@Redfish.AllowableValues` (or, where the action
publishes `@Redfish.ActionInfo` instead, in that resource's `Parameters[].AllowableValues`: the
ComputerSystem schema says services "should include the @Redfish.AllowableValues annotation ...
even when ActionInfo has been implemented", so some do not); `PowerState`, `UUID` and
`SerialNumber` of the system resource. The system id is the topology's `system_id`, else the
only member of `/redfish/v1/Systems` (Dell names it `System.Embedded.1`, others `1`); several members and no
id is a configuration error, since guessing would power off the wrong machine.

TLS is verified by default (against `tls.ca_file` when given). Every request has a connect and
read timeout; transient failures (connection errors, timeouts, 5xx, 429) are retried with
tenacity within a bounded number of attempts and time. Errors name the endpoint (name and
address), never the credential. `requests` is imported on first use only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_exponential

from faults.transports import wire
from harness_kernel.errors import ConfigError, ControlPlaneError, CredentialRejectedError
from harness_kernel.topology.credentials import resolve_secret
from harness_kernel.topology.management import RedfishEndpoint
from harness_kernel.topology.models import Topology

SYSTEMS = "/redfish/v1/Systems"
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 20.0
POLL_S = 0.25


def endpoint_named(topology: Topology, name: str) -> tuple[int, RedfishEndpoint]:
    for index, endpoint in enumerate(topology.management.redfish):
        if endpoint.name == name:
            return index, endpoint
    raise ConfigError(f"management.redfish has no endpoint named {name!r}")


class _Transient(Exception):
    """A failure worth another attempt: the BMC was busy or the network dropped a request."""


@dataclass
class RedfishClient:
    """One BMC. Nothing is contacted until a method is called."""

    endpoint: RedfishEndpoint
    field_path: str
    attempts: int = 4
    retry_window_s: float = 30.0
    _session: Any = field(default=None, init=False, repr=False)
    _system: str | None = field(default=None, init=False, repr=False)
    _verify: bool | str = field(default=True, init=False, repr=False)

    @property
    def where(self) -> str:
        e = self.endpoint
        return f"redfish {e.name} ({e.address}:{e.port})"

    @property
    def base(self) -> str:
        host = self.endpoint.address
        host = f"[{host}]" if ":" in host else host
        return f"https://{host}:{self.endpoint.port}"

    # -- HTTP ---------------------------------------------------------------------------
    def _open(self) -> Any:
        if self._session is None:
            try:
                import requests
            except ImportError:
                raise ConfigError("the redfish backend needs the 'requests' package") from None
            tls = self.endpoint.tls
            credential = self.endpoint.credential
            password = resolve_secret(credential.password, f"{self.field_path}.credential.password").reveal()
            session = requests.Session()
            session.auth = (credential.username, password)
            self._verify = (tls.ca_file or True) if tls.verify else False
            session.headers.update({"Accept": "application/json", "OData-Version": "4.0"})
            self._session = session
        return self._session

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One request with bounded retries; the decoded JSON body (None for an empty one)."""
        session = self._open()
        import requests

        wire.sent("https", self.where, f"{method} {path}", reads=wire.http_reads(method))

        def once() -> Any:
            try:
                reply = session.request(method, self.base + path, json=body, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
                                        allow_redirects=True, verify=self._verify)  # per request: REQUESTS_CA_BUNDLE
                                                                                    # would override the session's
            except requests.exceptions.SSLError as exc:
                raise ControlPlaneError(f"{self.where}: TLS verification failed ({_reason(exc)}); "
                                        f"set {self.field_path}.tls.ca_file to the BMC's CA") from None
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
                raise _Transient(f"{self.where}: unreachable ({_reason(exc)})") from None
            wire.recorded("https", self.field_path, {"method": method, "path": path},
                          {"status": reply.status_code, "content_type": reply.headers.get("Content-Type", ""),
                           "body": reply.text})
            if reply.status_code in (429, 502, 503, 504) or reply.status_code >= 500:
                raise _Transient(f"{self.where}: {method} {path} -> HTTP {reply.status_code}")
            if reply.status_code == 401:
                raise CredentialRejectedError(f"{self.where}: {method} {path} refused the login (HTTP 401): check "
                                              f"{self.field_path}.credential")
            if reply.status_code == 403:
                raise ControlPlaneError(f"{self.where}: {method} {path} forbidden (HTTP 403): the account of "
                                        f"{self.field_path}.credential lacks the privilege")
            if reply.status_code >= 400:
                raise ControlPlaneError(f"{self.where}: {method} {path} -> HTTP {reply.status_code}: "
                                        f"{_message(reply)}")
            if not reply.content:
                return None
            try:
                return reply.json()
            except ValueError:
                raise ControlPlaneError(f"{self.where}: {method} {path}: the reply is not JSON") from None

        try:
            for attempt in Retrying(stop=stop_after_attempt(self.attempts) | stop_after_delay(self.retry_window_s),
                                    wait=wait_exponential(multiplier=0.5, max=4), reraise=True,
                                    retry=retry_if_exception(lambda e: isinstance(e, _Transient))):
                with attempt:
                    return once()
        except _Transient as exc:
            raise ControlPlaneError(f"{exc} (after {self.attempts} attempts)") from None
        raise AssertionError("unreachable")  # pragma: no cover - Retrying either returns or raises

    # -- the system -----------------------------------------------------------------------
    def system_path(self) -> str:
        """`/redfish/v1/Systems/<id>`: the topology's id, else the only system the BMC lists."""
        if self._system is None:
            if self.endpoint.system_id:
                self._system = f"{SYSTEMS}/{self.endpoint.system_id}"
            else:
                members = [m.get("@odata.id", "") for m in (self._request("GET", SYSTEMS) or {}).get("Members", [])]
                if len(members) != 1 or not members[0]:
                    listed = ", ".join(m.rsplit("/", 1)[-1] for m in members) or "none"
                    raise ConfigError(f"{self.where}: lists {len(members)} systems ({listed}); name the host's one in "
                                      f"{self.field_path}.system_id")
                self._system = members[0].rstrip("/")
        return self._system

    def system(self) -> dict[str, Any]:
        found = self._request("GET", self.system_path())
        if not isinstance(found, dict):
            raise ControlPlaneError(f"{self.where}: {self.system_path()} is not a ComputerSystem")
        return found

    def power_state(self) -> str:
        """`On`, `Off`, `PoweringOn`, `PoweringOff` (Redfish PowerState)."""
        state = self.system().get("PowerState")
        if not isinstance(state, str):
            raise ControlPlaneError(f"{self.where}: {self.system_path()} reports no PowerState")
        return state

    def _reset_action(self) -> tuple[str, list[str] | None]:
        action = self.system().get("Actions", {}).get("#ComputerSystem.Reset", {})
        target = action.get("target") or f"{self.system_path()}/Actions/ComputerSystem.Reset"
        if "ResetType@Redfish.AllowableValues" in action:
            return str(target), [str(v) for v in action["ResetType@Redfish.AllowableValues"]]
        info = action.get("@Redfish.ActionInfo")
        if not isinstance(info, str) or not info.startswith("/"):
            return str(target), None
        parameters = (self._request("GET", info) or {}).get("Parameters", [])
        for parameter in parameters if isinstance(parameters, list) else []:
            if isinstance(parameter, dict) and parameter.get("Name") == "ResetType" and "AllowableValues" in parameter:
                return str(target), [str(v) for v in parameter["AllowableValues"]]
        return str(target), None

    def allowed_resets(self) -> list[str] | None:
        """The ResetType values the system allows: the action's `ResetType@Redfish.AllowableValues`, else the
        `AllowableValues` of its `@Redfish.ActionInfo` resource; None when it publishes neither."""
        return self._reset_action()[1]

    def identity(self) -> tuple[str | None, str | None]:
        """The system's `UUID` and `SerialNumber` (None where it reports none): which server this BMC powers."""
        system = self.system()
        uuid, serial = system.get("UUID"), system.get("SerialNumber")
        return (uuid if isinstance(uuid, str) and uuid else None, serial if isinstance(serial, str) and serial else None)

    def reset(self, reset_type: str) -> None:
        """`ComputerSystem.Reset` with `reset_type`, refused up front if the system does not list it."""
        target, allowed = self._reset_action()
        if allowed is not None and reset_type not in allowed:
            raise ControlPlaneError(f"{self.where}: ResetType {reset_type} is not allowed here "
                                    f"(allowed: {', '.join(allowed)})")
        self._request("POST", target, {"ResetType": reset_type})

    def wait_power(self, state: str, timeout_s: float = 120.0) -> float:
        """Poll PowerState until it is `state`; seconds waited. ControlPlaneError after `timeout_s`."""
        started = time.monotonic()
        seen = None
        while True:
            seen = self.power_state()
            if seen == state:
                return time.monotonic() - started
            if time.monotonic() - started > timeout_s:
                raise ControlPlaneError(f"{self.where}: PowerState still {seen} after {timeout_s:g} s (waiting for {state})")
            time.sleep(POLL_S)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def _reason(exc: Exception) -> str:
    """A requests error, short: its end names the cause (refused, certificate verify failed...); no secret is in it."""
    text = str(exc.args[0] if exc.args else exc)
    return text if len(text) <= 200 else "..." + text[-200:]


def _message(reply: Any) -> str:
    """Redfish's `error.message` (or extended info) when the body has it; else the status text."""
    try:
        error = reply.json().get("error", {})
        extended = error.get("@Message.ExtendedInfo") or [{}]
        return str(extended[0].get("Message") or error.get("message") or reply.reason)[:300]
    except (ValueError, AttributeError, IndexError):
        return str(reply.reason)
