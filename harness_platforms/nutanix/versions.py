"""Which version of a v4 namespace to ask a cluster for: the version negotiation of Nutanix's own SDK.

The SDK (ntnx-clustermgmt-py-client 4.3.2, `api_client.py`) asks `OPTIONS /api/<namespace>/unversioned/info`,
reads the highest version the cluster serves from the reply's `data`, and sends its paths at that
version where it is older than its own ("since sdk version is higher than highest server version,
use server version"); a server below v4.2 (`minimum_supported_version = "v4.2"`), another family, or
no answer leaves the SDK's own. Here the section's version plays the SDK's.
"""

from __future__ import annotations

import re

INFO = "/api/{namespace}/unversioned/info"
NAMESPACES = ("vmm", "clustermgmt", "prism")
MINIMUM = "v4.2"
_VERSION = re.compile(r"v(\d+)\.(\d+)(?:\.([ab])(\d+))?")
_SEGMENT = re.compile(r"^/api/(?P<namespace>[-\w]+)/(?P<version>v\d+\.\d+(?:\.[ab]\d+)?)/")
_RANK = {"a": 0, "b": 1, None: 2}  # alpha, beta, released (the SDK: "alpha must be smallest and released must be
#                                   largest")


def _key(version: str) -> tuple[int, int, int, int] | None:
    found = _VERSION.fullmatch(version)
    if not found:
        return None
    major, minor, kind, revision = found.groups()
    return int(major), int(minor), _RANK[kind], int(revision or 0)


def negotiated(own: str, served: object) -> str:
    """The version to ask: the cluster's highest where it is older than `own`, else `own`."""
    mine, theirs, floor = _key(own), _key(served) if isinstance(served, str) else None, _key(MINIMUM)
    if mine is None or theirs is None or floor is None or theirs[0] != mine[0] or theirs < floor:
        return own
    return served if theirs < mine and isinstance(served, str) else own


def namespace_of(path: str) -> tuple[str, str] | None:
    """(namespace, version) of a v4 path, None for another (v2, unversioned)."""
    found = _SEGMENT.match(path)
    if not found or found["namespace"] not in NAMESPACES:
        return None
    return found["namespace"], found["version"]


def at_version(path: str, version: str) -> str:
    """`path` with its version segment replaced (as the SDK rewrites its paths)."""
    return _SEGMENT.sub(lambda m: f"/api/{m['namespace']}/{version}/", path, count=1)
