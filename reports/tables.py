"""A generic results table with pass/fail thresholds, rendered as self-contained HTML or Markdown.

Every scenario's table (scenarios.md S1..S7) is a `Table`: the columns, one row per step or
failure, the thresholds the user set, and notes. Cell and row verdicts are computed from the
thresholds here, once, so the HTML colours and the Markdown agree; a value a threshold needs
and the run did not measure is never a pass. The verdict line above a suite's table is the
test's own (`judged`, from its SLO checks), so it never says PASS over a failed test.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from reports.html import esc, page

Cell = float | int | str | None
Op = Literal["<=", ">=", "<", ">", "=="]
Better = Literal["lower", "higher"]
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "==": operator.eq,
}


class CellVerdict(StrEnum):
    """What a table's threshold says of one cell, a row or the table."""

    PASS = "pass"
    FAIL = "fail"
    NOT_JUDGED = "not judged"


@dataclass(frozen=True)
class Column:
    """`fmt` formats numbers; text cells are shown as they are. A column whose `better` is set holds a
    key figure: its values are kept night after night and judged for regressions in that direction,
    `points` when they are already percentages (a change is measured in points, not as a share of a
    share), `floor` the change in the column's unit too small to be a regression (24 ms of detection)."""

    key: str
    title: str
    fmt: str = "{:,.0f}"
    text: bool = False
    better: Better | None = None
    points: bool = False
    floor: float = 0.0


@dataclass(frozen=True)
class Threshold:
    """A rule on one column, e.g. `Threshold("total_s", "<=", 35, "failover")`."""

    column: str
    op: Op
    limit: float
    name: str = ""
    none_holds: bool = False  # an empty cell means nothing happened (no stall longer than the driver's gap threshold)

    def check(self, value: Cell) -> CellVerdict:
        if not isinstance(value, int | float):
            return CellVerdict.PASS if value is None and self.none_holds else CellVerdict.NOT_JUDGED
        return CellVerdict.PASS if _OPS[self.op](float(value), self.limit) else CellVerdict.FAIL

    def describe(self, columns: Sequence[Column]) -> str:
        title = next((c.title for c in columns if c.key == self.column), self.column)
        return f"{self.name or title}: {title} {self.op} {self.limit:g}"


@dataclass(frozen=True)
class Table:
    title: str
    columns: Sequence[Column]
    rows: Sequence[Mapping[str, Cell]]
    thresholds: Sequence[Threshold] = ()
    notes: Sequence[str] = ()
    verdict_column: bool = True
    extra_lines: Sequence[str] = field(default=())
    # False for a sweep: each step is judged, and its outcome is a figure (in extra_lines), not pass/fail
    overall_verdict: bool = True
    judged: str | None = None  # the test's verdict from its SLO checks: the verdict line says it when given

    @property
    def verdict_line(self) -> str | None:
        """What the line above the table says: the test's verdict, else what the thresholds say of the cells."""
        if not self.overall_verdict:
            return None
        return self.judged.upper() if self.judged is not None else self.verdict.value.upper()

    def cell_verdict(self, row: Mapping[str, Cell], key: str) -> CellVerdict:
        verdicts = [t.check(row.get(key)) for t in self.thresholds if t.column == key]
        return _combine(verdicts)

    def row_verdict(self, row: Mapping[str, Cell]) -> CellVerdict:
        return _combine([t.check(row.get(t.column)) for t in self.thresholds])

    def failures(self) -> list[str]:
        """One sentence per violated threshold, for assertion messages and the terminal summary."""
        found = []
        label = self.columns[0]
        for row in self.rows:
            for t in self.thresholds:
                if t.check(row.get(t.column)) is CellVerdict.FAIL:
                    was = format_cell(self._column(t.column), row.get(t.column))
                    found.append(f"{format_cell(label, row.get(label.key))}: {t.describe(self.columns)} (was {was})")
        return found

    @property
    def verdict(self) -> CellVerdict:
        return _combine([self.row_verdict(row) for row in self.rows])

    def _column(self, key: str) -> Column:
        return next((c for c in self.columns if c.key == key), Column(key, key))


def _combine(verdicts: Sequence[CellVerdict]) -> CellVerdict:
    """FAIL over NOT JUDGED over PASS: a threshold without its value is not a pass."""
    if CellVerdict.FAIL in verdicts:
        return CellVerdict.FAIL
    if CellVerdict.NOT_JUDGED in verdicts or not verdicts:
        return CellVerdict.NOT_JUDGED
    return CellVerdict.PASS


def format_cell(column: Column, value: Cell) -> str:
    if value is None:
        return "—"
    if isinstance(value, str) or column.text:
        return str(value)
    return column.fmt.format(value)


def _thresholds_line(table: Table) -> str:
    return "; ".join(t.describe(table.columns) for t in table.thresholds)


MODELLED_MARK = "◆"
MODELLED_LEGEND = f"{MODELLED_MARK} modelled: the platform's model gave this value; it was not measured"


def modelled_cell(text: str, classes: list[str]) -> tuple[str, list[str]]:
    """A value the platform's model gave, marked so that it never reads as a measurement."""
    return f"{text} {MODELLED_MARK}", [*classes, "modelled"]


def to_html_fragment(table: Table, modelled: Collection[str] = ()) -> str:
    """The table and its notes, for embedding in a larger page; the `modelled` columns (keys) marked in every cell."""
    head = "".join(f"<th class='{'text' if c.text else ''}'>{esc(c.title)}"
                   f"{' ' + MODELLED_MARK if c.key in modelled else ''}</th>" for c in table.columns)
    head += "<th class=text>verdict</th>" if table.verdict_column else ""
    body = []
    for row in table.rows:
        cells = []
        for column in table.columns:
            classes = ["text"] if column.text else []
            verdict = table.cell_verdict(row, column.key)
            classes += [verdict.value] if verdict is not CellVerdict.NOT_JUDGED else []
            text = format_cell(column, row.get(column.key))
            if column.key in modelled and row.get(column.key) is not None:
                text, classes = modelled_cell(text, classes)
            cells.append(f"<td class='{' '.join(classes)}'>{esc(text)}</td>")
        if table.verdict_column:
            verdict = table.row_verdict(row)
            css = f"text {verdict.value}" if verdict is not CellVerdict.NOT_JUDGED else "text"
            cells.append(f"<td class='{css}'>{esc(verdict.value.upper())}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    line = table.verdict_line
    css = (line or "").lower().split(" ")[0] if line != "NOT JUDGED" else "not-judged"
    parts = [f"<p>Verdict: <span class='verdict-{css}'>{esc(line)}</span></p>"] if line is not None else []
    parts.append(f"<table class=scenario-table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
    parts += [f"<p><strong>{esc(line)}</strong></p>" for line in table.extra_lines]
    if table.thresholds:
        parts.append(f"<p class=note>Thresholds: {esc(_thresholds_line(table))}</p>")
    if table.notes:
        parts.append("<ul>" + "".join(f"<li class=note>{esc(n)}</li>" for n in table.notes) + "</ul>")
    if any(c.key in modelled for c in table.columns):
        parts.append(f"<p class=note>{esc(MODELLED_LEGEND)}</p>")
    return "\n".join(parts)


def to_html(table: Table) -> str:
    """A standalone page: inline CSS, no scripts, readable as an attachment or on its own."""
    return page(table.title, to_html_fragment(table))


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(table: Table) -> str:
    titles = [c.title for c in table.columns] + (["verdict"] if table.verdict_column else [])
    line = table.verdict_line
    headline = [f"**Verdict: {line}**", ""] if line is not None else []
    lines = [f"### {table.title}", "", *headline,
             "| " + " | ".join(_md_escape(t) for t in titles) + " |",
             "|" + "|".join(":---" if c.text else "---:" for c in table.columns) + ("|:---|" if table.verdict_column else "|")]
    for row in table.rows:
        cells = [format_cell(c, row.get(c.key)) for c in table.columns]
        if table.verdict_column:
            verdict = table.row_verdict(row)
            cells.append(verdict.value.upper() if verdict is not CellVerdict.NOT_JUDGED else "—")
        lines.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    lines += [""] + [f"**{line}**" for line in table.extra_lines] + ([""] if table.extra_lines else [])
    if table.thresholds:
        lines.append(f"Thresholds: {_thresholds_line(table)}")
    lines += [f"- {n}" for n in table.notes]
    return "\n".join(lines).rstrip() + "\n"
