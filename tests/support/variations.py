"""Variations a protocol allows that a stand-in serves when asked, so that no backend passes only against the one
shape its stand-in happens to send.

`HARNESS_STANDIN_VARIATIONS` names them, comma-separated (a test sets it, or a person forcing one by hand); it is
read when a stand-in answers, not when it is built.
- `lowercase-headers`: HTTP field names in lower case. RFC 9110 §5.1: "Field names are case-insensitive"; Envoy,
  Prism Central's front end ("Server: envoy" in a public pc.2024.3.0.1 recording), lower-cases them on HTTP/1.1.
"""

from __future__ import annotations

import os

ENV = "HARNESS_STANDIN_VARIATIONS"
LOWERCASE_HEADERS = "lowercase-headers"
KNOWN = (LOWERCASE_HEADERS,)


def wanted(name: str) -> bool:
    return name in {part.strip() for part in os.environ.get(ENV, "").split(",")}


def header_name(name: str) -> str:
    """A response header's name as this variation sends it."""
    return name.lower() if wanted(LOWERCASE_HEADERS) else name
