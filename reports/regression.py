"""The nightly verdict on figures: did anything get worse than its own recent history allows?

Each night's key figures are appended to a history file (`figures.jsonl` beside Allure's own
history), one line per run. Tonight's value of a figure is a **regression** when it is worse,
in the figure's own better direction, than the median of the last `window` nights by more than
the noise band: max(`band_pct` % of that median, `mad_k` x their median absolute deviation).
A figure is judged only once `min_history` earlier nights have it; a figure that is new, or
whose history is too short, is reported as such and never flagged.

Example with the defaults (window 7, band 20 %, 3 MAD, min 3): failover totals of 6.5, 6.8,
7.0, 6.9, 6.6 s give median 6.8 s and MAD 0.2 s; the band is max(1.36, 0.6) = 1.36 s, so
tonight's 9.5 s (> 8.16 s) is a regression and 7.9 s is not.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from reports.changepoints import Alarm, Detector, alarms
from reports.scenario_record import Figure
from reports.tables import Better

FIGURES_HISTORY = "figures.jsonl"
REGRESSION_EXIT_CODE = 6  # README "Exit codes": 1 means an SLO was violated, 6 that a figure regressed


@dataclass(frozen=True)
class RegressionRule:
    window: int = 7
    band_pct: float = 20.0
    mad_k: float = 3.0
    min_history: int = 3
    change_points_from: int = 10  # earlier nights from which a moved level (`reports.changepoints`) decides
    change_floor_pct: float = 10.0  # a level that moved by less than this % of the old one is no regression

    def describe(self) -> str:
        return (f"worse than the median of the last {self.window} nights by more than max({self.band_pct:g} %, "
                f"{self.mad_k:g} x MAD), once {self.min_history} earlier nights exist; from "
                f"{self.change_points_from} nights on, a level that moved worse by more than "
                f"{self.change_floor_pct:g} % in the last nights (change-point detection)")


@dataclass(frozen=True)
class Night:
    """One run's key figures, as kept in the history file."""

    at: str  # ISO 8601, UTC
    figures: Mapping[str, float]
    better: Mapping[str, Better]
    run: str = ""  # which run it was (its first test's start): a run reported twice is one night


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

    @property
    def judged(self) -> bool:
        return self.reference is not None

    def sentence(self) -> str:
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


def judge(tonight: Mapping[str, float], better: Mapping[str, Better], history: Sequence[Night],
          rule: RegressionRule = RegressionRule()) -> list[Judgement]:
    """Every figure of tonight, judged against the nights before it (oldest first in `history`)."""
    judgements = []
    for key, value in tonight.items():
        every = [night.figures[key] for night in history if key in night.figures]
        earlier = every[-rule.window:]
        if len(earlier) < rule.min_history:
            judgements.append(Judgement(key, value, better[key], earlier, None, None, False))
            continue
        median = statistics.median(earlier)
        mad = statistics.median(abs(v - median) for v in earlier)
        band = max(rule.band_pct / 100.0 * abs(median), rule.mad_k * mad)
        worse = value - median if better[key] == "lower" else median - value
        if len(every) < rule.change_points_from:
            judgements.append(Judgement(key, value, better[key], earlier, median, band, worse > band))
            continue
        series = [*every, value]
        floor = rule.change_floor_pct / 100.0 * abs(statistics.median(every))
        # the last nights again, as the nightly job saw them: a change alarmed on an earlier night is not new tonight
        since = max(0, len(series) - 2 - Detector().recent)
        tonight_alarms = [a for a in alarms(series, better[key], floor=floor, start=since) if a.night == len(series) - 1]
        moved = tonight_alarms[0] if tonight_alarms else None
        judgements.append(Judgement(key, value, better[key], earlier, median, band, moved is not None, moved,
                                    worse > band, len(series)))
    return judgements


def night_of(figures: Sequence[Figure], *, run: str = "", at: datetime | None = None) -> Night:
    moment = (at or datetime.now(UTC)).isoformat(timespec="seconds")
    return Night(moment, {f.key: f.value for f in figures}, {f.key: f.better for f in figures}, run)


def read_history(path: Path) -> list[Night]:
    """Every night kept so far, oldest first; a line that cannot be read is skipped (a torn write)."""
    nights = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            data = json.loads(line)
            nights.append(Night(str(data["at"]), {str(k): float(v) for k, v in data["figures"].items()},
                                {str(k): v for k, v in data.get("better", {}).items() if v in ("lower", "higher")},
                                str(data.get("run", ""))))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return nights


def append_night(path: Path, night: Night) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write(json.dumps({"at": night.at, "run": night.run, "figures": dict(night.figures),
                              "better": dict(night.better)}) + "\n")
