"""Every fact a stand-in serves has a source, and a documented fact's served value is in its own quote.

(Served from the Operational channel while citing the System-log article is what this catches.)"""

from __future__ import annotations

import pytest

from tests.support import sqlserver_model, wsfc_model, wsman_facts
from tests.support.provenance import Fact, Facts

TABLES = [wsfc_model.FACTS, sqlserver_model.FACTS, wsman_facts.FACTS]


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_every_served_fact_has_a_source_and_its_value_is_in_its_quote(table: Facts) -> None:
    assert table.problems() == []
    print(f"\n{table.name}: {len(table.rows)} facts, each with a source")


def test_the_check_catches_a_value_its_quote_does_not_hold() -> None:
    wrong = Facts("example", [Fact("event.1135.log", "Microsoft-Windows-FailoverClustering/Operational", "documented",
                                   "the System-log article", "events from the Windows Server System log")])
    assert wrong.problems() == ["example: event.1135.log: served 'Microsoft-Windows-FailoverClustering/Operational', "
                                "which its quote does not contain: 'events from the Windows Server System log'"]
    assert Facts("x", [Fact("a", 1, "assumed", "none")]).problems() == [
        "x: a: an assumed fact names the assumption it mirrors (A-...)"]
