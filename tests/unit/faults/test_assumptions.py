"""One table of what the backends assume, each row with a probe; a fault is refused by name unless its probes PASS."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from faults.assumptions import Assumption, AssumptionNotHeldError, Probed, ProbeResult, require
from faults.catalogue import installed
from harness_lab.vsphere_binding import simulator_binary
from tests.support import prism_model, sqlserver_model, sqlserver_restore_model, vplex_model, wsfc_model, wsman_facts

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = Assumption("A-example", "the product does X", "none found", ("disk-failure",))


class Fault:
    def __init__(self, *answers: ProbeResult) -> None:
        self.answers, self.asked = answers, 0

    def assumptions(self) -> list[tuple[Assumption, object]]:
        def probe(result: ProbeResult) -> object:
            def run() -> Probed:
                self.asked += 1
                return Probed(result, f"saw {result.value}")
            return run
        return [(EXAMPLE, probe(result)) for result in self.answers]


def test_every_assumption_has_an_id_a_statement_a_source_and_is_in_the_readme() -> None:
    """Every installed platform's, each in its descriptor: one place for them, the platform's folder."""
    every = installed().assumptions()
    ids = [a.id for a in every]
    assert {p for i in ids for p in ("A-vsan-", "A-wsfc-", "A-prism-", "A-vplex-") if i.startswith(p)} == {
        "A-vsan-", "A-wsfc-", "A-prism-", "A-vplex-"}
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"A-[a-z0-9-]+", i) for i in ids)
    assert all(a.statement and a.source for a in every)
    readme = (ROOT / "README.md").read_text()
    assert [i for i in ids if f"| {i} |" not in readme] == []


@pytest.mark.parametrize("result", [ProbeResult.FAIL, ProbeResult.UNKNOWN])
def test_a_probe_that_does_not_pass_refuses_the_fault_naming_the_assumption_and_what_it_saw(
        result: ProbeResult) -> None:
    """UNKNOWN (could not tell, e.g. unreachable) is not FAIL, but it does not let a fault through either."""
    with pytest.raises(AssumptionNotHeldError, match=f"disk-failure on disk:h/d: refused: assumption A-example "
                                                     f"\\(the product does X\\) is {result.value} on this cluster: "
                                                     f"saw {result.value}"):
        require(Fault(result), "disk-failure", "disk:h/d")  # type: ignore[arg-type]


def test_probes_that_pass_are_returned_with_what_they_saw_and_the_first_that_fails_stops_the_rest() -> None:
    fault = Fault(ProbeResult.PASS, ProbeResult.PASS)
    assert [p.seen for _, p in require(fault, "k", "t")] == ["saw pass", "saw pass"]  # type: ignore[arg-type]
    stopped = Fault(ProbeResult.FAIL, ProbeResult.PASS)
    with pytest.raises(AssumptionNotHeldError):
        require(stopped, "k", "t")  # type: ignore[arg-type]
    assert stopped.asked == 1


def test_every_assumed_fact_a_stand_in_serves_names_an_assumption_of_the_table() -> None:
    """A stand-in that serves an assumed value mirrors a row of this table, never an assumption of its own."""
    ids = {a.id for a in installed().assumptions()}
    named = [(table.name, fact.id, fact.source) for table in (wsfc_model.FACTS, sqlserver_model.FACTS,
                                                          sqlserver_restore_model.FACTS, wsman_facts.FACTS,
                                                          vplex_model.FACTS, prism_model.FACTS)
             for fact in table.rows.values() if fact.kind == "assumed"]
    if simulator_binary().exists():
        listed = subprocess.run([str(simulator_binary()), "-facts"], capture_output=True, text=True, check=True,
                                timeout=30)
        named += [("vsim", row["ID"], row["Source"]) for row in json.loads(listed.stdout) if row["Kind"] == "assumed"]
    assert named, "some stand-in serves an assumed fact"
    assert [(t, f) for t, f, source in named if not set(re.findall(r"A-[a-z0-9-]+", source)) & ids] == []
