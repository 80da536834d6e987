"""The sync report and the rules status applies to it: the mailbox revision, the state per WEC
(Synced / OutOfSync / Unknown / Failed), how the agent builds its next report, drift field paths."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pygit2
import pytest

from conftest import EXAMPLE, git, git_init
from ksgitops.app import usecases as app
from ksgitops.app.agent import Desired, report_tree
from ksgitops.core.status.reported import dump_report
from ksgitops.core.load.schemas import validate_document
from ksgitops.core.serialize import load_yaml
from ksgitops.core.status.summary import StatusMemo, summarize
from ksgitops.core.status.memory import MemorySource, with_reports
from ksgitops.core.status.syncreport import (SYNC_FILE, Drift, ObjectId, SyncError, SyncReport, SyncState, applied_report, changed_fields, dump_sync_report, failed_report, mailbox_revision, parse_sync_report, steady_objects, sync_state)
from ksgitops.io.fs.tree import WorkTreeSnapshot
from ksgitops.io.git.repo import TreeIndex
from ksgitops.io.status_sources import GitStatusSource, WorkTreeStatusSource
from ksgitops.model import Origin

FLORIN, GUILDER = "imw1-mb-florin", "imw1-mb-guilder"
CM = "core/configmaps/commonstuff/httpd-htdocs"
RS = "apps/replicasets/commonstuff/commond"
CM_ID = ObjectId("v1", "ConfigMap", "commonstuff", "httpd-htdocs")
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z"
REV_A, REV_B = "a" * 40, "b" * 40


# --- the mailbox revision --------------------------------------------------------------------------

def _git_tree(repo: Path, entries: list[str]) -> str:
    return subprocess.run(["git", "-C", str(repo), "mktree"], input="\n".join(entries) + "\n", text=True,
                          capture_output=True, check=True).stdout.strip()


def test_the_revision_is_the_git_tree_of_what_the_wec_receives(example_git: Path) -> None:
    """Computed from files it equals what git itself gives the tree of kustomization.yaml,
    syncerconfig.yaml, objects/ and patches/ (space.yaml, reported/, upsynced/ left out)."""
    app.reconcile_commit(example_git, "HEAD")
    head = f"HEAD:spaces/{FLORIN}"
    entries = [line for line in git(example_git, "ls-tree", head).splitlines()
               if line.split("\t")[1] in ("kustomization.yaml", "syncerconfig.yaml", "objects", "patches")]
    assert len(entries) == 4
    expected = _git_tree(example_git, entries)
    files = WorkTreeSnapshot(example_git).read_tree(f"spaces/{FLORIN}")
    assert files is not None and mailbox_revision(files) == expected
    files["reported"] = {"x.yaml": b"anything"}
    files["space.yaml"] = b"changed: true\n"
    assert mailbox_revision(files) == expected  # not part of the revision
    repo = pygit2.Repository(str(example_git))
    index = TreeIndex(repo, repo.head.peel(pygit2.Commit).tree)
    assert GitStatusSource(repo, index).revision(FLORIN) == expected
    assert WorkTreeStatusSource(example_git).revision(FLORIN) == expected
    assert MemorySource({FLORIN: files}).revision(FLORIN) == expected


def test_the_revision_moves_with_an_object_a_patch_or_the_syncerconfig() -> None:
    base = {"kustomization.yaml": b"k", "syncerconfig.yaml": b"s", "objects": {"a.yaml": b"1"},
            "patches": {"a.json": b"[]"}}
    seen = {mailbox_revision(base)}
    for change in ({"objects": {"a.yaml": b"2"}}, {"patches": {}}, {"syncerconfig.yaml": b"t"},
                   {"kustomization.yaml": b"l"}, {"objects": {"a.yaml": b"1", "b.yaml": b"1"}}):
        seen.add(mailbox_revision({**base, **change}))
    assert len(seen) == 6


# --- the state ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("report", "latest", "state"), [
    (None, REV_A, SyncState.UNKNOWN),
    (SyncReport("mb", REV_A, applied_at=T0), REV_A, SyncState.SYNCED),
    (SyncReport("mb", REV_A, applied_at=T0), REV_B, SyncState.OUT_OF_SYNC),
    (SyncReport("mb", REV_A, errors=(SyncError(CM, "HTTP 422 Invalid", CM_ID),)), REV_A, SyncState.FAILED),
    (SyncReport("mb", REV_A, errors=(SyncError("", "unreachable: timed out"),)), REV_B, SyncState.FAILED),
    (SyncReport("mb", errors=(SyncError("", "unreachable: timed out"),)), REV_B, SyncState.FAILED),
])
def test_sync_state(report: SyncReport | None, latest: str, state: SyncState) -> None:
    assert sync_state(report, latest) is state


# --- the report the agent writes -----------------------------------------------------------------------

def _drift(path: str = CM, at: str = T1, fields: tuple[str, ...] = ("data.color",)) -> Drift:
    return Drift(path, CM_ID, "Modified", fields, at)


def test_a_steady_outcome_keeps_the_report_bytes() -> None:
    first = applied_report(None, "mb", REV_A, "c" * 40, T0, [], [], {CM})
    again = applied_report(first, "mb", REV_A, "d" * 40, T1, [], [], {CM})
    assert dump_sync_report(again) == dump_sync_report(first)  # the branch moved, the mailbox did not
    assert again.applied_at == T0 and again.commit == "c" * 40
    moved = applied_report(first, "mb", REV_B, "d" * 40, T1, [], [], {CM})
    assert (moved.revision, moved.applied_at, moved.commit) == (REV_B, T1, "d" * 40)


def test_drift_stays_listed_until_the_revision_changes() -> None:
    first = applied_report(None, "mb", REV_A, "c" * 40, T0, [], [_drift()], {CM})
    later = applied_report(first, "mb", REV_A, "c" * 40, T2, [], [], {CM})
    assert later.drifted == (_drift(),) and later.applied_at == T0
    again = applied_report(later, "mb", REV_A, "c" * 40, T2, [], [_drift(at=T2, fields=("data.size",))], {CM})
    assert again.drifted == (_drift(at=T2, fields=("data.size",)),)
    assert applied_report(later, "mb", REV_A, "c" * 40, T2, [], [], set()).drifted == ()  # object gone
    assert applied_report(later, "mb", REV_B, "c" * 40, T2, [], [], {CM}).drifted == ()  # new revision


def test_errors_keep_the_time_they_first_appeared() -> None:
    error = SyncError(CM, "HTTP 422 Invalid", CM_ID)
    first = applied_report(None, "mb", REV_A, "c" * 40, T0, [error], [], {CM})
    again = applied_report(first, "mb", REV_A, "c" * 40, T1, [error], [], {CM})
    assert again.errors[0].since == T0 and dump_sync_report(again) == dump_sync_report(first)
    fixed = applied_report(again, "mb", REV_A, "c" * 40, T2, [], [], {CM})
    assert fixed.errors == () and fixed.applied_at == T2  # the outcome changed


def test_a_cycle_that_applies_nothing_keeps_the_revision_applied_before() -> None:
    applied = applied_report(None, "mb", REV_A, "c" * 40, T0, [], [_drift()], {CM})
    failed = failed_report(applied, "mb", "unreachable: connection refused (wec:6443)", T1)
    assert (failed.revision, failed.applied_at, failed.drifted) == (REV_A, T0, applied.drifted)
    assert failed.errors == (SyncError("", "unreachable: connection refused (wec:6443)", None, T1),)
    assert failed_report(failed, "mb", "unreachable: connection refused (wec:6443)", T2) == failed
    never = failed_report(None, "mb", "inventory kube-system/x is unreadable", T1)
    assert never.revision == "" and sync_state(never, REV_A) is SyncState.FAILED


def test_the_report_round_trips_and_is_schema_valid() -> None:
    report = applied_report(None, "mb", REV_A, "c" * 40, T0, [SyncError(RS, "HTTP 409 Conflict",
                                                                          ObjectId("apps/v1", "ReplicaSet", "commonstuff",
                                                                                   "commond"))],
                            [_drift(), Drift("core/namespaces/_cluster/x", ObjectId("v1", "Namespace", "", "x"),
                                             "Deleted", (), T0)], {CM, RS, "core/namespaces/_cluster/x"})
    data = dump_sync_report(report)
    assert validate_document("syncreport.json", load_yaml(data), Origin("sync.yaml"), "sync report") == []
    assert parse_sync_report("reported/sync.yaml", data) == report


@pytest.mark.parametrize("data", [b"[1, 2]", b"apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: SyncReport\n",
                                  b"kind: SyncReport\nrevision: nope\n", b"not: [valid"])
def test_a_broken_sync_report_is_a_warning(data: bytes) -> None:
    found = parse_sync_report("spaces/mb/reported/sync.yaml", data)
    assert isinstance(found, list) and found and all(p.severity == "warning" for p in found)


def test_steady_objects_are_those_sent_as_last_applied() -> None:
    old = {"objects": {"core": {"configmaps": {"ns": {"a.yaml": b"A", "b.yaml": b"B", "c.yaml": b"C"}}}},
           "patches": {"core": {"configmaps": {"ns": {"b.json": b"[1]"}}}}}
    new = {"objects": {"core": {"configmaps": {"ns": {"a.yaml": b"A", "b.yaml": b"B", "c.yaml": b"C2",
                                                       "d.yaml": b"D"}}}},
           "patches": {"core": {"configmaps": {"ns": {"b.json": b"[2]"}}}}}
    rels = [f"core/configmaps/ns/{n}" for n in "abcd"]
    last = SyncReport("mb", REV_A, applied_at=T0)
    assert steady_objects(None, REV_A, None, new, rels) == set()  # no report: no claim
    assert steady_objects(last, REV_A, None, new, rels) == set(rels)  # same revision: all of them
    assert steady_objects(last, REV_B, old, new, rels) == {"core/configmaps/ns/a"}  # b's patch, c, d moved
    assert steady_objects(last, REV_B, None, new, rels) == set()  # the old mailbox is unknown
    failed = SyncReport("mb", REV_A, errors=(SyncError("core/configmaps/ns/a", "HTTP 500", None),))
    assert "core/configmaps/ns/a" not in steady_objects(failed, REV_A, None, new, rels)


# --- drift: which fields ---------------------------------------------------------------------------------

def test_changed_fields_names_paths_never_values_and_skips_server_fields() -> None:
    before = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": "s", "resourceVersion": "7", "generation": 1, "managedFields": [{"a": 1}],
                           "labels": {"app.kubernetes.io/name": "x"}},
              "data": {"password": "c2VjcmV0", "index.html": "b2xk"}, "status": {"x": 1},
              "spec": {"containers": [{"name": "a", "image": "one"}], "ports": [1]}}
    after = {"kind": "Secret", "type": "Opaque",
             "metadata": {"name": "s", "resourceVersion": "8", "generation": 2, "managedFields": [],
                          "labels": {"app.kubernetes.io/name": "y"}},
             "data": {"password": "bmV3", "index.html": "b2xk"}, "status": {"x": 2},
             "spec": {"containers": [{"name": "a", "image": "two"}], "ports": [1, 2]}}
    fields = changed_fields(before, after)
    assert fields == ['data.password', 'metadata.labels["app.kubernetes.io/name"]', "spec.containers[0].image",
                      "spec.ports"]
    assert not any(v in " ".join(fields) for v in ("c2VjcmV0", "bmV3", "one", "two", '"x"', '"y"'))
    assert changed_fields(before, before) == []
    many = changed_fields({"data": {f"k{i:02d}": "a" for i in range(30)}}, {"data": {f"k{i:02d}": "b" for i in range(30)}})
    assert len(many) == 21 and many[-1] == "... and 10 more"
    assert changed_fields({"spec": {"n": 1}}, {"spec": {"n": True}}) == ["spec.n"]  # JSON types differ


# --- collect keeps the agent's sync report --------------------------------------------------------------

def test_collect_and_sync_share_report_tree_and_it_keeps_the_sync_report() -> None:
    sync = dump_sync_report(SyncReport("mb", REV_A, applied_at=T0))
    d = Desired(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "httpd-htdocs",
                                                                          "namespace": "commonstuff"}})
    previous = {SYNC_FILE: sync, "core": {"configmaps": {"commonstuff": {"gone.yaml": b"old"}}}}
    tree = report_tree([d], {CM: {"metadata": {"name": "httpd-htdocs"}}}, previous, T1)
    assert tree[SYNC_FILE] == sync and "gone.yaml" not in tree["core"]["configmaps"]["commonstuff"]  # type: ignore[index]


# --- what status makes of it --------------------------------------------------------------------------------

def _summarize(result: Any, reports: dict[str, dict[str, bytes]], memo: StatusMemo | None = None) -> Any:
    return summarize(result, MemorySource(with_reports(result.generated, reports)), memo)


def _latest(result: Any, mailbox: str) -> str:
    return mailbox_revision(with_reports(result.generated, {})[mailbox])


def _wec_row(text: str, wec: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| {wec} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_status_shows_each_state_with_revisions_errors_and_drift(example: Path) -> None:
    result = app.compute(app.open_source(example, app.WORKTREE))
    florin, guilder = _latest(result, FLORIN), _latest(result, GUILDER)
    synced = SyncReport(FLORIN, florin, "c" * 40, T0, drifted=(_drift(),))
    failed = SyncReport(GUILDER, guilder, "c" * 40, T0, errors=(SyncError(CM, "HTTP 422 Invalid: data: too long",
                                                                         CM_ID, T1),))
    out = _summarize(result, {FLORIN: {SYNC_FILE: dump_sync_report(synced)},
                              GUILDER: {SYNC_FILE: dump_sync_report(failed)}})
    text = out.markdown.decode()
    assert _wec_row(text, "florin")[:6] == ["florin", FLORIN, "Synced", f"{florin[:12]} ({T0})", florin[:12], "1"]
    assert _wec_row(text, "guilder")[:6] == ["guilder", GUILDER, "Failed", f"{guilder[:12]} ({T0})", guilder[:12], "0"]
    assert f"| guilder | {CM_ID} | HTTP 422 Invalid: data: too long |" in text
    assert f"| florin | {CM_ID} | Modified | data.color | {T1} |" in text
    assert "Sync: 1 Synced, 1 Failed; 1 drifted object." in text
    facts = out.facts()
    assert facts["sync"]["florin"]["state"] == "Synced" and facts["sync"]["florin"]["driftedCount"] == 1
    assert facts["sync"]["guilder"]["errors"] == [{"object": str(CM_ID), "message": "HTTP 422 Invalid: data: too long"}]
    status = out.status("wmw-c", CM)
    assert status["drifted"] == [{"wec": "florin", "mailbox": FLORIN, "change": "Modified", "fields": ["data.color"],
                                  "detectedAt": T1}]
    assert status["problems"] == [{"source": "sync", "wec": "guilder", "mailbox": GUILDER,
                                   "message": "HTTP 422 Invalid: data: too long"}]
    assert validate_document("combinedstatus.json", status, Origin("x"), "CombinedStatus") == []
    assert "drifted" not in out.status("wmw-c", RS) and "problems" not in out.status("wmw-c", RS)

    stale = SyncReport(FLORIN, REV_A, "c" * 40, T0)
    out = _summarize(result, {FLORIN: {SYNC_FILE: dump_sync_report(stale)}})
    assert _wec_row(out.markdown.decode(), "florin")[2:5] == ["OutOfSync", f"{REV_A[:12]} ({T0})", florin[:12]]
    assert _wec_row(out.markdown.decode(), "guilder")[2:4] == ["Unknown", "never"]


def test_a_broken_sync_report_is_unknown_with_a_warning_not_a_report_problem(example: Path) -> None:
    result = app.compute(app.open_source(example, app.WORKTREE))
    out = _summarize(result, {FLORIN: {SYNC_FILE: b"kind: SyncReport\n"}})
    assert _wec_row(out.markdown.decode(), "florin")[2] == "Unknown"
    messages = [str(p) for p in out.problems]
    assert any(m.startswith(f"spaces/{FLORIN}/reported/sync.yaml:1: warning: sync report: ") for m in messages)
    assert not any("reported state: the path must be" in m for m in messages)


def test_sync_facts_follow_the_memo(example: Path) -> None:
    """With a memo, a changed sync report changes the rows, summaries and CombinedStatus it concerns,
    byte for byte as a fresh run."""
    result = app.compute(app.open_source(example, app.WORKTREE))
    florin = _latest(result, FLORIN)
    memo = StatusMemo()
    steps = [{}, {SYNC_FILE: dump_sync_report(SyncReport(FLORIN, florin, "c" * 40, T0))},
             {SYNC_FILE: dump_sync_report(SyncReport(FLORIN, florin, "c" * 40, T0, drifted=(_drift(),)))},
             {SYNC_FILE: dump_sync_report(SyncReport(FLORIN, florin, "c" * 40, T0,
                                                     errors=(SyncError(CM, "HTTP 500", CM_ID, T1),)))},
             {f"{CM}.yaml": dump_report({"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "commonstuff",
                                                    "name": "httpd-htdocs"}, "reportedAt": T2})}]
    for reports in steps:
        incremental = _summarize(result, {FLORIN: reports}, memo)
        fresh = _summarize(result, {FLORIN: reports})
        assert (incremental.generated, incremental.markdown) == (fresh.generated, fresh.markdown)
    assert "problems" not in incremental.status("wmw-c", CM)


def test_a_commit_and_its_work_tree_list_a_mailbox_alike(tmp_path: Path) -> None:
    """GitStatusSource walks trees without modes (blob_keys): every object, patch and report with
    the same key as the work tree's listing gives."""
    example_git = git_init(Path(shutil.copytree(EXAMPLE, tmp_path / "repo")))  # with its mailboxes and reports
    repo = pygit2.Repository(str(example_git))
    index = TreeIndex(repo, repo.revparse_single("HEAD").tree)
    for mailbox in (FLORIN, "imw1-mb-guilder"):
        committed, worked = GitStatusSource(repo, index).listing(mailbox), WorkTreeStatusSource(example_git).listing(mailbox)
        assert committed.reports and committed.objects
        assert (committed.objects, committed.patches, committed.reports) == (worked.objects, worked.patches, worked.reports)
