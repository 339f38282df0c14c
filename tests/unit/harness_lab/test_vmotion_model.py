"""The lab's vMotion model: the pre-copy grows with the VM's memory and the inter-site RTT."""

from __future__ import annotations

import pytest

from harness_lab.vmotion import MAX_PRECOPY_S, PreCopyModel
from harness_lab.vsphere_binding import MODEL

LAB = PreCopyModel.of(MODEL)


def test_the_lab_model_is_read_from_the_simulators_parameters() -> None:
    assert PreCopyModel(memory_mb=2048, link_mb_s=1250, window_mb=2, dirty_mb_s=50, stun_s=1.0) == LAB


def test_at_low_rtt_the_link_limits_and_the_dirty_pages_are_resent() -> None:
    assert LAB.rate_mb_s(0) == LAB.rate_mb_s(1) == 1250
    assert LAB.precopy_s(0) == pytest.approx(2048 / (1250 - 50))


def test_beyond_the_window_the_rtt_limits_and_the_precopy_grows() -> None:
    assert LAB.rate_mb_s(4) == pytest.approx(500)
    times = [LAB.precopy_s(rtt) for rtt in (0, 1, 2, 4)]
    assert times == sorted(times) and times[-1] > 2 * times[0]


def test_more_memory_takes_longer() -> None:
    bigger = PreCopyModel(memory_mb=8192, link_mb_s=1250, window_mb=2, dirty_mb_s=50, stun_s=1.0)
    assert bigger.precopy_s(2) == pytest.approx(4 * LAB.precopy_s(2))


def test_a_copy_that_cannot_converge_is_capped_at_the_hook_bound() -> None:
    busy = PreCopyModel(memory_mb=2048, link_mb_s=1250, window_mb=2, dirty_mb_s=600, stun_s=1.0)
    assert busy.precopy_s(4) == MAX_PRECOPY_S
