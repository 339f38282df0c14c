r"""Variations a protocol allows that a stand-in serves when asked, so that no backend passes only against the one
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

SOAP over HTTP (the WS-Management stand-in, `wsman.py`), besides `lowercase-headers` and `chunked`:
- `xml-whitespace`: the envelope indented between elements (never inside an element's text). XML 1.0 §2.10: "it is
  often convenient to use "white space" (spaces, tabs, and blank lines) to set apart the markup for greater
  readability".
- `namespace-prefixes`: every namespace under another prefix, the shell's as the default namespace. Namespaces in
  XML 1.0 §3: "the prefix functions only as a placeholder for a namespace name".
- `member-order`, `extra-fields` and `retry-after` in the protocol's own terms: a Receive's streams in another
  order, the optional headers and attributes a Windows listener adds, and the operation-timeout fault before a
  command's first output (each quoted where `wsman.py` serves it).

Nutanix Prism (`prism_model.py`), besides the JSON ones:
- `pagination`: a list longer than one page: Prism Central manages 120 other clusters, listed before the section's.
  Nutanix's v4 list calls page with `$page` and `$limit` ("If the limit is not provided, a default value of 50
  records will be returned in the result set", ntnx-clustermgmt-py-client 4.3.2 `list_clusters`).
- `null-omitted`: a member whose value is null left out. Nutanix's v4 models are Go structs whose optional members
  are `omitempty` (`ProgressPercentage *int \`json:"progressPercentage,omitempty"\``, prism-go-client
  config_model.go), and Go's encoding/json leaves such a member out when it is a nil pointer.
- `array-order`: every array of a reply in reverse order. Nothing in Nutanix's v4 SDK promises an order to a list
  asked without `$orderby` ("A URL query parameter that allows clients to specify the sort criteria for the returned
  list of objects", `_orderby` of `list_clusters`), nor to `entitiesAffected` or the v2 domains.
- `x-ntnx-etag`: a read's ETag under `X-Ntnx-Etag` instead of `ETag`. Nutanix's own v4 SDK reads it there when the
  reply has no `ETag` (ntnx-clustermgmt-py-client 4.3.2, api_client.py `__add_header_to_reserved`: `if key == 'ETag'
  and not header_val and hasattr(response_data, "getheaders") and "X-Ntnx-Etag" in response_data.getheaders():`).

DB-API (the SQL Server model, `sqlserver_model.py`):
- `member-order`: the rows of a statement without ORDER BY in reverse order. Microsoft's SELECT - ORDER BY Clause
  (MicrosoftDocs/sql-docs docs/t-sql/queries/select-order-by-clause-transact-sql.md):
  "The order in which rows are returned in a result set are not guaranteed unless an ORDER BY clause is
  specified."
"""

from __future__ import annotations

import json
import os
import random
import re
import zlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

ENV = "HARNESS_STANDIN_VARIATIONS"
SEED_ENV = "HARNESS_STANDIN_SEED"
LOWERCASE_HEADERS = "lowercase-headers"
CHUNKED = "chunked"
JSON_WHITESPACE = "json-whitespace"
MEMBER_ORDER = "member-order"
EXTRA_FIELDS = "extra-fields"
RETRY_AFTER = "retry-after"
XML_WHITESPACE = "xml-whitespace"
NAMESPACE_PREFIXES = "namespace-prefixes"
X_NTNX_ETAG = "x-ntnx-etag"
PAGINATION = "pagination"
NULL_OMITTED = "null-omitted"
ARRAY_ORDER = "array-order"
KNOWN = (LOWERCASE_HEADERS, CHUNKED, JSON_WHITESPACE, MEMBER_ORDER, EXTRA_FIELDS, RETRY_AFTER, XML_WHITESPACE,
         NAMESPACE_PREFIXES, X_NTNX_ETAG, PAGINATION, NULL_OMITTED, ARRAY_ORDER)
# what each kind of stand-in serves (README, "Testing": the count per stand-in)
JSON_OVER_HTTP = (LOWERCASE_HEADERS, CHUNKED, JSON_WHITESPACE, MEMBER_ORDER, EXTRA_FIELDS, RETRY_AFTER)
SOAP_OVER_HTTP = (LOWERCASE_HEADERS, CHUNKED, XML_WHITESPACE, NAMESPACE_PREFIXES, MEMBER_ORDER, EXTRA_FIELDS,
                  RETRY_AFTER)
PRISM = (*JSON_OVER_HTTP, X_NTNX_ETAG, PAGINATION, NULL_OMITTED, ARRAY_ORDER)
DB_API = (MEMBER_ORDER,)
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


def served(kind: Sequence[str], excluded: Collection[str] = ()) -> set[str]:
    """The variations asked for that a stand-in of this kind serves, less those its protocol excludes."""
    return asked() & set(kind) - set(excluded)


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
    """A reply's JSON as the active variations serve it: members reordered, an unknown one added, null members left
    out, arrays in another order, indented."""
    shaped = _shape(body, Shaping(reorder=MEMBER_ORDER in active, extra=EXTRA_FIELDS in active,
                                  omit_null=NULL_OMITTED in active, reverse=ARRAY_ORDER in active))
    return json_text(shaped, active).encode()


def json_text(body: object, active: Collection[str]) -> str:
    return json.dumps(body, indent=2 if JSON_WHITESPACE in active else None)


@dataclass(frozen=True)
class Shaping:
    reorder: bool
    extra: bool
    omit_null: bool = False
    reverse: bool = False


def _shape(value: Any, how: Shaping) -> Any:
    if isinstance(value, list):
        shaped = [_shape(item, how) for item in value]
        return shaped[::-1] if how.reverse else shaped
    if not isinstance(value, dict):
        return value
    items = [(key, _shape(item, how)) for key, item in value.items() if not (how.omit_null and item is None)]
    if how.extra:
        items.append(EXTRA_MEMBER)
    return dict(reversed(items) if how.reorder else items)


def send(handler: BaseHTTPRequestHandler, raw: bytes, status: int, headers: Mapping[str, str],
         active: Collection[str]) -> None:
    """An HTTP reply as the active variations send it: header names' case, the body chunked or sized."""
    chunked = CHUNKED in active
    if chunked:
        handler.protocol_version = "HTTP/1.1"  # chunked is HTTP/1.1's (RFC 9112 §7.1)
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(header_name(name, active), value)
    if chunked:
        handler.send_header(header_name("Transfer-Encoding", active), "chunked")
        handler.end_headers()
        middle = len(raw) // 2
        for piece in (raw[:middle], raw[middle:]):
            if piece:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")
    else:
        handler.send_header(header_name("Content-Length", active), str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)


def xml_text(xml: str, active: Collection[str], prefixes: Mapping[str, str]) -> str:
    """An XML document as the active variations write it: `prefixes` (old: new, '' for the default namespace)
    renamed in tags, declarations, prefixed attributes and QName values; whitespace set between elements."""
    if NAMESPACE_PREFIXES in active:
        xml = _renamed(xml, prefixes)
    if XML_WHITESPACE in active:
        xml = re.sub(r">(?=<[^/])", ">\n  ", xml)  # before a start tag: never inside an empty element
        xml = re.sub(r"(</[^>]+>|/>)(?=<)", "\\1\n", xml)  # after an end tag
    return xml


def _renamed(xml: str, prefixes: Mapping[str, str]) -> str:
    for old, new in prefixes.items():
        xml = re.sub(rf"(</?){old}:", rf"\g<1>{new}:" if new else r"\g<1>", xml)
        xml = re.sub(rf"\bxmlns:{old}=", f"xmlns:{new}=" if new else "xmlns=", xml)
        if not new:
            continue  # an attribute or a QName value keeps a prefix: the default namespace does not apply to them
        xml = re.sub(rf"(\s){old}:(\w+=)", rf"\g<1>{new}:\g<2>", xml)
        xml = re.sub(rf">{old}:(\w+)<", rf">{new}:\g<1><", xml)
    return xml
