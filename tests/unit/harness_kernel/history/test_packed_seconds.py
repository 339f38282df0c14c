"""A long run's seconds are packed once they fall behind, and reading or adding to them stays exact."""

from __future__ import annotations

import random
import sys

from harness_kernel.history.series import TransactionSeries


def _recorded(seconds: int, seed: int = 7) -> TransactionSeries:
    rng = random.Random(seed)
    series = TransactionSeries()
    for second in range(seconds):
        for _ in range(40):
            series.record(second + rng.random(), rng.lognormvariate(-5, 1), ok=rng.random() > 0.02, error_class="40001")
    return series


def test_packed_seconds_read_exactly_as_the_open_ones_did() -> None:
    series = _recorded(60)
    reference = TransactionSeries()
    reference.PACKED_AFTER_S = 10**9  # never packs
    rng = random.Random(7)
    for second in range(60):
        for _ in range(40):
            reference.record(second + rng.random(), rng.lognormvariate(-5, 1), ok=rng.random() > 0.02,
                             error_class="40001")
    assert series.points() == reference.points()
    assert series.points(step=10) == reference.points(step=10)
    assert series.export() == reference.export()


def test_a_late_transaction_still_counts_in_its_packed_second() -> None:
    series = _recorded(30)
    early = series.points(3, 4)[0]
    series.record(3.5, 0.002, ok=True)
    series.record(3.6, 0.0, ok=False, error_class="08006")
    late = series.points(3, 4)[0]
    assert (late.commits, late.errors) == (early.commits + 1, early.errors + 1)
    assert late.error_classes["08006"] == 1


def test_a_remote_generators_old_seconds_are_merged_and_packed_again() -> None:
    home, remote = _recorded(30, seed=1), _recorded(30, seed=2)
    expected = {p.t: p.commits for p in home.points()}
    for p in remote.points():
        expected[p.t] += p.commits
    home.absorb(remote.export())
    assert {p.t: p.commits for p in home.points()} == expected
    assert len(home._open) <= TransactionSeries.PACKED_AFTER_S + 1


def test_a_packed_second_is_several_times_smaller_than_an_open_one() -> None:
    series = _recorded(20)
    packed = series._buckets[0]
    open_one = series._buckets[19]
    assert packed._histogram is None and open_one._histogram is not None
    packed_size = sys.getsizeof(packed._packed)
    open_size = sys.getsizeof(open_one._histogram)
    assert packed_size * 3 < open_size
