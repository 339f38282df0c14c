"""The masking rule, spelling by spelling: every secret, whatever its length, in every form it takes."""

from __future__ import annotations

import base64
import io
import json
import logging
import xml.etree.ElementTree as ET

import pytest
from _pytest._io.saferepr import saferepr

from harness_kernel.redaction import MASK, MaskingStream, Redactor, redacted_logging
from reports.results_scrub import scrub_file
from tests.unit.harness.secrets.careless import SECRETS, USER, forms


@pytest.mark.parametrize("secret", SECRETS.values(), ids=SECRETS.keys())
def test_every_spelling_of_a_secret_is_masked(secret):
    redactor = Redactor([secret], [USER])
    for name, form in forms(secret).items():
        assert redactor.mask(f"<{form}>") == f"<{MASK}>", name


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_base64_of_a_long_secret_is_masked_inside_longer_base64(offset):
    secret = SECRETS["long"]
    encoded = base64.b64encode(b"x" * offset + f"token {secret} end".encode()).decode()
    assert MASK in Redactor([secret]).mask(encoded)


def test_a_secret_cut_short_by_a_repr_keeps_no_head_or_tail():
    secret = SECRETS["long"]
    cut = saferepr("x" * 50 + secret + "y" * 50, maxsize=125)  # pytest -l: the '...' falls inside the secret
    assert "dor..." in cut and "...y" in cut, cut  # a piece of the secret on each side of the cut
    assert Redactor([secret]).mask(cut) == "'" + "x" * 50 + "***...***" + "y" * 50 + "'"


def test_three_character_secrets_are_masked_too():
    assert Redactor(["q7Z"]).mask("pw=q7Z;") == "pw=***;"


def test_log_records_lose_the_secret_in_message_and_traceback():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log = logging.getLogger("test.redaction")
    log.addHandler(handler)
    try:
        with redacted_logging(Redactor(["q7Z"])):
            try:
                raise RuntimeError("pw=q7Z")
            except RuntimeError:
                log.exception("login with %s", "q7Z", stack_info=True)
    finally:
        log.removeHandler(handler)
    assert "q7Z" not in stream.getvalue() and "RuntimeError: pw=***" in stream.getvalue()


def test_a_masking_stream_never_splits_a_secret_across_writes():
    target = io.StringIO()
    stream = MaskingStream(target, Redactor(["q7Z"]))  # type: ignore[arg-type]
    stream.write("pw=q7")
    stream.write("Z\n")
    assert target.getvalue() == "pw=***\n"


def test_json_and_xml_keep_their_structure_when_a_short_secret_matches_markup(tmp_path):
    result, junit = tmp_path / "r-result.json", tmp_path / "junit.xml"
    result.write_text(json.dumps({"status": True, "message": "pw=tru"}))
    junit.write_text('<?xml version="1.0"?><testsuite name="tru"><testcase>pw=tru</testcase></testsuite>')
    assert scrub_file(result, ["tru"]) and scrub_file(junit, ["tru"])
    assert json.loads(result.read_text()) == {"status": True, "message": "pw=***"}
    assert ET.fromstring(junit.read_text()).find("testcase").text == "pw=***"  # type: ignore[union-attr]
