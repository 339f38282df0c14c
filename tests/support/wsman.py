"""A WS-Management endpoint on 127.0.0.1 for contract tests: the five actions pywinrm sends, behind WinRM's login.

No WS-Management server runs here (there is no Windows), so this answers the SOAP envelopes
of Microsoft's WS-Management Shell protocol [MS-WSMV] as pywinrm parses them: Create (a
ShellId selector), Command (a CommandId), Receive (base64 stdout/stderr streams, CommandState
Running until the last, which is Done with an ExitCode), Signal and Delete (RelatesTo the
request's MessageID). The command must be `powershell -encodedcommand <UTF-16LE base64>`; the
decoded script goes to `answer`, which plays the Windows node.

Given a `WsmanSite` (a throwaway certificate and NTLM accounts, `tests.support.wsman_auth`),
the endpoint logs in as a listener with Windows' defaults does: NTLM inside Negotiate, over
https with the client's channel binding checked (the transport's default), or over http with
every message sealed. Without one it takes Basic over http, the form a caller that only
passes ports (test_sqlserver_backup) points at. A command's output can be split over several
Receive responses (`receives`), as a running command's is.

It serves the variations SOAP over HTTP allows when asked (`tests.support.variations`, SOAP_OVER_HTTP): header
case, chunking, other prefixes, whitespace, a Receive's streams in another order, the headers and stream ends a
Windows listener adds, and the operation-timeout fault on a command's first Receive (`retry-after` in this
protocol's terms: [MS-WSMV] tells the client to ask again).

Reference: [MS-WSMV] Web Services Management Protocol Extensions for Windows Vista,
https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-wsmv/ (sources of each
served value: tests/support/wsman_facts.py)
"""

from __future__ import annotations

import base64
import os
import re
import socket
import ssl
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from spnego.exceptions import SpnegoError

from tests.support import variations
from tests.support.wsman_auth import ACCOUNTS_ENV, SCHEME, NtlmLogin, WsmanSite, content_type, is_sealed, seal, unseal
from tests.support.wsman_facts import FACTS, text

Answer = Callable[[str], tuple[str, str, int]]  # script -> (stdout, stderr, exit code)

SHELL = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell"
ACTIONS = {
    "http://schemas.xmlsoap.org/ws/2004/09/transfer/Create": "create",
    text("command.action"): "command",
    text("receive.action"): "receive",
    f"{SHELL}/Signal": "signal",
    "http://schemas.xmlsoap.org/ws/2004/09/transfer/Delete": "delete",
}
NAMESPACES = {"s": "http://www.w3.org/2003/05/soap-envelope", "a": "http://schemas.xmlsoap.org/ws/2004/08/addressing",
              "w": "http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd", "rsp": SHELL}
# `namespace-prefixes`: the prefixes other WS-Management stacks write (pywinrm's own requests use env, a, w), and the
# shell's namespace as the default one
OTHER_PREFIXES = {"s": "env", "a": "wsa", "w": "wsman", "x": "wxf", "f": "wsmanfault", "rsp": ""}
TRANSFER = "http://schemas.xmlsoap.org/ws/2004/09/transfer"
WSMANFAULT = "http://schemas.microsoft.com/wbem/wsman/1/wsmanfault"
SOAP = f"{text('encryption.original_content')};charset=UTF-8"
CHALLENGE_STATUS = int(FACTS.value("auth.challenge_status"))  # 401
CHALLENGE_HEADER = text("auth.challenge_header")  # WWW-Authenticate
AUTHORIZATION = text("auth.request_header")
CONTEXT_COMPLETE = int(text("auth.complete_status").split()[0])  # 200: the connection is authenticated
UNENCRYPTED_STATUS = int(FACTS.value("encryption.unencrypted_status"))  # 401, AllowUnencrypted=false
ALLOW_UNENCRYPTED = text("encryption.allow_unencrypted") == "true"
RUNNING, DONE = text("receive.state.Running"), text("receive.state.Done")
STREAM_END = text("receive.stream_end")
TIMEOUT_STATUS = int(FACTS.value("timeout.status"))
EXIT_CODE, COMMAND_ID = text("receive.exit_code"), text("receive.command_id")


@dataclass
class WsmanLog:
    """What the endpoint saw (for tests to assert on)."""

    scripts: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    open_shells: set[str] = field(default_factory=set)
    logins: list[str] = field(default_factory=list)  # who each authenticated connection logged in as
    refusals: list[str] = field(default_factory=list)  # why a login or a body was refused
    bodies: list[str] = field(default_factory=list)  # "sealed" or "plain", for each envelope read
    wire: list[bytes] = field(default_factory=list)  # each envelope-carrying body as it arrived
    states: list[str] = field(default_factory=list)  # "Running" or "Done", for each Receive answered
    errors: list[str] = field(default_factory=list)  # connections that failed below HTTP (a TLS handshake)


def _tag(xml: str, name: str) -> str | None:
    match = re.search(rf"<(?:\w+:)?{name}\b[^>]*>(.*?)</(?:\w+:)?{name}>", xml, re.S)
    return match.group(1) if match else None


def decode_command(command: str) -> str:
    match = re.fullmatch(r"powershell -encodedcommand ([A-Za-z0-9+/=]+)", command.strip())
    if match is None:
        raise ValueError(f"not a powershell -encodedcommand line: {command[:60]!r}")
    return base64.b64decode(match.group(1)).decode("utf-16-le")


def output_pieces(data: bytes, count: int) -> list[bytes]:
    """`data` in `count` consecutive pieces (cut anywhere, inside a UTF-8 character too, as a pipe's reads are)."""
    size = -(-len(data) // count) if data else 0
    return [data[i * size:(i + 1) * size] for i in range(count)]


@dataclass
class _Output:
    pieces: list[tuple[bytes, bytes]]  # (stdout, stderr) for each Receive still to answer
    code: int
    timed_out: bool = False  # the operation-timeout fault was answered once (`retry-after`)


class Shells:
    """The commands' outputs, streamed over `receives` Receive responses each."""

    def __init__(self, answer: Answer, log: WsmanLog, receives: int) -> None:
        self.answer, self.log, self.receives = answer, log, receives
        self.outputs: dict[str, _Output] = {}

    def act(self, action: str, request: str, active: set[str]) -> tuple[int, str]:
        """The status and SOAP body answering `action`."""
        if action == "create":
            shell = str(uuid.uuid4()).upper()
            self.log.open_shells.add(shell)
            return 200, (f'<x:ResourceCreated xmlns:x="{TRANSFER}">'
                         f'<a:ReferenceParameters><w:SelectorSet><w:Selector Name="ShellId">{shell}</w:Selector>'
                         f"</w:SelectorSet></a:ReferenceParameters></x:ResourceCreated>")
        if action == "command":
            command_id = str(uuid.uuid4()).upper()
            script = decode_command(_tag(request, "Command") or "")
            self.log.scripts.append(script)
            stdout, stderr, code = self.answer(script)
            pieces = zip(output_pieces(stdout.encode(), self.receives), output_pieces(stderr.encode(), self.receives),
                         strict=True)
            self.outputs[command_id] = _Output(list(pieces), code)
            return 200, f"<rsp:CommandResponse><rsp:CommandId>{command_id}</rsp:CommandId></rsp:CommandResponse>"
        if action == "receive":
            return self._receive(request, active)
        if action == "delete":
            deleted = re.search(r'Name="ShellId">([^<]+)<', request)
            self.log.open_shells.discard(deleted.group(1) if deleted else "")
        return 200, "<rsp:SignalResponse/>" if action == "signal" else ""

    def _receive(self, request: str, active: set[str]) -> tuple[int, str]:
        """The next piece of the command's output; Running until the last, which is Done with the exit code. Under
        `retry-after` a command's first Receive ends in the operation-timeout fault, as when no output came in time."""
        match = re.search(rf'{COMMAND_ID}="([^"]+)"', request)
        command_id = match.group(1) if match else ""
        output = self.outputs.get(command_id) or _Output([(b"", b"")], 1)
        if variations.RETRY_AFTER in active and not output.timed_out:
            output.timed_out = True
            self.log.states.append("TimedOut")
            return TIMEOUT_STATUS, timeout_fault()
        stdout, stderr = output.pieces.pop(0)
        named = [("stdout", stdout), ("stderr", stderr)]
        if variations.MEMBER_ORDER in active:  # receive.stream_order: the order is the implementation's
            named.reverse()
        streams = "".join(f'<rsp:Stream Name="{name}" {COMMAND_ID}="{command_id}">{base64.b64encode(data).decode()}'
                          f"</rsp:Stream>" for name, data in named if data)
        if output.pieces:
            self.log.states.append("Running")
            state = f'<rsp:CommandState {COMMAND_ID}="{command_id}" State="{RUNNING}"/>'
        else:
            self.log.states.append("Done")
            self.outputs.pop(command_id, None)
            if variations.EXTRA_FIELDS in active:  # each stream's end, marked as a Windows listener marks it
                streams += "".join(f'<rsp:Stream Name="{name}" {COMMAND_ID}="{command_id}" End="{STREAM_END}"/>'
                                   for name, _ in named)
            state = (f'<rsp:CommandState {COMMAND_ID}="{command_id}" State="{DONE}">'
                     f"<rsp:{EXIT_CODE}>{output.code}</rsp:{EXIT_CODE}></rsp:CommandState>")
        return 200, f"<rsp:ReceiveResponse>{streams}{state}</rsp:ReceiveResponse>"


def timeout_fault() -> str:
    """The fault a Windows listener answers a Receive with when no output came within the operation timeout."""
    reason = text("timeout.reason")
    return ("<s:Fault><s:Code><s:Value>s:Receiver</s:Value>"
            f"<s:Subcode><s:Value>{text('timeout.subcode')}</s:Value></s:Subcode></s:Code>"
            f'<s:Reason><s:Text xml:lang="{text("reply.lang")}">{reason}</s:Text></s:Reason>'
            f'<s:Detail><f:WSManFault xmlns:f="{WSMANFAULT}" Code="{text("timeout.code")}" Machine="node1">'
            f"<f:Message>{reason}</f:Message></f:WSManFault></s:Detail></s:Fault>")


def envelope(action_uri: str, relates: str, body: str, status: int, active: set[str]) -> str:
    """The reply's envelope as the active variations write it: under `extra-fields` with the other headers and the
    language a Windows listener adds; under `namespace-prefixes` and `xml-whitespace`, written otherwise."""
    declared = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in NAMESPACES.items())
    headers = f"<a:RelatesTo>{relates}</a:RelatesTo>"
    lang = ""
    if variations.EXTRA_FIELDS in active:
        reply_action = text("fault.action") if status != 200 else f"{action_uri}Response"
        headers = (f"<a:Action>{reply_action}</a:Action><a:MessageID>uuid:{str(uuid.uuid4()).upper()}</a:MessageID>"
                   f"<a:To>{text('reply.to')}</a:To>{headers}")
        lang = f' xml:lang="{text("reply.lang")}"'
    written = f"<s:Envelope{lang} {declared}><s:Header>{headers}</s:Header><s:Body>{body}</s:Body></s:Envelope>"
    return variations.xml_text(written, active, OTHER_PREFIXES)


class _Server(ThreadingHTTPServer):
    """127.0.0.1 at a free port; TLS (when given) is set up in each connection's own thread."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None, log: WsmanLog) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.tls, self.log = tls, log
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def finish_request(self, request: Any, client_address: Any) -> None:
        connection = self.tls.wrap_socket(request, server_side=True) if self.tls else request
        with self.connections_lock:
            self.connections.add(connection)
        try:
            super().finish_request(connection, client_address)
        finally:
            with self.connections_lock:
                self.connections.discard(connection)
            if connection is not request:
                connection.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        self.log.errors.append(repr(sys.exc_info()[1]))

    def close_connections(self) -> None:
        """End the keep-alive connections clients left open (their threads wait on them)."""
        with self.connections_lock:
            for connection in self.connections:
                with suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)


def served() -> set[str]:
    """The variations asked for that this stand-in serves (`tests.support.variations`)."""
    return variations.served(variations.SOAP_OVER_HTTP)


def _handler(username: str, password: str, site: WsmanSite | None, over_tls: bool, shells: Shells, log: WsmanLog,
             lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    expected_basic = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
    bindings = site.channel_bindings() if site and over_tls else None

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True
        protocol_version = "HTTP/1.1"
        login: NtlmLogin

        def setup(self) -> None:
            super().setup()
            self.login = NtlmLogin(bindings)

        def log_message(self, format: str, *args: object) -> None:
            return

        def _send(self, status: int, body: bytes = b"", *, kind: str = SOAP, challenge: str | None = None) -> None:
            headers = {CHALLENGE_HEADER: challenge} if challenge is not None else {}
            variations.send(self, body, status, {**headers, "Content-Type": kind}, served())

        def _refuse(self, status: int, reason: str, challenge: str | None = None) -> None:
            with lock:
                log.refusals.append(reason)
            self._send(status, challenge=challenge)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/wsman":
                self._send(404)
                return
            if site is None:
                if self.headers.get(AUTHORIZATION) != expected_basic:
                    self._refuse(401, "credentials")
                    return
                self._serve(body.decode(), sealed=False)
                return
            verdict = self.login.step(self.headers.get(AUTHORIZATION))
            if verdict.challenge is not None:
                if verdict.refusal:
                    self._refuse(CHALLENGE_STATUS, verdict.refusal, verdict.challenge)
                else:
                    self._send(CHALLENGE_STATUS, challenge=verdict.challenge)
                return
            if verdict.user:
                with lock:
                    log.logins.append(verdict.user)
            if not body:  # pywinrm's blank message that sets the context up before the first sealed one
                self._send(CONTEXT_COMPLETE)
                return
            with lock:
                log.wire.append(body)
            sealed = is_sealed(self.headers.get("Content-Type", ""))
            if not sealed and not over_tls and not ALLOW_UNENCRYPTED:
                self.login.reset()
                self._refuse(UNENCRYPTED_STATUS, "unencrypted body over http", SCHEME)
                return
            try:
                request = unseal(body, self.headers["Content-Type"], self.login.established) if sealed else body.decode()
            except (ValueError, SpnegoError) as exc:
                self._refuse(400, f"unreadable sealed body: {exc}")
                return
            self._serve(request, sealed=sealed)

        def _serve(self, request: str, *, sealed: bool) -> None:
            action_uri = (_tag(request, "Action") or "").strip()
            action = ACTIONS.get(action_uri)
            message_id = (_tag(request, "MessageID") or "").strip()
            if action is None:
                self._send(400)
                return
            active = served()
            with lock:
                log.bodies.append("sealed" if sealed else "plain")
                log.actions.append(action)
                status, body = shells.act(action, request, active)
                reply = envelope(action_uri, message_id, body, status, active)
            if sealed:
                self._send(status, seal(reply, self.login.established), kind=content_type())
            else:
                self._send(status, reply.encode())

    return Handler


@dataclass(frozen=True)
class RunningWsman:
    address: str
    port: int
    log: WsmanLog
    scheme: Literal["https", "http"]
    username: str  # the account it accepts
    site: WsmanSite | None  # None: Basic over http

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.address}:{self.port}/wsman"


@contextmanager
def running_wsman(answer: Answer, username: str, password: str, *, site: WsmanSite | None = None,
                  scheme: Literal["https", "http"] | None = None, receives: int = 1) -> Iterator[RunningWsman]:
    """The endpoint on 127.0.0.1 at a free port, for the duration of the block.

    With `site`: NTLM for `username` (`DOMAIN\\user`), over https with the site's certificate and
    channel binding (default) or over http with sealed messages; NTLM_USER_FILE must name the
    site's account file (monkeypatch it). Without: Basic over http. `receives`: how many Receive
    responses carry each command's output.
    """
    if receives < 1:
        raise ValueError("a command's output takes at least one Receive")
    if site is None:
        if scheme == "https":
            raise ValueError("https is served with NTLM: give a WsmanSite")
        scheme = "http"
    else:
        scheme = scheme or "https"
        if os.environ.get(ACCOUNTS_ENV) != str(site.accounts):
            raise RuntimeError(f"pyspnego's NTLM acceptor reads {ACCOUNTS_ENV}: set it to {site.accounts} for the "
                               "test (monkeypatch.setenv) before starting the stand-in")
        site.add_account(username, password)
    log = WsmanLog()
    over_tls = scheme == "https"
    handler = _handler(username, password, site, over_tls, Shells(answer, log, receives), log, threading.Lock())
    server = _Server(handler, site.tls_context() if site and over_tls else None, log)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="wsman", daemon=True)
    thread.start()
    running = RunningWsman("127.0.0.1", int(server.server_address[1]), log, scheme, username, site)
    try:
        yield running
    finally:
        server.shutdown()
        server.close_connections()
        server.server_close()
        thread.join(5)


# the CLIXML schema version powershell.exe writes (four dotted numbers, built so no scan takes it for an address)
CLIXML_VERSION = ".".join("1101")


def clixml_error(*lines: str) -> str:
    """stderr as powershell.exe writes an error record in its CLIXML form (CRLF escaped as _x000D__x000A_)."""
    records = "".join(f'<S S="Error">{line}_x000D__x000A_</S>' for line in lines)
    return f'#< CLIXML\r\n<Objs Version="{CLIXML_VERSION}" xmlns="http://schemas.microsoft.com/powershell/2004/04">{records}</Objs>'


def clixml_progress() -> str:
    """stderr of a successful script that showed a progress bar (the module loading): no error record."""
    return (f'#< CLIXML\r\n<Objs Version="{CLIXML_VERSION}" xmlns="http://schemas.microsoft.com/powershell/2004/04">'
            '<Obj S="progress" RefId="0"><TN RefId="0"><T>System.Management.Automation.PSCustomObject</T>'
            '<T>System.Object</T></TN><MS><I64 N="SourceId">1</I64><PR N="Record"><AV>Preparing modules for '
            "first use.</AV><AI>0</AI><Nil /><PI>-1</PI><PC>-1</PC><T>Completed</T><SR>-1</SR><SD> </SD></PR>"
            "</MS></Obj></Objs>")
