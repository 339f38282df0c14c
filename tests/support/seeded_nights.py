"""Earlier nights for a figure history, seeded from a measured one: the regression rule needs three nights, and a
test or a benchmark need not run three."""

from __future__ import annotations

import json
from pathlib import Path


def seed_like_last(history: Path, key: str, factors: tuple[float, ...] = (0.97, 1.03)) -> float:
    """Put one night per factor before the history's last night, `key` scaled by it; returns the last value."""
    measured = json.loads(history.read_text().splitlines()[-1])
    value = float(measured["figures"][key])
    for i, factor in enumerate(factors):
        seeded = {**measured, "run": f"seeded-{i}", "figures": {**measured["figures"], key: value * factor}}
        history.write_text(json.dumps(seeded) + "\n" + history.read_text())
    return value
