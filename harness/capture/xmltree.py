"""SOAP XML as a small tree that writes back what it read: raw names, every namespace declaration kept.

ElementTree renames prefixes and drops declarations no element name uses, but a SOAP answer's
`xsi:type="xsd:string"` names a prefix inside an attribute value: pyVmomi cannot read the answer
once `xmlns:xsd` is gone. This tree keeps names and attributes as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.parsers import expat
from xml.sax.saxutils import escape, quoteattr

XSI = "http://www.w3.org/2001/XMLSchema-instance"


@dataclass
class Node:
    name: str  # as written, with its prefix
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: str = ""
    scope: dict[str, str] = field(default_factory=dict, repr=False)  # prefix -> namespace, as declared here and above

    @property
    def local(self) -> str:
        return self.name.rpartition(":")[2]

    @property
    def namespace(self) -> str:
        prefix = self.name.rpartition(":")[0]
        return self.scope.get(prefix, "")

    def xsi_type(self) -> str | None:
        """The local part of this element's `xsi:type` (whatever prefix the server bound XSI to), if any."""
        for key, value in self.attrs.items():
            prefix, _, local = key.rpartition(":")
            if local == "type" and prefix and self.scope.get(prefix) == XSI:
                return value.rpartition(":")[2]
        return None

    def xsi_type_is_xsd(self) -> bool:
        for key, value in self.attrs.items():
            prefix, _, local = key.rpartition(":")
            if local == "type" and prefix and self.scope.get(prefix) == XSI:
                return self.scope.get(value.rpartition(":")[0], "").endswith("/XMLSchema")
        return False

    def find(self, local: str) -> Node | None:
        return next((c for c in self.children if c.local == local), None)

    def walk(self) -> list[Node]:
        return [self, *(n for c in self.children for n in c.walk())]


def parse(text: str) -> Node:
    parser = expat.ParserCreate()
    parser.buffer_text = True
    stack: list[Node] = []
    root: list[Node] = []

    def start(name: str, attrs: dict[str, str]) -> None:
        scope = dict(stack[-1].scope) if stack else {"xml": "http://www.w3.org/XML/1998/namespace"}
        for key, value in attrs.items():
            if key == "xmlns":
                scope[""] = value
            elif key.startswith("xmlns:"):
                scope[key[6:]] = value
        node = Node(name, dict(attrs), scope=scope)
        (stack[-1].children if stack else root).append(node)
        stack.append(node)

    def end(name: str) -> None:
        stack.pop()

    def chars(data: str) -> None:
        if stack:
            stack[-1].text += data

    parser.StartElementHandler, parser.EndElementHandler, parser.CharacterDataHandler = start, end, chars
    parser.Parse(text.encode("utf-8"), True)
    return root[0]


def serialize(node: Node) -> str:
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + _element(node)


def _element(node: Node) -> str:
    attrs = "".join(f" {k}={quoteattr(v)}" for k, v in node.attrs.items())
    inner = (escape(node.text) if not node.children or node.text.strip() else "") + "".join(_element(c) for c in node.children)
    return f"<{node.name}{attrs}>{inner}</{node.name}>"
