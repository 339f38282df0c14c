"""How well the nightly change-point alarm finds a regression, and how often it cries wolf, on held-out seeds.

    .venv/bin/python benchmarks/changepoint_eval.py [--seeds 50] [--first-seed 1000] [--cv 0.10]

Each seed draws two histories of 40 nights of a figure whose better direction is lower (a failover
time, say), level 10, with heavy-tailed noise (Student t, 3 degrees of freedom, scaled to a
coefficient of variation `--cv`) and outlier nights (5 % of nights, 4 x the spread, either way):
one with a 30 % step up after night 20, one without. The detector (`reports.changepoints`, its
parameters fixed on seeds 0-29 before this runs) is run night by night as a nightly job would
run it, from night 6 on. Printed: the distribution of the detection delay (nights after the step
until the first alarm that concerns it), the steps never found, and false alarms per 100 nights of
the histories without a step (goal <= 1), with a floor of 10 % of the level (a change smaller than
that is not a regression). Ends with: delay_p50=<n> delay_p90=<n> missed=<n> false_alarms_per_100=<x>.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reports.changepoints import Detector, alarms  # noqa: E402

NIGHTS, STEP_AT, STEP, LEVEL, OUTLIER_P = 40, 20, 0.30, 10.0, 0.05


def history(rng: np.random.Generator, cv: float, step: bool) -> np.ndarray:
    values = LEVEL + rng.standard_t(3, NIGHTS) / np.sqrt(3) * cv * LEVEL
    outliers = rng.random(NIGHTS) < OUTLIER_P
    values[outliers] += rng.choice([-1.0, 1.0], int(outliers.sum())) * 4 * cv * LEVEL
    if step:
        values[STEP_AT:] += STEP * LEVEL
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--first-seed", type=int, default=1000, help="held out: the parameters were fixed on 0-29")
    parser.add_argument("--cv", type=float, default=0.10, help="the noise's coefficient of variation")
    args = parser.parse_args()
    detector, floor = Detector(), 0.10 * LEVEL
    delays: list[int] = []
    missed = false_alarms = quiet_nights = early = 0
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        stepped = history(np.random.default_rng(seed), args.cv, step=True)
        raised = alarms(list(stepped), "lower", floor=floor, detector=detector)
        early += sum(1 for a in raised if a.night < STEP_AT)  # before the step: a false alarm
        found = [a for a in raised if a.night >= STEP_AT and a.change_at >= STEP_AT - 3]
        if found:
            delays.append(found[0].night - STEP_AT)
        else:
            missed += 1
        quiet = history(np.random.default_rng(seed + 1_000_000), args.cv, step=False)
        false_alarms += len(alarms(list(quiet), "lower", floor=floor, detector=detector))
        quiet_nights += NIGHTS - 6
    print(f"detector: {detector}; floor {floor:g}; noise: t(3) at cv {args.cv:g}, {OUTLIER_P:.0%} outlier nights")
    print(f"seeds {args.first_seed}..{args.first_seed + args.seeds - 1}: a {STEP:.0%} step after night {STEP_AT} "
          f"of {NIGHTS}")
    counts = {d: delays.count(d) for d in sorted(set(delays))}
    print("detection delay (nights after the step): " + ", ".join(f"{d}: {n}" for d, n in counts.items()))
    rate = false_alarms / quiet_nights * 100
    before_step_nights = args.seeds * (STEP_AT - 6)
    print(f"missed {missed} of {args.seeds}; false alarms {false_alarms} in {quiet_nights} nights without a step "
          f"(and {early} in the {before_step_nights} nights before the step of the others: "
          f"{(false_alarms + early) / (quiet_nights + before_step_nights) * 100:.2f} per 100 nights in all)")
    p50, p90 = (np.percentile(delays, [50, 90]) if delays else (float("nan"), float("nan")))
    print(f"delay_p50={p50:g} delay_p90={p90:g} missed={missed} false_alarms_per_100={rate:.2f}")


if __name__ == "__main__":
    main()
