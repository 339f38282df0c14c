"""What a suite test says about its run, in one call: labels, evidence, the kept table, key numbers.

Every scenario test ends the same way: a title as the published tables name it ("S2 · disk
group on esx-b1/0") with plain parameters, Allure labels (epic = scenario, feature = fault
kind, story = target), the plots / metrics / fault record / table attached, the scenario
record (table and key figures, for the summary page and the nightly trend), the table written
to `--tables-dir` for the demo's summary, and its figures in the closing summary.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.analysis.intervals import NIGHTS_METHOD, nights_interval
from harness.analysis.slo import Finding, SloCheck, assert_verdicts
from harness.experiment import Experiment
from harness_kernel.history import EventKind
from harness_kernel.history.series import MetricSeries
from harness_kernel.history.timeline import Timeline
from harness_kernel.topology.targets import shown
from reports.allure.steps import (
    Evidence,
    ExperimentLabels,
    apply_labels,
    attach_evidence,
    attach_json,
    title_and_parameters,
)
from reports.fault_record import fault_windows
from reports.plots import Threshold
from reports.regression import verdict_key
from reports.scenario_record import ATTACHMENT_NAME, HALTED, Judged, Scenario, ScenarioRecord, scenario_record
from reports.tables import Table, to_html, to_markdown


def human_title(scenario: str, title: str, target: str) -> str:
    """"S2 disk group" on "diskgroup:esx-b1/0" -> "S2 · disk group on esx-b1/0"."""
    what = title.removeprefix(scenario).strip()
    return f"{scenario} · {what} on {shown(target)}"


def mechanism(timeline: Timeline, fault_kind: str, target: str) -> str:
    """How the fault was made: its kind and what acted, as its INJECT event says (the history alone, never the
    registry: the platform may be gone by the time a report is built)."""
    injected = [e for e in timeline.events(EventKind.INJECT)
                if e.attrs.get("fault") == fault_kind and e.attrs.get("target") == target]
    acting = injected[-1].attrs.get("acting") if injected else None
    via = acting.get("via") if isinstance(acting, dict) else None
    return f"{fault_kind} via {via}" if via else fault_kind


def tps_floor(experiment: Experiment) -> Threshold | None:
    """The TPS the first baseline sets as the floor (the SLO's share of its mean), for the throughput plot."""
    start = next(iter(experiment.timeline.events(EventKind.BASELINE_START)), None)
    if start is None:
        return None
    points = experiment.series.points(int(start.t) + 1, int(start.t + experiment.durations.baseline_s))
    if not points:
        return None
    ratio = experiment.harness_run.topology.slo.tps_after_min_ratio
    mean = sum(p.tps for p in points) / len(points)
    return Threshold(f"threshold: {100 * ratio:g} % of the first baseline's {mean:.0f} TPS", ratio * mean)


def books(experiment: Experiment) -> dict[str, Any] | None:
    """The ledger's totals and the ids it names, as the workload proved them (None: no ledger was kept)."""
    return dataclasses.asdict(experiment.ledger) if experiment.ledger is not None else None


def reverts(experiment: Experiment) -> dict[str, str]:
    """How long the longest revert took (a host brought back can take a minute): a key figure of its own."""
    took = [w.revert_s for w in fault_windows(experiment.timeline) if w.revert_s is not None]
    return {"revert": f"{max(took):.0f} s" + (f" (longest of {len(took)})" if len(took) > 1 else "")} if took else {}


def judged(check: SloCheck) -> Judged:
    """A verdict as the scenario record keeps it."""
    interval = check.interval
    note = check.not_judged or (check.settle() if check.outcome == "INCONCLUSIVE" else "")
    return Judged(check.name, check.measured, check.unit.strip(), check.op, check.threshold, check.outcome,
                  interval.low if interval else None, interval.high if interval else None,
                  interval.level if interval else None, interval.n if interval else None,
                  interval.method if interval else "", note=note, trial_figure=check.trial_figure,
                  interval_from_nights=interval is not None and interval.method == NIGHTS_METHOD, basis=check.basis,
                  provenance="modelled" if check.modelled else "measured")


def test_outcome(checks: Sequence[SloCheck]) -> str:
    """The test's verdict as its checks give it (FAIL fails the test): the verdict line of its table."""
    outcomes = {c.outcome for c in checks}
    return next((o for o in ("FAIL", "INCONCLUSIVE", "NOT JUDGED") if o in outcomes), "PASS" if checks else "NOT JUDGED")


def with_nights_interval(check: SloCheck, earlier: Sequence[float]) -> SloCheck:
    """A figure measured in one trial tonight takes its interval from the spread of its last nights (when it has
    enough of them); a figure with an interval of tonight's own keeps it."""
    if not check.trial_figure or check.interval is not None or check.measured is None or check.not_judged:
        return check
    interval = nights_interval(check.measured, list(earlier))
    return check if interval is None else dataclasses.replace(check, interval=interval)


@dataclass
class ScenarioReport:
    tables_dir: Path | None
    numbers: MutableMapping[str, str]
    # each figure's values on the earlier nights (`--figures-history`), keyed as the history keys a verdict
    nights: Mapping[str, Sequence[float]] = field(default_factory=dict)
    pending: list[ScenarioRecord] = field(default_factory=list)  # recorded, its verdicts not yet given
    halted: list[str] = field(default_factory=list)  # trials of the recorded experiment a guard stopped early
    kept: tuple[Table, str] | None = None  # the table written at record, rewritten with the test's verdict


    def record(self, scenario: Scenario, experiment: Experiment, *, fault_kind: str, target: str, title: str,
               table: Table | None, table_name: str | None = None, numbers: Mapping[str, str] | None = None,
               metrics: Sequence[MetricSeries] = (), modelled: Collection[str] = (),
               findings: Sequence[str] = ()) -> None:
        """`metrics`: more series to plot beside the workload's (an I/O workload's IOPS); `modelled`: the table's
        columns (keys) whose values the platform's model gave, kept out of the nightly trend; `findings`: what no
        threshold judges and a reader must see (an outage inside a window meant to be steady), warned as such."""
        self.halted = list(experiment.halted)
        code = scenario.code
        title_and_parameters(human_title(code, title, target), {"fault kind": fault_kind, "target": target})
        apply_labels(ExperimentLabels(scenario=scenario, fault_kind=fault_kind, target=target))
        resync = [experiment.resync_bytes] if any(p.value > 0 for p in experiment.resync_bytes.points()) else []
        observed = list(experiment.observed.values())  # the platforms' observers' figures
        attach_evidence(Evidence(timeline=experiment.timeline, series=experiment.series,
                                 metrics=[*resync, *metrics, *observed],
                                 table=table, title=title, tps_floor=tps_floor(experiment), ledger=books(experiment)))
        numbers = {**(numbers or {}), **reverts(experiment)}
        weaker = experiment.weaker_replication
        if experiment.put_back:  # the report says when the run had to put replication back
            findings = [*findings, f"replication put back after the fault: {', '.join(experiment.put_back)}"]
        self.pending.append(scenario_record(code, human_title(code, title, target), fault_kind=fault_kind,
                                            target=target, mechanism=mechanism(experiment.timeline, fault_kind, target),
                                            table=table, numbers=numbers, modelled=modelled,
                                            findings=findings, ledger=books(experiment),
                                            replication=[r.describe() for r in experiment.replication],
                                            weaker_replication=weaker or ""))
        for finding in [*findings, *([weaker] if weaker else [])]:
            warnings.warn(Finding(f"{human_title(code, title, target)}: {finding}"), stacklevel=2)
        if table is not None and table_name is not None:
            self.keep_until_judged(table, table_name)
        self.numbers.update(numbers)

    def judge(self, checks: Sequence[SloCheck]) -> list[SloCheck]:
        """The verdicts into the scenario record (attached now), then judged: an AssertionError for a FAIL, a
        warning (flagged in the summary) for an INCONCLUSIVE (`harness.analysis.slo.assert_verdicts`). A trial a
        guard stopped early fails the scenario, its figures kept (a failover slower than the guard allows)."""
        if self.halted:
            checks = [*checks, SloCheck(f"{HALTED} ({'; '.join(self.halted)})",
                                        float(len(self.halted)), "<=", 0)]
        if self.pending:
            last = self.pending.pop()
            checks = [with_nights_interval(c, self.nights.get(verdict_key(last.case, c.name), ())) for c in checks]
            self.pending.append(dataclasses.replace(last, verdicts=[judged(c) for c in checks]))
        self.flush()
        if self.kept is not None:
            table, name = self.kept
            self.keep_table(dataclasses.replace(table, judged=test_outcome(checks)), name)
        return assert_verdicts(checks)

    def flush(self) -> None:
        """Attach what was recorded (a test that gives no verdict, or fails before it, still leaves its record)."""
        while self.pending:
            attach_json(self.pending.pop(0).to_json(), ATTACHMENT_NAME)

    def keep_until_judged(self, table: Table, name: str) -> None:
        """The table kept now with no verdict line (a test that breaks before its verdicts leaves it so); `judge`
        writes it again with the test's verdict."""
        self.kept = (table, name)
        self.keep_table(dataclasses.replace(table, overall_verdict=False), name)

    def keep_table(self, table: Table, name: str) -> None:
        """The scenario table as Markdown, HTML and JSON, for the demo's summary and the change board."""
        if self.tables_dir is None:
            return
        self.tables_dir.mkdir(parents=True, exist_ok=True)
        (self.tables_dir / f"{name}.md").write_text(to_markdown(table))
        (self.tables_dir / f"{name}.html").write_text(to_html(table))
        (self.tables_dir / f"{name}.json").write_text(
            json.dumps({"title": table.title, "rows": table.rows}, default=str, indent=1))
