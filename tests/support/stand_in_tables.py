"""Every stand-in's provenance table, in one list: the provenance specs check each, the mutation pass flips each."""

from __future__ import annotations

from tests.support import (
    prism_model,
    sqlserver_backup_model,
    sqlserver_model,
    sqlserver_restore_model,
    vplex_model,
    wsfc_model,
    wsman_facts,
)
from tests.support.provenance import Facts

TABLES: tuple[Facts, ...] = (wsfc_model.FACTS, sqlserver_model.FACTS, sqlserver_backup_model.FACTS,
                             sqlserver_restore_model.FACTS, wsman_facts.FACTS, vplex_model.FACTS, prism_model.FACTS)
