"""A WS-Management endpoint on 127.0.0.1 for contract tests: the five actions pywinrm sends.

No WS-Management server runs here (there is no Windows), so this answers the SOAP envelopes
of Microsoft's WS-Management Shell protocol [MS-WSMV] as pywinrm parses them: Create (a
ShellId selector), Command (a CommandId), Receive (base64 stdout/stderr streams and
CommandState Done with an ExitCode), Signal and Delete (RelatesTo the request's MessageID).
The command must be `powershell -encodedcommand <UTF-16LE base64>`; the decoded script goes
to `answer`, which plays the Windows node. Basic authentication only (the one transport that
needs no Windows security package); anything else is answered 401.

Reference: [MS-WSMV] Web Services Management Protocol Extensions for Windows Vista,
https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-wsmv/
"""

from __future__ import annotations

import base64
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[str], tuple[str, str, int]]  # script -> (stdout, stderr, exit code)

SHELL = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell"
ACTIONS = {
    "http://schemas.xmlsoap.org/ws/2004/09/transfer/Create": "create",
    f"{SHELL}/Command": "command",
    f"{SHELL}/Receive": "receive",
    f"{SHELL}/Signal": "signal",
    "http://schemas.xmlsoap.org/ws/2004/09/transfer/Delete": "delete",
}
ENVELOPE = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" '
            'xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" '
            'xmlns:w="http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd" '
            f'xmlns:rsp="{SHELL}"><s:Header><a:RelatesTo>{{relates}}</a:RelatesTo></s:Header>'
            '<s:Body>{body}</s:Body></s:Envelope>')


@dataclass
class WsmanLog:
    """What the endpoint saw: the scripts run and the actions in order (for tests to assert on)."""

    scripts: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    open_shells: set[str] = field(default_factory=set)


def _tag(xml: str, name: str) -> str | None:
    match = re.search(rf"<(?:\w+:)?{name}\b[^>]*>(.*?)</(?:\w+:)?{name}>", xml, re.S)
    return match.group(1) if match else None


def decode_command(command: str) -> str:
    match = re.fullmatch(r"powershell -encodedcommand ([A-Za-z0-9+/=]+)", command.strip())
    if match is None:
        raise ValueError(f"not a powershell -encodedcommand line: {command[:60]!r}")
    return base64.b64decode(match.group(1)).decode("utf-16-le")


def _handler(username: str, password: str, answer: Answer, log: WsmanLog,
             lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
    outputs: dict[str, tuple[str, str, int]] = {}

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _send(self, status: int, body: str = "") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/soap+xml;charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            request = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            if self.path != "/wsman":
                self._send(404)
                return
            if self.headers.get("Authorization") != expected:
                self._send(401)
                return
            action = ACTIONS.get((_tag(request, "Action") or "").strip())
            message_id = (_tag(request, "MessageID") or "").strip()
            if action is None:
                self._send(400)
                return
            with lock:
                log.actions.append(action)
                body = self._act(action, request)
            self._send(200, ENVELOPE.format(relates=message_id, body=body))

        def _act(self, action: str, request: str) -> str:
            if action == "create":
                shell = str(uuid.uuid4()).upper()
                log.open_shells.add(shell)
                return (f'<x:ResourceCreated xmlns:x="http://schemas.xmlsoap.org/ws/2004/09/transfer">'
                        f'<a:ReferenceParameters><w:SelectorSet><w:Selector Name="ShellId">{shell}</w:Selector>'
                        f"</w:SelectorSet></a:ReferenceParameters></x:ResourceCreated>")
            if action == "command":
                command_id = str(uuid.uuid4()).upper()
                script = decode_command(_tag(request, "Command") or "")
                log.scripts.append(script)
                outputs[command_id] = answer(script)
                return f"<rsp:CommandResponse><rsp:CommandId>{command_id}</rsp:CommandId></rsp:CommandResponse>"
            if action == "receive":
                match = re.search(r'CommandId="([^"]+)"', request)
                stdout, stderr, code = outputs.pop(match.group(1) if match else "", ("", "", 1))
                streams = "".join(f'<rsp:Stream Name="{name}" CommandId="x">{base64.b64encode(text.encode()).decode()}'
                                  f"</rsp:Stream>" for name, text in (("stdout", stdout), ("stderr", stderr)) if text)
                return (f"<rsp:ReceiveResponse>{streams}<rsp:CommandState CommandId=\"x\" "
                        f'State="{SHELL}/CommandState/Done"><rsp:ExitCode>{code}</rsp:ExitCode></rsp:CommandState>'
                        "</rsp:ReceiveResponse>")
            if action == "delete":
                shell = re.search(r'Name="ShellId">([^<]+)<', request)
                log.open_shells.discard(shell.group(1) if shell else "")
            return "<rsp:SignalResponse/>" if action == "signal" else ""

    return Handler


@dataclass(frozen=True)
class RunningWsman:
    address: str
    port: int
    log: WsmanLog


@contextmanager
def running_wsman(answer: Answer, username: str, password: str) -> Iterator[RunningWsman]:
    """The endpoint on 127.0.0.1 at a free port, for the duration of the block."""
    log = WsmanLog()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(username, password, answer, log, threading.Lock()))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="wsman", daemon=True)
    thread.start()
    try:
        yield RunningWsman("127.0.0.1", int(server.server_address[1]), log)
    finally:
        server.shutdown()
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
