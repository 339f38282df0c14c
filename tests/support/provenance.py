"""Where each fact a stand-in serves comes from: one table per stand-in, read through `Facts.value`.

A stand-in written to match the backend it serves proves nothing. So every fact it serves (an
event's log, a property's unit or default, an accepted enum value, a cmdlet's behaviour) is a
row here with its source, and the stand-in reads the value from the row. `problems()` is the
check a unit test runs: a row without a source, or a documented row whose served value does not
appear in its own quote (that alone would have caught events served from the wrong log).

Kinds of source:
- documented: a vendor document (URL or repository path) and a short verbatim quote holding the value;
- captured: seen on a named product and version (the source says which);
- assumed: no document found; the source names the backend's assumption id;
- stricter: stricter than documented (refusing what the document leaves open), the source says why.

`unsourced_literals` is the check that a stand-in serves no vendor value beside its table: an enum-shaped string
(a role, a state, a SQLSTATE) written in its source outside FACTS is a value served without a source, unless the
module names it among `OWN_TOKENS` (what it reads from requests, the names of its own world).

`MUTATION` names one fact (`table/fact id`) whose served value is flipped: the mutation pass
(`python -m tests.support.mutations`) runs the contract tests once per fact and lists the facts
no test depends on.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Literal

Kind = Literal["documented", "captured", "assumed", "stricter"]
Value = str | int | float | bool
MUTATION = "HARNESS_STAND_IN_MUTATION"


def mutated(value: Value) -> Value:
    """A served value turned into a different one of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 2 + 1
    return f"{value}-mutated"


@dataclass(frozen=True)
class Fact:
    id: str
    value: Value
    kind: Kind
    source: str
    quote: str = ""


class Facts:
    """A stand-in's provenance table."""

    def __init__(self, name: str, facts: Iterable[Fact]) -> None:
        self.name = name
        self.rows = {fact.id: fact for fact in facts}
        self.read: set[str] = set()

    def value(self, fact_id: str) -> Value:
        self.read.add(fact_id)
        served = self.rows[fact_id].value
        return mutated(served) if os.environ.get(MUTATION) == f"{self.name}/{fact_id}" else served

    def as_documented(self, fact_id: str) -> bool:
        """Whether the fact is served as its row says (False only under the mutation pass): for a fact that
        describes a behaviour (a cmdlet waits, a tab starts a line) rather than being a value on the wire."""
        return self.value(fact_id) == self.rows[fact_id].value

    def problems(self) -> list[str]:
        found = []
        for fact in self.rows.values():
            where = f"{self.name}: {fact.id}"
            if not fact.source.strip():
                found.append(f"{where}: no source")
            if fact.kind == "documented" and str(fact.value) not in fact.quote:
                found.append(f"{where}: served {fact.value!r}, which its quote does not contain: {fact.quote!r}")
            if fact.kind == "assumed" and "A-" not in fact.source:
                found.append(f"{where}: an assumed fact names the assumption it mirrors (A-...)")
        return found


ENUM_SHAPED = re.compile(r"[A-Z][A-Z0-9_]+")
OWN_TOKENS = "OWN_TOKENS"


def unsourced_literals(source: str, own: Collection[str]) -> list[str]:
    """`line: 'VALUE'` for each enum-shaped string constant of `source` outside its FACTS and OWN_TOKENS assignments
    and not in `own`: a vendor value the stand-in writes without a row."""
    tree = ast.parse(source)
    tables = {id(node) for stmt in ast.walk(tree) if isinstance(stmt, ast.Assign | ast.AnnAssign)
              and any(isinstance(t, ast.Name) and t.id in ("FACTS", OWN_TOKENS)
                      for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]))
              for node in ast.walk(stmt)}
    return sorted({f"{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in tables
                   and ENUM_SHAPED.fullmatch(node.value) and node.value not in own},
                  key=lambda hit: int(hit.split(":")[0]))
