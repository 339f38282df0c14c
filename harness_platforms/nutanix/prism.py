"""A thin Prism v4 client of our own, with the standard library: every request bounded, every change guarded.

Why not Nutanix's `ntnx-*-py-client`: they pin urllib3 < 2 and an old certifi. What the SDK does
that matters is done here:
- a read returns the body and its ETag (`ETag`, else `X-Ntnx-Etag`, where the SDK reads it too); a
  VM change sends `If-Match` with the ETag of the read just before it (Nutanix: "concurrent updates
  are protected using ETag"), a host's maintenance none (Nutanix's own Ansible module and SDK send
  none there: A-prism-maintenance-unguarded); every change sends an `NTNX-Request-Id` the caller
  derives (`harness_platforms.nutanix.api.request_id`), so a change sent twice is done once;
- each v4 namespace's version is negotiated as the SDK does it: `OPTIONS /api/<namespace>/unversioned/info`
  answers the highest the cluster serves, and a path is sent at that version where it is older than
  the section's (a cluster that does not answer keeps the section's, as the SDK does);
- a change Prism refuses for a stale ETag (412 presumed: A-prism-stale-etag) is read again and sent
  again with the same request id, a bounded number of times;
- an action answers a task (`data.extId`); `wait_task` polls it, bounded, until it ends: SUCCEEDED,
  FAILED or CANCELED end it; any other status (QUEUED, RUNNING, CANCELING, SUSPENDED, one no document
  names) is shown and waited on.
Transient failures (no connection, a timeout, 429, 5xx) are retried with tenacity within a bounded
number of attempts and time. Reads go to Prism Central, then to each Prism Element in turn while the
one before does not answer; changes go to Prism Central only. Errors name the endpoint and the topology
field, never the credential. TLS is verified unless the section says not.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenacity import Retrying

from faults.contract import (
    ControlPlaneError,
    HarnessError,
    NotFoundError,
    Transient,
    refused,
    resolve_secret,
    retrying,
    tls_context,
    unreachable,
    wire,
)
from harness_platforms.nutanix.api import V2_FAULT_TOLERANCE, Paths
from harness_platforms.nutanix.section import FIELD, NutanixSection
from harness_platforms.nutanix.versions import INFO, NAMESPACES, at_version, namespace_of, negotiated

STALE_ETAG_STATUS = 412  # A-prism-stale-etag: presumed, not settled by any document
ENDED = {"SUCCEEDED": True, "FAILED": False, "CANCELED": False}
STALE_RETRIES = 3
PAGE_LIMIT = 100  # the most a v4 list page holds ("a positive integer between 1 and 100"; 50 when not asked)
MAX_PAGES = 100
ETAG_ALTERNATIVE = "X-Ntnx-Etag"  # where Nutanix's SDK reads a reply's ETag when it has no ETag


class StaleEtagError(ControlPlaneError):
    """Prism refused a change: the ETag it was sent with is no longer the entity's."""


@dataclass(frozen=True)
class Read:
    body: Any
    etag: str | None

    @property
    def data(self) -> Any:
        """The v4 envelope's `data` (a v2 reply has none: the body itself)."""
        return self.body.get("data") if isinstance(self.body, dict) and "data" in self.body else self.body


@dataclass
class PrismClient:
    """One Prism Central and its Prism Elements. Nothing is contacted until a call is made."""

    section: NutanixSection
    attempts: int = 3
    retry_window_s: float = 20.0
    sleep: Callable[[float], None] = time.sleep
    _at: int = 0  # the origin reads go to now: the last one that answered
    _versions: dict[tuple[int, str], str] = field(default_factory=dict)  # (origin, namespace) -> version asked

    @property
    def paths(self) -> Paths:
        return Paths(self.section.api_versions)

    @property
    def reading_from(self) -> int:
        """The origin reads go to now (0: Prism Central; else the Prism Element that last answered)."""
        return self._at

    def where(self, index: int = 0) -> str:
        return f"prism {urllib.parse.urlsplit(self.section.origins[index][1]).netloc}"

    # -- reads -------------------------------------------------------------------------------------
    def get(self, path: str) -> Read:
        """A v4 read from Prism Central, or from the first Prism Element that answers while it does not."""
        return self._read(path, list(range(len(self.section.origins))))

    def get_all(self, path: str, what: str) -> list[dict[str, Any]]:
        """Every item of a v4 list, page by page (`$page`, `$limit`), until Prism's `totalAvailableResults` are read or
        a page comes back short: a Prism Central managing more clusters than a page holds lists the section's later."""
        items: list[dict[str, Any]] = []
        joiner = "&" if "?" in path else "?"
        for page in range(MAX_PAGES):
            read = self.get(f"{path}{joiner}$page={page}&$limit={PAGE_LIMIT}")
            data = [] if read.data is None else read.data
            if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
                raise ControlPlaneError(f"{what}: expected a list of objects in data, got {type(data).__name__}")
            items += data
            metadata = read.body.get("metadata") if isinstance(read.body, dict) else None
            total = metadata.get("totalAvailableResults") if isinstance(metadata, dict) else None
            if len(data) < PAGE_LIMIT or (isinstance(total, int) and len(items) >= total):
                return items
        raise ControlPlaneError(f"{self.where()}: {what}: more than {MAX_PAGES} pages of {PAGE_LIMIT}")

    def get_from(self, index: int, path: str) -> Read:
        """A v4 read from one origin only (0: Prism Central; 1..: the listed Prism Elements), for a probe."""
        return self._read(path, [index])

    def fault_tolerance(self) -> Read:
        """Prism Element's v2 `domain_fault_tolerance_status` (only Prism Element serves it): from each listed
        Prism Element in turn, else from the endpoint itself (a section that names a Prism Element there)."""
        elements = list(range(1, len(self.section.origins))) or [0]
        return self._read(V2_FAULT_TOLERANCE, elements)

    def _read(self, path: str, order: list[int]) -> Read:
        start = self._at if self._at in order else order[0]
        order = order[order.index(start):] + order[:order.index(start)]
        unanswered: list[str] = []
        for index in order:
            wire.sent("https", self.where(index), f"GET {path}", reads=True)
            try:
                status, headers, raw = self._retrying()(self._send, index, "GET", path, None, {})
            except Transient as exc:
                unanswered.append(f"{exc} (after up to {self.attempts} attempts)")
                continue
            self._at = index
            return Read(self._decode(index, "GET", path, status, raw),
                        headers.get("etag") or headers.get(ETAG_ALTERNATIVE.lower()))
        raise ControlPlaneError("; ".join(unanswered))

    # -- changes -----------------------------------------------------------------------------------
    def change(self, read_path: str | None, method: str, path: str, body: Any, request_id: str) -> Any:
        """`method path` with `body`, `If-Match` the ETag `read_path` answers just before and `request_id`;
        read and sent again (same request id) while Prism says the ETag is stale, a bounded number of times.
        No `read_path`: sent without If-Match, as Nutanix's own client sends that change. Returns the reply's
        `data`."""
        if read_path is None:
            return self.send(method, path, body, etag=None, request_id=request_id)
        for _ in range(STALE_RETRIES):
            etag = self._read(read_path, [0]).etag  # Prism Central's own ETag: the one it checks
            if not etag:
                raise ControlPlaneError(f"{self.where()}: GET {read_path} answered no ETag: a change needs one "
                                        "(If-Match)")
            try:
                return self.send(method, path, body, etag=etag, request_id=request_id)
            except StaleEtagError:
                continue
        raise StaleEtagError(f"{self.where()}: {method} {path}: the ETag was stale {STALE_RETRIES} times in a "
                             "row: something else keeps changing it")

    def send(self, method: str, path: str, body: Any, *, etag: str | None, request_id: str) -> Any:
        """One change to Prism Central, as given (retried while transient: the request id makes it safe)."""
        headers = {"NTNX-Request-Id": request_id, **({"If-Match": etag} if etag else {})}
        wire.sent("https", self.where(), f"{method} {path}", reads=False)
        try:
            status, _, raw = self._retrying()(self._send, 0, method, path, body, headers)
        except Transient as exc:
            raise ControlPlaneError(f"{exc} (after up to {self.attempts} attempts)") from None
        reply = self._decode(0, method, path, status, raw)
        return reply.get("data") if isinstance(reply, dict) else reply

    def compute(self, path: str, body: Any, request_id: str) -> Any:
        """A POST that computes and changes nothing on the cluster (compute-non-migratable-vms): sent as a read,
        without If-Match (there is nothing to guard), so doctor may ask it."""
        wire.sent("https", self.where(), f"POST {path} (computes only)", reads=True)
        try:
            status, _, raw = self._retrying()(self._send, 0, "POST", path, body, {"NTNX-Request-Id": request_id})
        except Transient as exc:
            raise ControlPlaneError(f"{exc} (after up to {self.attempts} attempts)") from None
        reply = self._decode(0, "POST", path, status, raw)
        return reply.get("data") if isinstance(reply, dict) else reply

    # -- tasks -------------------------------------------------------------------------------------
    def wait_task(self, task: Any, what: str, timeout_s: float | None = None) -> dict[str, Any]:
        """Poll the task an action answered until it ends; its last reading. ControlPlaneError if it failed, was
        canceled, or had not ended within the bound (its last status named)."""
        ext_id = task.get("extId") if isinstance(task, dict) else None
        if not isinstance(ext_id, str) or not ext_id:
            raise ControlPlaneError(f"{self.where()}: {what}: the reply names no task (data.extId): {str(task)[:200]}")
        bound = self.section.task_timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        while True:
            seen = self.get(self.paths.task(ext_id)).data
            seen = seen if isinstance(seen, dict) else {}
            status = str(seen.get("status", "no status"))
            if status in ENDED:
                if not ENDED[status]:
                    raise ControlPlaneError(f"{self.where()}: {what}: task {ext_id} {status}: {_task_errors(seen)}")
                return seen
            if time.monotonic() - started > bound:
                raise ControlPlaneError(f"{self.where()}: {what}: task {ext_id} still {status} "
                                        f"({seen.get('progressPercentage', '?')} %) after {bound:g} s")
            self.sleep(self.section.poll_s)

    # -- versions ----------------------------------------------------------------------------------
    def versions(self, index: int = 0) -> dict[str, str]:
        """The version each v4 namespace is asked at on one origin (negotiated on first use, read-only)."""
        configured = self.section.api_versions.model_dump()
        return {namespace: self._version(index, namespace, configured[namespace]) for namespace in NAMESPACES}

    def _version(self, index: int, namespace: str, own: str) -> str:
        """Negotiated once per origin and namespace; forgotten when a path at it answers 404 (as the SDK does)."""
        if (index, namespace) not in self._versions:
            info = INFO.format(namespace=namespace)
            wire.sent("https", self.where(index), f"OPTIONS {info}", reads=True)
            try:
                status, _, raw = self._retrying()(self._request, index, "OPTIONS", info, None, {})
                served = json.loads(raw).get("data") if 200 <= status < 300 and raw else None
            except (HarnessError, Transient, ValueError, AttributeError):
                served = None  # the SDK keeps its own version when the cluster does not say (a 404 asks again)
            self._versions[index, namespace] = negotiated(own, served)
        return self._versions[index, namespace]

    # -- HTTP --------------------------------------------------------------------------------------
    def _retrying(self) -> Retrying:
        return retrying(self.attempts, self.retry_window_s)

    def _send(self, index: int, method: str, path: str, body: Any,
              headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """`_request` with a v4 path at the version negotiated with that origin."""
        versioned = namespace_of(path)
        if versioned is None:
            return self._request(index, method, path, body, headers)
        namespace, own = versioned
        try:
            return self._request(index, method, at_version(path, self._version(index, namespace, own)), body,
                                 headers)
        except NotFoundError:
            self._versions.pop((index, namespace), None)  # negotiated again on the next call, as the SDK does
            raise

    def _request(self, index: int, method: str, path: str, body: Any,
                 headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """Status, the reply's headers (names in lower case) and its body."""
        where, (origin_field, origin) = self.where(index), self.section.origins[index]
        request = urllib.request.Request(
            origin + path, method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": self._basic(), "Accept": "application/json",
                     **({"Content-Type": "application/json"} if body is not None else {}), **headers})
        asked = f"{where}: {method} {path}"
        try:
            with urllib.request.urlopen(request, timeout=self.section.timeout_s,
                                        context=tls_context(origin, self.section.ca_file, self.section.verify_tls)) \
                    as reply:
                # field names are case-insensitive (RFC 9110 §5.1): Envoy in front of Prism Central lower-cases them
                return int(reply.status), {k.lower(): v for k, v in reply.headers.items()}, bytes(reply.read())
        except urllib.error.HTTPError as exc:
            said = _said(exc)
            if exc.code == STALE_ETAG_STATUS:
                raise StaleEtagError(f"{asked} -> HTTP {exc.code}{said}: stale If-Match") from None
            raise refused(exc.code, asked, said, credential_field=f"{FIELD}.credential",
                          forbidden=f"the role of {FIELD}.credential lacks the permission") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise unreachable(exc, where, self.section.timeout_s,
                              f"set {FIELD}.ca_file to the CA that signed {origin_field}'s certificate") from None

    def _decode(self, index: int, method: str, path: str, status: int, raw: bytes) -> Any:
        wire.recorded("https", FIELD, {"method": method, "path": path},
                      {"status": status, "content_type": "application/json", "body": raw.decode("utf-8", "replace")})
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise ControlPlaneError(f"{self.where(index)}: {method} {path}: the reply is not JSON") from None

    def _basic(self) -> str:
        credential = self.section.credential
        password = resolve_secret(credential.password, f"{FIELD}.credential.password").reveal()
        return "Basic " + base64.b64encode(f"{credential.username}:{password}".encode()).decode()


def _task_errors(task: dict[str, Any]) -> str:
    messages = [str(m.get("message")) for m in task.get("errorMessages") or [] if isinstance(m, dict)]
    return "; ".join(messages)[:300] or str(task.get("legacyErrorMessage") or "no error message")


def _said(exc: urllib.error.HTTPError) -> str:
    """`: <message>` from a v4 error body (`data.error[].message`), bounded; nothing when it has none."""
    try:
        body = json.loads(exc.read(4096) or b"{}")
    except (ValueError, OSError):
        return ""
    errors = ((body.get("data") or {}).get("error") if isinstance(body, dict) else None) or []
    words = "; ".join(str(e.get("message")) for e in errors if isinstance(e, dict) and e.get("message"))
    return f": {words[:300]}" if words else ""
