"""A capture served again from loopback: HTTPS for vCenter and the BMCs, SSH for the shells.

pyVmomi, requests and paramiko talk to these servers exactly as to the cluster; each request is
matched on what `store.request_key` keeps (a SOAP body with its session's view ids masked, a
path, a command line) and answered with the captured answers in the order they came (the last
one again after that). What is not the capture's:

- `Login` and `Logout` are answered by the server: no password was captured, any is accepted;
- clock readings in SOAP answers (`xsd:dateTime`) are moved by the time since they were captured,
  so an offset or an age reads as it did;
- a request the capture does not hold is answered with a fault naming it (`misses`).

`serving(capture)` starts the servers and yields the topology that points at them.
"""

from __future__ import annotations

import copy
import datetime as dt
import http.server
import ipaddress
import re
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paramiko

from faults.transports.odbc import decoded, encoded
from harness.capture import loopback, wsman
from harness.capture.store import Capture, request_key, soap_method

_STAMP = re.compile(r"(>)(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)(<)")
SECRET = "replayed"  # what the replayed topology's secret references resolve to: the servers accept anything


@dataclass
class Answers:
    """Each request's answers for one served endpoint group, handed out in order."""
    entries: dict[str, dict[str, Any]]
    served: dict[str, int] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, key: str, what: str) -> tuple[dict[str, Any], float] | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                self.misses.append(what)
                return None
            n = self.served.get(key, 0)
            self.served[key] = n + 1
            for answer in entry["answers"]:
                if n < answer["times"]:
                    return answer["response"], float(answer["at"])
                n -= answer["times"]
            last = entry["answers"][-1]
            return last["response"], float(last["at"])


@dataclass
class Replay:
    topology: dict[str, Any]
    env: dict[str, str]  # the secret references of `topology`, resolved
    answers: list[Answers]
    connector: Any = None  # stands in for pyodbc.connect: the instances' captured answers (`odbc.connecting_with`)

    @property
    def misses(self) -> list[str]:
        return [m for a in self.answers for m in a.misses]


@contextmanager
def serving(capture: Capture) -> Iterator[Replay]:
    """Servers for every endpoint the capture holds answers of, and the topology that points at them."""
    with tempfile.TemporaryDirectory(prefix="harness-replay-") as scratch, ExitStack() as stack:
        work = Path(scratch)
        ca_file, server_context = _tls(work)
        key_file = work / "id"
        paramiko.RSAKey.generate(2048).write_private_key_file(str(key_file))  # any key logs in: no secret here
        document = copy.deepcopy(capture.topology)
        management = document.setdefault("management", {})
        groups: list[Answers] = []
        by_endpoint: dict[str, list[dict[str, Any]]] = {}
        for entry in capture.exchanges:
            by_endpoint.setdefault(entry["endpoint"], []).append(entry)
        if management.get("vcenter") and "management.vcenter" in by_endpoint:
            answers = Answers({e["key"]: e for e in by_endpoint["management.vcenter"]})
            port = stack.enter_context(_https(answers, server_context, soap=True))
            management["vcenter"].update(address="127.0.0.1", port=port, tls={"verify": True, "ca_file": str(ca_file)})
            groups.append(answers)
        for i, bmc in enumerate(management.get("redfish") or []):
            answers = Answers({e["key"]: e for e in by_endpoint.get(f"management.redfish[{i}]", [])})
            port = stack.enter_context(_https(answers, server_context, soap=False))
            bmc.update(address="127.0.0.1", port=port, tls={"verify": True, "ca_file": str(ca_file)})
            groups.append(answers)
        host_key = paramiko.RSAKey.generate(2048)
        for i, shell in enumerate(management.get("ssh") or []):
            answers = Answers({e["key"]: e for e in by_endpoint.get(f"management.ssh[{i}]", [])})
            port = stack.enter_context(_ssh(answers, host_key))
            shell.update(address="127.0.0.1", port=port, host_key=f"{host_key.get_name()} {host_key.get_base64()}")
            groups.append(answers)
        for i, node in enumerate(management.get("winrm") or []):
            answers = Answers({e["key"]: e for e in by_endpoint.get(f"management.winrm[{i}]", [])})
            port = stack.enter_context(wsman.serving(_powershell(answers)))
            node.update(address="127.0.0.1", port=port, scheme="http", transport="basic")
            node.pop("tls", None)
            groups.append(answers)
        instances = Answers({f"{e['endpoint']} {e['key']}": e for e in capture.exchanges if e["transport"] == "odbc"})
        groups.append(instances)
        yield Replay(document, {"HARNESS_REPLAY_SECRET": SECRET, "HARNESS_REPLAY_SSH_KEY": str(key_file)}, groups,
                     _Instances(instances))


# -- HTTPS ----------------------------------------------------------------------------------------------
def _https(answers: Answers, context: ssl.SSLContext, *, soap: bool) -> AbstractContextManager[int]:
    return loopback.serving(type("Handler", (_Handler,), {"answers": answers, "soap": soap}), context)


class _Handler(http.server.BaseHTTPRequestHandler):
    answers: Answers
    soap: bool
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: without this each answer waits ~40 ms

    def log_message(self, format: str, *args: Any) -> None:  # the replay's own traffic is no news
        return

    def do_GET(self) -> None:
        self._answer({"method": "GET", "path": self.path})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        method = soap_method(body)
        if self.soap and method == "Login":
            return self._send(200, "text/xml", _login(body))
        if self.soap and method == "Logout":
            return self._send(200, "text/xml", _envelope("<LogoutResponse xmlns=\"urn:vim25\"></LogoutResponse>"))
        self._answer({"method": "POST", "path": self.path, "body": body}, what=method)

    def _answer(self, request: dict[str, Any], what: str = "") -> None:
        transport = "soap" if self.soap else "https"
        key = request_key(transport, request)
        found = self.answers.next(key, f"{request['method']} {request['path']} {what}".strip())
        if found is None:
            if self.soap and request["method"] == "POST":
                return self._send(500, "text/xml", _envelope(
                    "<soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>not in the capture: "
                    f"{what}</faultstring></soapenv:Fault>"))
            return self._send(404, "application/json", '{"error": {"message": "not in the capture"}}')
        response, at = found
        body = str(response.get("body", ""))
        if self.soap:
            body = _moved(body, time.time() - at)
        ctype = "text/xml; charset=utf-8" if self.soap else "application/json"
        self._send(int(response.get("status", 200)), ctype, body)

    def _send(self, status: int, ctype: str, body: str) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if self.soap:
            self.send_header("Set-Cookie", 'vmware_soap_session="replayed"; Path=/; HttpOnly; Secure')
        self.end_headers()
        self.wfile.write(data)


def _envelope(inner: str) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/'
            'encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/'
            'XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>' + inner +
            "</soapenv:Body></soapenv:Envelope>")


def _login(request: str) -> str:
    """A UserSession for whoever logs in (the capture holds no login: it carried the password)."""
    user = re.search(r"<userName>([^<]*)</userName>", request)
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return _envelope(f'<LoginResponse xmlns="urn:vim25"><returnval><key>replayed</key><userName>'
                     f'{user.group(1) if user else ""}</userName><fullName></fullName><loginTime>{now}</loginTime>'
                     f'<lastActiveTime>{now}</lastActiveTime><locale>en</locale><messageLocale>en</messageLocale>'
                     '<extensionSession>false</extensionSession><ipAddress>127.0.0.1</ipAddress><userAgent></userAgent>'
                     '<callCount>0</callCount></returnval></LoginResponse>')


def _moved(body: str, seconds: float) -> str:
    """Every xsd:dateTime text moved by `seconds` (nanosecond fractions kept to microseconds)."""
    def move(m: re.Match[str]) -> str:
        zone = "+00:00" if m.group(4) == "Z" else m.group(4)
        stamp = dt.datetime.fromisoformat(m.group(2) + (m.group(3) or "")[:7] + zone)
        return f"{m.group(1)}{(stamp + dt.timedelta(seconds=seconds)).isoformat(timespec='microseconds')}{m.group(5)}"
    return _STAMP.sub(move, body)


def _tls(work: Path) -> tuple[Path, ssl.SSLContext]:
    """A CA made for this replay and a certificate for 127.0.0.1 it signed."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "harness replay CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_file, cert_file, key_file = work / "ca.pem", work / "cert.pem", work / "key.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return ca_file, context


# -- SSH ------------------------------------------------------------------------------------------------
class _Shell(paramiko.ServerInterface):
    def __init__(self, answers: Answers) -> None:
        self.answers = answers

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        return int(paramiko.common.AUTH_SUCCESSFUL)

    def check_auth_password(self, username: str, password: str) -> int:
        return int(paramiko.common.AUTH_SUCCESSFUL)

    def get_allowed_auths(self, username: str) -> str:
        return "publickey,password"

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session":
            return int(paramiko.common.OPEN_SUCCEEDED)
        return int(paramiko.common.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED)

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        text = command.decode("utf-8", "replace")
        threading.Thread(target=self._run, args=(channel, text), daemon=True).start()
        return True

    def _run(self, channel: paramiko.Channel, command: str) -> None:
        time.sleep(0.05)  # after the transport has said yes to the exec request: an answer before it reads as a closed channel
        found = self.answers.next(request_key("ssh", {"command": command}), f"ssh {command}")
        response = found[0] if found else {"status": 127, "stdout": "", "stderr": "not in the capture\n"}
        if response.get("stdout"):
            channel.sendall(str(response["stdout"]).encode())
        if response.get("stderr"):
            channel.sendall_stderr(str(response["stderr"]).encode())
        channel.send_exit_status(int(str(response.get("status", 0))))
        channel.close()


@contextmanager
def _ssh(answers: Answers, host_key: paramiko.PKey) -> Iterator[int]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()
    transports: list[paramiko.Transport] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            transport = paramiko.Transport(sock)
            transport.add_server_key(host_key)
            transports.append(transport)
            try:
                transport.start_server(server=_Shell(answers))
            except (paramiko.SSHException, EOFError, OSError):
                transport.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        port: int = listener.getsockname()[1]
        yield port
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
        for transport in transports:
            transport.close()


def _powershell(answers: Answers) -> wsman.Answer:
    def answer(script: str) -> tuple[str, str, int]:
        found = answers.next(request_key("winrm", {"script": script}), f"winrm {script[:80]}")
        if found is None:
            return "", "not in the capture", 1
        response = found[0]
        return str(response.get("stdout", "")), str(response.get("stderr", "")), int(str(response.get("status", 0)))
    return answer


class _Instances:
    """pyodbc.connect's shape over the captured rows: the instance from SERVER=tcp:HOST,PORT, each statement and its
    parameters looked up; an instance the capture never reached does not answer (a login timeout's SQLSTATE)."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers

    def __call__(self, string: str, autocommit: bool = False, timeout: int = 0) -> _Connection:
        server = re.search(r"SERVER=tcp:([^,;]+),(\d+)", string)
        instance = f"{server.group(1)}:{server.group(2)}" if server else ""
        if not any(key.split(" ", 2)[1] == instance for key in self.answers.entries):
            raise _DriverError("HYT00", "[HYT00] Login timeout expired (replay: the capture never reached "
                                        f"{instance})")
        return _Connection(self, instance)


class _DriverError(Exception):
    """pyodbc's error shape: (SQLSTATE, message)."""


@dataclass
class _Connection:
    instances: _Instances
    instance: str
    timeout: int = 0

    def cursor(self) -> _Cursor:
        return _Cursor(self)

    def close(self) -> None:
        return


@dataclass
class _Cursor:
    connection: _Connection
    found: list[list[Any]] = field(default_factory=list)

    def execute(self, sql: str, *params: Any) -> _Cursor:
        answers = self.connection.instances.answers
        prefix = next((k.split(" ", 2)[0] for k in answers.entries if k.split(" ", 2)[1] == self.connection.instance), "")
        key = f"{prefix} {self.connection.instance} " + request_key("odbc", {"sql": sql,
                                                                            "params": [encoded(p) for p in params]})
        answer = answers.next(key, f"odbc {' '.join(sql.split())[:80]}")
        if answer is None:
            raise _DriverError("42000", "[42000] not in the capture")
        self.found = list(answer[0].get("rows", []))
        return self

    def fetchall(self) -> list[tuple[Any, ...]]:
        return [tuple(decoded(v) for v in row) for row in self.found]
