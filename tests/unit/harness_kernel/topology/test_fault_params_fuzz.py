"""Fuzzing the fault params models (`faults.kinds`): every params mapping is either accepted,
within the model's declared bounds, plain JSON and stable under a round trip, or refused
with a one-line `ConfigError` naming `params.<field>`. Same profiles as the topology fuzzer.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal, get_args, get_origin

import annotated_types as at
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic.fields import FieldInfo

from faults.kinds import KINDS, FaultKind
from harness_kernel.errors import ConfigError
from tests.unit.harness_kernel.topology.fuzz_support import PROFILE, Tally, report
from tests.unit.harness_kernel.topology.topology_strategies import HOSTILE, Case

KIND_NAMES = sorted(KINDS)
KNOWN = "accepted although not plain JSON (faults/kinds.py: Params allows inf)"
REFUSAL = re.compile(r"(?P<kind>[a-z-]+): params(?:\.(?P<field>[A-Za-z_]\w*)|(?P<key>\[[^:]*\]))?: ")


def _bounds(info: FieldInfo) -> dict[str, float]:
    found: dict[str, float] = {}
    for item in info.metadata:
        for name in ("ge", "gt", "le", "lt"):
            if isinstance(item, getattr(at, name.capitalize())):
                found[name] = float(getattr(item, name))
    return found


def _pattern(info: FieldInfo) -> str | None:
    return next((str(m.pattern) for m in info.metadata if getattr(m, "pattern", None)), None)


def _types(info: FieldInfo) -> tuple[Any, ...]:
    return get_args(info.annotation) if get_origin(info.annotation) is not Literal else (info.annotation,)


def valid(info: FieldInfo) -> st.SearchStrategy[Any]:
    """A value the field's declaration allows (from its annotation and constraints)."""
    options: list[st.SearchStrategy[Any]] = []
    for kind in _types(info) or (info.annotation,):
        if get_origin(kind) is Literal:
            options.append(st.sampled_from(get_args(kind)))
        elif kind is float:
            b = _bounds(info)
            options.append(st.floats(b.get("ge", b.get("gt", 0.0)), b.get("le", b.get("lt", 1e6)),
                                     exclude_min="gt" in b, exclude_max="lt" in b))
        elif kind is str and (pattern := _pattern(info)):
            options.append(st.from_regex(pattern.strip("^$"), fullmatch=True))
        elif kind is type(None):
            options.append(st.none())
    return st.one_of(options)


EDGES = st.sampled_from([-1, -0.0, 0, 1e-300, 10_000, 10_000.0001, 100.5, 400_001, 2**63, 10**400,
                         float("inf"), float("nan"), "1", "1M\n", "0k", "32K", " 1M", True])


@st.composite
def params(draw: st.DrawFn) -> tuple[FaultKind, Case]:
    kind = KINDS[draw(st.sampled_from(KIND_NAMES))]
    fields = kind.params.model_fields
    raw: dict[str, Any] = {n: draw(valid(f)) for n, f in fields.items() if f.is_required() or draw(st.booleans())}
    case = Case(raw)
    for _ in range(draw(st.sampled_from([1, 2, 1, 0]))):
        how = draw(st.sampled_from(["replace", "edge", "delete", "unknown-field"]))
        name = draw(st.sampled_from(sorted(fields))) if fields else "extra"
        if how == "unknown-field" or not fields:
            raw[draw(st.sampled_from(["rtt", "direction;", "sync_timeout", "x"]))] = draw(HOSTILE)
            name, how = "(unknown)", "unknown-field"
        elif how == "delete":
            raw.pop(name, None)
        else:
            raw[name] = draw(EDGES if how == "edge" else HOSTILE)
        case.edits.append((f"{kind.name}.{name}", how))
    return kind, case


def assert_within_declaration(kind: FaultKind, values: dict[str, Any], tally: Tally) -> None:
    """Declared bounds and patterns hold; a non-finite float is counted, not failed (see KNOWN)."""
    for name, info in kind.params.model_fields.items():
        value = values[name]
        if isinstance(value, float):
            if not math.isfinite(value):
                tally.notes[f"{KNOWN}: {kind.name}.{name}={value}"] += 1
                continue
            b = _bounds(info)
            assert b.get("ge", -math.inf) <= value <= b.get("le", math.inf), (kind.name, name, value)
            assert b.get("gt", -math.inf) < value < b.get("lt", math.inf), (kind.name, name, value)
        if isinstance(value, str) and (pattern := _pattern(info)):
            assert re.fullmatch(pattern.strip("^$"), value), (kind.name, name, value)
    if all(not isinstance(v, float) or math.isfinite(v) for v in values.values()):
        json.dumps(values, allow_nan=False)  # plain JSON: the journal stores it


def check(kind: FaultKind, case: Case, tally: Tally) -> None:
    try:
        parsed = kind.parse_params(case.doc)
    except ConfigError as exc:
        message = str(exc)
        assert len(message.splitlines()) == 1, message
        match = REFUSAL.match(message)
        assert match and match["kind"] == kind.name, f"names no params field: {message!r}"
        tally.record(case, f"{kind.name}: params.{match['field'] or match['key']}")
        assert case.edits, f"unedited params refused: {message}"
        return
    tally.record(case, None)
    values = parsed.model_dump()
    assert_within_declaration(kind, values, tally)
    assert kind.parse_params(values) == parsed


def test_every_params_mapping_is_accepted_within_bounds_or_refused_naming_a_field() -> None:
    tally = Tally()

    @settings(PROFILE, max_examples=2 * PROFILE.max_examples)  # cheap: about 1 ms each
    @given(params())
    def mappings(drawn: tuple[FaultKind, Case]) -> None:
        check(*drawn, tally)

    mappings()
    report(tally.summary("fault params"))


def test_a_params_value_is_plain_json() -> None:
    with pytest.raises(ConfigError, match=r"params.sync_timeout_s: "):
        KINDS["link-partition"].parse_params({"sync_timeout_s": float("inf")})
    parsed = KINDS["link-partition"].parse_params({"sync_timeout_s": 2.0})
    json.dumps(parsed.model_dump(), allow_nan=False)
