"""A VPLEX / metro node's REST API v2, read with the standard library: GET only, each request bounded.

By default every request carries HTTP Basic auth, as Dell's own Ansible collection does (it sets
the SDK's user and password and never asks `POST /token`): no token to expire mid-experiment
(assumption A-vplex-basic-auth). With `auth: token` it logs in once (`POST /token`, as centreon's
client does) and sends the bearer token, logging in again when it is refused; the token's key
(`token` or `access_token`: Dell's SDK model and its docstring disagree) is A-vplex-token-field. Transient failures
(no connection, a timeout, 429, 5xx) are retried with tenacity, a bounded number of times within a
bounded window. Error bodies are Dell's `Error` model (`error_code`, `message`). Errors name the
endpoint and the topology field, never the credential. TLS is verified unless the section says not.

This client has no method that changes anything: the harness observes the product's decisions,
it never takes one (no resume, no detach, no PATCH).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from tenacity import Retrying

from faults.contract import (
    ControlPlaneError,
    CredentialRejectedError,
    Transient,
    refused,
    resolve_secret,
    retrying,
    tls_context,
    unreachable,
    wire,
)
from harness_platforms.vplex.replies import (
    Cluster,
    ClusterWitness,
    ConsistencyGroup,
    DistributedDevice,
    Version,
    WanComHealth,
)
from harness_platforms.vplex.section import FIELD, VplexSection

Reply = TypeVar("Reply", bound=BaseModel)
TOKEN_KEYS = ("token", "access_token")  # Dell's SDK model, then its docstring (A-vplex-token-field)


@dataclass
class VplexClient:
    """The management servers of the section, read in order: the first that answers is read until it no longer
    does (after the loss of its site the other cluster's server says what the survivor decided). Nothing is
    contacted until a read is asked for."""

    section: VplexSection
    attempts: int = 3
    retry_window_s: float = 20.0
    _at: int = 0  # the server read now: the last one that answered
    _token: str | None = None  # with `auth: token`, the bearer token the server read now issued

    @property
    def origin(self) -> str:
        return self.section.origins[self._at][1]

    @property
    def where(self) -> str:
        return f"vplex {urllib.parse.urlsplit(self.origin).netloc}"

    # -- the reads the observer makes ---------------------------------------------------------
    def clusters(self) -> list[Cluster]:
        return self._many("/clusters/", Cluster)

    def wan_com(self) -> WanComHealth:
        return self._one("/health/wan_com", WanComHealth)

    def cluster_witness(self) -> ClusterWitness:
        return self._one("/cluster_witness", ClusterWitness)

    def consistency_group(self, name: str) -> ConsistencyGroup:
        return self._one(f"/distributed_storage/distributed_consistency_groups/{urllib.parse.quote(name)}",
                         ConsistencyGroup)

    def distributed_devices(self) -> list[DistributedDevice]:
        return self._many("/distributed_storage/distributed_devices", DistributedDevice)

    def versions(self) -> list[Version]:
        return self._many("/versions", Version)

    # -- HTTP -------------------------------------------------------------------------------------
    def _one(self, path: str, model: type[Reply]) -> Reply:
        body = self.get(path)
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            raise ControlPlaneError(f"{self.where}: GET {path}: not a {model.__name__} "
                                    f"({exc.error_count()} fields do not fit)") from None

    def _many(self, path: str, model: type[Reply]) -> list[Reply]:
        body = self.get(path)
        if not isinstance(body, list):
            raise ControlPlaneError(f"{self.where}: GET {path}: expected a JSON array, got {type(body).__name__}")
        try:
            return [model.model_validate(item) for item in body]
        except ValidationError as exc:
            raise ControlPlaneError(f"{self.where}: GET {path}: an item is not a {model.__name__} "
                                    f"({exc.error_count()} fields do not fit)") from None

    def get(self, path: str) -> Any:
        """`GET /vplex/v2<path>`, decoded; retried while transient, bounded in attempts and time, on each server in
        turn while one does not answer (a refusal, 401 or 404, is the system's answer: never asked elsewhere). A
        bearer token refused (expired, or issued by the other server) is asked for again, once."""
        wire.sent("https", self.where, f"GET {path}", reads=True)
        try:
            status, raw = self._answered(path)
        except CredentialRejectedError:
            if self._token is None:
                raise
            self._token = None
            status, raw = self._answered(path)
        wire.recorded("https", FIELD, {"method": "GET", "path": path},
                      {"status": status, "content_type": "application/json", "body": raw.decode("utf-8", "replace")})
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise ControlPlaneError(f"{self.where}: GET {path}: the reply is not JSON") from None

    def _answered(self, path: str) -> tuple[int, bytes]:
        unanswered: list[str] = []
        for _ in self.section.origins:
            try:
                answer: tuple[int, bytes] = self._retrying()(self._send, self._request(path), path)
                return answer
            except Transient as exc:
                unanswered.append(f"{exc} (after up to {self.attempts} attempts)")
                self._at = (self._at + 1) % len(self.section.origins)
                self._token = None  # a token is the server's that issued it
        raise ControlPlaneError("; ".join(unanswered))

    def _request(self, path: str) -> urllib.request.Request:
        return urllib.request.Request(f"{self.origin}/vplex/v2{path}", method="GET", headers={
            "Authorization": self._authorization(), "Accept": "application/json"})

    def _authorization(self) -> str:
        if self.section.auth == "basic":
            return self._basic()
        if self._token is None:
            self._token = self._login()
        return f"Bearer {self._token}"

    def _login(self) -> str:
        """`POST /token` with Basic auth, as centreon's v2 client logs in; the reply's key is `token` in Dell's SDK
        model and `access_token` in its docstring (and centreon tests one, reads the other): either is read
        (A-vplex-token-field). It creates a session, nothing on the storage: a read, for the wire's books."""
        wire.sent("https", self.where, "POST /token (login)", reads=True)
        request = urllib.request.Request(f"{self.origin}/vplex/v2/token", method="POST", data=b"{}", headers={
            "Authorization": self._basic(), "Accept": "application/json", "Content-Type": "application/json"})
        _, raw = self._retrying()(self._send, request, "/token")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        keys = sorted(body) if isinstance(body, dict) else []
        token = next((body[k] for k in TOKEN_KEYS if isinstance(body, dict) and isinstance(body.get(k), str)
                      and body[k]), None)
        if token is None:
            raise ControlPlaneError(f"{self.where}: POST /token answered no token under {' or '.join(TOKEN_KEYS)} "
                                    f"(keys: {', '.join(keys) or 'none'}); set {FIELD}.auth: basic")
        return str(token)

    def _retrying(self) -> Retrying:
        return retrying(self.attempts, self.retry_window_s)

    def _send(self, request: urllib.request.Request, path: str) -> tuple[int, bytes]:
        asked = f"{self.where}: {request.get_method()} {path}"
        try:
            with urllib.request.urlopen(request, timeout=self.section.timeout_s,
                                        context=tls_context(self.origin, self.section.ca_file,
                                                            self.section.verify_tls)) as reply:
                return int(reply.status), bytes(reply.read())
        except urllib.error.HTTPError as exc:
            raise refused(exc.code, asked, _said(exc), credential_field=f"{FIELD}.credential",
                          forbidden=f"the account of {FIELD}.credential may not read it") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise unreachable(exc, self.where, self.section.timeout_s,
                              f"set {FIELD}.ca_file to the CA that signed the management server's certificate") from None

    def _basic(self) -> str:
        credential = self.section.credential
        password = resolve_secret(credential.password, f"{FIELD}.credential.password").reveal()
        return "Basic " + base64.b64encode(f"{credential.username}:{password}".encode()).decode()


def _said(exc: urllib.error.HTTPError) -> str:
    """`: <error_code> <message>` from Dell's `Error` body, bounded; nothing when the body is not one."""
    try:
        body = json.loads(exc.read(4096) or b"{}")
    except (ValueError, OSError):
        return ""
    if not isinstance(body, dict):
        return ""
    words = " ".join(str(body[k]) for k in ("error_code", "message") if body.get(k))
    return f": {words[:300]}" if words else ""
