"""One vCenter session per endpoint, shared by the vsphere and vsan backends (pyVmomi, imported on use).

Building a session contacts nothing: dry-run builds every fault. The first call connects, with
an SSL context from the topology's TLS policy (verification on unless the topology turns it
off, `ca_file` honoured), the credential resolved from its reference at that moment, and a
bound on every HTTP request (connect and read). Errors name the endpoint
(`management.vcenter host:port`) and what was being done, never the secret.

Control planes drop the odd request: a call that fails with a transport error, a
`HostCommunication` fault or an expired session is retried (tenacity), within a bounded number
of attempts and a bounded total time; anything else fails at once. A certificate that does not
verify is never retried: it is a configuration problem.

Nothing waits without a bound: tasks and property conditions are watched through
`WaitForUpdatesEx` with `maxWaitSeconds` on a private property collector, until a deadline that
the caller names; the timeout message says what was awaited and what was last seen.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import http.client
import importlib
import logging
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any, TypeVar

from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_exponential

from faults.transports import vsan_versions, wire
from faults.transports.http_recording import recording
from harness_kernel.errors import ConfigError, ControlPlaneError, CredentialRejectedError, HarnessError
from harness_kernel.history.events import EventKind
from harness_kernel.history.server import ServerEvent, measure_offset
from harness_kernel.topology.credentials import resolve_secret
from harness_kernel.topology.management import TlsPolicy, VCenter
from harness_kernel.topology.models import Topology

log = logging.getLogger(__name__)

T = TypeVar("T")
FIELD = "management.vcenter"
VSAN_PATH = "/vsanHealth"  # vCenter's vSAN management endpoint (vsanapiutils.VSAN_API_VC_SERVICE_ENDPOINT)
PBM_PATH = "/pbm"  # the Storage Policy API, as govmomi's pbm client reaches it (pbm/client.go: Path = "/pbm")
PBM_VERSION = "pbm.version.version1"  # the methods used date from it (PbmQueryAssociatedProfiles, PbmRetrieveContent)
_WAIT_SLICE_S = 10  # one WaitForUpdatesEx call; must stay below the read timeout
_KINDS = ("Datacenter", "ClusterComputeResource", "HostSystem", "VirtualMachine")


def sdk() -> Any:
    """The pyVmomi namespaces (`vim`, `vmodl`, `connect`, `vsanapiutils`); a ConfigError naming the extra if absent."""
    try:
        pyvmomi = importlib.import_module("pyVmomi")
        connect = importlib.import_module("pyVim.connect")
        vsanapiutils = importlib.import_module("vsanapiutils")  # bundled with pyVmomi >= 8.0.3 (vSAN management SDK)
    except ImportError as exc:
        raise ConfigError(f"the vsphere backend needs {exc.name or 'pyVmomi'}; install it with: "
                          "pip install 'resilience-harness[vsphere]'") from None
    return _Sdk(pyvmomi.vim, pyvmomi.vmodl, connect, pyvmomi.SoapStubAdapter, vsanapiutils, pyvmomi.pbm)


@dataclass(frozen=True)
class _Sdk:
    vim: Any
    vmodl: Any
    connect: Any
    SoapStubAdapter: Any
    vsanapiutils: Any
    pbm: Any


def ssl_context(tls: TlsPolicy, where: str) -> ssl.SSLContext:
    """Verification on by default (system store, or `ca_file` alone when given); off only when the topology says so."""
    if not tls.verify:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        return ssl.create_default_context(cafile=tls.ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{where}.tls.ca_file: cannot load {tls.ca_file}: {exc}") from None


def presented_certificate(address: str, port: int, timeout_s: float = 15.0) -> tuple[str, str]:
    """The certificate the server presents, not trusted, nothing sent but the TLS handshake: (SHA-256
    thumbprint as colon-separated hex, PEM). What a person compares with the one their vCenter shows."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((address, port), timeout=timeout_s) as raw, \
                context.wrap_socket(raw, server_hostname=address) as tls:
            der = tls.getpeercert(binary_form=True)
    except OSError as exc:
        raise ControlPlaneError(f"{address}:{port}: unreachable ({exc})") from None
    if not der:
        raise ControlPlaneError(f"{address}:{port}: presented no certificate")
    return thumbprint_of(der), ssl.DER_cert_to_PEM_cert(der)


def thumbprint_of(der: bytes) -> str:
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


def pinned_context(address: str, port: int, thumbprint: str, timeout_s: float = 15.0) -> ssl.SSLContext:
    """A TLS context that trusts exactly the certificate with this SHA-256 `thumbprint`, and refuses any other.

    The certificate is read once and compared before anything else is sent; afterwards every
    connection verifies against it alone (partial chain: the pinned certificate is the trust
    anchor), so a server presenting another one is refused at the handshake."""
    wanted = thumbprint.replace(":", "").strip().upper()
    if not re.fullmatch(r"[0-9A-F]{64}", wanted):
        raise ConfigError(f"--thumbprint: {thumbprint!r} is not a SHA-256 thumbprint (64 hex digits, colons allowed)")
    seen, pem = presented_certificate(address, port, timeout_s)
    if seen.replace(":", "") != wanted:
        raise ConfigError(f"{address}:{port} presents a certificate with SHA-256 thumbprint {seen}, not the one given "
                          "(--thumbprint): refused")
    context = ssl.create_default_context(cadata=pem)
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    context.check_hostname = False  # the pin names the server; its certificate may not name this address
    return context


@dataclass(frozen=True)
class Limits:
    """Bounds on talking to vCenter: per request, and on retrying a call."""

    connect_s: float = 15.0
    read_s: float = 60.0
    attempts: int = 4
    retry_total_s: float = 60.0
    backoff_s: float = 0.5  # first pause between attempts; doubles, at most 5 s


@dataclass(frozen=True)
class VcEvent:
    """A vCenter event: its type (class name, or `eventTypeId` for EventEx), server-clock time, what it names."""

    type_id: str
    wall: float
    message: str
    host: str | None = None
    vm: str | None = None

    def to_server_event(self, kind: EventKind, source: str = "vcenter") -> ServerEvent:
        attrs = {"event": self.type_id, **({"host": self.host} if self.host else {}), **({"vm": self.vm} if self.vm else {})}
        return ServerEvent(self.wall, kind, source, self.message, attrs)


MAX_VERSIONS_BYTES = 1 << 20  # a versions document is a few hundred bytes
SERVICE_VERSIONS_PATH = "/sdk/vimServiceVersions.xml"  # what pyVmomi's SmartConnect reads to pick the vim version


class VCenterSession:
    """A lazily connected pyVmomi session to the topology's vCenter, with the helpers both backends use."""

    def __init__(self, vcenter: VCenter, vsan_version: str | None = None, limits: Limits = Limits(),
                 pinned: ssl.SSLContext | None = None) -> None:
        self.vcenter = vcenter
        self.pinned = pinned  # trust this context (one pinned certificate: `pinned_context`) instead of tls
        self.vsan_version = vsan_version  # the topology's override; None: negotiated on the first vSAN call
        self.vsan_spoken: str | None = vsan_version  # the version the vSAN calls use, once known
        self.limits = limits
        self._si: Any = None
        self._content: Any = None  # the ServiceContent: its managers' references, fixed for the session
        self._vsan: dict[str, Any] | None = None
        self._pbm: Any = None  # the PBM profile manager, on first use
        self._lock = threading.RLock()

    @property
    def where(self) -> str:
        return f"{FIELD} {self.vcenter.address}:{self.vcenter.port}"

    # -- connecting ----------------------------------------------------------------------
    def _tls(self) -> ssl.SSLContext:
        return self.pinned if self.pinned is not None else ssl_context(self.vcenter.tls, FIELD)

    def _connect(self) -> Any:
        s = sdk()
        password = resolve_secret(self.vcenter.credential.password, f"{FIELD}.credential.password")
        context = self._tls()
        # pyVmomi has one timeout for connect and read; a separate, shorter bound on reaching the port first.
        socket.create_connection((self.vcenter.address, self.vcenter.port), timeout=self.limits.connect_s).close()
        wire.sent("soap", self.where, "RetrieveServiceContent, Login", reads=True)
        try:
            si = s.connect.SmartConnect(host=self.vcenter.address, port=self.vcenter.port,
                                        user=self.vcenter.credential.username, pwd=password.reveal(),
                                        sslContext=context, httpConnectionTimeout=self.limits.read_s,
                                        connectionPoolTimeout=-1)
        except s.vim.fault.InvalidLogin:
            raise CredentialRejectedError(f"{self.where}: login refused for {self.vcenter.credential.username!r} "
                              f"({FIELD}.credential)") from None
        except ssl.SSLCertVerificationError as exc:
            raise ConfigError(f"{self.where}: certificate not trusted ({exc.verify_message}); give the CA in "
                              f"{FIELD}.tls.ca_file") from None
        _on_the_wire(si._stub, self.where)
        if wire.capturing():  # what SmartConnect read before the stub was ours: the capture's replay serves it
            self._get(SERVICE_VERSIONS_PATH, MAX_VERSIONS_BYTES)
        return si

    def si(self) -> Any:
        """The ServiceInstance, connecting on first use and after the session was lost."""
        with self._lock:
            if self._si is None:
                self._si = self._retrying("connect", self._connect)
            return self._si

    def close(self) -> None:
        with self._lock:
            if self._si is not None:
                try:
                    sdk().connect.Disconnect(self._si)
                except Exception as exc:  # a broken session cannot log out; nothing to undo
                    log.debug("%s: logout failed: %s", self.where, exc)
            self._si, self._vsan, self._content, self._pbm = None, None, None, None

    # -- calling -------------------------------------------------------------------------
    def call(self, what: str, fn: Callable[[], T]) -> T:
        """Run `fn` (pyVmomi calls on this session), retrying transient errors; errors name the endpoint and `what`."""
        return self._retrying(what, fn)

    def _retrying(self, what: str, fn: Callable[[], T]) -> T:
        limits = self.limits
        try:
            for attempt in Retrying(stop=stop_after_attempt(limits.attempts) | stop_after_delay(limits.retry_total_s),
                                    wait=wait_exponential(multiplier=limits.backoff_s, max=5), reraise=False,
                                    retry=retry_if_exception(self._transient), before_sleep=self._before_retry(what)):
                with attempt:
                    return fn()
        except RetryError as exc:
            last = exc.last_attempt.exception()
            raise ControlPlaneError(f"{self.where}: {what} failed after {exc.last_attempt.attempt_number} attempts: "
                                    f"{describe(last)}") from None
        except HarnessError:
            raise
        except ssl.SSLCertVerificationError as exc:
            raise ConfigError(f"{self.where}: certificate not trusted ({exc.verify_message}); give the CA in "
                              f"{FIELD}.tls.ca_file") from None
        except Exception as exc:
            raise ControlPlaneError(f"{self.where}: {what} failed: {describe(exc)}") from None
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _before_retry(self, what: str) -> Callable[[Any], None]:
        def note(state: Any) -> None:
            error = state.outcome.exception() if state.outcome else None
            log.info("%s: %s: retrying after %s", self.where, what, describe(error))
            if _fault_name(error) == "NotAuthenticated":
                with self._lock:
                    self._si, self._vsan, self._content, self._pbm = None, None, None, None  # the session expired: log in again
        return note

    @staticmethod
    def _transient(exc: BaseException) -> bool:
        return is_transient(exc)

    # -- inventory -----------------------------------------------------------------------
    def content(self) -> Any:
        """The ServiceContent, read once per login (it names the session's managers; it does not change)."""
        with self._lock:
            si = self.si()
            if self._content is None:
                self._content = si.RetrieveContent()
            return self._content

    def inventory(self, kind: str, paths: Sequence[str]) -> dict[str, tuple[Any, dict[str, Any]]]:
        """Every object of `kind` ("HostSystem", ...) under the root folder: name -> (object, {path: value})."""
        if kind not in _KINDS:
            raise ValueError(f"unknown inventory kind {kind!r}")

        def read() -> dict[str, tuple[Any, dict[str, Any]]]:
            s, content = sdk(), self.content()
            kind_type = getattr(s.vim, kind)
            view = content.viewManager.CreateContainerView(content.rootFolder, [kind_type], True)
            try:
                return _by_name(self._retrieve(s, content.propertyCollector, view, kind_type, ["name", *paths]))
            finally:
                view.Destroy()
        return self.call(f"reading every {kind}", read)

    @staticmethod
    def _retrieve(s: Any, collector: Any, view: Any, kind_type: Any, paths: list[str]) -> list[Any]:
        pc = s.vmodl.query.PropertyCollector
        traverse = pc.TraversalSpec(name="view", path="view", skip=False, type=s.vim.view.ContainerView)
        spec = pc.FilterSpec(objectSet=[pc.ObjectSpec(obj=view, skip=True, selectSet=[traverse])],
                             propSet=[pc.PropertySpec(type=kind_type, pathSet=paths)])
        result = collector.RetrievePropertiesEx([spec], pc.RetrieveOptions())
        found = list(result.objects) if result else []
        while result is not None and result.token:
            result = collector.ContinueRetrievePropertiesEx(result.token)
            found += list(result.objects)
        return found

    def find(self, kind: str, name: str) -> Any:
        """The one object of `kind` named `name`; ControlPlaneError naming both if vCenter has none."""
        found = self.inventory(kind, [])
        if name not in found:
            raise ControlPlaneError(f"{self.where}: no {kind} named {name!r} (known: {', '.join(sorted(found)) or 'none'})")
        return found[name][0]

    def read(self, obj: Any, paths: Sequence[str], what: str) -> dict[str, Any]:
        """Properties of one object in one round trip (a missing property is None)."""
        def get() -> dict[str, Any]:
            s, content = sdk(), self.content()
            pc = s.vmodl.query.PropertyCollector
            spec = pc.FilterSpec(objectSet=[pc.ObjectSpec(obj=obj, skip=False)],
                                 propSet=[pc.PropertySpec(type=type(obj), pathSet=list(paths))])
            result = content.propertyCollector.RetrievePropertiesEx([spec], pc.RetrieveOptions())
            values = {p: None for p in paths}
            for item in (result.objects if result else []):
                values.update({prop.name: prop.val for prop in item.propSet})
            return values
        return self.call(what, get)

    # -- waiting -------------------------------------------------------------------------
    def wait_for(self, obj: Any, paths: Sequence[str], until: Callable[[Mapping[str, Any]], bool], what: str,
                 timeout_s: float) -> dict[str, Any]:
        """Watch `paths` of `obj` until `until(values)` holds; ControlPlaneError naming `what` after `timeout_s`.

        Built on `WaitForUpdatesEx` (`maxWaitSeconds` per call) on a collector of its own, so a
        filter left behind by an interrupted wait never mixes with another wait's updates.
        """
        deadline = time.monotonic() + timeout_s
        s = sdk()
        pc = s.vmodl.query.PropertyCollector
        collector = self.call(f"creating a property collector to wait for {what}",
                              lambda: self.content().propertyCollector.CreatePropertyCollector())
        values: dict[str, Any] = {p: None for p in paths}
        try:
            spec = pc.FilterSpec(objectSet=[pc.ObjectSpec(obj=obj, skip=False)],
                                 propSet=[pc.PropertySpec(type=type(obj), pathSet=list(paths))])
            self.call(f"watching {what}", lambda: collector.CreateFilter(spec, True))
            version: str | None = None
            while True:
                left = deadline - time.monotonic()
                wait_s = max(1, min(_WAIT_SLICE_S, int(left)))
                options = pc.WaitOptions(maxWaitSeconds=wait_s)
                updates = self.call(f"waiting for {what}", functools.partial(collector.WaitForUpdatesEx, version, options))
                if updates is not None:
                    version = updates.version
                    apply_updates(values, updates)
                if until(values):
                    return values
                if time.monotonic() >= deadline:
                    raise ControlPlaneError(f"{self.where}: waited {timeout_s:g} s for {what}; last seen "
                                            f"{_shown(values)}")
        finally:
            try:
                collector.DestroyPropertyCollector()
            except Exception as exc:  # the session may be gone; the collector goes with it
                log.debug("%s: destroying a property collector failed: %s", self.where, exc)

    def wait_task(self, task: Any, what: str, timeout_s: float) -> Any:
        """Wait for a task to end; its result, or ControlPlaneError with vCenter's reason. Bounded by `timeout_s`."""
        values = self.wait_for(task, ["info.state", "info.error"], lambda v: str(v["info.state"]) in ("success", "error"),
                               what, timeout_s)
        if str(values["info.state"]) == "error":
            raise ControlPlaneError(f"{self.where}: {what} failed: {describe(values['info.error'])}")
        return self.read(task, ["info.result"], what)["info.result"]

    # -- vSAN ------------------------------------------------------------------------------
    def vsan(self, name: str) -> Any:
        """A vSAN managed object ('vsan-cluster-object-system', ...) on /vsanHealth, at the negotiated API version
        (or the topology's override)."""
        with self._lock:
            if self._vsan is None:
                s, stub = sdk(), self.si()._stub
                if self.vsan_spoken is None:
                    self.vsan_spoken = self.negotiate_vsan_version()
                mos = s.vsanapiutils.GetVsanVcMos(stub, context=self._tls(),
                                                  version=self.vsan_spoken)
                for mo in mos.values():  # vsanapiutils builds its stub without a read timeout: bound it as ours
                    mo._stub.schemeArgs["timeout"] = self.limits.read_s
                    _on_the_wire(mo._stub, f"{self.where}/vsanHealth")
                self._vsan = mos
            try:
                return self._vsan[name]
            except KeyError:
                raise ConfigError(f"{self.where}: the vSAN SDK has no managed object {name!r}") from None

    def pbm(self) -> Any:
        """The Storage Policy API's profile manager (PBM, on /pbm as govmomi's client reaches it), on this session:
        its cookie, and the `vcSessionCookie` header PBM authenticates a request with."""
        with self._lock:
            if self._pbm is None:
                s, stub = sdk(), self.si()._stub
                morsel = SimpleCookie(stub.cookie).get("vmware_soap_session")  # quoted on vCenter, bare on the sim
                if morsel is None:
                    raise ControlPlaneError(f"{self.where}: the session has no vmware_soap_session cookie for PBM")
                session = morsel.value
                pbm_stub = s.SoapStubAdapter(host=self.vcenter.address, port=self.vcenter.port, path=PBM_PATH,
                                             version=PBM_VERSION, sslContext=self._tls(), connectionPoolTimeout=-1,
                                             requestContext={"vcSessionCookie": session})
                pbm_stub.cookie = stub.cookie
                pbm_stub.schemeArgs["timeout"] = self.limits.read_s
                _on_the_wire(pbm_stub, f"{self.where}/pbm")
                content = s.pbm.ServiceInstance("ServiceInstance", pbm_stub).RetrieveContent()
                self._pbm = content.profileManager
            return self._pbm

    def negotiate_vsan_version(self) -> str:
        """The newest vSAN API version vCenter offers (/sdk/vsanServiceVersions.xml) that this pyVmomi speaks,
        read with this session's TLS policy and bounds (`faults.transports.vsan_versions`)."""
        def fetch() -> str:
            return self._get(vsan_versions.PATH, MAX_VERSIONS_BYTES).decode("utf-8", errors="replace")
        document = self.call(f"reading {vsan_versions.PATH}", fetch)
        version = vsan_versions.from_pyvmomi(vsan_versions.offered(document, self.where), self.where)
        log.info("%s: vSAN API %s (negotiated)", self.where, version)
        return version

    def _get(self, path: str, limit: int) -> bytes:
        """One GET of a document beside the SOAP API, with this session's TLS policy and bounds."""
        wire.sent("https", self.where, f"GET {path}", reads=True)
        connection: http.client.HTTPSConnection = recording(http.client.HTTPSConnection, "soap", FIELD)(
            self.vcenter.address, self.vcenter.port, timeout=self.limits.read_s, context=self._tls())
        try:
            connection.request("GET", path)
            reply = connection.getresponse()
            body = reply.read(limit + 1)
        finally:
            connection.close()
        if reply.status != 200 or len(body) > limit:
            hint = f"; set {vsan_versions.OVERRIDE}" if path == vsan_versions.PATH else ""
            raise ControlPlaneError(f"{self.where}: GET {path} answered {reply.status} ({len(body)} bytes){hint}")
        return body

    # -- clock and events ------------------------------------------------------------------
    def server_now(self) -> float:
        """vCenter's clock (seconds since the epoch), for `harness_kernel.history.server.measure_offset`."""
        return float(self.call("reading the server clock", lambda: self.si().CurrentTime()).timestamp())

    def clock_offset(self) -> float:
        """vCenter's clock minus this machine's (seconds), from the round trip with the least delay."""
        return measure_offset(self.server_now, time.time)

    def events_since(self, since: float, type_ids: Iterable[str], entity: Any | None = None) -> list[VcEvent]:
        """Events of these types (class names such as `DasHostFailedEvent`, or an EventEx `eventTypeId`)
        created at or after `since` (server clock), oldest first."""
        wanted = sorted(set(type_ids))

        def query() -> list[Any]:
            s, content = sdk(), self.content()
            flt = s.vim.event.EventFilterSpec(
                time=s.vim.event.EventFilterSpec.ByTime(beginTime=dt.datetime.fromtimestamp(since, dt.UTC)),
                eventTypeId=wanted)
            if entity is not None:
                flt.entity = s.vim.event.EventFilterSpec.ByEntity(entity=entity, recursion="all")
            return list(content.eventManager.QueryEvents(flt) or [])
        found = [vc_event(e) for e in self.call("reading events", query)]
        return sorted((e for e in found if e.type_id in wanted and e.wall >= since), key=lambda e: e.wall)


def vc_event(event: Any) -> VcEvent:
    """pyVmomi Event -> VcEvent: EventEx carries its type in `eventTypeId`, the others in their class."""
    type_id = getattr(event, "eventTypeId", None) or type(event).__name__.rsplit(".", 1)[-1]
    # DasHostFailedEvent names the failed host in `failedHost`; `host` is then the reporting one, if any.
    host = getattr(getattr(event, "failedHost", None), "name", None) or getattr(getattr(event, "host", None), "name", None)
    vm = getattr(getattr(event, "vm", None), "name", None)
    created = event.createdTime
    wall = created.timestamp() if isinstance(created, dt.datetime) else float(created)
    return VcEvent(str(type_id), wall, str(getattr(event, "fullFormattedMessage", "") or type_id), host, vm)


def apply_updates(values: dict[str, Any], updates: Any) -> None:
    """Fold an UpdateSet's property changes into `values` (`assign` sets, `remove` clears)."""
    for filter_set in updates.filterSet or []:
        for object_set in filter_set.objectSet or []:
            for change in object_set.changeSet or []:
                if change.name in values or any(change.name.startswith(p + ".") for p in values):
                    values[change.name] = None if str(change.op) == "remove" else change.val


def is_transient(exc: BaseException) -> bool:
    """Worth another attempt: the connection broke, vCenter could not reach the host, or the session expired."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return False
    if isinstance(exc, (OSError, http.client.HTTPException, EOFError)):
        return True
    return _fault_name(exc) in ("HostCommunication", "NotAuthenticated", "RequestCanceled", "SystemError")


def _fault_name(exc: BaseException | None) -> str:
    """The vmodl fault's wire name (`HostCommunication`), or "" for anything else."""
    name = getattr(type(exc), "_wsdlName", None)
    return str(name) if name else ""


def describe(error: Any) -> str:
    """A fault or exception in one line: its wire name and vCenter's message (never a request's arguments)."""
    if error is None:
        return "no reason given"
    name = _fault_name(error) or type(error).__name__
    message = getattr(error, "msg", None) or getattr(error, "localizedMessage", None) or str(error)
    faults = getattr(error, "faultMessage", None) or []
    extra = "; ".join(str(getattr(m, "message", m)) for m in faults)
    return f"{name}: {message}" + (f" ({extra})" if extra else "")


def _by_name(objects: list[Any]) -> dict[str, tuple[Any, dict[str, Any]]]:
    found: dict[str, tuple[Any, dict[str, Any]]] = {}
    for item in objects:
        props = {prop.name: prop.val for prop in item.propSet}
        found[str(props.get("name"))] = (item.obj, props)
    return found


def _shown(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v if isinstance(v, (str, int, float, bool, type(None))) else type(v).__name__}"
                     for k, v in values.items())


@dataclass
class _Sessions:
    by_endpoint: dict[tuple[str, int, str], VCenterSession] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_SESSIONS = _Sessions()


def _on_the_wire(stub: Any, where: str) -> None:
    """Report each method this pyVmomi stub sends to `faults.transports.wire` (and the session objects it makes)."""
    if getattr(stub, "_harness_on_the_wire", False):
        return
    invoke = stub.InvokeMethod

    def invoke_method(mo: Any, info: Any, args: Any, *rest: Any) -> Any:
        name = str(info.wsdlName)
        wire.sent("soap", where, name, reads=wire.soap_reads(name))
        result = invoke(mo, info, args, *rest)
        watched = wire.current()
        if watched is not None and name in wire.SOAP_SESSION_CREATES and result is not None:
            watched.created(where, str(result._moId), name)
        elif watched is not None and name in wire.SOAP_SESSION_DESTROYS:
            watched.destroyed(where, str(mo._moId))
        return result

    stub.InvokeMethod = invoke_method
    stub.scheme = recording(stub.scheme, "soap", FIELD)
    stub.DropConnections()  # pooled connections were opened with the plain class
    stub._harness_on_the_wire = True


def session_for(topology: Topology) -> VCenterSession:
    """The one session for the topology's vCenter (built, not connected); ConfigError if it names none."""
    vcenter = topology.management.vcenter
    if vcenter is None:
        raise ConfigError(f"topology {topology.name!r}: vSphere faults need {FIELD}")
    key = (vcenter.address, vcenter.port, vcenter.credential.username)
    with _SESSIONS.lock:
        session = _SESSIONS.by_endpoint.get(key)
        version = vsan_api_version(topology)
        if session is None or session.vcenter != vcenter or session.vsan_version != version:
            session = VCenterSession(vcenter, version)
            _SESSIONS.by_endpoint[key] = session
        return session


def vsan_api_version(topology: Topology) -> str | None:
    """`management.vsan.api_version` as the topology gives it: the vsan platform's section validates it (a run reads
    the topology through `faults.sections.check`); here only a string is taken, anything else is no override."""
    version = topology.management.vsan.get("api_version")
    return version if isinstance(version, str) else None


def close_all() -> None:
    """Log out of every session (end of a run)."""
    with _SESSIONS.lock:
        sessions = list(_SESSIONS.by_endpoint.values())
        _SESSIONS.by_endpoint.clear()
    for session in sessions:
        session.close()
