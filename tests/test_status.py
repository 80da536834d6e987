"""The status step: reported/ -> CombinedStatus files and STATUS.md (docs/REFERENCE.md, "Generated files").

Most cases run `summarize` on the bundled example's sources (copied, generated files left out) with
reports built here; a few run `ksgitops status` end to end on a work tree.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import EXAMPLE
from ksgitops.app import usecases as app
from ksgitops.core.status.reported import parse_report
from ksgitops.core.load.schemas import validate_document
from ksgitops.core.serialize import dump_yaml, load_yaml
from ksgitops.core.status.summary import (STATUS_MD, MemorySource, StatusMemo, summarize as summarize_source, with_reports)
from ksgitops.core.tree import walk
from ksgitops.model import Origin

FLORIN, GUILDER = "imw1-mb-florin", "imw1-mb-guilder"
COMMOND = "apps/replicasets/commonstuff/commond"
COMMON_CM = "core/configmaps/commonstuff/httpd-htdocs"
SPECIALD = "apps/deployments/specialstuff/speciald"
SPECIAL_CM = "core/configmaps/specialstuff/httpd-htdocs"
SECRET = "core/secrets/commonstuff/creds"
SECRET_VALUE = "czNjcjN0LXZhbHVl"  # base64 of s3cr3t-value


# --- helpers --------------------------------------------------------------------------------------

def report(api_version: str, kind: str, namespace: str, name: str, status: dict[str, Any] | None = None,
           at: str = "2026-01-01T00:00:00Z", generation: int | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name}
    if generation is not None:
        obj["generation"] = generation
    doc: dict[str, Any] = {"object": obj, "reportedAt": at}
    if status is not None:
        doc["status"] = status
    return doc


def rs(available: int, at: str = "2026-01-01T00:00:00Z", **extra: Any) -> dict[str, Any]:
    return report("apps/v1", "ReplicaSet", "commonstuff", "commond",
                  {"observedGeneration": 1, "replicas": 1, "availableReplicas": available, **extra}, at, 1)


RS_FAILED = {"conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                             "message": "quota | exceeded"}]}


def cm(namespace: str = "commonstuff", at: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return report("v1", "ConfigMap", namespace, "httpd-htdocs", None, at)


def deploy(available: int) -> dict[str, Any]:
    return report("apps/v1", "Deployment", "specialstuff", "speciald",
                  {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": available},
                  "2026-01-01T00:00:09Z", 1)


def as_reports(docs: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, tuple[Origin, dict[str, Any]]]]:
    return {mb: {rel: (Origin(f"spaces/{mb}/reported/{rel}.yaml", 1), doc) for rel, doc in rels.items()}
            for mb, rels in docs.items()}


def compute(repo: Path) -> Any:
    return app.compute(app.open_source(repo, app.WORKTREE))


def status_of(out: Any, wds: str, rel: str) -> dict[str, Any]:
    return out.status(wds, rel)


def summarize(result: Any, reports: dict[str, dict[str, tuple[Origin, dict[str, Any]]]], limit: int = 20,
              memo: StatusMemo | None = None) -> Any:
    """The status step over the reconciled mailboxes (in memory) with these reports written in."""
    files = {mb: {f"{rel}.yaml": dump_yaml(doc) for rel, (_, doc) in rels.items()} for mb, rels in reports.items()}
    return summarize_source(result, MemorySource(with_reports(result.generated, files)), memo, limit)


def edit(repo: Path, path: str, old: str, new: str) -> None:
    file = repo / path
    text = file.read_text()
    assert old in text, (path, old)
    file.write_text(text.replace(old, new))


def write_reports(repo: Path, docs: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Reconcile first (a mailbox is known by its space.yaml), then write reported/ files."""
    app.reconcile_worktree(repo)
    for mb, rels in docs.items():
        for rel, doc in rels.items():
            path = repo / "spaces" / mb / "reported" / f"{rel}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(dump_yaml(doc))


def all_output(out: Any) -> bytes:
    """Every byte summarize produced: status files and STATUS.md."""
    data = [out.markdown]
    for tree in out.generated.values():
        if isinstance(tree, dict):
            data += [content for _, content in walk(tree) if isinstance(content, bytes)]
    return b"\n".join(data)


# --- CombinedStatus: counts, order, limit -------------------------------------------------------------

def test_one_combined_status_per_placed_object_and_schema_valid(example: Path) -> None:
    out = summarize(compute(example), {}, 20)
    assert sorted(out.combined) == [("wmw-c", COMMOND), ("wmw-c", COMMON_CM), ("wmw-s", SPECIALD), ("wmw-s", SPECIAL_CM)]
    for (wds, rel) in out.combined:
        status = out.status(wds, rel)
        assert validate_document("combinedstatus.json", status, Origin(rel), "CombinedStatus") == []
        assert out.generated[f"spaces/{wds}/.ksgitops/status"] is not None
    assert out.generated["spaces/imw1/.ksgitops/status"] is None  # no placed object: removed
    commond = status_of(out, "wmw-c", COMMOND)
    assert commond["object"] == {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "commonstuff",
                                 "name": "commond"}
    assert commond["placements"] == ["edge-placement-c"]
    assert (commond["executingCount"], commond["reportedCount"], commond["health"]) == (2, 0, {"Missing": 2})
    assert "singletonStatus" not in commond and "results" not in commond


def test_health_counts_and_wecs_unhealthy_first(example: Path) -> None:
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(1, **RS_FAILED)}})
    commond = status_of(summarize(compute(example), reports, 20), "wmw-c", COMMOND)
    assert commond["health"] == {"Healthy": 1, "Degraded": 1}
    assert commond["reportedCount"] == 2
    assert [(w["name"], w["health"]) for w in commond["wecs"]] == [("guilder", "Degraded"), ("florin", "Healthy")]
    assert commond["wecs"][0]["mailbox"] == GUILDER and commond["wecs"][0]["generation"] == 1
    assert "replica failure" in commond["wecs"][0]["message"]
    # equal health: by WEC name
    both = as_reports({FLORIN: {COMMOND: rs(0)}, GUILDER: {COMMOND: rs(0)}})
    commond = status_of(summarize(compute(example), both, 20), "wmw-c", COMMOND)
    assert [(w["name"], w["health"]) for w in commond["wecs"]] == [("florin", "Progressing"), ("guilder", "Progressing")]
    # Missing sorts before Progressing, Degraded before Missing
    one = as_reports({GUILDER: {COMMOND: rs(0)}})
    commond = status_of(summarize(compute(example), one, 20), "wmw-c", COMMOND)
    assert [w["health"] for w in commond["wecs"]] == ["Missing", "Progressing"]
    assert "reportedAt" not in commond["wecs"][0]


@pytest.mark.parametrize(("limit", "names"), [(0, []), (1, ["guilder"]), (2, ["guilder", "florin"]), (20, ["guilder", "florin"])])
def test_limit_keeps_the_worst(example: Path, limit: int, names: list[str]) -> None:
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(1, **RS_FAILED)}})
    commond = status_of(summarize(compute(example), reports, limit), "wmw-c", COMMOND)
    assert [w["name"] for w in commond["wecs"]] == names
    assert commond["health"] == {"Healthy": 1, "Degraded": 1}  # counts cover every WEC


# --- singletonStatus --------------------------------------------------------------------------------

def test_singleton_status_when_one_wec_reports_and_placement_wants_it(example: Path) -> None:
    result = compute(example)
    speciald = status_of(summarize(result, as_reports({GUILDER: {SPECIALD: deploy(1)}}), 20), "wmw-s", SPECIALD)
    assert speciald["executingCount"] == 1
    assert speciald["singletonStatus"] == deploy(1)["status"]
    assert speciald["health"] == {"Healthy": 1}
    # no report: absent
    assert "singletonStatus" not in status_of(summarize(result, {}, 20), "wmw-s", SPECIALD)
    # a ConfigMap reported with no status: an empty singletonStatus (a report exists)
    special_cm = status_of(summarize(result, as_reports({GUILDER: {SPECIAL_CM: cm("specialstuff")}}), 20),
                           "wmw-s", SPECIAL_CM)
    assert special_cm["singletonStatus"] == {}


def test_no_singleton_status_for_a_crd_that_came_along(example: Path) -> None:
    """KubeStellar v0.13+ pkg/placement/what-resolver.go adds a placed resource's CRD with
    ReturnSingletonState false, whatever the placement wants."""
    (example / "spaces/wmw-s/gadgets.yaml").write_text("""\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1, namespace: specialstuff}
""")
    edit(example, "spaces/wmw-s/edge-placement-s.yaml", "  wantSingletonReportedState: true",
         "  - {apiGroup: example.com, resources: [gadgets]}\n  wantSingletonReportedState: true")
    crd_rel = "apiextensions.k8s.io/customresourcedefinitions/_cluster/gadgets.example.com"
    gadget_rel = "example.com/gadgets/specialstuff/g1"
    reports = {GUILDER: {crd_rel: report("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                                         "gadgets.example.com", {"acceptedNames": {"kind": "Gadget"}}),
                         gadget_rel: report("example.com/v1", "Gadget", "specialstuff", "g1", {"ok": True})}}
    out = summarize(compute(example), as_reports(reports), 20)
    crd = status_of(out, "wmw-s", crd_rel)
    assert crd["executingCount"] == 1 and "singletonStatus" not in crd
    assert status_of(out, "wmw-s", gadget_rel)["singletonStatus"] == {"ok": True}


def test_singleton_status_absent_when_two_wecs_execute(example: Path) -> None:
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(1)}})
    commond = status_of(summarize(compute(example), reports, 20), "wmw-c", COMMOND)
    assert commond["executingCount"] == 2 and "singletonStatus" not in commond


def test_singleton_status_appears_when_executing_count_drops_to_one(example: Path) -> None:
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(1, at="2026-01-01T00:00:01Z")}})
    edit(example, "spaces/imw1/florin.yaml", "env: prod", "env: dev")
    commond = status_of(summarize(compute(example), reports, 20), "wmw-c", COMMOND)
    assert commond["executingCount"] == 1
    assert [w["name"] for w in commond["wecs"]] == ["guilder"]
    assert commond["singletonStatus"] == rs(1)["status"]


def test_singleton_status_absent_when_the_placement_does_not_want_it(example: Path) -> None:
    edit(example, "spaces/wmw-s/edge-placement-s.yaml", "wantSingletonReportedState: true",
         "wantSingletonReportedState: false")
    speciald = status_of(summarize(compute(example), as_reports({GUILDER: {SPECIALD: deploy(1)}}), 20),
                         "wmw-s", SPECIALD)
    assert speciald["executingCount"] == 1 and "singletonStatus" not in speciald


def test_singleton_status_removed_from_the_file_when_it_stops_being_true(example: Path) -> None:
    write_reports(example, {GUILDER: {SPECIALD: deploy(1)}})
    path = example / "spaces/wmw-s/.ksgitops/status" / f"{SPECIALD}.yaml"
    app.status_worktree(example)
    assert "singletonStatus" in load_yaml(path.read_bytes())
    edit(example, "spaces/wmw-s/edge-placement-s.yaml", "wantSingletonReportedState: true",
         "wantSingletonReportedState: false")
    outcome = app.status_worktree(example)
    assert "spaces/wmw-s/.ksgitops/status" in outcome.changed
    assert "singletonStatus" not in load_yaml(path.read_bytes())


# --- STATUS.md ----------------------------------------------------------------------------------

def test_status_md_tables(example: Path) -> None:
    reports = as_reports({
        FLORIN: {COMMOND: rs(1, at="2026-01-01T00:00:03Z"), COMMON_CM: cm(at="2026-01-01T00:00:02Z")},
        GUILDER: {COMMOND: rs(1, at="2026-01-01T01:00:00+02:00", **RS_FAILED), SPECIALD: deploy(0)},
    })
    text = summarize(compute(example), reports, 20).markdown.decode()
    lines = text.splitlines()
    assert "| Placement | WECs | Objects | Healthy |" in lines
    assert "| wmw-c/edge-placement-c | 2 | 2 | 2/4 |" in lines
    assert "| wmw-s/edge-placement-s | 1 | 2 | 0/2 |" in lines
    assert "| WEC | Mailbox | Sync | Applied | Latest | Drifted | Last report | Healthy |" in lines
    wecs = {line.split(" | ")[0][2:]: line.split(" | ")[5:] for line in lines if line.startswith(("| florin", "| guilder"))}
    assert wecs["florin"] == ["0", "2026-01-01T00:00:03Z", "2/2 |"]
    # 01:00+02:00 is 23:00Z the day before: the Deployment's 00:00:09Z is later
    assert wecs["guilder"] == ["0", "2026-01-01T00:00:09Z", "0/4 |"]
    broken = lines[lines.index("| Object | WEC | Health | Message |") + 2:]
    assert [row.split(" | ")[2] for row in broken if row.startswith("|")] == [
        "Degraded", "Missing", "Missing", "Progressing"]
    assert broken[0].startswith("| wmw-c: ReplicaSet.apps commonstuff/commond | guilder | Degraded | ")
    assert "quota \\| exceeded" in broken[0]  # `|` escaped in cells
    assert all(line.count(" | ") == 3 for line in broken if line.startswith("|"))


def test_status_md_without_reports_says_never_and_with_all_healthy_nothing_broken(example: Path) -> None:
    result = compute(example)
    text = summarize(result, {}, 20).markdown.decode()
    assert any(line.startswith("| florin | imw1-mb-florin | Unknown | never | ") and line.endswith(" | 0 | never | 0/2 |")
               for line in text.splitlines())
    reports = as_reports({FLORIN: {COMMOND: rs(1), COMMON_CM: cm()},
                          GUILDER: {COMMOND: rs(1), COMMON_CM: cm(), SPECIALD: deploy(1),
                                    SPECIAL_CM: cm("specialstuff")}})
    assert "Nothing is broken." in summarize(result, reports, 20).markdown.decode()


def test_output_is_deterministic_and_independent_of_report_order(example: Path) -> None:
    docs = {FLORIN: {COMMOND: rs(1), COMMON_CM: cm()}, GUILDER: {COMMOND: rs(0), SPECIALD: deploy(0)}}
    result = compute(example)
    first = summarize(result, as_reports(docs), 20)
    backwards = {mb: dict(reversed(list(rels.items()))) for mb, rels in reversed(list(docs.items()))}
    second = summarize(compute(example), as_reports(backwards), 20)
    assert first.markdown == second.markdown
    assert first.generated == second.generated
    # end to end: two runs, identical bytes, and the second changes nothing
    write_reports(example, docs)
    app.status_worktree(example)
    before = {p: p.read_bytes() for p in sorted(example.rglob("*")) if p.is_file()}
    assert app.status_worktree(example).changed == []
    assert {p: p.read_bytes() for p in sorted(example.rglob("*")) if p.is_file()} == before


def test_the_bundled_example_status_is_up_to_date(tmp_path: Path) -> None:
    import shutil
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    outcome = app.status_worktree(repo)
    assert outcome.changed == [], "run `ksgitops status examples/repo`"
    text = (repo / STATUS_MD).read_text()
    assert "Progressing" in text and "speciald" in text


# --- malformed reports --------------------------------------------------------------------------

def test_malformed_reports_are_warnings_with_file_line_and_skipped() -> None:
    good = dump_yaml(rs(1))
    files = {
        f"{COMMOND}.yaml": (f"spaces/{FLORIN}/reported/{COMMOND}.yaml", good),
        f"{COMMON_CM}.yaml": (f"spaces/{FLORIN}/reported/{COMMON_CM}.yaml", b"object: {kind: [\n"),
        f"{SPECIALD}.yaml": (f"spaces/{FLORIN}/reported/{SPECIALD}.yaml",
                             b"# comment\nobject: {kind: Deployment}\nstatus: 3\nreportedAt: yesterday\n"),
        "apps/replicasets/commonstuff/other.yaml": ("spaces/x/reported/apps/replicasets/commonstuff/other.yaml", good),
        "notes.txt": ("spaces/x/reported/notes.txt", b"hello"),
    }
    results = {name: parse_report(name, path, data) for name, (path, data) in files.items()}
    reports = {r[0]: (r[1], r[2]) for r in results.values() if isinstance(r, tuple)}
    problems = [p for r in results.values() if isinstance(r, list) for p in r]
    assert list(reports) == [COMMOND]
    assert reports[COMMOND][1] == rs(1)
    assert all(p.severity == "warning" for p in problems)
    where = {str(p.origin) for p in problems}
    assert f"spaces/{FLORIN}/reported/{COMMON_CM}.yaml:2" in where or f"spaces/{FLORIN}/reported/{COMMON_CM}.yaml:1" in where
    assert any(s.startswith(f"spaces/{FLORIN}/reported/{SPECIALD}.yaml:2") for s in where)
    messages = " ".join(p.message for p in problems)
    assert "reportedAt" in messages and "does not match" in messages and "not a .yaml" in messages


def test_malformed_report_through_the_command(example: Path, cli) -> None:
    write_reports(example, {FLORIN: {COMMOND: rs(1)}})
    bad = example / "spaces" / GUILDER / "reported" / f"{COMMOND}.yaml"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(b"object:\n  kind: ReplicaSet\n  name: [unclosed\n")
    res = cli("status", str(example))
    assert res.code == 0, res
    assert f"spaces/{GUILDER}/reported/{COMMOND}.yaml:" in res.err and "warning" in res.err
    # the WEC did report: the row says its report does not read, and where (not "not reported")
    commond = load_yaml((example / "spaces/wmw-c/.ksgitops/status" / f"{COMMOND}.yaml").read_bytes())
    assert commond["health"] == {"Healthy": 1, "Unknown": 1} and commond["reportedCount"] == 2
    message = f"the WEC's report does not read: reported/{COMMOND}.yaml:4: malformed YAML: "
    guilder = next(w for w in commond["wecs"] if w["name"] == "guilder")
    assert guilder["health"] == "Unknown" and guilder["message"].startswith(message), guilder
    assert "reportedAt" not in guilder
    status_md = (example / STATUS_MD).read_text()
    assert f"| guilder | Unknown | {message}" in status_md
    res = cli("status", str(example), "-o", "json")
    data = json.loads(res.out)
    assert data["changed"] == [] and data["health"]["Missing"] == 4 and data["health"]["Unknown"] == 1
    assert any(p["file"] == f"spaces/{GUILDER}/reported/{COMMOND}.yaml" for p in data["problems"]), data["problems"]


# --- Secrets and StatusCollectors ------------------------------------------------------------------

SECRET_YAML = f"""---
apiVersion: v1
kind: Secret
metadata: {{name: creds, namespace: commonstuff}}
data: {{password: {SECRET_VALUE}}}
stringData: {{token: plain-s3cr3t}}
"""

COLLECTOR_YAML = """apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: available}
spec:
  combinedFields:
  - {name: wecs, type: COUNT}
  - {name: available, type: SUM, subject: returned.status.availableReplicas}
---
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: everything}
spec:
  select:
  - {name: wec, def: inventory.name}
  - {name: obj, def: obj}
  - {name: status, def: returned.status}
"""


def with_secret_and_collectors(example: Path) -> None:
    (example / "spaces/wmw-c/httpd.yaml").write_text((example / "spaces/wmw-c/httpd.yaml").read_text() + SECRET_YAML)
    (example / "spaces/wmw-c/collectors.yaml").write_text(COLLECTOR_YAML)
    edit(example, "spaces/wmw-c/edge-placement-c.yaml", "  wantSingletonReportedState: true",
         "  - apiGroup: \"\"\n    resources: [secrets]\n    namespaces: [commonstuff]\n"
         "  wantSingletonReportedState: true\n  statusCollectors: [available, everything]")


def test_status_collector_results(example: Path) -> None:
    with_secret_and_collectors(example)
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(3)}})
    out = summarize(compute(example), reports, 20)
    commond = status_of(out, "wmw-c", COMMOND)
    assert validate_document("combinedstatus.json", commond, Origin("x"), "CombinedStatus") == []
    available, everything = commond["results"]
    assert available == {"name": "available", "columnNames": ["wecs", "available"], "rows": [
        {"columns": [{"type": "Number", "float": "2"}, {"type": "Number", "float": "4"}]}]}
    assert everything["columnNames"] == ["wec", "obj", "status"]
    assert [r["columns"][0] for r in everything["rows"]] == [{"type": "String", "string": "florin"},
                                                           {"type": "String", "string": "guilder"}]
    # the object as sent to each WEC: with its customization (florin's patch)
    sent = everything["rows"][0]["columns"][1]["object"]
    assert sent["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "env is prod"
    # zero reports: KubeStellar's identities
    none = status_of(summarize(compute(example), {}, 20), "wmw-c", COMMOND)["results"][0]
    assert none["rows"][0]["columns"][1] == {"type": "Number", "float": "0"}
    # objects of a placement without collectors have none
    assert "results" not in status_of(out, "wmw-s", SPECIALD)


def test_missing_collector_is_a_warning(example: Path) -> None:
    """Reconcile's warning (core/place/dangling.py), which status reports with the rest; status adds none."""
    edit(example, "spaces/wmw-c/edge-placement-c.yaml", "  wantSingletonReportedState: true",
         "  wantSingletonReportedState: true\n  statusCollectors: [nowhere]")
    result = compute(example)
    assert any("StatusCollector nowhere not found" in p.message and p.severity == "warning" for p in result.problems)
    out = summarize(result, {}, 20)
    assert not any("StatusCollector nowhere" in p.message for p in out.problems)
    assert "results" not in status_of(out, "wmw-c", COMMOND)


def test_secret_data_never_in_status_output(example: Path) -> None:
    with_secret_and_collectors(example)
    result = compute(example)
    assert ("wmw-c", SECRET) in summarize(result, {}, 20).combined
    leaky = report("v1", "Secret", "commonstuff", "creds", {"data": {"password": SECRET_VALUE}})
    for docs in ({}, {FLORIN: {SECRET: leaky}}, {FLORIN: {SECRET: leaky}, GUILDER: {SECRET: leaky}}):
        out = summarize(result, as_reports(docs), 20)
        data = all_output(out) + b"".join(out.combined.values())
        assert SECRET_VALUE.encode() not in data and b"plain-s3cr3t" not in data
        secret = out.status("wmw-c", SECRET)
        everything = secret["results"][1]
        assert all("data" not in row["columns"][1]["object"] for row in everything["rows"])
    # a single WEC executing the Secret: singletonStatus exists but never carries what was reported
    edit(example, "spaces/imw1/florin.yaml", "env: prod", "env: dev")
    out = summarize(compute(example), as_reports({GUILDER: {SECRET: leaky}}), 20)
    assert out.status("wmw-c", SECRET)["singletonStatus"] == {}
    assert SECRET_VALUE.encode() not in all_output(out)


def test_status_command_text_and_exit_codes(example: Path, cli) -> None:
    write_reports(example, {FLORIN: {COMMOND: rs(1)}})
    res = cli("status", str(example))
    assert res.code == 0, res
    assert res.out.strip().splitlines()[-1].startswith("4 objects on 2 WECs: 1/6 healthy, 5 Missing;")
    (example / "spaces/wmw-c/broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x]}\n")
    assert cli("status", str(example)).code == 2
