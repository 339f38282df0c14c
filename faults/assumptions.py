"""What a backend assumes about a product where no document settles it, and how each is checked.

A vendor call whose meaning no document states is not guessed silently: it is an `Assumption`
(an id, what is assumed, the source or "none found", the fault kinds that depend on it) with a
read-only probe that answers PASS, FAIL or UNKNOWN (could not tell: unreachable is not failed).
A fault that depends on assumptions says which (`Assumes`), and the runner refuses it, naming
the assumption, when a probe does not answer PASS, before anything is journaled or injected.
This is the one protocol: a platform keeps its rows in its folder's `assumptions.py` and names them
in its descriptor's `assumptions` (`Catalogue.assumptions` reads every platform's), never a second one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from harness_kernel.errors import ConfigError


class ProbeResult(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Assumption:
    id: str
    statement: str
    source: str  # a document that comes close, or "none found"
    blocks: tuple[str, ...]  # fault kinds that depend on it


@dataclass(frozen=True)
class Probed:
    """One probe's answer, with what it saw (shown when the fault is refused)."""

    result: ProbeResult
    seen: str


Probe = Callable[[], Probed]


@runtime_checkable
class Assumes(Protocol):
    """A fault whose backend relies on assumptions: each with the probe that checks it on this cluster."""

    def assumptions(self) -> Sequence[tuple[Assumption, Probe]]: ...


class AssumptionNotHeldError(ConfigError):
    """A probe says the cluster is not as the backend assumes (or could not tell): the fault is refused."""


def require(fault: Assumes, kind: str, target: str) -> list[tuple[Assumption, Probed]]:
    """Run every probe of `fault`; raise naming the first assumption whose probe did not PASS."""
    answers = []
    for assumption, probe in fault.assumptions():
        answer = probe()
        answers.append((assumption, answer))
        if answer.result is not ProbeResult.PASS:
            raise AssumptionNotHeldError(
                f"{kind} on {target}: refused: assumption {assumption.id} ({assumption.statement}) is "
                f"{answer.result.value} on this cluster: {answer.seen}")
    return answers
