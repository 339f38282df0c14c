"""Lab traffic stays on the machine: the Toxiproxy API client ignores http_proxy and always has a timeout."""

from __future__ import annotations

import http.server
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from harness_kernel.errors import ControlPlaneError
from harness_lab import latency


class _StubApi(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:
        _StubApi.seen.append(self.path)
        body = json.dumps({"version": "stub"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stub_api() -> Iterator[int]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _StubApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_toxiproxy_calls_ignore_http_proxy(monkeypatch, stub_api):
    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # a closed port: a proxied call cannot succeed
    monkeypatch.setattr(latency, "API_PORT", stub_api)
    layout: Any = SimpleNamespace(client=SimpleNamespace(router_address="127.0.0.1"))
    client = latency.InterSiteLatency(layout, services=None, mechanism=latency.TOXIPROXY)  # type: ignore[arg-type]
    _StubApi.seen.clear()
    assert client._call("GET", "/version") == {"version": "stub"}
    assert _StubApi.seen == ["/version"]


def test_toxiproxy_calls_give_up_on_a_silent_api(monkeypatch):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts the connection in the kernel, never answers
    monkeypatch.setattr(latency, "API_TIMEOUT_S", 0.3)
    api = f"http://127.0.0.1:{silent.getsockname()[1]}"
    try:
        started = time.monotonic()
        assert latency.api_call(api, "GET", "/version") is None
        with pytest.raises(ControlPlaneError, match=re.escape(f"toxiproxy POST {api}/proxies")):
            latency.api_call(api, "POST", "/proxies", {"name": "x"})
        assert time.monotonic() - started < 3
    finally:
        silent.close()
