"""The mail workload: two fio jobs per instance, read per instance and in total as an ESRP result is.

The report fixture is fio 3.33's own JSON from a 6 s run of two instances on this machine
(`data/mail-fio-3.33.json`, trimmed to what the reader reads)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_suites.s6.table import esrp_table
from reports.tables import CellVerdict
from workloads.mail import MailInstance, MailJob, MailResults, even_instances

DATA = Path(__file__).parent / "data"


def reports() -> dict[str, dict[str, object]]:
    return {str(j["jobname"]): j for j in json.loads((DATA / "mail-fio-3.33.json").read_text())["jobs"]}


def test_each_instance_is_a_database_job_and_a_log_job_at_their_own_rates() -> None:
    job = MailJob(even_instances(2, 200, 100), Path("/srv/io/data"), runtime_s=60)
    text = job.text(Path("/srv/io/logs/mail"))
    sections = [line for line in text.splitlines() if line.startswith("[")]
    assert sections == ["[global]", "[mbx1-db]", "[mbx1-log]", "[mbx2-db]", "[mbx2-log]"]
    db = text.split("[mbx1-db]")[1].split("[mbx1-log]")[0]
    log = text.split("[mbx1-log]")[1].split("[mbx2-db]")[0]
    assert "rw=randrw" in db and "bs=32k" in db and "rwmixread=60" in db and "rate_iops=60,40" in db
    assert "rw=write" in log and "sync=1" in log and "bs=4k" in log and "rate_iops=,50" in log
    assert "percentile_list=95:99" in text and "write_lat_log=/srv/io/logs/mail" in text
    assert (job.job_index("mbx1", "db"), job.job_index("mbx1", "log"), job.job_index("mbx2", "log")) == (1, 2, 4)


@pytest.mark.parametrize(("instances", "said"), [
    ((), "at least one"),
    ((MailInstance("a", 10, 5), MailInstance("a", 10, 5)), "distinct names"),
    ((MailInstance("a\nexec_prerun=reboot", 10, 5),), "not a plain word"),
    ((MailInstance("a", 0, 5),), "above 0"),
])
def test_a_job_that_fio_would_read_otherwise_is_refused(instances: tuple[MailInstance, ...], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        MailJob(instances, Path("/srv/io/data"))


def test_results_per_instance_are_achieved_iops_and_completion_latencies_in_ms() -> None:
    results = MailResults.of(even_instances(2, 200, 100), reports())
    first = results.instances[0]
    assert first.name == "mbx1" and first.target_db_iops == 100 and first.db_iops == pytest.approx(100.13, abs=0.01)
    assert first.db_read.mean_ms == pytest.approx(0.1722, abs=1e-4)
    assert first.db_read.percentiles_ms == {95.0: pytest.approx(0.2806, abs=1e-4), 99.0: pytest.approx(0.4157, abs=1e-4)}
    assert first.log_iops == pytest.approx(50.0, abs=0.1) and first.log_write.mean_ms == pytest.approx(0.3523, abs=1e-4)
    assert first.db_achieved == pytest.approx(1.0013, abs=1e-4)


def test_the_total_adds_iops_weights_mean_latency_by_iops_and_keeps_the_worst_percentile() -> None:
    results = MailResults.of(even_instances(2, 200, 100), reports())
    total, (a, b) = results.total(), results.instances
    assert total.db_iops == pytest.approx(a.db_iops + b.db_iops) and total.target_db_iops == 200
    assert a.db_read.mean_ms is not None and b.db_read.mean_ms is not None and total.db_read.mean_ms is not None
    assert min(a.db_read.mean_ms, b.db_read.mean_ms) < total.db_read.mean_ms < max(a.db_read.mean_ms, b.db_read.mean_ms)
    assert total.log_write.percentiles_ms[99.0] == max(a.log_write.percentiles_ms[99.0], b.log_write.percentiles_ms[99.0])


def test_a_job_missing_from_the_report_reads_as_not_measured_not_as_zero_latency() -> None:
    results = MailResults.of((MailInstance("mbx9", 100, 50),), reports())
    assert results.instances[0].db_iops == 0.0 and results.instances[0].db_read.mean_ms is None


def test_the_esrp_table_is_judged_only_where_the_user_set_a_limit() -> None:
    results = MailResults.of(even_instances(2, 200, 100), reports())
    unjudged = esrp_table(results, configuration="N-1", window_s=6)
    assert unjudged.verdict is CellVerdict.NOT_JUDGED and not unjudged.verdict_column
    assert [r["instance"] for r in unjudged.rows] == ["mbx1", "mbx2", "all instances"]
    assert any("no latency limit set" in note for note in unjudged.notes)
    judged = esrp_table(results, configuration="N-1", window_s=6, db_read_max_ms=0.15, log_write_max_ms=10)
    assert judged.verdict is CellVerdict.FAIL
    assert judged.failures() == ["mbx1: database read latency: DB read avg (ms) <= 0.15 (was 0.17)",
                                 "all instances: database read latency: DB read avg (ms) <= 0.15 (was 0.15)"]
