"""A WS-Management listener on 127.0.0.1 that answers a capture's PowerShell outputs: pywinrm runs unchanged.

The five actions of Microsoft's WS-Management Shell protocol [MS-WSMV] that pywinrm sends: Create
(a ShellId selector), Command (a CommandId; the command line is `powershell -encodedcommand`,
UTF-16LE base64, the script being what the capture is keyed on), Receive (the captured output in
one response, CommandState Done with its ExitCode), Signal and Delete. Basic login over http on
loopback, which the WinRM transport takes only there; any account is accepted (no password was
captured). Reference: https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-wsmv/
"""

from __future__ import annotations

import base64
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from harness.capture import loopback

SHELL = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell"
ENVELOPE = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" '
            'xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" '
            'xmlns:w="http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd" '
            f'xmlns:rsp="{SHELL}"><s:Header><a:RelatesTo>{{relates}}</a:RelatesTo></s:Header>'
            '<s:Body>{body}</s:Body></s:Envelope>')
Answer = Callable[[str], tuple[str, str, int]]  # script -> stdout, stderr, exit code


def _tag(xml: str, name: str) -> str | None:
    match = re.search(rf"<(?:\w+:)?{name}\b[^>]*>(.*?)</(?:\w+:)?{name}>", xml, re.S)
    return match.group(1) if match else None


def _script(command: str) -> str:
    match = re.fullmatch(r"powershell -encodedcommand ([A-Za-z0-9+/=]+)", command.strip())
    return base64.b64decode(match.group(1)).decode("utf-16-le") if match else command


class _Shells:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.outputs: dict[str, tuple[str, str, int]] = {}
        self.lock = threading.Lock()

    def act(self, action: str, request: str) -> str:
        if action.endswith("/transfer/Create"):
            return ('<x:ResourceCreated xmlns:x="http://schemas.xmlsoap.org/ws/2004/09/transfer"><a:ReferenceParameters>'
                    f'<w:SelectorSet><w:Selector Name="ShellId">{str(uuid.uuid4()).upper()}</w:Selector>'
                    "</w:SelectorSet></a:ReferenceParameters></x:ResourceCreated>")
        if action == f"{SHELL}/Command":
            command_id = str(uuid.uuid4()).upper()
            with self.lock:
                self.outputs[command_id] = self.answer(_script(_tag(request, "Command") or ""))
            return f"<rsp:CommandResponse><rsp:CommandId>{command_id}</rsp:CommandId></rsp:CommandResponse>"
        if action == f"{SHELL}/Receive":
            match = re.search(r'CommandId="([^"]+)"', request)
            command_id = match.group(1) if match else ""
            with self.lock:
                stdout, stderr, code = self.outputs.pop(command_id, ("", "", 1))
            streams = "".join(f'<rsp:Stream Name="{name}" CommandId="{command_id}">'
                              f"{base64.b64encode(data.encode()).decode()}</rsp:Stream>"
                              for name, data in (("stdout", stdout), ("stderr", stderr)) if data)
            return (f"<rsp:ReceiveResponse>{streams}<rsp:CommandState CommandId=\"{command_id}\" "
                    f'State="{SHELL}/CommandState/Done"><rsp:ExitCode>{code}</rsp:ExitCode></rsp:CommandState>'
                    "</rsp:ReceiveResponse>")
        return "<rsp:SignalResponse/>" if action == f"{SHELL}/Signal" else ""


@contextmanager
def serving(answer: Answer) -> Iterator[int]:
    """A listener at a free port of 127.0.0.1 answering each script with `answer`; yields the port."""
    shells = _Shells(answer)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            request = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
            if not (self.headers.get("Authorization") or "").startswith("Basic "):
                self.send_response(401)
                self.send_header("WWW-Authenticate", "Basic realm=\"WSMAN\"")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = ENVELOPE.format(relates=_tag(request, "MessageID") or "",
                                   body=shells.act(_tag(request, "Action") or "", request)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/soap+xml;charset=UTF-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with loopback.serving(Handler) as port:
        yield port
