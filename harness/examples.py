"""`harness examples`: the example topologies, from wherever this installation keeps them.

A wheel installs them as data (`<prefix>/share/resilience-harness/examples`, pyproject's
`data-files`); a checkout has them in `examples/`. A user starts a topology from one
(`python -m harness examples stretched-2plus2.yaml > prod.yaml`) without cloning the repository.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

from harness_kernel.errors import ConfigError

SHARED = Path("share", "resilience-harness", "examples")


def folder(prefix: Path | None = None) -> Path:
    """Where the examples are: under the installation's data prefix, else in the checkout this module runs from."""
    installed = (prefix or Path(sysconfig.get_path("data"))) / SHARED
    checkout = Path(__file__).resolve().parents[1] / "examples"
    for candidate in (installed, checkout):
        if any(candidate.glob("*.yaml")):
            return candidate
    raise ConfigError(f"no example topologies in this installation ({installed}, {checkout}): reinstall the "
                      "resilience-harness wheel")


def names(prefix: Path | None = None) -> list[str]:
    return sorted(p.name for p in folder(prefix).glob("*.yaml"))


def text(name: str, prefix: Path | None = None) -> str:
    """An example's text, by its name as `names` lists it (nothing else is read)."""
    known = names(prefix)
    if name not in known:
        raise ConfigError(f"examples: no example named {name!r}; known: {', '.join(known)}")
    return (folder(prefix) / name).read_text()


def summary(name: str, prefix: Path | None = None) -> str:
    """The example's first comment line that says what it is (after the editor's schema line)."""
    for line in text(name, prefix).splitlines():
        if line.startswith("#") and "yaml-language-server" not in line:
            return line.lstrip("# ").strip()
    return ""
