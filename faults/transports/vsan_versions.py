"""Which vSAN management API version to speak: the newest one both vCenter and this pyVmomi know.

vCenter lists the versions its /vsanHealth endpoint offers in /sdk/vsanServiceVersions.xml, in
the shape of vimServiceVersions.xml (`<namespaces version="1.0"><namespace><name>urn:vsan</name>
<version>ID</version><priorVersions><version>ID</version>...`); pyVmomi maps each id
(`8.0.0.3`) to its name (`vsan.version.version22`). The vSAN SDK's own helper,
`vsanapiutils.GetLatestVmodlVersion`, is not used: it turns TLS verification off for the whole
process and falls back to a guess on any error. This reads the document through the vCenter
transport's TLS policy and bounds, and fails naming what it saw, so a topology can override it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from xml.etree import ElementTree

from harness_kernel.errors import ControlPlaneError

PATH = "/sdk/vsanServiceVersions.xml"
NAMESPACE = "urn:vsan"
OVERRIDE = "management.vsan.api_version"


def offered(document: str, where: str) -> list[str]:
    """The version ids the document offers for urn:vsan, newest first (its version, then its prior versions)."""
    try:
        root = ElementTree.fromstring(document)
    except ElementTree.ParseError as exc:
        raise ControlPlaneError(f"{where}{PATH} is not XML ({exc}); set {OVERRIDE}") from None
    if root.tag != "namespaces" or root.get("version") != "1.0":
        raise ControlPlaneError(f"{where}{PATH}: expected <namespaces version=\"1.0\">, got <{root.tag} "
                                f"version={root.get('version')!r}>; set {OVERRIDE}")
    for namespace in root.findall("namespace"):
        if (namespace.findtext("name") or "").strip() == NAMESPACE:
            ids = [namespace.findtext("version") or "", *((v.text or "") for v in namespace.findall("priorVersions/version"))]
            return [i.strip() for i in ids if i.strip()]
    raise ControlPlaneError(f"{where}{PATH} offers no {NAMESPACE} namespace; set {OVERRIDE}")


def negotiated(ids: list[str], where: str, known: Callable[[str], str | None], speaks: Callable[[str], bool]) -> str:
    """The first offered id this pyVmomi knows (`known`: id -> name) and can speak (`speaks`: not newer than its own)."""
    for version_id in ids:
        name = known(version_id)
        if name is not None and speaks(name):
            return name
    raise ControlPlaneError(f"{where}{PATH} offers {', '.join(ids) or 'nothing'}, none of which this pyVmomi speaks; "
                            f"upgrade pyVmomi or set {OVERRIDE}")


def from_pyvmomi(ids: list[str], where: str) -> str:
    import importlib

    support: Any = importlib.import_module("pyVmomi.VmomiSupport")  # the SDK only when a vSAN call is made
    newest = support.newestVersions.GetName("vsan")
    return negotiated(ids, where, lambda i: support.versionMap.get(f"vsan/{i}"),
                      lambda name: bool(support.IsChildVersion(newest, name)))
