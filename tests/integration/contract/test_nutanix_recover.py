"""A Nutanix fault injected by a harness run that is then killed -9 is reverted by `python -m harness recover`.

Documentation-derived and unconfirmed (the Prism stand-in, tests/support/prism_model.py). The run powers a
VM off through Prism, journals the fault before it does, and dies with it in effect: Prism has no dead
man's switch, so nothing on the cluster would power it on. `recover` rebuilds the fault from the journal
alone and powers it on; every change either process sent carries the request id derived from the
instance the journal holds.
"""

from __future__ import annotations

import json
import secrets
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from harness_platforms.nutanix.api import request_id
from tests.integration.contract.test_nutanix_prism import HOSTS, PASSWORD_ENV, ahv_document
from tests.support.prism_model import PrismModel
from tests.unit.harness.safety.safety_support import Child, child_env, journal_files

pytestmark = pytest.mark.contract(source="documentation-derived, unconfirmed until a capture from a real Prism exists")
RUN = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from faults.base import FaultSpec
    from harness.safety.run import HarnessRun
    from harness_kernel.history.timeline import Timeline
    from harness_kernel.topology.loader import load_topology

    topology = load_topology(sys.argv[1])
    run = HarnessRun(topology=topology, topology_source=sys.argv[1], state_dir=Path(sys.argv[2]),
                     allow_destructive=True, start_guardian=False)
    with run.inject(Timeline(), FaultSpec("vm-power-off", "node:db/sql01")) as active:
        print("in-effect", flush=True)
        active.sleep(120)
    """)


def test_kill_9_mid_fault_then_recover_powers_the_vm_on_with_the_journaled_request_ids(tmp_path: Path) -> None:
    password = "Nx-" + secrets.token_urlsafe(12)
    model = PrismModel("operator", password)
    for hosts in HOSTS.values():
        for host in hosts:
            model.add_host(host)
    model.add_vm("sql01-vm", "ahv-a1")
    state = tmp_path / "state"
    with model.serving() as (central, element):
        topology = tmp_path / "ahv.yaml"
        topology.write_text(yaml.safe_dump(ahv_document(
            central, element, name="ahv-recover", allow_list=["node:db/sql01"], task_timeout_s=10, poll_s=0.02,
            databases=[{"name": "db", "kind": "sqlserver-ag", "endpoint": "192.0.2.100", "database": "bench",
                        "nodes": [{"name": "sql01", "host": "ahv-a1", "vm": "sql01-vm"}]}])))
        env = child_env(**{PASSWORD_ENV: password})
        run = Child([sys.executable, "-c", RUN, str(topology), str(state)], env=env)
        run.expect("in-effect", timeout_s=60)
        run.kill_group()
        assert model.vm_power("sql01-vm") == "OFF", "kill -9 gives the run no chance to revert"
        [entry] = [json.loads(p.read_text()) for p in journal_files(state)]
        instance = entry["spec"]["instance"]
        assert entry["backend"]["platform"] == "nutanix"
        assert [(a, rid) for a, _, rid in model.changes] == [("power-off", request_id(instance, "inject power-off"))]

        recovered = Child([sys.executable, "-m", "harness", "recover", "--state-dir", str(state)], env=env)
        assert recovered.wait(timeout_s=60) == 0, recovered.output()
        assert "reverted  vm-power-off on node:db/sql01" in recovered.output()
        assert model.vm_power("sql01-vm") == "ON" and journal_files(state) == []
        assert [(a, rid) for a, _, rid in model.changes][1:] == [("power-on", request_id(instance, "revert power-on"))]
        assert password not in run.output() + recovered.output()
