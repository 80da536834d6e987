"""Truth in status for what does not read: a WEC's report in `reported/` that is malformed makes
its row Unknown, saying where and what is wrong (the WEC did report: it is not Missing), and a
patch a StatusCollector needs (it reads `obj`) that does not read makes its row Unknown with a
located warning, even when the object's health ignores its spec. With a memo or without, the
same bytes; never a Secret's data."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ksgitops.app import usecases as app
from ksgitops.core.emit.readback import REWRITE
from ksgitops.core.serialize import dump_yaml
from ksgitops.core.status.rows import UNREADABLE
from ksgitops.core.status.summary import MemorySource, StatusMemo, summarize, with_reports
from ksgitops.core.tree import put

FLORIN, GUILDER = "imw1-mb-florin", "imw1-mb-guilder"
COMMOND = "apps/replicasets/commonstuff/commond"
COMMON_CM = "core/configmaps/commonstuff/httpd-htdocs"
SECRET = "core/secrets/commonstuff/creds"
SECRET_VALUE = "czNjcjN0LXZhbHVl"
UNREAD = "the WEC's report does not read"


def rs(at: str = "2026-01-01T00:00:00Z", **identity: Any) -> dict[str, Any]:
    return {"object": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "commonstuff", "name": "commond",
                       "generation": 1, **identity},
            "status": {"observedGeneration": 1, "replicas": 1, "availableReplicas": 1}, "reportedAt": at}


def cm_report() -> bytes:
    return dump_yaml({"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "commonstuff",
                                 "name": "httpd-htdocs"}, "reportedAt": "2026-01-01T00:00:00Z"})


def compute(repo: Path) -> Any:
    return app.compute(app.open_source(repo, app.WORKTREE))


def run(result: Any, reports: dict[str, dict[str, bytes]], memo: StatusMemo | None = None,
        patches: dict[str, dict[str, bytes]] | None = None) -> Any:
    """The status step over the reconciled mailboxes with these report files (and patch files)."""
    trees = with_reports(result.generated, reports)
    for mb, files in (patches or {}).items():
        for name, data in files.items():
            put(trees[mb].setdefault("patches", {}), name, data)
    return summarize(result, MemorySource(trees), memo, 20)


def wec(out: Any, wds: str, rel: str, name: str) -> dict[str, Any]:
    return next(w for w in out.status(wds, rel)["wecs"] if w["name"] == name)


MALFORMED = {  # what a report holds -> (the line, what the row says after the line)
    "yesterday": (dump_yaml(rs(at="yesterday")), 1, "reportedAt: must be an RFC 3339 time"),
    "another-name": (dump_yaml(rs(name="other")), 1, "object does not match the file's path"),
    "not-a-map": (b"- just\n- a list\n", 1, "document is not a mapping (found list)"),
    "invalid-yaml": (b"object:\n  kind: ReplicaSet\n  name: [unclosed\n", 4, "malformed YAML: "),
    "two-documents": (dump_yaml(rs()) + b"---\n" + dump_yaml(rs()), len(dump_yaml(rs()).splitlines()) + 2,
                      "a report file holds exactly one document, found 2"),
}


@pytest.mark.parametrize("how", MALFORMED)
def test_a_malformed_report_makes_its_row_unknown_saying_where_and_why(example: Path, how: str) -> None:
    data, line, what = MALFORMED[how]
    out = run(compute(example), {GUILDER: {f"{COMMOND}.yaml": data}})
    message = f"{UNREAD}: reported/{COMMOND}.yaml:{line}: {what}"
    item = wec(out, "wmw-c", COMMOND, "guilder")
    assert item["health"] == "Unknown" and item["message"].startswith(message), item
    assert "reportedAt" not in item and "generation" not in item
    status = out.status("wmw-c", COMMOND)
    assert status["reportedCount"] == 1 and status["health"] == {"Missing": 1, "Unknown": 1}
    assert "singletonStatus" not in status
    assert f"| wmw-c: ReplicaSet.apps commonstuff/commond | guilder | Unknown | {message}" in out.markdown.decode()
    assert out.counts == {"Missing": 5, "Unknown": 1}
    # the warning stays, located in the mailbox
    assert any(str(p.origin).startswith(f"spaces/{GUILDER}/reported/{COMMOND}.yaml:") and p.severity == "warning"
               for p in out.problems), out.problems


def test_a_valid_report_beside_one_that_does_not_read_judges_the_row(example: Path) -> None:
    result = compute(example)
    bad = b"object: {kind: [\n"
    out = run(result, {GUILDER: {f"{COMMOND}.json": bad, f"{COMMOND}.yaml": dump_yaml(rs())}})
    assert wec(out, "wmw-c", COMMOND, "guilder")["health"] == "Healthy"
    assert any(p.origin.path == f"spaces/{GUILDER}/reported/{COMMOND}.json" for p in out.problems)
    # two that do not read: the first by name speaks for the object
    out = run(result, {GUILDER: {f"{COMMOND}.json": bad, f"{COMMOND}.yaml": b"- x\n"}})
    assert wec(out, "wmw-c", COMMOND, "guilder")["message"].startswith(f"{UNREAD}: reported/{COMMOND}.json:")
    # a file whose path names no object: a warning only
    out = run(result, {GUILDER: {"apps/replicasets/commond.yaml": bad}})
    assert wec(out, "wmw-c", COMMOND, "guilder")["health"] == "Missing"
    assert any(p.origin.path == f"spaces/{GUILDER}/reported/apps/replicasets/commond.yaml" for p in out.problems)


def test_the_row_of_a_secret_whose_report_does_not_read_quotes_nothing(example: Path) -> None:
    (example / "spaces/wmw-c/httpd.yaml").write_text(
        (example / "spaces/wmw-c/httpd.yaml").read_text()
        + f"---\napiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: commonstuff}}\n"
          f"data: {{password: {SECRET_VALUE}}}\n")
    placement = example / "spaces/wmw-c/edge-placement-c.yaml"
    placement.write_text(placement.read_text().replace(
        "  wantSingletonReportedState: true",
        "  - apiGroup: \"\"\n    resources: [secrets]\n    namespaces: [commonstuff]\n  wantSingletonReportedState: true"))
    leaky = (b"object: {apiVersion: v1, kind: Secret, namespace: commonstuff, name: creds}\n"
             b"reportedAt: '" + SECRET_VALUE.encode() + b"'\nstatus: '" + SECRET_VALUE.encode() + b"'\n")
    out = run(compute(example), {FLORIN: {f"{SECRET}.yaml": leaky}})
    item = wec(out, "wmw-c", SECRET, "florin")
    assert item["health"] == "Unknown" and item["message"].startswith(f"{UNREAD}: reported/{SECRET}.yaml:"), item
    assert SECRET_VALUE.encode() not in out.markdown + b"".join(out.combined.values())
    warnings = [p for p in out.problems if p.origin.path == f"spaces/{FLORIN}/reported/{SECRET}.yaml"]
    assert warnings and all(SECRET_VALUE not in str(p) for p in warnings), warnings  # the warnings say where, not what


def test_with_a_memo_a_report_that_stops_or_starts_reading_gives_the_bytes_of_a_fresh_run(example: Path) -> None:
    result = compute(example)
    memo = StatusMemo()
    steps = [dump_yaml(rs()), b"not: [valid\n", b"- x\n", dump_yaml(rs(at="yesterday")), dump_yaml(rs()),
             b"- x\n", None]
    for step, data in enumerate(steps):
        reports = {GUILDER: {f"{COMMOND}.yaml": data}} if data is not None else {}
        reports[FLORIN] = {f"{COMMON_CM}.yaml": cm_report()}
        kept, fresh = run(result, reports, memo), run(result, reports)
        assert (kept.markdown, kept.combined, kept.problems) == (fresh.markdown, fresh.combined, fresh.problems), step
        health = wec(kept, "wmw-c", COMMOND, "guilder")["health"]
        assert health == {0: "Healthy", 4: "Healthy", 6: "Missing"}.get(step, "Unknown"), step


# --- a patch a StatusCollector reads ---------------------------------------------------------------

COLLECTORS = """apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: names}
spec:
  select:
  - {name: name, def: obj.metadata.name}
---
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: count}
spec:
  combinedFields:
  - {name: wecs, type: COUNT}
"""
BROKEN_PATCH = {FLORIN: {f"{COMMON_CM}.json": b"[{\"op\": \"add\", \"path\": \n"}}


def with_collector(example: Path, name: str) -> None:
    (example / "spaces/wmw-c/collectors.yaml").write_text(COLLECTORS)
    placement = example / "spaces/wmw-c/edge-placement-c.yaml"
    text = placement.read_text().split("  statusCollectors:")[0]
    placement.write_text(text.replace("  wantSingletonReportedState: true",
                                      f"  wantSingletonReportedState: true\n  statusCollectors: [{name}]"))


def test_a_patch_a_status_collector_reads_is_read_and_located_when_it_does_not_read(example: Path) -> None:
    with_collector(example, "names")
    reports = {FLORIN: {f"{COMMON_CM}.yaml": cm_report()}}
    out = run(compute(example), reports, patches=BROKEN_PATCH)
    item = wec(out, "wmw-c", COMMON_CM, "florin")
    assert (item["health"], item["message"]) == ("Unknown", UNREADABLE), item
    assert any(str(p.origin).startswith(f"spaces/{FLORIN}/patches/{COMMON_CM}.json:") and p.severity == "warning"
               for p in out.problems), out.problems
    # a collector that does not read `obj`: the patch is not read (status stays incremental)
    with_collector(example, "count")
    out = run(compute(example), reports, patches=BROKEN_PATCH)
    assert wec(out, "wmw-c", COMMON_CM, "florin")["health"] == "Healthy"
    assert not any("/patches/" in p.origin.path for p in out.problems)


def test_with_a_memo_a_collector_that_starts_reading_obj_judges_the_rows_again(example: Path) -> None:
    memo = StatusMemo()
    reports = {FLORIN: {f"{COMMON_CM}.yaml": cm_report()}}
    for step, name in enumerate(["count", "names", "count"]):
        with_collector(example, name)
        result = compute(example)
        kept, fresh = run(result, reports, memo, BROKEN_PATCH), run(result, reports, None, BROKEN_PATCH)
        assert (kept.markdown, kept.combined, kept.problems) == (fresh.markdown, fresh.combined, fresh.problems), step
        assert wec(kept, "wmw-c", COMMON_CM, "florin")["health"] == ("Unknown" if name == "names" else "Healthy")


def test_a_patch_that_fails_to_apply_leaves_obj_unevaluated_not_empty(example: Path) -> None:
    """A patch whose operation does not apply: the row is Unknown with the patch's file:line, and
    the collector's expressions reading `obj` are not evaluated there (they saw `{}`: no such key)."""
    with_collector(example, "names")
    failing = {FLORIN: {f"{COMMON_CM}.json": b'[\n  {"op": "remove", "path": "/no/such/field"}\n]\n'}}
    out = run(compute(example), {FLORIN: {f"{COMMON_CM}.yaml": cm_report()}}, patches=failing)
    assert wec(out, "wmw-c", COMMON_CM, "florin")["health"] == "Unknown"
    assert [str(p) for p in out.problems if "/patches/" in p.origin.path] == \
        [f"spaces/{FLORIN}/patches/{COMMON_CM}.json:2: warning: operation 1 of 1 (remove) does not apply to the "
         f"base copy ({REWRITE})"]  # at the operation's line: it was at line 1
    said = [p.message for p in out.problems if p.origin.path == "spaces/wmw-c/collectors.yaml"]
    assert said == ["StatusCollector names: spec.select[0].def: not evaluated: the object sent to the WEC does not "
                    "read (its base copy or patch in the mailbox) on 1 WEC (florin)"], said
    rows = out.status("wmw-c", COMMON_CM)["results"][0]["rows"]
    assert rows == [{"columns": [{"type": "Null"}]}, {"columns": [{"type": "String", "string": "httpd-htdocs"}]}]


def test_a_secrets_patch_that_does_not_read_is_located_without_its_data(example: Path) -> None:
    (example / "spaces/wmw-c/httpd.yaml").write_text(
        (example / "spaces/wmw-c/httpd.yaml").read_text()
        + f"---\napiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: commonstuff}}\n"
          f"data: {{password: {SECRET_VALUE}}}\n")
    with_collector(example, "names")
    placement = example / "spaces/wmw-c/edge-placement-c.yaml"
    placement.write_text(placement.read_text().replace(
        "  wantSingletonReportedState: true",
        "  - apiGroup: \"\"\n    resources: [secrets]\n    namespaces: [commonstuff]\n  wantSingletonReportedState: true"))
    bad = {FLORIN: {f"{SECRET}.json": b'[{"op": "test", "path": "/data/password", "value": "' + SECRET_VALUE.encode()
                    + b'x"}]\n'}}
    out = run(compute(example), {}, patches=bad)
    assert wec(out, "wmw-c", SECRET, "florin")["health"] == "Unknown"
    assert any(p.origin.path == f"spaces/{FLORIN}/patches/{SECRET}.json" for p in out.problems), out.problems
    shown = out.markdown + b"".join(out.combined.values()) + "\n".join(map(str, out.problems)).encode()
    assert SECRET_VALUE.encode() not in shown


# --- a frozen space: its rows are judged as the WEC received them, as any other's ---------------------

def frozen(example: Path, collector: str) -> Any:
    """The example with `collector` on edge-placement-c, reconciled, then wmw-c frozen (a file that
    does not parse): its placements' records keep its objects in the mailboxes."""
    with_collector(example, collector)
    app.reconcile_worktree(example)
    (example / "spaces/wmw-c/broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x\n")
    result = compute(example)
    assert "wmw-c" in result.frozen.broken
    return result


def test_a_frozen_spaces_row_reads_the_patch_a_status_collector_reads(example: Path) -> None:
    out = run(frozen(example, "names"), {FLORIN: {f"{COMMON_CM}.yaml": cm_report()}}, patches=BROKEN_PATCH)
    broken = f"| wmw-c: ConfigMap commonstuff/httpd-htdocs | florin | Unknown | {UNREADABLE} |"
    assert broken in out.markdown.decode()
    assert any(str(p.origin).startswith(f"spaces/{FLORIN}/patches/{COMMON_CM}.json:") and p.severity == "warning"
               for p in out.problems), out.problems


def test_a_frozen_spaces_collector_that_no_longer_resolves_may_read_obj(example: Path) -> None:
    frozen(example, "names")
    (example / "spaces/wmw-c/collectors.yaml").unlink()  # its last good definition is unknown now
    out = run(compute(example), {FLORIN: {f"{COMMON_CM}.yaml": cm_report()}}, patches=BROKEN_PATCH)
    assert f"| wmw-c: ConfigMap commonstuff/httpd-htdocs | florin | Unknown | {UNREADABLE} |" in out.markdown.decode()


def test_a_frozen_spaces_patch_nothing_reads_is_not_read(example: Path) -> None:
    out = run(frozen(example, "count"), {FLORIN: {f"{COMMON_CM}.yaml": cm_report()}}, patches=BROKEN_PATCH)
    assert not any("/patches/" in p.origin.path for p in out.problems)
    assert "| wmw-c/edge-placement-c (frozen) | 2 | 2 | 1/4 |" in out.markdown.decode()


def test_a_patch_that_does_not_read_leaves_the_singleton_status_shown(example: Path) -> None:
    """Whether the reported status may be shown (never a Secret's) is judged on the base copy: a
    customization never changes the kind, so a broken patch of an object that no collector reads
    does not hide what its one WEC reported."""
    special = "core/configmaps/specialstuff/httpd-htdocs"  # wmw-s wants singleton status; guilder alone runs it
    report = dump_yaml({"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "specialstuff",
                                   "name": "httpd-htdocs"}, "status": {"seen": "yes"}, "reportedAt": "2026-01-01T00:00:00Z"})
    result = compute(example)
    good = run(result, {GUILDER: {f"{special}.yaml": report}})
    assert good.status("wmw-s", special)["singletonStatus"] == {"seen": "yes"}
    broken = run(result, {GUILDER: {f"{special}.yaml": report}}, patches={GUILDER: {f"{special}.json": b"[not json"}})
    assert broken.status("wmw-s", special)["singletonStatus"] == {"seen": "yes"}
