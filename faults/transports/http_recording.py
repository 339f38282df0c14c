"""An http.client connection that hands each answer to `faults.transports.wire` while a capture watches.

pyVmomi reads its answers from http.client responses it opens itself; the only place to see the
raw SOAP a vCenter sent is the connection class its stub uses (`stub.scheme`). This subclass
reads the whole body once, records it (decompressed), and gives the caller a response that
reads the same bytes: the parser runs on exactly what the server sent. Outside a capture it is
the plain connection.
"""

from __future__ import annotations

import gzip
import http.client
import io
import re
import zlib
from typing import Any, TypeVar

from faults.transports import wire

Connection = TypeVar("Connection", bound=http.client.HTTPConnection)
# Login's password, a token, and the session key a PBM or vSAN request carries in its SOAP header
_CREDENTIAL = re.compile(rb"<((?:\w+:)?(?:password|pwd|token|vcSessionCookie))(\s[^>]*)?>.*?</\1>", re.S)


def withheld(body: bytes) -> bytes:
    """A SOAP request without the values of its credential elements (Login's password, a token, a session key)."""
    return _CREDENTIAL.sub(rb"<\1\2>(withheld)</\1>", body)


def recording(base: type[Connection], transport: str, endpoint: str) -> type[Connection]:
    """`base` (pyVmomi's connection class) that records each request and answer while `wire.capturing()`."""

    class Recording(base):  # type: ignore[valid-type,misc]
        _harness_request: dict[str, Any] = {}

        def request(self, method: str, url: str, body: Any = None, headers: Any = None, **kw: Any) -> None:
            raw = body.encode() if isinstance(body, str) else (body or b"")
            self._harness_request = {"method": method, "path": url,
                                     "body": withheld(bytes(raw)).decode("utf-8", "replace")}
            super().request(method, url, body, headers or {}, **kw)

        def getresponse(self) -> http.client.HTTPResponse:
            reply: http.client.HTTPResponse = super().getresponse()
            if not wire.capturing():
                return reply
            data = reply.read()
            reply.fp = io.BufferedReader(io.BytesIO(data))
            reply.length, reply.chunked = len(data), False
            wire.recorded(transport, endpoint, self._harness_request,
                          {"status": reply.status, "content_type": reply.getheader("Content-Type", ""),
                           "body": _decoded(data, reply.getheader("Content-Encoding", "")).decode("utf-8", "replace")})
            return reply

    Recording.__name__ = f"Recording{base.__name__}"
    return Recording


def _decoded(data: bytes, encoding: str) -> bytes:
    if encoding.lower() == "gzip":
        return gzip.decompress(data)
    if encoding.lower() == "deflate":
        return zlib.decompress(data)
    return data
