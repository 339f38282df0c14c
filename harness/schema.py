"""The topology's JSON Schema, composed with each installed platform's section: what an editor completes and checks.

`Topology.model_json_schema()` describes the in-tree fields; a platform from a plug-in brings its section's model
(`management.platforms.<name>`), which the topology itself keeps as free JSON until the platform validates it. The
composed schema names each installed platform's section under `management.platforms`, so an editor completes and
checks it as well; a section no installed platform claims stays free JSON, as the topology takes it.
"""

from __future__ import annotations

import json
from typing import Any

from faults.catalogue import Catalogue
from harness_kernel.topology.models import Topology

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"  # an identifier, never fetched


def topology_schema(catalogue: Catalogue) -> dict[str, Any]:
    """The topology's schema with every platform section of `catalogue` under `management.platforms`."""
    schema: dict[str, Any] = {"$schema": SCHEMA_DIALECT, **Topology.model_json_schema()}
    definitions: dict[str, Any] = schema.setdefault("$defs", {})
    sections: dict[str, Any] = {}
    for platform in sorted(catalogue.platforms, key=lambda p: p.name):
        if platform.section is None:
            continue
        prefix = f"{platform.name}.".replace("/", "_")
        section = platform.section.model_json_schema(ref_template=f"#/$defs/{prefix}{{model}}")
        definitions.update({f"{prefix}{name}": body for name, body in section.pop("$defs", {}).items()})
        definitions[f"{prefix}{platform.section.__name__}"] = section
        reference = {"$ref": f"#/$defs/{prefix}{platform.section.__name__}"}
        if platform.section_at:  # a section at its own key of `management` (vSAN's `vsan`)
            definitions["Management"]["properties"][platform.section_at] = reference
        else:
            sections[platform.name] = reference
    platforms = definitions["Management"]["properties"]["platforms"]
    platforms["properties"] = sections
    definitions["Database"]["properties"]["kind"]["enum"] = sorted({k for p in catalogue.platforms for k, _ in p.databases})
    return schema


def dumps(catalogue: Catalogue) -> str:
    return json.dumps(topology_schema(catalogue), indent=1, sort_keys=True) + "\n"
