"""Masking resolved secrets in everything a run prints: log records, tracebacks, streams.

The rule. Every resolved secret is masked as `***`, **whatever its length** (a 3-character
password too), at every occurrence, with no word boundaries (`pw=abc;` must be caught). It is
masked in each spelling it takes on its way out: Python repr, JSON, HTML/XML, URL encoding,
ODBC `}}` doubling, Java-properties escaping, any two of these nested, and base64 of the
secret and of `user:secret` (HTTP Basic). The head or tail (3+ characters) of a secret right
next to a `...` is masked too: that is how a repr cut short shows a partial secret. The cost of
the rule: a short secret also masks ordinary text that happens to contain it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import html
import json
import logging
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, cast
from urllib.parse import quote, quote_plus

from pydantic import BaseModel

from harness_kernel.topology.credentials import Secret

MASK = "***"
_PARTIAL_MIN = 3  # shortest head/tail of a secret masked next to a truncation mark
_BASE64_CORE_MIN = 8  # shortest base64 run of a secret at an unknown alignment worth masking


def _odbc(s: str) -> str:
    return s.replace("}", "}}")


def _properties(s: str) -> str:
    return s.replace("\\", "\\\\").replace("=", "\\=").replace(":", "\\:")


def _c_style(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


_ESCAPES: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    lambda s: repr(s)[1:-1],
    _c_style,
    lambda s: json.dumps(s)[1:-1],
    lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    html.escape,
    lambda s: html.escape(s, quote=False),
    lambda s: quote(s, safe=""),
    quote,
    quote_plus,
    _odbc,
    _properties,
)


def _base64_forms(payload: bytes) -> set[str]:
    """The payload alone in base64 (standard and URL-safe, padding dropped), and the runs of
    characters that encode only its bytes at each of the three alignments inside a longer text."""
    forms: set[str] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms.add(encode(payload).decode().rstrip("="))
        for offset in range(3):
            encoded = encode(bytes(offset) + payload).decode()
            first, end = -(-offset * 8 // 6), (offset + len(payload)) * 8 // 6
            if end - first >= _BASE64_CORE_MIN:
                forms.add(encoded[first:end])
    return forms


def spellings(secret: str, usernames: Iterable[str] = ()) -> set[str]:
    """Every form of `secret` that masking looks for."""
    once = {escape(secret) for escape in _ESCAPES}
    forms = {escape(form) for form in once for escape in _ESCAPES}
    for payload in (secret, *(f"{user}:{secret}" for user in usernames)):
        forms |= _base64_forms(payload.encode())
    return forms - {""}


ANCHOR_MAX = 8  # the longest prefix used to find candidates
_REGEX_ANCHORS_MAX = 256  # up to this many anchors one regex finds them; past it a set is asked at each position


class _Literals:
    """Finds occurrences of fixed strings in time linear in the text and in the strings' total length.

    One alternation of every spelling of every secret is quadratic to compile and slow to scan
    (a 10,000-character secret made `re` run out of memory). Here each string is indexed by its
    first k characters (its anchor); a scan finds the positions where an anchor starts and checks
    only the strings with that anchor, longest first."""

    def __init__(self, needles: Iterable[str]) -> None:
        ordered = sorted(set(needles) - {""}, key=lambda n: (-len(n), n))
        self.k = min([ANCHOR_MAX, *(len(n) for n in ordered)])
        self.by_anchor: dict[str, list[str]] = {}
        for needle in ordered:
            self.by_anchor.setdefault(needle[:self.k], []).append(needle)
        anchors = sorted(self.by_anchor)
        self._finder = (re.compile("(?=(" + "|".join(map(re.escape, anchors)) + "))")
                        if 0 < len(anchors) <= _REGEX_ANCHORS_MAX else None)

    def __bool__(self) -> bool:
        return bool(self.by_anchor)

    def starts(self, text: str) -> Iterator[int]:
        """Positions where some anchor starts, in order (overlapping ones included)."""
        if self._finder is not None:
            yield from (m.start() for m in self._finder.finditer(text))
            return
        k, anchors = self.k, self.by_anchor
        for i in range(len(text) - k + 1):
            if text[i:i + k] in anchors:
                yield i

    def sub(self, text: str, replacement: str) -> str:
        """Every occurrence replaced, leftmost first and the longest there (as one alternation would)."""
        out, done = [], 0
        for i in self.starts(text):
            if i < done:
                continue
            for needle in self.by_anchor[text[i:i + self.k]]:
                if text.startswith(needle, i):
                    out += [text[done:i], replacement]
                    done = i + len(needle)
                    break
        return "".join(out) + text[done:] if out else text


def _marks(text: str, first: int, last: int) -> list[int]:
    """Where a `...` starts in text[first..last] (both inclusive)."""
    found, at = [], max(first, 0)
    while (at := text.find("...", at, last + 3)) >= 0:
        found.append(at)
        at += 1
    return found


class _Truncations:
    """Heads of secrets just before a `...` and tails just after: a repr cut short (pytest -l).

    A head starts with a secret's first characters and runs to the next `...` within the secret's
    length; a tail ends with its last characters and starts right after the nearest `...` before."""

    def __init__(self, values: Iterable[str]) -> None:
        forms = sorted({form for value in values for form in (value, repr(value)[1:-1]) if len(form) > _PARTIAL_MIN})
        self.heads: dict[str, list[str]] = {}
        self.tails: dict[str, list[str]] = {}
        for form in forms:
            self.heads.setdefault(form[:_PARTIAL_MIN], []).append(form)
            self.tails.setdefault(form[-_PARTIAL_MIN:], []).append(form)
        self._head_keys = _Literals(self.heads)
        self._tail_keys = _Literals(self.tails)

    def __bool__(self) -> bool:
        return bool(self.heads)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every head and tail, the longest at each place; each search stays within one
        secret's length of its anchor, so the cost is linear in the text."""
        spans = []
        for s in self._head_keys.starts(text):
            ends = [p for form in self.heads[text[s:s + _PARTIAL_MIN]]
                    for p in _marks(text, s + _PARTIAL_MIN, s + len(form) - 1) if text.startswith(form[:p - s], s)]
            if ends:
                spans.append((s, max(ends)))
        for start in self._tail_keys.starts(text):
            e = start + _PARTIAL_MIN
            starts = [p + 3 for form in self.tails[text[start:e]]
                      for p in _marks(text, e - len(form) - 2, start - 3)
                      if text.startswith(form[len(form) - (e - p - 3):], p + 3)]
            if starts:
                spans.append((min(starts), e))
        return spans

    def sub(self, text: str, replacement: str) -> str:
        out, done = [], 0
        for s, e in sorted(self.spans(text)):
            if s < done:
                s = done
            if s < e:
                out += [text[done:s], replacement]
                done = e
        return "".join(out) + text[done:] if out else text


class Redactor:
    """Masks a fixed set of secrets in text; falsy when it knows none. Linear in the text and the secrets."""

    def __init__(self, secrets: Iterable[Secret | str] = (), usernames: Iterable[str] = ()) -> None:
        values = {s.reveal() if isinstance(s, Secret) else s for s in secrets} - {""}
        users = sorted(set(usernames))
        needles = set().union(*(spellings(v, users) for v in values)) if values else set()
        self._literals = _Literals(needles)
        self._bytes = [n.encode() for n in sorted(needles, key=len, reverse=True) if len(n.encode()) >= 4]
        self._partial = _Truncations(values)

    def __bool__(self) -> bool:
        return bool(self._literals)

    def mask(self, text: str) -> str:
        if not self._literals:
            return text
        text = self._literals.sub(text, MASK)
        return self._partial.sub(text, MASK) if self._partial and "..." in text else text

    def found_in(self, text: str) -> bool:
        return self.mask(text) != text

    def mask_bytes(self, data: bytes) -> bytes:
        """For binary files: forms of 4 bytes or more only, shorter ones would hit random bytes."""
        for needle in self._bytes:
            data = data.replace(needle, MASK.encode())
        return data


def usernames_in(model: Any) -> set[str]:
    """Every `username` in a topology (a pydantic model tree): for the base64 of `user:secret`."""
    found: set[str] = set()
    if isinstance(model, list | tuple):
        for item in model:
            found |= usernames_in(item)
    elif isinstance(model, BaseModel):
        for name in type(model).model_fields:
            value = getattr(model, name)
            if name == "username" and isinstance(value, str):
                found.add(value)
            else:
                found |= usernames_in(value)
    return found


# --- log records ---------------------------------------------------------------------------

_FORMATTER = logging.Formatter()


def mask_record(record: logging.LogRecord, redactor: Redactor) -> None:
    """Mask a record's message, traceback and stack in place, before any handler formats it."""
    try:
        message = record.getMessage()
    except Exception:  # a bad format call: logging reports it itself when a handler formats it
        return
    masked = redactor.mask(message)
    if masked != message:
        record.msg, record.args = masked, None
    if record.exc_info and record.exc_info[1] is not None:
        text = _FORMATTER.formatException(record.exc_info)
        masked = redactor.mask(text)
        if masked != text:  # formatters use exc_text as is; the exception object goes
            record.exc_text, record.exc_info = masked, None
    if record.stack_info:
        record.stack_info = redactor.mask(record.stack_info)


def _masking_factory(previous: Callable[..., logging.LogRecord], redactor: Redactor) -> Callable[..., logging.LogRecord]:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        mask_record(record, redactor)
        return record

    return factory


@contextmanager
def redacted_logging(redactor: Redactor) -> Iterator[None]:
    """While active, every log record is masked whichever logger made it and whichever handler gets it."""
    previous = logging.getLogRecordFactory()
    if redactor:
        logging.setLogRecordFactory(_masking_factory(previous, redactor))
    try:
        yield
    finally:
        if redactor:
            logging.setLogRecordFactory(previous)


# --- streams ---------------------------------------------------------------------------------

class MaskingStream:
    """A text stream that masks what passes through, a line at a time (a secret is never split)."""

    def __init__(self, target: TextIO, redactor: Redactor) -> None:
        self.target = target
        self._redactor = redactor
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        cut = max(self._pending.rfind("\n"), self._pending.rfind("\r")) + 1
        if cut:
            self.target.write(self._redactor.mask(self._pending[:cut]))
            self._pending = self._pending[cut:]
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.target.write(self._redactor.mask(self._pending))
            self._pending = ""
        self.target.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def masking(stream: TextIO, redactor: Redactor) -> TextIO:
    return stream if isinstance(stream, MaskingStream) else cast(TextIO, MaskingStream(stream, redactor))


# --- the command line ----------------------------------------------------------------------

def redactor_for(sources: Iterable[str]) -> Redactor:
    """The secrets of these topologies that resolve now (the others cannot leak: nobody has them)."""
    from harness_kernel.errors import HarnessError
    from harness_kernel.topology.credentials import resolve_secret
    from harness_kernel.topology.loader import load_topology

    secrets: list[Secret] = []
    users: set[str] = set()
    for source in dict.fromkeys(sources):
        try:
            topology = load_topology(source)
        except (HarnessError, OSError, ValueError):
            continue
        users |= usernames_in(topology)
        for path, ref in topology.secret_refs():
            with contextlib.suppress(HarnessError):
                secrets.append(resolve_secret(ref, path))
    return Redactor(secrets, users)


def journal_sources(directory: Path) -> list[str]:
    """The topologies a journal's entries name, read leniently: recover itself reports bad entries."""
    sources = []
    for path in sorted(directory.glob("*.json")):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            source = json.loads(path.read_text()).get("topology_source")
            if isinstance(source, str):
                sources.append(source)
    return sources


def install_for_command(args: argparse.Namespace) -> None:
    """For the rest of a CLI process, mask the secrets the command can meet, in log records and on
    stdout/stderr: those of its --topology and, for `recover`, of every topology its journal names."""
    from harness_kernel.paths import state_dir

    sources = [args.topology] if isinstance(getattr(args, "topology", None), str) else []
    if getattr(args, "command", None) == "recover":
        with contextlib.suppress(OSError):  # recover itself says what is wrong with the state directory
            sources += journal_sources(state_dir(args.state_dir) / "journal")
    redactor = redactor_for(sources)
    if not redactor:
        return
    logging.setLogRecordFactory(_masking_factory(logging.getLogRecordFactory(), redactor))
    sys.stdout, sys.stderr = masking(sys.stdout, redactor), masking(sys.stderr, redactor)
