"""No secret anywhere: a careless suite's run leaves no spelling of a credential in any output."""

from __future__ import annotations

import pytest

from tests.unit.harness.secrets.careless import KILLED_SUITE, SECRETS, leaks, run_careless


@pytest.mark.parametrize("secret", SECRETS.values(), ids=SECRETS.keys())
def test_no_secret_in_any_output_of_a_careless_run(tmp_path, secret):
    done, files = run_careless(tmp_path, secret)
    assert done.returncode == 1, done.stdout + done.stderr  # the careless test fails: an SLO-style failure
    assert any(p.name.endswith("-result.json") for p in files), "the run wrote Allure results"
    outputs = {"stdout": done.stdout, "stderr": done.stderr} | {p.name: p.read_text(errors="replace") for p in files}
    assert leaks(secret, outputs) == []
    assert "RuntimeError: pw=***" in done.stdout, "the failure is still reported, masked"


def test_the_scrub_happens_even_when_writing_the_allure_environment_fails(tmp_path):
    secret = SECRETS["long"]
    done, files = run_careless(tmp_path, secret, product="passive-node")  # a credential-like key: write_environment raises
    assert "credential-like keys: product.passive-node" in done.stdout + done.stderr
    outputs = {p.name: p.read_text(errors="replace") for p in files}
    assert leaks(secret, outputs) == []


def test_results_of_finished_tests_are_scrubbed_before_the_run_is_killed(tmp_path):
    secret = SECRETS["long"]
    done, files = run_careless(tmp_path, secret, suite=KILLED_SUITE)
    assert done.returncode == -9, done.stdout + done.stderr
    assert any(p.name.endswith("-result.json") for p in files), "the finished test's Allure result was written"
    outputs = {p.name: p.read_text(errors="replace") for p in files}
    assert leaks(secret, outputs) == []
