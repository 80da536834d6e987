"""Fold-in of the WECs' report refs, and the whole loop end to end.

End to end: the central runtime reconciles a 3-WEC fleet served by a real `git daemon`; one
`ksgitops sync` agent per WEC applies its mailbox to its own API server (a loopback KubeServer or a
real cluster, see tests/kube_fixtures.py; the real `kubernetes` client) and pushes reports to its
own ref; once the clusters' controllers have written the workloads' status, the agents' next cycle
reports it, the runtime's next cycle folds them in and STATUS.md shows every WEC healthy.

The fold-in's rules, against a local repository with report refs made with pygit2
(tests/report_refs.py); the report refs it rejects: tests/test_foldin_rejected.py."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import git
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from kube_fixtures import KubeNames
from ksgitops.app import usecases as app, runtimes
from ksgitops.io.serve import Observer
from report_refs import BRANCH, CM, WECS, cm_report, head_ids, reconciled_repo, report_ref, three_wec_sources


# --- end to end -----------------------------------------------------------------------------------

def test_reconcile_sync_three_wecs_fold_in_status_healthy(git_daemon: GitDaemon, tmp_path: Path,  # noqa: F811
                                                          kube_wecs: Any, cli, kube_names: KubeNames) -> None:
    bare = git_daemon.bare("fleet.git", three_wec_sources(tmp_path, kube_names))
    central = runtimes.RemoteRuntime(git_daemon.url("fleet.git"), BRANCH, tmp_path / "central", Observer())
    assert central.cycle().action == "reconciled"
    wecs = kube_wecs(list(WECS))
    inventory = kube_names.ns()
    for wec in WECS:
        with wecs[wec].api() as api:
            api.namespace(inventory)

    def sync(wec: str) -> None:
        found = cli("sync", "--mailbox", f"imw1-mb-{wec}", "--kubeconfig", str(wecs.kubeconfig), "--context", wec,
                    "--repo", git_daemon.url("fleet.git"), "--once", "--cache-dir", str(tmp_path / f"agent-{wec}"),
                    "--inventory-namespace", inventory)
        assert found.code == 0, found.err

    for wec in WECS:
        sync(wec)
    for wec in WECS:  # the clusters' controllers make the workloads (scaled to zero) available
        wecs[wec].settle()
        sync(wec)
    refs = git(bare, "for-each-ref", "--format=%(refname)", "refs/heads/ksgitops/reported")
    assert refs.split() == [f"refs/heads/ksgitops/reported/imw1-mb-{w}" for w in sorted(WECS)]
    before = git(bare, "rev-parse", BRANCH)
    result = central.cycle()
    assert result.action == "summarized" and result.pushed
    assert git(bare, "merge-base", "--is-ancestor", before, BRANCH) == ""  # a fast-forward
    status_md = git(bare, "show", f"{BRANCH}:STATUS.md")
    for wec in WECS:
        row = next(line for line in status_md.splitlines() if line.startswith(f"| {wec} |"))
        healthy, total = row.rstrip(" |").rsplit("|", 1)[1].strip().split("/")
        assert healthy == total and int(total) > 0, row
        assert "| never |" not in row
    assert "Nothing is broken." in status_md
    reported = git(bare, "ls-tree", "-r", "--name-only", BRANCH, "spaces/imw1-mb-ducat/reported")
    assert f"apps/replicasets/{kube_names.ns('commonstuff')}/commond.yaml" in reported
    assert central.cycle().action == "idle"  # folded refs are not news twice


# --- fold-in rules (a local repository, refs made with pygit2) ---------------------------------------

def test_fold_in_takes_only_changed_refs_and_only_their_mailbox(tmp_path: Path) -> None:
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    for wec in WECS:
        report_ref(repo, f"imw1-mb-{wec}", {f"spaces/imw1-mb-{wec}/{CM}": cm_report("2030-01-01T00:00:00Z")})
    first = app.fold_in(path, BRANCH)
    assert sorted(first.folded) == [f"imw1-mb-{w}" for w in sorted(WECS)] and first.commit and not first.problems
    assert app.fold_in(path, BRANCH).commit is None  # nothing new: no commit
    report_ref(repo, "imw1-mb-guilder", {f"spaces/imw1-mb-guilder/{CM}": cm_report("2030-01-02T00:00:00Z")})
    before = head_ids(repo)
    second = app.fold_in(path, BRANCH)
    assert second.folded == ["imw1-mb-guilder"]
    after = head_ids(repo)
    changed = [r for r in ("spaces/imw1-mb-florin", "spaces/imw1-mb-guilder", "spaces/imw1-mb-ducat", "spaces/wmw-c")
               if before.entry_id(r) != after.entry_id(r)]
    assert changed == ["spaces/imw1-mb-guilder"]
    assert git(path, "status", "--porcelain") == ""  # the checkout follows
    assert "2030-01-02T00:00:00Z" in (path / "spaces/imw1-mb-guilder" / CM).read_text()


@pytest.mark.parametrize("how, message", [
    ("outside", "outside spaces/imw1-mb-florin/reported and upsynced"),
    ("other-mailbox-trailer", "its commit is for mailbox imw1-mb-guilder"),
    ("no-such-mailbox", "there is no mailbox imw1-mb-nowhere"),
    ("bad-name", "report ref rejected: mailbox name"),
])
def test_a_wec_can_never_write_outside_its_mailbox(tmp_path: Path, how: str, message: str) -> None:
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    changes: dict[str, Any] = {f"spaces/imw1-mb-florin/{CM}": cm_report("2030-01-01T00:00:00Z")}
    if how == "outside":
        changes["spaces/wmw-c/evil.yaml"] = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: evil, namespace: x}\n"
        changes[f"spaces/imw1-mb-guilder/{CM}"] = cm_report("2030-01-01T00:00:00Z")
    report_ref(repo, "imw1-mb-florin", changes,
               trailer_mailbox="imw1-mb-guilder" if how == "other-mailbox-trailer" else None,
               ref_mailbox={"no-such-mailbox": "imw1-mb-nowhere", "bad-name": "Bad_Name"}.get(how))
    before = git(path, "rev-parse", "HEAD")
    outcome = app.fold_in(path, BRANCH)
    assert outcome.commit is None and git(path, "rev-parse", "HEAD") == before
    assert any(message in p.message for p in outcome.problems), outcome.problems
    assert not (path / "spaces/wmw-c/evil.yaml").exists()


def test_status_commit_folds_in_first(tmp_path: Path, cli) -> None:
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    report_ref(repo, "imw1-mb-ducat", {f"spaces/imw1-mb-ducat/{CM}": cm_report("2031-05-05T00:00:00Z")})
    found = cli("status", str(path), "--commit")
    assert found.code == 0, found.err
    assert "2031-05-05T00:00:00Z" in (path / "STATUS.md").read_text()
    subjects = git(path, "log", "-2", "--format=%s").splitlines()
    assert subjects[1].startswith("ksgitops: fold in reports of 1 WEC") and subjects[0].startswith("ksgitops: status")
    assert subprocess.run(["git", "-C", str(path), "fsck", "--no-dangling"], capture_output=True).returncode == 0


def test_status_commit_names_the_fold_in_commit_when_no_status_changed(tmp_path: Path, cli) -> None:
    """A report ref folded in that changes no status file: the branch moved, yet the command
    said "no commit (unchanged)"."""
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    assert cli("status", str(path), "--commit").code == 0
    before = git(path, "rev-parse", "HEAD")
    report_ref(repo, "imw1-mb-florin", {"spaces/imw1-mb-florin/upsynced/core/configmaps/commonstuff/up.yaml":
                                        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: up\n"})
    found = cli("status", str(path), "--commit")
    assert found.code == 0, found.err
    assert git(path, "log", "-1", "--format=%s").startswith("ksgitops: fold in reports of 1 WEC")
    head = git(path, "rev-parse", "HEAD")
    assert head != before and f"committed {head[:12]}, the reports folded in" in found.out, found.out


@pytest.mark.parametrize("first, then", [("ff/inner.yaml", "ff"), ("ff", "ff/inner.yaml")])
def test_a_report_folder_replaced_by_a_file_of_its_name_is_folded_in(tmp_path: Path, first: str, then: str) -> None:
    """A folder of reports that became a file of the same name (or the other way round): the
    file was written before the folder's files were removed ("Is a directory"), and every later
    command stopped on the checkout's journal."""
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    for name in (first, then):
        report_ref(repo, "imw1-mb-florin", {f"spaces/imw1-mb-florin/reported/core/{name}": b"x: 1\n"})
        outcome = app.fold_in(path, BRANCH)
        assert outcome.folded == ["imw1-mb-florin"] and not outcome.problems, outcome
        assert (path / f"spaces/imw1-mb-florin/reported/core/{name}").is_file()
        assert git(path, "status", "--porcelain") == ""
    assert not (path / ".git/ksgitops-state/checkout.json").exists()
