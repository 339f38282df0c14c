"""What the tests' small HTTP stand-ins share: a JSON reply, sized, no request log on the test's output, and
servers on 127.0.0.1 for as long as a block runs. Every reply goes out as the variations asked for shape it
(`tests.support.variations`: header case, chunked, whitespace, member order, unknown members, a 503 first)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support import variations

RETRY_AFTER_S = 1


class JsonHandler(BaseHTTPRequestHandler):
    # the variations this stand-in's protocol does not allow, each with the document that excludes it
    excluded: Mapping[str, str] = {}

    @property
    def served_variations(self) -> set[str]:
        return variations.served(variations.JSON_OVER_HTTP, self.excluded)

    def reply(self, body: object, status: int = 200, headers: Mapping[str, str] | None = None) -> None:
        self.send_raw(variations.json_body(body, self.served_variations), status,
                      {"Content-Type": "application/json", **(headers or {})})

    def send_raw(self, raw: bytes, status: int, headers: Mapping[str, str]) -> None:
        variations.send(self, raw, status, headers, self.served_variations)

    def parse_request(self) -> bool:
        """The request read; under `retry-after` the first one to each method and path is answered 503 and not
        carried out (returning False ends it here, as for a malformed request)."""
        if not super().parse_request():
            return False
        server = self.server
        if variations.RETRY_AFTER not in self.served_variations or not isinstance(server, StandInServer) \
                or not server.first_time(self.command, self.path):
            return True
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.send_raw(variations.json_text({"message": "busy"}, self.served_variations).encode(), 503,
                      {"Content-Type": "application/json", "Retry-After": str(RETRY_AFTER_S)})
        return False

    def log_message(self, *args: object) -> None:
        pass


class StandInServer(ThreadingHTTPServer):
    """A stand-in's server, remembering which requests it has been asked (for `retry-after`)."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._lock = threading.Lock()
        self._asked: set[tuple[str, str]] = set()

    def first_time(self, method: str, path: str) -> bool:
        with self._lock:
            first = (method, path) not in self._asked
            self._asked.add((method, path))
            return first


@contextmanager
def loopback_origins(*handlers: type[BaseHTTPRequestHandler]) -> Iterator[list[str]]:
    """A server per handler on 127.0.0.1 (ephemeral ports), their origins (`http://127.0.0.1:PORT`) in order."""
    servers = [StandInServer(("127.0.0.1", 0), handler) for handler in handlers]
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
