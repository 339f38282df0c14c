"""PowerShell literals: the one way a value enters a script sent to a Windows node.

PowerShell's tokenizer takes four characters besides `'` as a single quote: U+2018, U+2019,
U+201A and U+201B (`CharExtensions.IsSingleQuote`, PowerShell/PowerShell
`src/System.Management.Automation/engine/parser/CharTraits.cs`). Inside a single-quoted string
any of them ends the string unless another one follows (the pair stands for one quote). So a
value quoted for the ASCII `'` alone breaks out of its literal with U+2019. Here every one of the
five is doubled, nothing inside is expanded (`$`, backtick and `"` are plain in a single-quoted
string), and a value that is not one printable line is refused before any script is built.
"""

from __future__ import annotations

from harness_kernel.errors import ConfigError
from harness_kernel.text import first_unprintable

SINGLE_QUOTES = frozenset("'\u2018\u2019\u201a\u201b")


def literal(value: str) -> str:
    """`value` as a PowerShell single-quoted string literal."""
    found = first_unprintable(value)
    if found is not None:
        raise ConfigError(f"a value for a PowerShell script contains {found}; refused")
    return "'" + "".join(c + c if c in SINGLE_QUOTES else c for c in value) + "'"
