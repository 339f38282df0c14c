"""Resync progress: bytes left, rate and ETA over time, and how good the ETA was."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ResyncPoint:
    t: float
    bytes_left: float
    rate_bps: float | None  # bytes per second over the trailing window
    eta_s: float | None  # bytes_left / rate, or the control plane's own ETA when given


def progress(samples: Sequence[tuple[float, float]], window_s: float = 10.0,
             reported_eta: Sequence[float | None] | None = None) -> list[ResyncPoint]:
    """Rate from the bytes resynced over the trailing `window_s`; ETA = bytes left / rate."""
    out = []
    for i, (t, left) in enumerate(samples):
        j = i
        while j > 0 and t - samples[j - 1][0] <= window_s:
            j -= 1
        t0, left0 = samples[j]
        rate = (left0 - left) / (t - t0) if t > t0 and left0 > left else None
        eta = reported_eta[i] if reported_eta is not None and reported_eta[i] is not None else (
            left / rate if rate else None)
        out.append(ResyncPoint(t, left, rate, eta))
    return out


def completed_at(samples: Sequence[tuple[float, float]]) -> float | None:
    """First sample time with nothing left to sync (after something was left)."""
    seen_work = False
    for t, left in samples:
        seen_work = seen_work or left > 0
        if seen_work and left <= 0:
            return t
    return None


@dataclass(frozen=True)
class EtaAccuracy:
    samples: int
    mean_abs_error_s: float
    worst_error_s: float  # predicted completion minus actual (positive = too pessimistic)


def eta_accuracy(points: Sequence[ResyncPoint], done_t: float) -> EtaAccuracy | None:
    errors = [(p.t + p.eta_s) - done_t for p in points if p.eta_s is not None and p.t < done_t]
    if not errors:
        return None
    return EtaAccuracy(len(errors), sum(abs(e) for e in errors) / len(errors), max(errors, key=abs))


def mean_rate_bps(samples: Sequence[tuple[float, float]]) -> float | None:
    """Average rate from the first sample with work left to completion (or the last sample)."""
    work = [(t, left) for t, left in samples]
    if len(work) < 2:
        return None
    (t0, left0), (t1, left1) = work[0], work[-1]
    done = completed_at(work)
    if done is not None:
        t1, left1 = done, 0.0
    return (left0 - left1) / (t1 - t0) if t1 > t0 else None
