"""The page a change board opens: the run's verdict, every scenario's table and figures, the trend, the environment.

One self-contained HTML file, built from the run's Allure results and the figures history. Its
first screen answers "did it pass, what got worse, what are the numbers"; each test links into
the full Allure report, which travels inside the same file (gzip, base64) and opens in a new tab
from a Blob, so the file works offline and alone. Nothing on it loads anything from anywhere.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reports.allure.generate import SINGLE_FILE_NAME
from reports.allure.results_read import RecordedTest
from reports.html import STYLE, esc
from reports.outcome import MEANING, ORDER, Verdict, run_verdict, test_verdict
from reports.regression import Judgement, Night, RegressionRule
from reports.scenario_record import HALTED, Judged
from reports.tables import MODELLED_MARK

# each verdict's colour on the page
CSS_CLASS: dict[Verdict, str] = {"FAIL": "fail", "ERROR": "broken", "INCONCLUSIVE": "amber",
                                 "PASS with findings": "amber", "PASS": "pass", "SKIP": "skip"}
SUMMARY_STYLE = STYLE + """
body{max-width:78rem}
header{border-bottom:2px solid #1d2430;margin-bottom:.8rem;padding-bottom:.4rem}
.banner{font-size:1.35rem;font-weight:700;padding:.45rem .7rem;border-radius:.3rem;display:inline-block}
.banner.pass{background:#dff3e3;color:#13582a}.banner.fail{background:#fadddd;color:#8a1414}
.banner.broken{background:#fde9c8;color:#7a4a00}.banner.amber{background:#fff1c2;color:#6b4e00}
.banner.skip{background:#e8ebef;color:#1d2430}
.regressed{color:#8a1414;font-weight:700}
h2{font-size:1.05rem;margin:1.2rem 0 .3rem;border-bottom:1px solid #c9d1dc}
h3{font-size:.95rem;margin:.8rem 0 .2rem}
td.status-pass{color:#13582a;font-weight:700}td.status-fail{color:#8a1414;font-weight:700}
td.status-broken{color:#7a4a00;font-weight:700}td.status-amber{color:#6b4e00;font-weight:700}
.verdict-amber{color:#6b4e00;font-weight:700}.verdict-broken{color:#7a4a00;font-weight:700}
td.figures{white-space:normal;text-align:left;font-size:.85rem}
table.overview td{padding:.05rem .5rem;line-height:1.2}
table{max-width:100%}th,td.text{white-space:normal}td.how,table.record td{overflow-wrap:anywhere}
td.modelled{font-style:italic;background:#f3eefa}
p.platform{font-size:.95rem;margin:.4rem 0}
img.plot{max-width:100%;height:auto;display:block;margin:.3rem 0}
.meta{color:#4a5566;font-size:.85rem}
button.allure{font-size:.9rem;padding:.3rem .7rem;margin:.3rem 0}
svg.spark{vertical-align:middle}
table.environment td{white-space:normal;max-width:60rem}
@media print{button.allure,.screen-only{display:none}a{color:inherit;text-decoration:none}
body{margin:0;font-size:9pt}table{font-size:7.5pt}th,td{white-space:normal;padding:.15rem .3rem}
section.scenario{break-inside:avoid}h2{break-after:avoid}}
@page{size:A4;margin:12mm 12mm 14mm;@bottom-right{content:"page " counter(page) " of " counter(pages);
font:8pt system-ui,sans-serif;color:#4a5566}}
table.record td{white-space:normal;text-align:left}
.signoff td{height:1.6rem;min-width:9rem}
"""
OPEN_ALLURE = """
async function allureHtml(){
  if(window.__allure) return window.__allure;
  const b64=document.getElementById('allure-report').textContent.trim();
  const bytes=Uint8Array.from(atob(b64),c=>c.charCodeAt(0));
  window.__allure=await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text();
  return window.__allure;
}
async function openAllure(id){
  const tab=window.open('','_blank');
  const html=await allureHtml();
  tab.document.open();tab.document.write(html);tab.document.close();
  if(id) tab.location.hash=id;
  return false;
}
"""


@dataclass(frozen=True)
class SummaryInput:
    name: str
    generated_at: str
    tests: Sequence[RecordedTest]
    environment: Mapping[str, str]
    judgements: Sequence[Judgement]
    history: Sequence[Night]  # earlier nights, oldest first
    rule: RegressionRule
    report_ids: Mapping[str, str]  # test uuid -> Allure route id
    allure_html: str | None  # the Allure single file, embedded when given
    modelled_note: str = ""
    evidence: tuple[str, str] | None = None  # the evidence archive's file name and SHA-256


def overall(tests: Sequence[RecordedTest], judgements: Sequence[Judgement] = ()) -> Verdict:
    """The run's verdict: the worst of its tests', a regressed figure making a pass one with findings."""
    regressed = regressed_keys(judgements)
    return run_verdict((verdict_of(t, regressed) for t in tests), regressed=bool(regressed))


def regressed_keys(judgements: Sequence[Judgement]) -> frozenset[str]:
    return frozenset(j.key for j in judgements if j.regressed)


def verdict_of(test: RecordedTest, regressed: Collection[str] = ()) -> Verdict:
    """A test's verdict from its Allure status and its record: INCONCLUSIVE verdicts, findings (a row its table
    judged FAIL in a test that passed, as a sweep that characterises has; a figure that regressed tonight)."""
    record = test.record
    findings = record is not None and (bool(record.findings) or record.verdict == "fail" or bool(record.weaker_replication)
                                       or any(f.key in regressed for f in record.figures))
    return test_verdict(test.status, inconclusive=bool(inconclusive([test])), findings=findings)


def shown_verdict(test: RecordedTest, verdict: Verdict) -> str:
    """The verdict as the page prints it: a FAIL whose trial a guard stopped early says so (the fault was reverted
    before its window ended; the figures are the trial's until then)."""
    halted = test.record is not None and any(v.name.startswith(HALTED) and v.outcome == "FAIL"
                                             for v in test.record.verdicts)
    return f"{verdict} (halted by a guard)" if halted else verdict


def _link(test: RecordedTest, ids: Mapping[str, str], text: str) -> str:
    route = ids.get(test.uuid)
    if route is None:
        return esc(text)
    # with scripts the embedded report opens; without (a mail or document preview) the file beside this one does
    return (f"<a href='{SINGLE_FILE_NAME}#{esc(route)}' onclick=\"openAllure('{esc(route)}'); return false\">"
            f"{esc(text)}</a>")


def sparkline(values: Sequence[float], *, regressed: bool, width: int = 120, height: int = 24) -> str:
    """Earlier nights and tonight (the last point, larger), as inline SVG: no script, prints as drawn."""
    if len(values) < 2:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = (width - 8) / (len(values) - 1)
    points = [(4 + i * step, height - 4 - (v - low) / span * (height - 8)) for i, v in enumerate(values)]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    x, y = points[-1]
    colour = "#8a1414" if regressed else "#13582a"
    return (f"<svg class=spark width={width} height={height} viewBox='0 0 {width} {height}' role=img>"
            f"<polyline points='{path}' fill=none stroke='#6b7a90' stroke-width=1.2 />"
            f"<circle cx='{x:.1f}' cy='{y:.1f}' r=3 fill='{colour}' /></svg>")


def inconclusive(tests: Sequence[RecordedTest]) -> list[tuple[str, Judged]]:
    """The verdicts a passed test could not give: its figure's 95 % interval holds the threshold."""
    return [(t.record.title, v) for t in tests if t.record is not None and t.status == "passed"
            for v in t.record.verdicts if v.outcome == "INCONCLUSIVE"]


def _banner(tests: Sequence[RecordedTest], judgements: Sequence[Judgement]) -> str:
    regressed = [j for j in judgements if j.regressed]
    keys = regressed_keys(judgements)
    verdict = overall(tests, judgements)
    counts: dict[Verdict, int] = {v: 0 for v in ORDER}
    for test in tests:
        counts[verdict_of(test, keys)] += 1
    detail = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    parts = [f"<span class='banner {CSS_CLASS[verdict]}'>{esc(verdict)}: {esc(MEANING[verdict])}</span>",
             f"<p class=meta>{len(tests)} tests: {esc(detail)}</p>"]
    weaker = [t.record for t in tests if t.record is not None and t.record.weaker_replication]
    if weaker:
        parts.append("<p class=regressed>Replication weaker than the policy (a lost-commit count of 0 is then not "
                     "judged a pass): " + "; ".join(esc(f"{r.title}: {r.weaker_replication}") for r in weaker) + "</p>")
    if regressed:
        parts.append(f"<p class=regressed>{len(regressed)} figure(s) got worse than their recent nights:</p>"
                     + _regressions(regressed))
    else:
        judged = sum(1 for j in judgements if j.judged)
        short = "" if judged == len(judgements) else "; the others have too short a history"
        parts.append(f"<p class=meta>No figure got worse than its recent nights ({judged} of {len(judgements)} "
                     f"figures judged{short}).</p>")
    return "\n".join(parts)


def _verdict_notes(tests: Sequence[RecordedTest], judgements: Sequence[Judgement]) -> str:
    """What keeps a verdict from a plain PASS, test by test, under the overview (whose rows say which): the
    first screen keeps every scenario's row."""
    keys = regressed_keys(judgements)
    unsure = inconclusive(tests)
    with_findings = [t for t in tests if verdict_of(t, keys) == "PASS with findings"]
    parts = []
    if unsure:
        parts.append("<p class=meta>INCONCLUSIVE (the threshold lies inside the figure's 95 % interval; longer "
                     "windows or repeated trials would settle it): "
                     + "; ".join(esc(f"{title}: {v.name} {v.value:.2f} [{v.low:.2f}, {v.high:.2f}] {v.op} "
                                     f"{v.threshold:g}") for title, v in unsure
                                 if v.value is not None and v.low is not None and v.high is not None) + "</p>")
    if with_findings:
        parts.append("<p class=meta>Findings: " + "; ".join(
            esc(f"{t.record.title}: {f}") for t in with_findings if t.record is not None for f in t.record.findings)
            + "</p>")
    return "\n".join(parts)


def _table(head: Sequence[str], rows: Sequence[str], *, css: str = "") -> str:
    """A table of whole `<tr>` rows under `head` (a header ending in ":" heads a text column, left-aligned)."""
    cells = "".join(f"<th class=text>{esc(h[:-1])}</th>" if h.endswith(":") else f"<th>{esc(h)}</th>" for h in head)
    return (f"<table{f' class={css}' if css else ''}><thead><tr>{cells}</tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>")


def _regressions(regressed: Sequence[Judgement]) -> str:
    """Each regressed figure as a row: tonight, the median it is compared with (of n nights), the limit, the change."""
    rows = []
    for j in regressed:
        if j.reference is None or j.band is None:
            continue
        limit = j.reference + j.band if j.better == "lower" else j.reference - j.band
        change = j.tonight - j.reference
        share = f" ({100 * change / j.reference:+.0f} %)" if j.reference else ""
        how = "change point" if j.by_median is not None else "median rule"
        rows.append(f"<tr><td class=text>{esc(j.key)}</td><td>{j.tonight:.3g}</td>"
                    f"<td>{j.reference:.3g} ({len(j.earlier)})</td><td>{limit:.3g}</td><td>{change:+.3g}{share}</td>"
                    f"<td class=text>{how}</td></tr>")
    return _table(["figure:", "tonight", "median of earlier nights (n)", "limit", "change", "found by:"], rows,
                  css="regressions")


def _overview(tests: Sequence[RecordedTest], ids: Mapping[str, str], regressed: Collection[str]) -> str:
    rows = []
    for test in sorted(tests, key=lambda t: (t.scenario or "~", t.start or 0)):
        figures = ", ".join(f"{k} {v}" for k, v in test.record.numbers.items()) if test.record else ""
        why = f"<br><span class=meta>{esc(test.message.splitlines()[0][:200])}</span>" \
            if test.status in ("failed", "broken") and test.message else ""
        verdict = verdict_of(test, regressed)
        rows.append(f"<tr><td class=text>{esc(test.scenario or '—')}</td><td class=text>{_link(test, ids, test.title)}</td>"
                    f"<td class='text status-{CSS_CLASS[verdict]}'>{esc(shown_verdict(test, verdict))}</td>"
                    f"<td class=figures>{esc(figures)}{why}</td></tr>")
    return ("<table class=overview><thead><tr><th class=text>scenario</th><th class=text>test</th>"
            "<th class=text>verdict</th><th class=text>key figures</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _trend(test: RecordedTest, by_key: Mapping[str, Judgement], history: Sequence[Night], rule: RegressionRule) -> str:
    if test.record is None or not test.record.figures:
        return ""
    nights_of = {f.key: [night.figures[f.key] for night in history if f.key in night.figures][-rule.window:]
                 for f in test.record.figures}
    if not any(nights_of.values()):  # a table of dashes says less than one line
        modelled = [f"{f.row} · {f.column}" for f in test.record.figures if f.provenance != "measured"]
        never = f"; modelled, so never judged across nights: {', '.join(modelled)} {MODELLED_MARK}" if modelled else ""
        return (f"<p class=note>Figures over the last nights: none yet (tonight is the first night of its "
                f"{len(test.record.figures)} kept figures){esc(never)}.</p>")
    rows = []
    for figure in test.record.figures:
        judgement = by_key.get(figure.key)
        earlier = nights_of[figure.key]
        regressed = judgement is not None and judgement.regressed
        verdict = (f"modelled: not judged {MODELLED_MARK}" if figure.provenance != "measured" else
                   "<span class=regressed>regressed</span>" if regressed else
                   "within band" if judgement is not None and judgement.judged else f"{len(earlier)} earlier night(s)")
        reference = (f"{judgement.reference:.3g} ({len(judgement.earlier)})"
                     if judgement is not None and judgement.reference is not None else "—")
        rows.append(f"<tr><td class=text>{esc(figure.row)} · {esc(figure.column)}</td><td>{esc(figure.shown)}</td>"
                    f"<td>{reference}</td><td class=text>{verdict}</td>"
                    f"<td>{sparkline([*earlier, figure.value], regressed=regressed)}</td></tr>")
    return "<h3>Figures over the last nights</h3>" + _table(
        ["figure:", "tonight", "median of earlier nights (n)", "trend verdict:", "nights"], rows)


def _scenarios(summary: SummaryInput) -> str:
    by_key = {j.key: j for j in summary.judgements}
    regressed = regressed_keys(summary.judgements)
    parts = []
    for test in sorted(summary.tests, key=lambda t: (t.scenario or "~", t.start or 0)):
        if test.record is None:
            continue
        record, verdict = test.record, verdict_of(test, regressed)
        parts.append(f"<section class=scenario><h2>{_link(test, summary.report_ids, record.title)} — "
                     f"<span class='verdict-{CSS_CLASS[verdict]}'>{esc(shown_verdict(test, verdict))}</span></h2>"
                     f"<p class=meta>fault: {esc(record.mechanism)} on {esc(record.target)}</p>"
                     f"{record.table_html}{_plot(test)}{_verdicts(record.verdicts)}{_ledger(record.ledger)}"
                     f"{_replication(record.replication)}"
                     f"{_findings([*record.findings, *([record.weaker_replication] if record.weaker_replication else [])])}"
                     f"{_trend(test, by_key, summary.history, summary.rule)}</section>")
    return "\n".join(parts)


def _verdicts(verdicts: Sequence[Judged]) -> str:
    """Each SLO verdict: the figure with its 95 % interval when it is an estimate, the threshold, the outcome."""
    if not verdicts:
        return ""
    rows = []
    for v in verdicts:
        shown = "not measured" if v.value is None else f"{v.value:.2f}{(' ' + v.unit) if v.unit else ''}"
        if v.low is not None and v.high is not None:
            shown += f" [{v.low:.2f}, {v.high:.2f}]"
        shown += f" {MODELLED_MARK}" if v.provenance == "modelled" else ""
        how = f"{v.method} ({v.n} nights)" if v.interval_from_nights else v.method or "as measured"
        how += f"; read from the cluster: {v.basis}" if v.basis else ""
        rows.append(f"<tr><td class=text>{esc(v.name)}</td><td>{esc(shown)}</td><td>{esc(v.op)} {v.threshold:g}</td>"
                    f"<td class=text>{esc(v.outcome)}</td><td class='text how'>{esc(v.note or how)}</td></tr>")
    return ("<h3>Verdicts</h3><table><thead><tr><th class=text>figure</th><th>value [95 % interval]</th>"
            "<th>required</th><th class=text>outcome</th><th class=text>how</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _plot(test: RecordedTest) -> str:
    """The scenario's throughput timeline as it attached it, inline (the page and its PDF stand alone)."""
    if test.plot is None:
        return ""
    data = base64.b64encode(test.plot).decode("ascii")
    return f"<img class=plot src='data:image/png;base64,{data}' alt='{esc(test.title)}: throughput timeline'>"


def _ledger(books: Mapping[str, Any] | None) -> str:
    """The commit ledger's books under the lost-commit verdict, so that a reader can re-count it."""
    if not books:
        return ""
    lost = books.get("lost") or []
    named = f" (first ids: {', '.join(str(i) for i in lost[:10])})" if lost else ""
    ranges = books.get("short_ranges") or []
    where = ("; missing from " + ", ".join(f"client {c} commits {first} to {last} ({missing} missing)"
                                           for c, first, last, missing in ranges[:5])
             + (f" and {len(ranges) - 5} more ranges" if len(ranges) > 5 else "")) if ranges else ""
    return (f"<p class=meta>Commit ledger: {books.get('acknowledged', 0):,} acknowledged, "
            f"{books.get('acknowledged_present', 0):,} of them present after the run, {books.get('lost_count', 0):,} "
            f"lost{esc(named)}{esc(where)}; {books.get('failed', 0):,} failed or in flight at the fault (outcome "
            f"unknown to the client), {books.get('failed_present_count', 0):,} of them committed anyway (not counted "
            "as lost).</p>")


def _replication(readings: Sequence[str]) -> str:
    """The replication mode as the cluster said it before, during and after the fault (never the design's)."""
    if not readings:
        return ""
    return ("<p class=meta>Replication, read from the cluster:</p><ul class=meta>"
            + "".join(f"<li>{esc(r)}</li>" for r in readings) + "</ul>")


def _findings(findings: Sequence[str]) -> str:
    """What no threshold judges and the board must still see (an outage inside a window meant to be steady)."""
    if not findings:
        return ""
    return ("<h3>Findings</h3><ul>" + "".join(f"<li class=note>{esc(f)}</li>" for f in findings) + "</ul>")


def _utc(ms: int | None) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if ms else "?"


def _run_record(summary: SummaryInput) -> str:
    """What ties this page to its run, its code, its topology and its evidence, and the board's sign-off."""
    env = summary.environment
    starts = [t.start for t in summary.tests if t.start]
    stops = [t.stop for t in summary.tests if t.stop]
    harness = env.get("harness.version", "?") + (f", commit {env['harness.commit']}" if env.get("harness.commit") else "")
    topology = (f"{env['topology.file']} (SHA-256 {env['topology.sha256']})" if env.get("topology.file")
                else f"{env.get('topology', '?')} (built by the harness, no file)")
    rows = [("run", env.get("run.id", "?")),
            ("from / to", f"{_utc(min(starts) if starts else None)} / {_utc(max(stops) if stops else None)}"),
            ("operator", env.get("run.operator", "?")), ("command", env.get("run.command", "?")),
            ("harness", harness), ("topology", topology),
            ("platform", env.get("product.platform", "as named in the topology (not simulated by the harness)")),
            ("change ticket", env.get("run.change_ticket", "none given (--change-ticket)"))]
    if env.get("run.guardian"):
        rows.append(("guardian", env["run.guardian"]))
    if summary.evidence is not None:
        name, digest = summary.evidence
        rows.append(("evidence archive", f"{name} SHA-256 {digest}"))
    cells = "".join(f"<tr><th class=text>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    signoff = "".join(f"<th class=text>{h}</th>" for h in ("name", "role", "date", "decision", "signature"))
    return (f"<h2>Run record</h2><table class=record><tbody>{cells}</tbody></table>"
            f"<h3>Sign-off</h3><table class=signoff><thead><tr>{signoff}</tr></thead><tbody>"
            + "<tr><td></td><td></td><td></td><td></td><td></td></tr>" * 2 + "</tbody></table>")


def _environment(environment: Mapping[str, str], tests: Sequence[RecordedTest], modelled_note: str) -> str:
    rows = "".join(f"<tr><td class=text>{esc(k.removeprefix('product.'))}</td><td class=text>{esc(v)}</td></tr>"
                   for k, v in environment.items())
    mechanisms = sorted({f"{t.record.mechanism}" for t in tests if t.record is not None})
    note = f"<p class=note>{esc(modelled_note)}</p>" if modelled_note else ""
    return (f"<h2>Environment</h2><table class=environment><tbody>{rows}</tbody></table>"
            f"<p class=meta>Faults and how they were made: {esc('; '.join(mechanisms))}</p>{note}")


def _platform_line(environment: Mapping[str, str], modelled_note: str) -> str:
    """On the first screen: what the platform was, what of it was simulated, and what the model gave."""
    platform = environment.get("product.platform")
    if platform is None:
        return ""
    modelled = (f" Figures a model gave rather than a measurement are marked {MODELLED_MARK} (the model's settings: "
                "Environment)." if modelled_note else "")
    return f"<p class=platform><strong>Platform:</strong> {esc(platform)}.{esc(modelled)}</p>"


def render(summary: SummaryInput) -> str:
    modelled = summary.environment.get("product.modelled")
    modelled_note = summary.modelled_note or (
        f"Modelled rather than done on this platform: {modelled}" if modelled else "")
    embedded = ""
    button = ""
    if summary.allure_html is not None:
        packed = base64.b64encode(gzip.compress(summary.allure_html.encode("utf-8"), 6)).decode("ascii")
        embedded = f"<script type='application/gzip;base64' id='allure-report'>{packed}</script>"
        button = ("<button class=allure onclick='openAllure(null)'>Open the full Allure report "
                  "(every test, step, plot and attachment)</button>")
    button += (f" <span class=meta>or, without scripts (a mail or document preview), <a href='{SINGLE_FILE_NAME}'>"
               f"{SINGLE_FILE_NAME}</a> beside this page</span>")
    body = "\n".join([
        f"<header><h1>{esc(summary.name)}</h1><p class=meta>generated {esc(summary.generated_at)} · topology "
        f"{esc(summary.environment.get('topology', '?'))}</p>{_banner(summary.tests, summary.judgements)}"
        f"{_platform_line(summary.environment, modelled_note)}"
        f"<div class=screen-only>{button}</div></header>",
        "<h2>Scenarios</h2>", _overview(summary.tests, summary.report_ids, regressed_keys(summary.judgements)),
        _verdict_notes(summary.tests, summary.judgements),
        _run_record(summary),
        _scenarios(summary),
        _environment(summary.environment, summary.tests, modelled_note),
        f"<p class=note>Regression rule: a figure regresses when it is {esc(summary.rule.describe())}.</p>",
    ])
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(summary.name)}</title>'
            f"<style>{SUMMARY_STYLE}</style><script>{OPEN_ALLURE}</script></head>\n<body>\n{body}\n{embedded}\n"
            "</body></html>\n")
