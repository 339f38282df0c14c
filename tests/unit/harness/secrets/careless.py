"""A careless suite and the spellings of a secret to look for in everything a run leaves behind."""

from __future__ import annotations

import base64
import html
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote, quote_plus

ROOT = Path(__file__).parents[4]
USER = "harness-ops"
SECRETS = {"short": "Q}&", "long": 'Tr0ub4"dor}&<x y\\+/-unit'}

CARELESS_SUITE = textwrap.dedent("""\
    import base64, html, json, logging, os
    from pathlib import Path
    from urllib.parse import quote

    import allure

    log = logging.getLogger("careless.driver")

    def test_careless(record_property, pytestconfig, product_versions):
        secret = os.environ["HARNESS_JUMP_PW"]
        dsn = "DRIVER={x};UID=harness-ops;PWD={" + secret.replace("}", "}}") + "};"
        basic = base64.b64encode(f"harness-ops:{secret}".encode()).decode()
        record_property("dsn", dsn)
        if os.environ.get("CARELESS_PRODUCT"):
            product_versions[os.environ["CARELESS_PRODUCT"]] = "1.0"
        print(f"pw={secret} repr={secret!r} json={json.dumps(secret)} url={quote(secret, safe='')} basic={basic}")
        allure.attach(f"<p>{html.escape(secret)}</p> {dsn}", "evidence", allure.attachment_type.HTML)
        tables = Path(pytestconfig.getoption("--tables-dir"))
        tables.mkdir(parents=True, exist_ok=True)
        (tables / "careless.md").write_text(f"| pw | {secret} |\\n")
        try:
            raise RuntimeError(f"pw={secret}")
        except RuntimeError:
            log.exception("revert failed")
        raise RuntimeError(f"pw={secret} dsn={dsn!r} basic={basic}")
    """)

KILLED_SUITE = textwrap.dedent("""\
    import os, signal
    import allure

    def test_finished():
        allure.attach("pw=" + os.environ["HARNESS_JUMP_PW"], "evidence", allure.attachment_type.TEXT)
        raise RuntimeError("pw=" + os.environ["HARNESS_JUMP_PW"])

    def test_killed():
        os.kill(os.getpid(), signal.SIGKILL)  # a CI timeout: no sessionfinish, no cleanup
    """)

LATE_CONFTEST = textwrap.dedent("""\
    import os
    from pathlib import Path

    def pytest_sessionfinish(session):
        # evidence written at session end, after the last test: only a final scrub can catch it
        for option in ("allure_report_dir", "tables_dir"):
            directory = Path(getattr(session.config.option, option))
            (directory / f"late-{option}.txt").write_text("late " + os.environ["HARNESS_JUMP_PW"])
    """)


def topology_yaml(directory: Path) -> Path:
    """Documentation addresses only: nothing here is ever contacted."""
    path = directory / "topology.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: careless-{directory.name[-10:].replace('_', '-')}
        sites:
          - name: site-a
            hosts: [{{name: host-a, address: 192.0.2.1}}]
        management:
          ssh:
            - {{name: jump, address: 192.0.2.9, username: {USER}, password: {{env: HARNESS_JUMP_PW}}}}
        allow_list: []
        """))
    return path


def forms(secret: str) -> dict[str, str]:
    """Every spelling of `secret` a careless suite, a driver or a report format produces."""
    escaped_repr = repr(secret)[1:-1]
    return {
        "raw": secret,
        "repr": escaped_repr,
        "json": json.dumps(secret)[1:-1],
        "repr+json": json.dumps(escaped_repr)[1:-1],
        "odbc": secret.replace("}", "}}"),
        "html": html.escape(secret),
        "html-text": html.escape(secret, quote=False),
        "url": quote(secret, safe=""),
        "url-plus": quote_plus(secret),
        "basic": base64.b64encode(f"{USER}:{secret}".encode()).decode(),
    }


def run_careless(tmp_path: Path, secret: str, *, product: str = "",
                 suite: str = CARELESS_SUITE) -> tuple[subprocess.CompletedProcess[str], list[Path]]:
    """A child pytest run of the careless suite with -l, JUnit, Allure and tables; returns it and its files."""
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    (suite_dir / "test_careless.py").write_text(suite)
    (suite_dir / "conftest.py").write_text(LATE_CONFTEST)
    topology = topology_yaml(tmp_path)
    junit, results, tables = tmp_path / "junit.xml", tmp_path / "allure-results", tmp_path / "tables"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HARNESS_JUMP_PW": secret, "CARELESS_PRODUCT": product}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "harness.plugin", "--rootdir", str(ROOT),
         "-c", str(ROOT / "pyproject.toml"), str(suite_dir / "test_careless.py"), "--topology", str(topology),
         "--state-dir", str(tmp_path / "state"), "-l", "-rA", "--log-level=INFO", "-o", "junit_family=legacy",
         f"--junitxml={junit}", f"--alluredir={results}", f"--tables-dir={tables}"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    directories = (results, tables, tmp_path / "state")
    files = [*([junit] if junit.exists() else []), *(p for d in directories for p in sorted(d.rglob("*")) if p.is_file())]
    return done, files


def leaks(secret: str, outputs: dict[str, str]) -> list[str]:
    """'<where>: <form>' for every form of `secret` found in any output."""
    return [f"{where}: {name}" for where, text in outputs.items() for name, form in forms(secret).items() if form in text]
