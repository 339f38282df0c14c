from harness_kernel.history import EventKind
from harness_kernel.history.timeline import Timeline


def test_events_keep_monotonic_order_and_round_trip_through_json(tmp_path):
    timeline = Timeline()
    timeline.record(EventKind.INJECT, "runner", t=2.0, fault="host-crash")
    timeline.record(EventKind.DETECTED, "monitor", t=1.0)
    assert [e.kind for e in timeline] == ["detected", "inject"]
    timeline.dump(tmp_path / "t.json")
    again = Timeline.load(tmp_path / "t.json")
    assert [(e.t, e.kind, dict(e.attrs)) for e in again] == [(1.0, "detected", {}), (2.0, "inject", {"fault": "host-crash"})]
