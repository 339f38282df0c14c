"""Variations a protocol allows that a stand-in serves when asked, so that no backend passes only against the one
shape its stand-in happens to send.

`HARNESS_STANDIN_VARIATIONS` names them, comma-separated (a test sets it, or a person forcing one by hand; `all`
names every one); it is read when a stand-in answers, not when it is built. The contract tests run liberal: each
test gets the variations its seed picks (`HARNESS_STANDIN_SEED`, 0 unless set, mixed with the test's node id, so a
run is repeatable and a failure names its seed and variations; tests/integration/contract/conftest.py).

HTTP with a JSON body (every stand-in answering through `json_http.JsonHandler`):
- `lowercase-headers`: field names in lower case. RFC 9110 §5.1: "Field names are case-insensitive"; Envoy, Prism
  Central's front end ("Server: envoy" in a public pc.2024.3.0.1 recording), lower-cases them on HTTP/1.1.
- `chunked`: the body in chunks, without Content-Length. RFC 9112 §6.1: "The chunked transfer coding wraps content
  in order to transfer it as a series of chunks, each with its own size indicator".
- `json-whitespace`: the JSON indented. RFC 8259 §2: "Insignificant whitespace is allowed before or after any of the
  six structural characters."
- `member-order`: every object's members reversed. RFC 8259 §4: "An object is an unordered collection of zero or
  more name/value pairs".
- `extra-fields`: an unknown member added to every object of the reply. RFC 8259 §4 does not bound an object's
  members, and the vendors add members between releases (Nutanix's v4 objects carry `$reserved` and `$objectType`
  beside their documented fields).
- `retry-after`: the first request to each method and path answered 503 with `Retry-After: 1`, the request not
  carried out. RFC 9110 §15.6.4: 503 "indicates that the server is currently unable to handle the request due to a
  temporary overload"; §10.2.3: "Servers send the Retry-After header field to indicate how long the user agent
  ought to wait before making a follow-up request".
"""

from __future__ import annotations

import json
import os
import random
import zlib
from collections.abc import Collection, Sequence
from typing import Any

ENV = "HARNESS_STANDIN_VARIATIONS"
SEED_ENV = "HARNESS_STANDIN_SEED"
LOWERCASE_HEADERS = "lowercase-headers"
CHUNKED = "chunked"
JSON_WHITESPACE = "json-whitespace"
MEMBER_ORDER = "member-order"
EXTRA_FIELDS = "extra-fields"
RETRY_AFTER = "retry-after"
KNOWN = (LOWERCASE_HEADERS, CHUNKED, JSON_WHITESPACE, MEMBER_ORDER, EXTRA_FIELDS, RETRY_AFTER)
EXTRA_MEMBER = ("$standInExtra", {"note": "a member this client was not written for"})


def asked() -> set[str]:
    """The variations named in the environment (`all`: every one); an unknown name is an error, not ignored."""
    names = {part.strip() for part in os.environ.get(ENV, "").split(",") if part.strip()}
    if "all" in names:
        return set(KNOWN)
    unknown = names - set(KNOWN)
    if unknown:
        raise ValueError(f"{ENV}: no variation named {', '.join(sorted(unknown))} (known: {', '.join(KNOWN)}, all)")
    return names


def without(*names: str) -> str:
    """The variations asked for now, less `names`, as the environment variable's value (a test that counts its own
    requests leaves `retry-after` out)."""
    return ",".join(sorted(asked() - set(names)))


def seeded(seed: int, test_id: str, names: Sequence[str] = KNOWN) -> list[str]:
    """The variations a test runs with: each on with even odds, drawn from `seed` mixed with the test's id."""
    draw = random.Random(seed ^ zlib.crc32(test_id.encode()))
    return [name for name in names if draw.random() < 0.5]


def header_name(name: str, active: Collection[str]) -> str:
    """A response header's name as the active variations send it."""
    return name.lower() if LOWERCASE_HEADERS in active else name


def json_body(body: object, active: Collection[str]) -> bytes:
    """A reply's JSON as the active variations serve it: members reordered, an unknown one added, indented."""
    shaped = _shape(body, reorder=MEMBER_ORDER in active, extra=EXTRA_FIELDS in active)
    return json_text(shaped, active).encode()


def json_text(body: object, active: Collection[str]) -> str:
    return json.dumps(body, indent=2 if JSON_WHITESPACE in active else None)


def _shape(value: Any, *, reorder: bool, extra: bool) -> Any:
    if isinstance(value, list):
        return [_shape(item, reorder=reorder, extra=extra) for item in value]
    if not isinstance(value, dict):
        return value
    items = [(key, _shape(item, reorder=reorder, extra=extra)) for key, item in value.items()]
    if extra:
        items.append(EXTRA_MEMBER)
    return dict(reversed(items) if reorder else items)
