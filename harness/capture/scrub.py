"""Keep of each answer only the fields the parsers read (`harness.capture.fields`); say what left.

SOAP answers are walked with pyVmomi's type information: each element's type is its `xsi:type`,
else what its parent's type declares for it, else the method's result type; a data object keeps
the properties its type (or a base) lists, and every managed object reference. JSON (Redfish,
vSAN's JSON strings) keeps the listed keys. A command's output is kept only where a reader parses
it. `Dropped` collects `Type.property` for the manifest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from typing import Any

from harness.capture import fields, xmltree
from harness.capture.xmltree import Node

Dropped = set[str]


def soap_answer(body: str, request: str, dropped: Dropped) -> str:
    """A SOAP response with only the allowed fields; a document that is not SOAP (a versions file) as it came."""
    if "Envelope" not in body[:400]:
        return body
    envelope = xmltree.parse(body)
    soap_body = envelope.find("Body")
    if soap_body is None or not soap_body.children:
        return body
    answer = soap_body.children[0]
    method = answer.local.removesuffix("Response")
    if answer.local == "Fault":
        for detail in (c for c in answer.children if c.local == "detail"):
            for child in detail.children:
                _prune(child, None, dropped, method)
    else:
        declared = _result_type(method, request)
        for value in answer.children:
            _prune(value, declared, dropped, method)
    return xmltree.serialize(envelope)


def _prune(node: Node, declared: Any, dropped: Dropped, method: str) -> None:
    if node.xsi_type_is_xsd():
        _keep_text(node, method, dropped)
        return
    named = node.xsi_type()
    if named and named.startswith("ArrayOf"):  # a wrapper of repeated items (a property collector's value)
        item_type = _wsdl_type(named.removeprefix("ArrayOf"))
        for child in node.children:
            _prune(child, item_type, dropped, method)
        return
    kind = _wsdl_type(named) if named else declared
    if kind is None:
        if node.children:
            dropped.add(f"{named or method}: (a type pyVmomi does not know)")
            node.children = []
        return
    item = getattr(kind, "Item", None)
    if item is not None and issubclass(kind, list):
        _prune(node, item, dropped, method)  # a repeated element: this one is an item itself
        return
    if not _is_data_object(kind):
        _keep_text(node, method, dropped)  # a primitive, an enum value, a managed object reference
        return
    declared_props = _properties(kind)
    allowed = _allowed(kind)
    kept = []
    for child in node.children:
        prop_type = declared_props.get(child.local)
        if child.local in allowed or _is_reference(prop_type):
            _prune(child, prop_type, dropped, method)
            kept.append(child)
        else:
            dropped.add(f"{_name(kind)}.{child.local}")
    node.children = kept


def _keep_text(node: Node, method: str, dropped: Dropped) -> None:
    if method in fields.JSON_IN_SOAP and node.text.lstrip().startswith("{"):
        try:
            value = json.loads(node.text)
        except ValueError:
            return
        node.text = json.dumps(json_value(value, fields.VSAN_JSON_KEYS, dropped, method), sort_keys=True)


def json_value(value: Any, keys: Iterable[str], dropped: Dropped, where: str) -> Any:
    """`value` with only the listed keys (and structural ones: UUID map keys, `child-N`) at any depth."""
    allowed = frozenset(keys)
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            if key in allowed or fields.STRUCTURAL_JSON_KEY.fullmatch(key):
                out[key] = json_value(inner, allowed, dropped, where)
            else:
                dropped.add(f"{where}: {key}")
        return out
    if isinstance(value, list):
        return [json_value(v, allowed, dropped, where) for v in value]
    return value


def redfish_answer(body: str, path: str, dropped: Dropped) -> str:
    if not body.strip():
        return body
    try:
        value = json.loads(body)
    except ValueError:
        dropped.add(f"redfish {path}: a body that is not JSON")
        return ""
    return json.dumps(json_value(value, fields.REDFISH_KEYS, dropped, "redfish"), sort_keys=True)


def powershell_output(stdout: str, dropped: Dropped) -> str:
    """A script's standard output: JSON kept to the listed properties, a bare number as it is, anything else left."""
    text = stdout.strip()
    if not text or re.fullmatch(r"-?\d+(\.\d+)?", text):
        return stdout
    try:
        value = json.loads(text)
    except ValueError:
        dropped.add("winrm: an output that is not JSON")
        return ""
    return json.dumps(json_value(value, fields.WINRM_KEYS, dropped, "winrm"))


def command_output(command: str, stdout: str, dropped: Dropped) -> str:
    usage = command.split()[-1] in ("-h", "--help")
    if usage or any(command.startswith(c) for c in fields.SSH_OUTPUT_READ) or not stdout:
        return stdout
    dropped.add(f"ssh: the output of {command.split()[0]!r} (only its exit status is read)")
    return ""


# -- pyVmomi's type information ----------------------------------------------------------------------
def _vmodl() -> Any:
    from faults.transports.vcenter import sdk

    sdk()  # loads the vSAN types too
    from pyVmomi import VmomiSupport

    return VmomiSupport


@cache
def _wsdl_type(name: str) -> Any:
    v = _vmodl()
    for ns in ("urn:vim25", "urn:vsan", "urn:pbm"):
        try:
            return v.GetWsdlType(ns, name)
        except KeyError:
            continue
    return None


def _result_type(method: str, request: str) -> Any:
    v = _vmodl()
    if method == "Fetch":  # pyVmomi's property accessor: the type is the property's
        req = xmltree.parse(request)
        call = req.find("Body").children[0]  # type: ignore[union-attr]
        this, prop = call.find("_this"), call.find("prop")
        owner = _wsdl_type(this.attrs.get("type", "")) if this is not None else None
        if owner is None or prop is None:
            return None
        info = next((p for p in owner._GetPropertyList() if p.name == prop.text), None)
        return info.type if info else None
    for ns in ("urn:vim25", "urn:vsan", "urn:pbm"):
        try:
            return v.GetWsdlMethod(ns, method).info.result
        except (KeyError, AttributeError):
            continue
    return None


def _is_data_object(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, _vmodl().DataObject)


def _is_reference(kind: Any) -> bool:
    if kind is None or not isinstance(kind, type):
        return False
    kind = getattr(kind, "Item", kind)
    return issubclass(kind, _vmodl().ManagedObject)


@cache
def _properties(kind: Any) -> dict[str, Any]:
    return {p.name: p.type for p in kind._GetPropertyList()}


@cache
def _allowed(kind: Any) -> frozenset[str]:
    names: set[str] = set()
    for base in kind.__mro__:
        name = getattr(base, "_wsdlName", None)
        names |= fields.SOAP_FIELDS.get(name, frozenset()) if name else set()
    return frozenset(names)


def _name(kind: Any) -> str:
    return str(getattr(kind, "_wsdlName", kind.__name__))
