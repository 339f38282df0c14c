"""The nightly verdict on figures: did anything get worse than its own recent history allows?

Each night's key figures are appended to a history file (`figures.jsonl` beside Allure's own
history), one line per run. Tonight's value of a figure is a **regression** when it is worse,
in the figure's own better direction, than the median of the last `window` nights by more than
the noise band. For a figure on a ratio scale (seconds, TPS, MB/s) the band is
max(`band_pct` % of that median, `mad_k` x their median absolute deviation, the figure's floor);
for a figure that is already a percentage (a drop %, a change %) it is max(`band_points`
points, `mad_k` x MAD, the floor): 20 % of a -3 % change would be 0.6 points. The floor is the
figure's own (`Column.floor`: 0.25 s for a detection time), so a median of 0 or a wobble of
24 ms is not a regression. A figure is judged only once `min_history` earlier nights have it;
a figure that is new, or whose history is too short, is reported as such and never flagged. A
figure the platform's model gave (`Figure.provenance`) is neither kept nor judged: changing the
model is not a change of the cluster.

Example with the defaults (window 7, band 20 %, 3 MAD, min 3): failover totals of 6.5, 6.8,
7.0, 6.9, 6.6 s give median 6.8 s and MAD 0.2 s; the band is max(1.36, 0.6) = 1.36 s, so
tonight's 9.5 s (> 8.16 s) is a regression and 7.9 s is not.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from reports.changepoints import Alarm, Detector, alarms
from reports.scenario_record import Figure, Judged
from reports.tables import Better

FIGURES_HISTORY = "figures.jsonl"
# What the figures mean (their windows, their verdicts): a night measured under other definitions is kept in the
# history but never compared with tonight. Lines written before the field existed are definitions 1.
# 2: "after" is the steady state while the fault holds (1: after its revert), windows hold whole seconds only,
# S7's "during" is the backup's own run.
FIGURE_DEFINITIONS = 2
NOISIER = 2.0  # tonight's interval this many times as wide as its usual width is a finding of its own
REGRESSION_EXIT_CODE = 6  # README "Exit codes": 1 means an SLO was violated, 6 that a figure regressed


@dataclass(frozen=True)
class RegressionRule:
    window: int = 7
    band_pct: float = 20.0
    band_points: float = 5.0  # the band of a figure that is already a percentage, in points
    mad_k: float = 3.0
    min_history: int = 3
    change_points_from: int = 10  # earlier nights from which a moved level (`reports.changepoints`) decides
    change_floor_pct: float = 10.0  # a level that moved by less than this % of the old one is no regression

    def describe(self) -> str:
        return (f"worse than the median of the last {self.window} nights by more than max({self.band_pct:g} %, "
                f"{self.mad_k:g} x MAD, its floor) ({self.band_points:g} points for a percentage), once "
                f"{self.min_history} earlier nights exist; from "
                f"{self.change_points_from} nights on, a level that moved worse by more than "
                f"{self.change_floor_pct:g} % in the last nights (change-point detection)")


@dataclass(frozen=True)
class Scale:
    """How a change of one figure is measured: in `points` for a percentage, else as a share of its level; a
    change under `floor` (the figure's unit) is never a regression."""

    points: bool = False
    floor: float = 0.0


@dataclass(frozen=True)
class Night:
    """One run's key figures, as kept in the history file."""

    at: str  # ISO 8601, UTC
    figures: Mapping[str, float]
    better: Mapping[str, Better]
    run: str = ""  # which run it was (its first test's start): a run reported twice is one night
    definitions: int = FIGURE_DEFINITIONS
    spread: Mapping[str, float] = field(default_factory=dict)  # key -> the width of its 95 % interval, when known
    scales: Mapping[str, Scale] = field(default_factory=dict)  # key -> how its change is measured (default: a share)


@dataclass(frozen=True)
class Judgement:
    key: str
    tonight: float
    better: Better
    earlier: Sequence[float]  # oldest first, at most `window`
    reference: float | None  # the median the rule compares with
    band: float | None
    regressed: bool
    moved: Alarm | None = None  # from `change_points_from` nights on: the level change detected tonight, if any
    by_median: bool | None = None  # what the median/MAD rule says then, printed where the two disagree
    nights_seen: int = 0  # the nights the change-point detection looked at, tonight included
    noisier: float | None = None  # tonight's interval width over its usual width, when at least NOISIER

    @property
    def judged(self) -> bool:
        return self.reference is not None

    def sentence(self) -> str:
        said = self._sentence()
        if self.noisier is not None:
            said += f"; noisier: its 95 % interval is {self.noisier:.1f} times as wide as on its last nights"
        return said

    def _sentence(self) -> str:
        if self.reference is None or self.band is None:
            return f"{self.key}: {self.tonight:g} (not judged: {len(self.earlier)} earlier night(s))"
        limit = self.reference + self.band if self.better == "lower" else self.reference - self.band
        if self.by_median is not None:  # judged by change points
            said = (f"its level moved from {self.moved.before:g} to {self.moved.after:g} (a change point)"
                    if self.moved else "no level change")
            differs = "" if self.by_median == self.regressed else \
                f"; the median rule alone says {'regressed' if self.by_median else 'within its band'}"
            return (f"{self.key}: {self.tonight:g} tonight, {'regressed' if self.regressed else 'no regression'}: "
                    f"{said} over {self.nights_seen} nights{differs} (median {self.reference:g}, limit {limit:g})")
        verb = "regressed" if self.regressed else "within its band"
        return (f"{self.key}: {self.tonight:g} tonight, {verb} (median of {len(self.earlier)} nights "
                f"{self.reference:g}, limit {limit:g})")


def comparable(history: Sequence[Night]) -> list[Night]:
    """The nights measured under tonight's definitions (`FIGURE_DEFINITIONS`)."""
    return [night for night in history if night.definitions == FIGURE_DEFINITIONS]


def noisier(key: str, width: float | None, history: Sequence[Night], rule: RegressionRule) -> float | None:
    """Tonight's interval width over the median of its last widths, when that is `NOISIER` or more."""
    widths = [night.spread[key] for night in history if key in night.spread][-rule.window:]
    if width is None or len(widths) < rule.min_history or statistics.median(widths) <= 0:
        return None
    ratio = width / statistics.median(widths)
    return ratio if ratio >= NOISIER else None


def judge(tonight: Mapping[str, float], better: Mapping[str, Better], history: Sequence[Night],
          rule: RegressionRule = RegressionRule(), spread: Mapping[str, float] | None = None,
          scales: Mapping[str, Scale] | None = None) -> list[Judgement]:
    """Every figure of tonight, judged against the nights before it (oldest first in `history`) measured under
    tonight's definitions, each on its `scales` (a share of its level by default); with `spread` (tonight's
    interval widths), a figure grown noisier is said too."""
    history = comparable(history)
    judgements = [_judged(key, value, better, history, rule, (scales or {}).get(key, Scale()))
                  for key, value in tonight.items()]
    return [dataclasses.replace(j, noisier=noisier(j.key, (spread or {}).get(j.key), history, rule))
            for j in judgements]


def _judged(key: str, value: float, better: Mapping[str, Better], history: Sequence[Night],
            rule: RegressionRule, scale: Scale) -> Judgement:
    every = [night.figures[key] for night in history if key in night.figures]
    earlier = every[-rule.window:]
    if len(earlier) < rule.min_history:
        return Judgement(key, value, better[key], earlier, None, None, False)
    median = statistics.median(earlier)
    mad = statistics.median(abs(v - median) for v in earlier)
    usual = rule.band_points if scale.points else rule.band_pct / 100.0 * abs(median)
    band = max(usual, rule.mad_k * mad, scale.floor)
    worse = value - median if better[key] == "lower" else median - value
    if len(every) < rule.change_points_from:
        return Judgement(key, value, better[key], earlier, median, band, worse > band)
    series = [*every, value]
    moved_by = rule.band_points if scale.points else rule.change_floor_pct / 100.0 * abs(statistics.median(every))
    floor = max(moved_by, scale.floor)
    # the last nights again, as the nightly job saw them: a change alarmed on an earlier night is not new tonight
    since = max(0, len(series) - 2 - Detector().recent)
    tonight_alarms = [a for a in alarms(series, better[key], floor=floor, start=since) if a.night == len(series) - 1]
    moved = tonight_alarms[0] if tonight_alarms else None
    return Judgement(key, value, better[key], earlier, median, band, moved is not None, moved, worse > band,
                     len(series))


def night_of(figures: Sequence[Figure], *, run: str = "", at: datetime | None = None,
             verdicts: Sequence[tuple[str, Judged]] = ()) -> Night:
    """Tonight's measured figures: the tables' key cells (not those the platform's model gave), and each verdict
    on an estimate (keyed by its test's case: the title without the target the fault found), with the width of
    its interval as the figure's spread."""
    moment = (at or datetime.now(UTC)).isoformat(timespec="seconds")
    measured = [f for f in figures if f.provenance == "measured"]
    values = {f.key: f.value for f in measured}
    better: dict[str, Better] = {f.key: f.better for f in measured}
    scales = {f.key: Scale(f.points, f.floor) for f in measured if f.points or f.floor}
    spread = {}
    for title, verdict in verdicts:
        if verdict.value is None or verdict.provenance != "measured":
            continue
        own = verdict.low is not None and verdict.high is not None and not verdict.interval_from_nights
        if not own and not verdict.trial_figure:
            continue
        key = verdict_key(title, verdict.name)
        values[key] = verdict.value
        if own and verdict.low is not None and verdict.high is not None:
            spread[key] = verdict.high - verdict.low
        better[key] = "higher" if verdict.op in (">=", ">") else "lower"
    return Night(moment, values, better, run, FIGURE_DEFINITIONS, spread, scales)


def verdict_key(case: str, name: str) -> str:
    """A verdict's figure in the history: its test's case (the title without the target) and its name."""
    return f"{case} · {name}"


def earlier_values(history: Sequence[Night]) -> dict[str, list[float]]:
    """Each figure's values over the comparable nights, oldest first (what a one-trial figure's interval rests on)."""
    values: dict[str, list[float]] = {}
    for night in comparable(history):
        for key, value in night.figures.items():
            values.setdefault(key, []).append(value)
    return values


def read_history(path: Path) -> list[Night]:
    """Every night kept so far, oldest first; a line that cannot be read is skipped (a torn write)."""
    nights = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            data = json.loads(line)
            nights.append(Night(str(data["at"]), {str(k): float(v) for k, v in data["figures"].items()},
                                {str(k): v for k, v in data.get("better", {}).items() if v in ("lower", "higher")},
                                str(data.get("run", "")), int(data.get("definitions", 1)),
                                {str(k): float(v) for k, v in data.get("spread", {}).items()}))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return nights


def append_night(path: Path, night: Night) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write(json.dumps({"at": night.at, "run": night.run, "definitions": night.definitions,
                              "figures": dict(night.figures), "better": dict(night.better),
                              "spread": dict(night.spread)}) + "\n")
