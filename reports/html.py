"""The one HTML page shell every attachment uses, so tables and records look alike and stand alone."""

from __future__ import annotations

from html import escape

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1rem;color:#1d2430}
h1{font-size:1.15rem;margin:0 0 .6rem}
table{border-collapse:collapse;margin:.4rem 0 .8rem;font-size:.9rem}
th,td{border:1px solid #c9d1dc;padding:.3rem .55rem;text-align:right;white-space:nowrap}
th{background:#eef2f7}
td.text,th.text{text-align:left}
td.pass{background:#dff3e3;color:#13582a}
td.fail{background:#fadddd;color:#8a1414;font-weight:600}
p.note,li.note{color:#4a5566;font-size:.85rem;margin:.2rem 0}
.verdict-pass{color:#13582a;font-weight:700}
.verdict-fail{color:#8a1414;font-weight:700}
"""


def esc(value: object) -> str:
    """Escape any value for HTML text or attribute context."""
    return escape(str(value), quote=True)


def page(title: str, body: str) -> str:
    """A complete self-contained page: inline style, no scripts, no external resources."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n<h1>{esc(title)}</h1>\n{body}\n</body></html>\n")
