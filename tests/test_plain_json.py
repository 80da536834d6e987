"""parse.plain_json is a shortcut, never a different answer: whenever it returns a document,
parse_json returns exactly that one document and nothing else, over reports and their mutations."""
from __future__ import annotations

import random

import orjson
import pytest

from ksgitops.core.load.parse import MAX_FILE_BYTES, parse_json, plain_json
from ksgitops.core.status.reported import dump_report

REPORT = {"object": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d", "generation": 3},
          "status": {"replicas": 2, "availableReplicas": 1, "conditions": [{"type": "Available", "status": "False"}]},
          "reportedAt": "2026-11-26T00:00:00Z"}


def agree(data: bytes) -> bool:
    fast = plain_json(data)
    if fast is None:
        return True  # no claim: parse_json answers
    parsed = parse_json("r.json", data)
    assert parsed.problems == () and len(parsed.docs) == 1, data
    return parsed.docs[0][1] == fast and parsed.docs[0][0] == 1


def mutations(rng: random.Random, data: bytes) -> bytes:
    choice = rng.randrange(8)
    at = rng.randrange(len(data))
    if choice == 0:
        return data[:at] + data[at + 1:]
    if choice == 1:
        return data[:at] + bytes([rng.randrange(256)]) + data[at:]
    if choice == 2:
        return data[:at] + b"[" * rng.randrange(1, 120) + data[at:]
    if choice == 3:
        return data.replace(b'"generation": 3', b'"generation": ' + b"9" * rng.randrange(10, 30))
    if choice == 4:
        return data.replace(b'"object"', b'"metadata": {"labels": {"a": 1}}, "object"', 1)
    if choice == 5:
        return orjson.dumps({"apiVersion": "v1", "kind": "List", "items": [REPORT] * rng.randrange(3)})
    if choice == 6:
        return b"\xef\xbb\xbf" + data
    return data[:at] + "é".encode() + data[at:]


def test_reports_are_read_the_same_way() -> None:
    data = dump_report(REPORT)
    assert plain_json(data) == REPORT  # the shortcut does take the reports agents write
    assert agree(data)


def test_mutated_documents_are_read_the_same_way_or_left_to_parse_json() -> None:
    rng = random.Random(11)
    base = dump_report(REPORT)
    taken = 0
    for _ in range(5000):
        data = base
        for _ in range(rng.randrange(1, 3)):
            data = mutations(rng, data)
        assert agree(data)
        taken += plain_json(data) is not None
    assert 0 < taken < 5000  # both ways were exercised


@pytest.mark.parametrize("data", [b"{}", b"[]", b'{"a": 1}', b"{" + b'"k": 1' + b"}", b'{"a": 12345678901234567}',
                                  b'{"items": [], "kind": "List"}', b'{"a": NaN}', b'{"a": "\\ud800"}'])
def test_edge_documents(data: bytes) -> None:
    assert agree(data)


def test_a_file_over_the_limit_is_left_to_parse_json() -> None:
    assert plain_json(b'{"a": "' + b"x" * MAX_FILE_BYTES + b'"}') is None


def test_the_digit_run_check_is_the_regex_one() -> None:
    """plain_json leaves to parse_json exactly the texts parse_json's own check calls long."""
    from ksgitops.core.load.parse import _DIGIT_RUN, _DIGITS, _LONG_DIGITS
    rng = random.Random(3)
    for _ in range(20000):
        text = "".join(rng.choice("0123456789a{}é٣ ") for _ in range(rng.randrange(0, 60)))
        assert (_LONG_DIGITS.search(text) is not None) == (_DIGIT_RUN in text.encode().translate(_DIGITS)), text
