"""What an experiment watches is one watcher each, sampled by one scheduler: a probe stuck on a gone node delays only
itself, a failed reading leaves a gap, and nothing is sampled once the experiment has stopped watching."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from harness.clusters import ResyncSample
from harness.watchers import ResyncWatch, Watches
from harness_kernel.errors import HarnessError
from harness_kernel.history.timeline import Timeline
from tests.support.waiting import eventually


@dataclass
class Counting:
    name: str
    samples: int = 0
    release: threading.Event | None = None  # set: each sample waits for it (a probe waiting out a timeout)
    entered: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        self.entered.set()
        if self.release is not None:
            self.release.wait(30)
        self.samples += 1


def test_a_watcher_stuck_on_its_probe_delays_no_other() -> None:
    watches = Watches(interval_s=0.01)
    stuck, quick = Counting("stuck", release=threading.Event()), Counting("quick")
    watches.start(stuck)
    watches.start(quick)
    assert stuck.entered.wait(10)
    assert eventually(lambda: quick.samples >= 5), "the quick watcher kept its clock"
    assert stuck.samples == 0
    assert stuck.release is not None
    stuck.release.set()
    watches.stop()


def test_nothing_is_sampled_after_stop_and_a_watcher_is_started_once() -> None:
    watches = Watches(interval_s=0.01)
    watcher = Counting("resync")
    watches.start(watcher)
    watches.start(watcher)
    assert eventually(lambda: watcher.samples >= 2)
    watches.stop()
    seen = watcher.samples
    watches.start(Counting("late"))
    assert not watches.watching("late"), "a stopped scheduler starts nothing"
    assert watcher.samples == seen


@dataclass
class FlakyResync:
    answers: list[ResyncSample | HarnessError | None]

    def resync(self) -> ResyncSample | None:
        answer = self.answers.pop(0)
        if isinstance(answer, HarnessError):
            raise answer
        return answer


def test_a_resync_reading_that_fails_leaves_a_gap_and_none_is_zero_left() -> None:
    watch = ResyncWatch(FlakyResync([ResyncSample(4e9, eta_s=120.0), HarnessError("vCenter: timeout"), None]),  # type: ignore[arg-type]
                        Timeline())
    for _ in range(3):
        watch.sample()
    samples, eta = watch.readings()
    assert [left for _, left in samples] == [4e9, 0.0] and eta == [120.0, None]
