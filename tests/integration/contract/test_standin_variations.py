"""The HTTP stand-ins serve every variation they are asked for, on the wire, where a client of any shape meets it;
and the contract tests' seed gives each variation to some tests and not others, the same way every run."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support import variations
from tests.support.json_http import RETRY_AFTER_S, JsonHandler, loopback_origins

BODY = {"name": "vm-1", "power": {"state": "ON", "since": 3}}


class Answer(JsonHandler):
    def do_GET(self) -> None:
        self.reply(BODY, 200, {"ETag": '"7"'})


@pytest.fixture
def origin() -> Iterator[tuple[str, int]]:
    with loopback_origins(Answer) as (served,):
        address = urlsplit(served)
        assert address.hostname is not None and address.port is not None
        yield address.hostname, address.port


def get(origin: tuple[str, int], path: str = "/vm") -> tuple[http.client.HTTPResponse, bytes]:
    connection = http.client.HTTPConnection(*origin, timeout=5)
    connection.request("GET", path)
    response = connection.getresponse()
    return response, response.read()


def serve(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    monkeypatch.setenv(variations.ENV, ",".join(names))


def test_asked_for_nothing_the_reply_is_the_plain_shape(origin: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch)
    response, raw = get(origin)
    names = [name for name, _ in response.getheaders()]
    assert "ETag" in names and "Content-Length" in names and json.loads(raw) == BODY
    assert raw == json.dumps(BODY).encode()


def test_lowercase_headers_sends_every_field_name_in_lower_case(origin: tuple[str, int],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, variations.LOWERCASE_HEADERS)
    response, _ = get(origin)
    names = [name for name, _ in response.getheaders() if name not in ("Server", "Date")]  # http.server's own
    assert names and all(name == name.lower() for name in names) and "etag" in names


def test_chunked_sends_the_body_in_chunks_without_a_length(origin: tuple[str, int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, variations.CHUNKED)
    response, raw = get(origin)
    assert response.version == 11 and response.getheader("Transfer-Encoding") == "chunked"
    assert response.getheader("Content-Length") is None and json.loads(raw) == BODY


def test_json_whitespace_indents_and_member_order_reverses_and_extra_fields_adds_a_member(
        origin: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, variations.JSON_WHITESPACE)
    _, raw = get(origin)
    assert b"\n  " in raw and json.loads(raw) == BODY
    serve(monkeypatch, variations.MEMBER_ORDER)
    _, raw = get(origin)
    assert list(json.loads(raw)) == ["power", "name"] and list(json.loads(raw)["power"]) == ["since", "state"]
    serve(monkeypatch, variations.EXTRA_FIELDS)
    _, raw = get(origin)
    served = json.loads(raw)
    extra, value = variations.EXTRA_MEMBER
    assert served[extra] == value and served["power"][extra] == value
    assert {k: v for k, v in served.items() if k != extra}["name"] == "vm-1"


def test_retry_after_answers_the_first_request_to_a_path_503_with_the_wait_and_then_serves_it(
        origin: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, variations.RETRY_AFTER)
    first, _ = get(origin)
    assert first.status == 503 and first.getheader("Retry-After") == str(RETRY_AFTER_S)
    again, raw = get(origin)
    assert again.status == 200 and json.loads(raw) == BODY
    other, _ = get(origin, "/other")
    assert other.status == 503, "each path is refused once"


def test_all_names_every_variation_and_an_unknown_name_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, "all")
    assert variations.asked() == set(variations.KNOWN)
    serve(monkeypatch, "lowercase-headers", "uppercase-headers")
    with pytest.raises(ValueError, match="no variation named uppercase-headers"):
        variations.asked()


def test_the_seed_gives_each_variation_to_some_contract_tests_and_not_others_and_repeats() -> None:
    ids = [f"tests/integration/contract/{path.name}::t{i}" for i, path in
           enumerate(sorted(Path(__file__).parent.glob("test_*.py")))]
    drawn = [variations.seeded(0, test_id) for test_id in ids]
    assert drawn == [variations.seeded(0, test_id) for test_id in ids]
    for name in variations.KNOWN:
        on = sum(name in chosen for chosen in drawn)
        assert 0 < on < len(ids), f"{name}: on for {on} of {len(ids)} tests"
    assert drawn != [variations.seeded(1, test_id) for test_id in ids], "another seed draws otherwise"


def test_this_test_runs_with_what_its_seed_drew(standin_variations: list[str]) -> None:
    assert sorted(variations.asked()) == sorted(standin_variations)
