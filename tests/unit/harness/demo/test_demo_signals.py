"""Ctrl-C on `python -m harness demo` lets the pytest child finish its revert: it is never SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).parents[4]

# Stands in for the pytest child: a revert that takes 2 s after the first SIGINT.
CHILD = textwrap.dedent("""\
    import signal, sys, time
    from pathlib import Path
    got = []
    signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    Path(sys.argv[2]).write_text("ready")
    while not got:
        time.sleep(0.05)
    time.sleep(2)
    Path(sys.argv[1]).write_text("reverted")
    sys.exit(2)
    """)

# `python -m harness demo` with the pytest command and the report builder replaced.
DEMO = textwrap.dedent("""\
    import argparse, sys
    from pathlib import Path
    import harness.demo as demo
    import reports.build
    marker, ready, out = sys.argv[1:4]
    demo.pytest_command = lambda args, results, tables, **kw: [sys.executable, "-c", sys.argv[4], marker, ready]
    demo.demo_needs = lambda no_vsphere: []
    reports.build.build_report = lambda *a, **k: sys.exit("the report must not be built after Ctrl-C")
    args = argparse.Namespace(out=Path(out), lab="lab", smoke=True, keep_lab=False, no_vsphere=True, state_dir=None,
                              pytest_args=[])
    try:
        code = demo.run_demo(args)
    except KeyboardInterrupt:
        code = "KeyboardInterrupt"
    print("demo returned", code, flush=True)
    """)


def test_ctrl_c_on_the_demo_lets_the_pytest_child_finish_its_revert(tmp_path):
    marker, ready = tmp_path / "reverted", tmp_path / "ready"
    demo = subprocess.Popen([sys.executable, "-c", DEMO, str(marker), str(ready), str(tmp_path / "out"), CHILD],
                            cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline and demo.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), "the child never started"
        os.killpg(demo.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole foreground process group
        output, _ = demo.communicate(timeout=30)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
    assert marker.exists(), output
    assert "demo returned 2" in output, output  # the child's own exit code, not -9
