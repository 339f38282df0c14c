"""The lab's I/O pause stays clear of the HA manager's detection: a late SIGCONT must not cause a failover nobody
asked for (a vSAN disk-group failure pauses a guest's I/O, it does not kill the guest).

pg_auto_failover's monitor calls a node unreachable at the soonest after a health check times out and each retry,
after its delay, times out too: health_check_timeout x (max_retries + 1) + retry_delay x max_retries.
"""

from __future__ import annotations

import pytest

from harness_lab.controller import IO_PAUSE_MAX_S
from harness_lab.postgres import MONITOR_CONF, detection_floor_s, io_pause_cap_s


def soonest_detection_s(settings: dict[str, str]) -> float:
    timeout = int(settings["pgautofailover.health_check_timeout"])
    retries = int(settings["pgautofailover.health_check_max_retries"])
    delay = int(settings["pgautofailover.health_check_retry_delay"])
    return (timeout * (retries + 1) + delay * retries) / 1000


@pytest.mark.reproducer("X-6")
def test_the_labs_pause_cap_leaves_a_margin_under_the_monitors_soonest_detection() -> None:
    detection = soonest_detection_s(MONITOR_CONF)
    assert detection == 2.5
    assert 0.6 * detection >= IO_PAUSE_MAX_S, "a cap at the detection time itself lets a late SIGCONT fail over"


def test_the_cap_follows_the_monitors_settings_as_it_runs() -> None:
    quicker = {**MONITOR_CONF, "pgautofailover.health_check_timeout": "500", "pgautofailover.health_check_max_retries": "0"}
    assert detection_floor_s(quicker) == 0.5
    assert io_pause_cap_s(quicker) == 0.3 < io_pause_cap_s(MONITOR_CONF) == IO_PAUSE_MAX_S
