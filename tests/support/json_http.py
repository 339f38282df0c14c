"""What the tests' small HTTP stand-ins share: a JSON reply, sized, no request log on the test's output, and
servers on 127.0.0.1 for as long as a block runs."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonHandler(BaseHTTPRequestHandler):
    def reply(self, body: object, status: int = 200) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def loopback_origins(*handlers: type[BaseHTTPRequestHandler]) -> Iterator[list[str]]:
    """A server per handler on 127.0.0.1 (ephemeral ports), their origins (`http://127.0.0.1:PORT`) in order."""
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), handler) for handler in handlers]
    threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    try:
        yield [f"http://127.0.0.1:{s.server_address[1]}" for s in servers]
    finally:
        for server, thread in zip(servers, threads, strict=True):
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
