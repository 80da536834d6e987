"""ReportReader (core/status/reported.py) is parse_report once per shape, never a different
answer: whatever the bytes, a report read through a reader that has seen others is what
parse_report says of it alone; and Run.judgement, once per (object sent, shape), is assess's
verdict of every row."""
from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from ksgitops.core.status.health import assess
from ksgitops.core.status.memory import MemorySource
from ksgitops.core.status.reported import Checked, ReportReader, dump_report, parse_report
from ksgitops.core.status.rows import Run

NAME = "apps/deployments/ns/d.yaml"
PATH = f"spaces/mb/reported/{NAME}"
REPORT = {"object": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d", "generation": 3},
          "status": {"replicas": 2, "availableReplicas": 1, "observedGeneration": 3,
                     "conditions": [{"type": "Available", "status": "False"}]},
          "reportedAt": "2026-11-26T00:00:00Z"}
TIMES = ["2026-11-26T00:00:01Z", "2026-11-26T00:00:01.123456789Z", "2026-11-26T00:00:01+02:00",
         "2026-11-26t00:00:01Z", "2026-11-26T00:00:01z", "2026-11-26T00:00:01.1234567890123456789Z",
         "2026-13-45T99:99:99Z", "yesterday", "", "2026-11-26T00:00:01", "٢٠٢٦-11-26T00:00:01Z"]


def same(reader: ReportReader, name: str, data: bytes) -> Checked | list[Any]:
    """What the reader says of `data`, asserted to be what parse_report says."""
    found = reader.read(name, f"spaces/mb/reported/{name}", data)
    alone = parse_report(name, f"spaces/mb/reported/{name}", data)
    if isinstance(alone, list):
        assert found == alone, data
    else:
        assert isinstance(found, Checked), data
        assert (found.rel, found.doc) == (alone[0], alone[2]), data
        assert list(found.doc) == list(alone[2]), data  # the keys in the file's order too
    return found


def test_reports_of_one_shape_are_read_once_and_each_keeps_its_time() -> None:
    reader = ReportReader()
    first = same(reader, NAME, dump_report(REPORT))
    second = same(reader, NAME, dump_report({**REPORT, "reportedAt": "2026-11-27T10:00:00.5Z"}))
    assert isinstance(first, Checked) and isinstance(second, Checked)
    assert first.shape == second.shape >= 0
    assert second.doc["reportedAt"] == "2026-11-27T10:00:00.5Z" and first.doc["reportedAt"] == REPORT["reportedAt"]
    other = same(reader, NAME, dump_report({**REPORT, "status": {"replicas": 1}}))
    assert isinstance(other, Checked) and other.shape not in (-1, first.shape)
    elsewhere = same(reader, "apps/deployments/ns/e.yaml", dump_report({**REPORT, "object": {**REPORT["object"], "name": "e"}}))
    assert isinstance(elsewhere, Checked) and elsewhere.shape not in (-1, first.shape, other.shape)


@pytest.mark.parametrize("time", TIMES)
def test_any_time_after_a_shape_is_known_reads_as_parse_report_reads_it(time: str) -> None:
    reader = ReportReader()
    same(reader, NAME, dump_report(REPORT))
    same(reader, NAME, dump_report({**REPORT, "reportedAt": time}))
    same(reader, NAME, dump_report({**REPORT, "reportedAt": time}))


@pytest.mark.parametrize("data", [
    b'{"object": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d"},'
    b' "status": {"m": "\\"reportedAt\\": \\"x"}, "reportedAt": "2026-11-26T00:00:00Z"}',
    b'{"object": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d"},'
    b' "status": {"reportedAt": "2026-11-26T00:00:00Z"}, "reported\\u0041t": "2026-11-26T00:00:00Z"}',
    b'{"status": {"reportedAt": "2026-11-26T00:00:00Z"}, "reportedAt": "2026-11-26T00:00:00Z",'
    b' "object": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d"}}',
    b'reportedAt: "2026-11-26T00:00:00Z"\nobject: {apiVersion: apps/v1, kind: Deployment, namespace: ns, name: d}\n',
    b'{"reportedAt": "2026-11-26T00:00:00Z", "reportedAt": "2026-11-26T00:00:00Z",'
    b' "object": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d"}}',
])
def test_reports_whose_bytes_cannot_tell_their_shape_are_each_read_whole(data: bytes) -> None:
    """Escapes, a second "reportedAt", YAML: no shape is kept from such bytes, and a report that
    differs from them in the first quoted time is read whole, as parse_report reads it."""
    reader = ReportReader()
    found = same(reader, NAME, data)
    assert not isinstance(found, Checked) or found.shape == -1
    changed = data.replace(b"2026-11-26T00:00:00Z", b"2026-11-27T00:00:00Z", 1)
    same(reader, NAME, changed)


def test_a_yaml_flow_mapping_keeps_no_shape() -> None:
    """YAML may spell the top-level key without quotes: the one quoted "reportedAt" is then
    another key's, and a report differing there is another report, not another time."""
    reader = ReportReader()
    flow = (b'{reportedAt: "2026-11-26T00:00:00Z", object: {apiVersion: apps/v1, kind: Deployment, namespace: ns,'
            b' name: d}, status: {"reportedAt": "%s"}}')
    same(reader, NAME, flow % b"2026-11-26T00:00:00Z")
    found = same(reader, NAME, flow % b"2026-11-27T00:00:00Z")
    assert isinstance(found, Checked) and found.doc["reportedAt"] == "2026-11-26T00:00:00Z"


def mutated(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data))
    choice = rng.randrange(7)
    if choice == 0:
        return data[:at] + data[at + 1:]
    if choice == 1:
        return data[:at] + bytes([rng.choice(b'{}[]":,\\ 0123456789Zz.T-+ae\n')]) + data[at:]
    if choice == 2:
        return data.replace(b'"2026-11-26T00:00:00Z"', b'"' + rng.choice(TIMES).encode() + b'"')
    if choice == 3:
        return data.replace(b'"name": "d"', b'"name": "e"')
    if choice == 4:
        return data.replace(b'"reportedAt"', b'"reportedAt2"', 1)
    if choice == 5:
        return data.replace(b'"generation": 3', b'"generation": ' + rng.choice([b"-1", b"3.0", b"true", b'"3"']))
    return data.replace(b"\n", b"", rng.randrange(40))


def test_mutated_reports_read_through_one_reader_are_what_parse_report_says() -> None:
    rng = random.Random(5)
    base = dump_report(REPORT)
    reader = ReportReader(most=64)  # small: shapes are forgotten and made again along the way
    seen: set[int] = set()
    known = 0
    for _ in range(4000):
        data = base
        for _ in range(rng.randrange(0, 3)):
            data = mutated(rng, data)
        found = same(reader, rng.choice([NAME, "apps/deployments/ns/e.json", "x/y.yaml"]), data)
        if isinstance(found, Checked) and found.shape >= 0:
            known += found.shape in seen
            seen.add(found.shape)
    assert known > 300  # the shortcut was taken


def test_shapes_kept_are_bounded() -> None:
    reader = ReportReader(most=3)
    shapes = set()
    for replicas in range(10):
        found = reader.read(NAME, PATH, dump_report({**REPORT, "status": {"replicas": replicas}}))
        assert isinstance(found, Checked)
        shapes.add(found.shape)
        assert len(reader._shapes) <= 3
    assert len(shapes) == 10  # a shape made after others were forgotten has a number of its own


DEPLOYMENT = b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\nspec: {replicas: 2}\n"
SECRET = b"apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ndata: {k: dg==}\n"


def test_judgement_is_assess_for_every_row_whatever_was_judged_before() -> None:
    rng = random.Random(7)
    statuses = [{"observedGeneration": 5, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2},
                {"observedGeneration": 5, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1},
                {"replicas": 1}, {"observedGeneration": 1}, {}]
    patches = [b"", orjson.dumps([{"op": "replace", "path": "/spec/replicas", "value": 1}]),
               orjson.dumps([{"op": "replace", "path": "/metadata/name", "value": "d"}])]
    reports: dict[str, bytes] = {}
    for i in range(60):
        doc = {**REPORT, "status": rng.choice(statuses), "reportedAt": f"2026-11-26T00:00:{i % 60:02d}Z"}
        if rng.random() < 0.3:
            doc["object"] = {**REPORT["object"], "generation": rng.choice([1, 2, 5])}
        reports[f"r{i}.json"] = dump_report(doc)
    objects = {"objects": {"a.yaml": DEPLOYMENT, "s.yaml": SECRET},
               "patches": {f"p{i}.json": p for i, p in enumerate(patches) if p}}
    source = MemorySource({"mb": {**objects, "reported": {"apps/deployments/ns/d.json": b"{}", **reports}}})
    listing = source.listing("mb")
    run = Run(source)
    for _ in range(400):
        name = rng.choice(sorted(reports))
        data = listing.objects[rng.choice(["a", "s"])]
        patch = rng.choice(["", *listing.patches.values()]) if data == listing.objects["a"] else ""
        key = listing.reports[name][1]
        if rng.random() < 0.2:
            run.forget_documents()
        if rng.random() < 0.5:
            assert isinstance(run.report("apps/deployments/ns/d.json", f"spaces/mb/reported/{name}", key), Checked)
        report = "" if rng.random() < 0.1 else key
        doc = orjson.loads(reports[name]) if report else None
        verdict = assess(run.judged(data, patch), doc, None)
        generation = doc["object"].get("generation") if doc else None
        assert run.judgement(data, patch, report) == (verdict.health.value, verdict.message, generation)


def _json_reports(rng: random.Random, step: int) -> dict[str, dict[str, bytes]]:
    from status_reports import COMMOND, COMMON_CM, FLORIN, GUILDER
    rs = {"object": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "commonstuff", "name": "commond",
                     "generation": 1}}
    cm = {"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "commonstuff", "name": "httpd-htdocs"}}
    reports: dict[str, dict[str, bytes]] = {}
    for mb in (FLORIN, GUILDER):
        at = f"2026-01-01T00:{step:02d}:{rng.randrange(60):02d}Z"
        status = {"observedGeneration": 1, "replicas": 1, "availableReplicas": rng.choice([0, 1])}
        reports[mb] = {f"{COMMOND}.json": dump_report({**rs, "status": status, "reportedAt": at}),
                       f"{COMMON_CM}.json": dump_report({**cm, "reportedAt": at})}
    return reports


def test_status_with_report_shapes_is_status_without(example: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both mailboxes report the same objects at other times (one shape each, read once): every
    output equals a run whose reader reads each report whole, with and without a memo."""
    from ksgitops.app import usecases as app
    from ksgitops.core.status import reported
    from ksgitops.core.status.summary import MemorySource, StatusMemo, summarize, with_reports
    from status_reports import outputs
    result = app.compute(app.open_source(example, app.WORKTREE))
    rng = random.Random(3)
    memo = StatusMemo()
    for step in range(8):
        source = MemorySource(with_reports(result.generated, _json_reports(rng, step)))
        shaped = summarize(result, source, memo)
        with monkeypatch.context() as patched:
            patched.setattr(reported, "_masked", lambda data, times: None)
            whole = summarize(result, source, None)
        assert outputs(shaped) == outputs(whole) and shaped.combined == whole.combined, f"step {step}"


def test_placement_infos_are_made_once_per_set_of_placements(example: Any) -> None:
    from ksgitops.app import usecases as app
    from ksgitops.core.status.plans import contexts as _contexts, infos as _infos
    result = app.compute(app.open_source(example, app.WORKTREE))
    contexts = _contexts(result, {})
    for mb in result.wecs:
        assert contexts.infos(mb) == _infos(contexts.reaching(mb)) != {}
        assert contexts.infos(mb) is contexts.infos(mb)
    assert contexts.infos("no-such-mailbox") == {}

