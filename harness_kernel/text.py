"""Values that reach a plan, a script or a file the harness writes: one printable line, or refused.

A newline in a value becomes a second line of a fio job file (`exec_prerun=` runs a program);
U+2028 or U+0085 becomes a second line of a printed plan (a fake `revert:` step); a right-to-left
override turns what a person reads around. Unicode names these classes: control (Cc), format
(Cf), line and paragraph separators (Zl, Zp), surrogates (Cs), private use (Co) and unassigned
(Cn). None of them belongs in a path, a URL, a name or a number, so every such value is checked
here, once, with the offending character named by its code point (never printed as itself).
"""

from __future__ import annotations

import unicodedata

REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def first_unprintable(value: str) -> str | None:
    """`U+2028 (LINE SEPARATOR) at 7` for the first refused character, or None when there is none."""
    for index, char in enumerate(value):
        category = unicodedata.category(char)
        if category in REFUSED_CATEGORIES:
            name = unicodedata.name(char, category)
            return f"U+{ord(char):04X} ({name}) at {index}"
    return None


def one_line(value: str) -> str:
    """`value` unchanged if every character is printable on one line; ValueError naming the first that is not."""
    found = first_unprintable(value)
    if found is not None:
        raise ValueError(f"contains {found}: control characters, format characters and line separators are refused")
    return value


def escaped(value: str) -> str:
    """`value` with every refused character written as `\\uXXXX`: for printing what may be hostile."""
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in REFUSED_CATEGORIES else c for c in value)
