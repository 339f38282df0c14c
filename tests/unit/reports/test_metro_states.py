"""What the storage decided, read back from the history: the experiment records a group's states when they change
(`MetroWatch`), and the report reads spans of constant state from those events, which a suite judges and a plot
draws."""

from __future__ import annotations

from dataclasses import dataclass, field

from faults.metro import (
    Arbiter,
    MetroGroup,
    MetroWatch,
    ObservesMetro,
    PeerLink,
    Rebuild,
    ReplicaSync,
    Serving,
    SiteView,
)
from harness_kernel.history import EventKind
from harness_kernel.history.series import TransactionSeries
from harness_kernel.history.timeline import Timeline
from reports.metro_states import (
    always_served,
    in_sync_again,
    metro_spans,
    serving_sites,
    states_during,
    weight,
)
from reports.plots import tps_timeline_png


def group(replica: ReplicaSync, link: PeerLink, a: Serving, b: Serving, arbiter: Arbiter = Arbiter.REACHABLE,
          counter: int = 0) -> MetroGroup:
    return MetroGroup("bench", replica, link, (SiteView("site-a", a, arbiter), SiteView("site-b", b, arbiter)),
                      words={"pg_stat_replication": f"lsn {counter}"})


HEALTHY = group(ReplicaSync.IN_SYNC, PeerLink.UP, Serving.SERVING, Serving.STANDBY)
CUT = group(ReplicaSync.FRACTURED, PeerLink.DOWN, Serving.SERVING, Serving.STANDBY)
SUSPENDED = group(ReplicaSync.FRACTURED, PeerLink.DOWN, Serving.SUSPENDED, Serving.STANDBY)


@dataclass
class Script:
    """A metro source that says what it is told, one reading per sample (a dead manager raises)."""

    readings: list[MetroGroup | Exception] = field(default_factory=list)

    def metro(self) -> list[MetroGroup]:
        reading = self.readings.pop(0)
        if isinstance(reading, Exception):
            raise reading
        return [reading]


def watched(readings: list[MetroGroup | Exception]) -> Timeline:
    timeline = Timeline()
    source = Script(list(readings))
    assert isinstance(source, ObservesMetro)
    watch = MetroWatch({"cluster": source}, timeline)
    for _ in readings:
        watch.sample()
    return timeline


def test_a_state_is_recorded_when_it_changes_not_every_second_nor_for_the_products_own_counters() -> None:
    timeline = watched([HEALTHY, group(ReplicaSync.IN_SYNC, PeerLink.UP, Serving.SERVING, Serving.STANDBY, counter=7),
                        CUT, CUT, HEALTHY])
    events = timeline.events(EventKind.METRO)
    assert [(e.attrs["replica"], e.attrs["link"]) for e in events] == [
        ("in sync", "up"), ("fractured", "down"), ("in sync", "up")]
    assert events[0].attrs["sites"] == {"site-a": {"serving": "serving", "arbiter": "reachable"},
                                        "site-b": {"serving": "standby", "arbiter": "reachable"}}
    assert events[0].source == "cluster" and events[0].attrs["words"] == {"pg_stat_replication": "lsn 0"}


def test_a_source_that_cannot_answer_leaves_a_gap_and_the_watch_goes_on() -> None:
    timeline = watched([HEALTHY, TimeoutError("monitor: no answer"), CUT])
    assert [e.attrs["replica"] for e in timeline.events(EventKind.METRO)] == ["in sync", "fractured"]


def test_a_rebuild_is_kept_with_its_progress_as_the_product_said_it() -> None:
    rebuilding = MetroGroup("cg1", ReplicaSync.RESYNCING, PeerLink.UP, (), rebuild=Rebuild(40.0, 120.0))
    attrs = rebuilding.attrs()
    assert (attrs["rebuild_pct"], attrs["rebuild_eta_s"]) == (40.0, 120.0)


def spans_of(*states: tuple[float, MetroGroup]) -> Timeline:
    timeline = Timeline()
    for t, seen in states:
        timeline.record(EventKind.METRO, "cluster", t=t, **seen.attrs())
    return timeline


def test_each_row_holds_its_state_from_its_event_to_the_next_change_of_that_row() -> None:
    spans = metro_spans(spans_of((10.0, HEALTHY), (20.0, CUT), (35.0, HEALTHY)))
    replica = [(s.state, s.start, s.end) for s in spans if s.row == "replica"]
    assert replica == [("in sync", 10.0, 20.0), ("fractured", 20.0, 35.0), ("in sync", 35.0, None)]
    served = [(s.state, s.start, s.end) for s in spans if s.row == "site-a serving"]
    assert served == [("serving", 10.0, None)]  # no change of its own: one span through the cut
    assert list(dict.fromkeys(s.row for s in spans)) == ["replica", "link", "site-a serving", "site-a arbiter", "site-b serving",
                                          "site-b arbiter"]


def test_a_suite_reads_what_the_storage_decided_while_the_cut_held_and_when_it_was_in_sync_again() -> None:
    spans = metro_spans(spans_of((10.0, HEALTHY), (21.0, CUT), (35.0, HEALTHY)))
    assert states_during(spans, "replica", 20.0, 30.0) == ["in sync", "fractured"]
    assert serving_sites(spans, 20.0, 30.0) == ["site-a"]
    assert always_served(spans, 20.0, 30.0) is True
    assert in_sync_again(spans, 30.0) == 35.0
    assert in_sync_again(spans, 40.0) == 40.0  # in sync already when asked
    assert in_sync_again(metro_spans(spans_of((10.0, CUT))), 12.0) is None
    resyncing = group(ReplicaSync.RESYNCING, PeerLink.UP, Serving.SERVING, Serving.STANDBY)
    blip = metro_spans(spans_of((10.0, HEALTHY), (31.1, resyncing), (33.2, HEALTHY)))
    assert in_sync_again(blip, 30.7) == 33.2  # in sync at the revert, then a re-check: in sync for good at 33.2


def test_a_moment_with_no_site_serving_breaks_always_served_and_nothing_read_is_not_a_pass() -> None:
    spans = metro_spans(spans_of((10.0, CUT), (22.0, SUSPENDED), (24.0, CUT)))
    assert always_served(spans, 20.0, 30.0) is False
    assert always_served(spans, 10.0, 21.0) is True
    assert always_served(metro_spans(Timeline()), 20.0, 30.0) is None


def test_a_word_no_adapter_maps_is_drawn_as_unknown_never_as_good() -> None:
    assert [weight(w) for w in ("in sync", "standby", "suspended", "cluster-unreachable")] == [
        "good", "waiting", "bad", "unknown"]


def test_the_throughput_plot_gets_a_panel_of_the_storages_decisions_when_a_metro_source_was_read() -> None:
    series = TransactionSeries()
    for second in range(40):
        series.add_commits(second, 10, float(second) + 0.5)
    plain = tps_timeline_png(Timeline(), series)
    with_metro = tps_timeline_png(spans_of((1.0, HEALTHY), (20.0, CUT), (30.0, HEALTHY)), series)
    assert plain.startswith(b"\x89PNG") and with_metro.startswith(b"\x89PNG")
    assert _height(with_metro) > _height(plain)


def _height(png: bytes) -> int:
    return int.from_bytes(png[20:24], "big")


def test_a_partitions_table_shows_a_stop_as_a_mean_of_zero_and_judges_it_only_against_an_allowance() -> None:
    from harness_suites.s3.table import PartitionRow, s3_partition_table

    stopped = PartitionRow("inter-site link partitioned", 1846.0, None, 1653.0, 24.0, "site-a", "in sync → fractured",
                           "up → down", "site-a: reachable", 14.3, mean_tps_during=0.0)
    shown = s3_partition_table([stopped])
    assert shown.rows[0]["mean_tps_during"] == 0.0 and shown.rows[0]["tps_during"] is None
    assert [t.column for t in shown.thresholds] == ["drop_pct", "in_sync_s"]
    judged = s3_partition_table([stopped], max_stall_s=20.0)
    assert [t.column for t in judged.thresholds][-1] == "outage_s"
