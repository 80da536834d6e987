"""A mailbox kept whole (a frozen WEC's, or one a frozen workload space keeps without records): a
base copy or patch in it that does not read (a hand edit) gets the located warning any kept copy
gets, on reconcile's output and in the problems file of the WEC's inventory space (so STATUS.md
counts it). Before, reconcile did not read such a mailbox, and only render, sync and status named
its broken file. It reads only what ksgitops cannot vouch for: in a work tree, a mailbox whose
stamps moved since a run without problems wrote it (or one without a record); with --commit, one
whose tree is not the one such a run filed. An unedited mailbox is never read."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

import orjson
import yaml

from conftest import git, git_init
from isolation_cases import CASES, base_repo, break_it, worktree_files
from ksgitops.core import pipeline
from ksgitops.io.fs.tree import WorkTreeSnapshot
from ksgitops.io.git import repo as gitrepo

FLORIN, GUILDER = "spaces/imw1-mb-florin", "spaces/imw1-mb-guilder"
CM = "objects/core/configmaps/commonstuff/httpd-htdocs.yaml"
PATCH = "patches/apps/replicasets/commonstuff/commond.json"
REFUSED = "so `kubectl apply -k` and `ksgitops sync` refuse this mailbox"
SECRET_VALUE = "hunter2-kept-wh0le-s3cr3t"
SECRET = "objects/core/secrets/commonstuff/topsecret.yaml"


def reconciled(tmp_path: Path, cli: Any) -> Path:
    repo = base_repo(tmp_path / "repo")
    assert cli("reconcile", str(repo)).code == 0
    return repo


def break_mailbox(repo: Path, mailbox: str) -> tuple[str, str]:
    """A base copy that does not parse and a patch whose added operation fails; their `file:line`s."""
    (repo / mailbox / CM).write_bytes((repo / mailbox / CM).read_bytes() + b"broken: a: b\n")
    ops = orjson.loads((repo / mailbox / PATCH).read_bytes()) + [{"op": "remove", "path": "/spec/nothere"}]
    data = orjson.dumps(ops, option=orjson.OPT_INDENT_2)
    (repo / mailbox / PATCH).write_bytes(data)
    cm_line = (repo / mailbox / CM).read_bytes().count(b"\n")
    op_line = data[: data.rindex(b"{")].count(b"\n") + 1  # the added operation's
    return f"{mailbox}/{CM}:{cm_line}", f"{mailbox}/{PATCH}:{op_line}"


def warnings(err: str, mailbox: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(f"{mailbox}/")]


def test_a_frozen_wecs_broken_files_are_named_by_reconcile_and_filed(tmp_path: Path, cli: Any) -> None:
    repo = reconciled(tmp_path, cli)
    break_it(repo, CASES["synctarget"])  # florin's SyncTarget has an error: its mailbox is kept whole
    result = cli("reconcile", str(repo))
    assert result.code == 2 and not warnings(result.err, FLORIN), result  # a frozen mailbox that reads: nothing
    cm_at, patch_at = break_mailbox(repo, FLORIN)
    before = worktree_files(repo)
    result = cli("reconcile", str(repo))
    assert result.code == 2
    found = warnings(result.err, FLORIN)
    assert [line.split(": warning: ")[0] for line in found] == [cm_at, patch_at], result.err
    why = f"kept as it stands (WEC florin is frozen), {REFUSED}; reconcile writes it anew once the errors of its " \
          "SyncTarget are fixed (or restore the file from git) [WEC florin]"
    assert found[0].endswith(f": warning: malformed YAML: mapping values are not allowed in this context; {why}")
    assert found[1].endswith(": warning: operation 2 of 2 (remove) does not apply to the base copy; " + why)
    assert {k: v for k, v in worktree_files(repo).items() if k.startswith(FLORIN)} == \
        {k: v for k, v in before.items() if k.startswith(FLORIN)}, "kept byte for byte"
    listed = yaml.safe_load((repo / "spaces/imw1/.ksgitops/problems.yaml").read_text())
    assert [(p["file"], p["line"], p.get("wec"), p.get("object")) for p in listed["problems"] if p["severity"] == "warning"] \
        == [(f"{FLORIN}/{CM}", int(cm_at.rsplit(":", 1)[1]), "florin", None),
            (f"{FLORIN}/{PATCH}", int(patch_at.rsplit(":", 1)[1]), "florin", "ReplicaSet.apps commonstuff/commond")]
    cli("status", str(repo))  # exits 2: the SyncTarget's error
    assert "| imw1 | Frozen | 1 | 2 |" in (repo / "STATUS.md").read_text()


def test_the_wecs_of_an_inventory_space_that_does_not_parse(tmp_path: Path, cli: Any) -> None:
    repo = reconciled(tmp_path, cli)
    (repo / "spaces/imw1/florin.yaml").write_text("kind: [unclosed\n")  # every WEC of imw1 frozen
    _, patch_at = break_mailbox(repo, GUILDER)
    result = cli("reconcile", str(repo))
    assert result.code == 2
    [found] = [line for line in warnings(result.err, GUILDER) if line.startswith(patch_at)]
    assert "(WEC guilder is frozen)" in found and "once the errors of inventory space imw1 are fixed" in found
    listed = yaml.safe_load((repo / "spaces/imw1/.ksgitops/problems.yaml").read_text())
    assert [p["wec"] for p in listed["problems"] if p["file"] == f"{GUILDER}/{PATCH}"] == ["guilder"]


def test_a_mailbox_a_frozen_wds_keeps_whole(tmp_path: Path, cli: Any) -> None:
    repo = reconciled(tmp_path, cli)
    shutil.rmtree(repo / "spaces/wmw-c/.ksgitops/placements")  # slices without records: mailboxes kept whole
    break_it(repo, CASES["wds-unparseable"])
    cm_at, _ = break_mailbox(repo, GUILDER)
    result = cli("reconcile", str(repo))
    assert result.code == 2
    [found] = [line for line in warnings(result.err, GUILDER) if line.startswith(cm_at)]
    assert "(space wmw-c is frozen)" in found and "once the space's errors are fixed" in found, found


class Watched:
    """The work tree as reconcile's previous files, noting every mailbox folder read whole."""

    def __init__(self, repo: Path) -> None:
        self.tree = WorkTreeSnapshot(repo)
        self.folders: list[str] = []

    def read(self, path: str) -> bytes | None:
        return self.tree.read(path)

    def read_tree(self, path: str) -> Any:
        if "-mb-" in path:
            self.folders.append(path)
        return self.tree.read_tree(path)


def test_the_pipeline_reads_only_the_mailboxes_kept_whole_it_is_not_vouched_for(tmp_path: Path, cli: Any) -> None:
    repo = reconciled(tmp_path, cli)
    break_it(repo, CASES["synctarget"])
    for vouched, read in ((None, []), (lambda mb: True, []),
                          (lambda mb: False, [f"{FLORIN}/objects", f"{FLORIN}/patches"])):
        watched = Watched(repo)
        pipeline.reconcile(WorkTreeSnapshot(repo), watched, vouched=vouched)
        assert watched.folders == read, vouched


@pytest.fixture
def mailbox_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every objects/ or patches/ folder of a mailbox read whole, from a work tree or a git tree."""
    read: list[str] = []
    for cls in (WorkTreeSnapshot, gitrepo.TreeSnapshot):
        def noting(self: Any, path: str, _real: Any = cls.read_tree) -> Any:
            if "-mb-" in path and path.endswith(("/objects", "/patches")):
                read.append(path)
            return _real(self, path)
        monkeypatch.setattr(cls, "read_tree", noting)
    yield read


def source_change(repo: Path) -> None:
    """A change of a source file that leaves what it holds as it was: the next run computes."""
    with (repo / "spaces/wmw-s/httpd.yaml").open("a") as f:
        f.write("# a comment\n")


def test_work_tree_an_unedited_frozen_mailbox_is_not_read_an_edited_one_is_named(
        tmp_path: Path, cli: Any, mailbox_reads: list[str]) -> None:
    repo = git_init(base_repo(tmp_path / "repo"))
    assert cli("reconcile", str(repo)).code == 0  # the record keeps each mailbox as written
    break_it(repo, CASES["synctarget"])
    assert cli("reconcile", str(repo)).code == 2
    assert cli("reconcile", str(repo)).code == 2  # proven from its record, or computed: nothing read
    assert mailbox_reads == []
    [kept] = (repo / ".git").rglob("worktree.pickle")
    kept.unlink()  # the record lost (as to other code): read once, then known as read
    assert cli("reconcile", str(repo)).code == 2
    assert mailbox_reads == [f"{FLORIN}/objects", f"{FLORIN}/patches"]
    source_change(repo)
    assert cli("reconcile", str(repo)).code == 2
    assert len(mailbox_reads) == 2
    mailbox_reads.clear()
    cm_at, patch_at = break_mailbox(repo, FLORIN)
    result = cli("reconcile", str(repo))
    assert result.code == 2
    assert [line.split(": warning: ")[0] for line in warnings(result.err, FLORIN)] == [cm_at, patch_at], result.err
    assert mailbox_reads == [f"{FLORIN}/objects", f"{FLORIN}/patches"]  # that mailbox only
    again = cli("reconcile", str(repo))
    assert warnings(again.err, FLORIN) == warnings(result.err, FLORIN)  # still named while it is broken
    listed = yaml.safe_load((repo / "spaces/imw1/.ksgitops/problems.yaml").read_text())
    assert sorted(p["file"] for p in listed["problems"] if p["severity"] == "warning") == \
        [f"{FLORIN}/{CM}", f"{FLORIN}/{PATCH}"]
    cli("diff", str(repo))  # diff plans with the same reads: the plan the next reconcile takes names them too
    assert warnings(cli("reconcile", str(repo)).err, FLORIN) == warnings(result.err, FLORIN)


def test_commit_mode_reads_a_frozen_mailbox_only_when_its_tree_is_not_the_one_filed(
        tmp_path: Path, cli: Any, mailbox_reads: list[str]) -> None:
    repo = git_init(base_repo(tmp_path / "repo"))
    assert cli("reconcile", "--commit", str(repo)).code == 0
    break_it(repo, CASES["synctarget"])
    git(repo, "commit", "-qam", "break florin's SyncTarget")
    assert cli("reconcile", "--commit", str(repo)).code == 2
    (repo / "spaces/wmw-s/note.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: note}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "another source change: florin's mailbox is still the one filed")
    assert cli("reconcile", "--commit", str(repo)).code == 2
    assert mailbox_reads == []
    for memo in (repo / ".git").rglob("*.pickle"):
        memo.unlink()  # the memos lost (as to other code): read once, then known as read
    source_change(repo)
    git(repo, "commit", "-qam", "a source change")
    assert cli("reconcile", "--commit", str(repo)).code == 2
    assert mailbox_reads == [f"{FLORIN}/objects", f"{FLORIN}/patches"]
    source_change(repo)
    git(repo, "commit", "-qam", "another")
    assert cli("reconcile", "--commit", str(repo)).code == 2
    assert len(mailbox_reads) == 2
    mailbox_reads.clear()
    cm_at, patch_at = break_mailbox(repo, FLORIN)
    git(repo, "commit", "-qam", "a hand edit of the frozen mailbox")
    result = cli("reconcile", "--commit", str(repo))
    assert result.code == 2
    assert [line.split(": warning: ")[0] for line in warnings(result.err, FLORIN)] == [cm_at, patch_at], result.err
    assert mailbox_reads == [f"{FLORIN}/objects", f"{FLORIN}/patches"]
    listed = yaml.safe_load(git(repo, "show", "HEAD:spaces/imw1/.ksgitops/problems.yaml"))
    assert sorted(p["file"] for p in listed["problems"] if p["severity"] == "warning") == \
        [f"{FLORIN}/{CM}", f"{FLORIN}/{PATCH}"]


def test_a_broken_secret_in_a_frozen_mailbox_is_named_never_shown(tmp_path: Path, cli: Any) -> None:
    repo = base_repo(tmp_path / "repo")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "topsecret", "namespace": "commonstuff"},
              "stringData": {"password": SECRET_VALUE}}
    (repo / "spaces/wmw-c/secret.yaml").write_text(yaml.safe_dump(secret))
    placement = repo / "spaces/wmw-c/edge-placement-c.yaml"
    placement.write_text(placement.read_text().replace("resources: [configmaps]", "resources: [configmaps, secrets]"))
    assert cli("reconcile", str(repo)).code == 0
    kept = repo / FLORIN / SECRET
    assert SECRET_VALUE.encode() in kept.read_bytes()
    break_it(repo, CASES["synctarget"])
    kept.write_bytes(b"<<<<<<< HEAD\n" + kept.read_bytes() + b"=======\npassword: " + SECRET_VALUE.encode()
                     + b"\n>>>>>>> theirs\n")
    result = cli("reconcile", str(repo))
    assert result.code == 2
    [found] = warnings(result.err, FLORIN)
    assert found.startswith(f"{FLORIN}/{SECRET}:1: warning: ") and "conflict markers" in found, found
    cli("status", str(repo))
    shown = [result.out, result.err, (repo / "spaces/imw1/.ksgitops/problems.yaml").read_text(),
             (repo / "STATUS.md").read_text()]
    assert f"{FLORIN}/{SECRET}" in shown[2]
    assert not [text for text in shown if SECRET_VALUE in text]


@pytest.mark.parametrize("commit", [False, True])
def test_without_a_record_a_run_reads_a_few_mailboxes_kept_whole_says_so_and_the_next_reads_the_rest(
        tmp_path: Path, cli: Any, mailbox_reads: list[str], monkeypatch: pytest.MonkeyPatch, commit: bool) -> None:
    """A new clone (no record, no cache) of a fleet whose inventory is frozen: reading every
    mailbox kept whole would cost more than the reconcile (tens of seconds at 1,000 WECs), so a run
    reads KEPT_WHOLE_READS of them, names the rest it left unread, and the next run goes on."""
    monkeypatch.setattr(pipeline, "KEPT_WHOLE_READS", 1)
    repo = git_init(base_repo(tmp_path / "repo"))
    mode = ("--commit",) if commit else ()
    assert cli("reconcile", *mode, str(repo)).code == 0
    (repo / "spaces/imw1/florin.yaml").write_text("kind: [unclosed\n")  # both WECs of imw1 frozen
    _, patch_at = break_mailbox(repo, GUILDER)
    if commit:
        git(repo, "commit", "-qam", "the inventory broken; guilder's mailbox edited by hand")
    for memo in (repo / ".git").rglob("*.pickle"):
        memo.unlink()  # as a new clone has none
    first = cli("reconcile", *mode, str(repo))
    assert first.code == 2
    assert mailbox_reads == [f"{FLORIN}/objects", f"{FLORIN}/patches"]  # the first, by name, only
    [unread] = [line for line in first.err.splitlines() if "not read for files that do not read" in line]
    assert unread.startswith(f"{GUILDER}: warning: kept whole, this mailbox was not read"), unread
    assert not warnings(first.err, GUILDER)
    mailbox_reads.clear()
    if commit:
        source_change(repo)
        git(repo, "commit", "-qam", "a source change")
    else:
        source_change(repo)
    second = cli("reconcile", *mode, str(repo))
    assert second.code == 2
    assert mailbox_reads == [f"{GUILDER}/objects", f"{GUILDER}/patches"]  # florin's is known as read
    assert [line for line in warnings(second.err, GUILDER) if line.startswith(patch_at)], second.err
    assert "not read for files that do not read" not in second.err


@pytest.mark.parametrize("commit", [False, True])
def test_with_mailboxes_left_unread_the_next_run_reads_them_though_nothing_changed(
        tmp_path: Path, cli: Any, mailbox_reads: list[str], monkeypatch: pytest.MonkeyPatch, commit: bool) -> None:
    """A run that left mailboxes unread is no proof of the next (the work tree's record, a commit's
    run record): that one reads the next of them, without a change in between."""
    monkeypatch.setattr(pipeline, "KEPT_WHOLE_READS", 1)
    repo = git_init(base_repo(tmp_path / "repo"))
    mode = ("--commit",) if commit else ()
    assert cli("reconcile", *mode, str(repo)).code == 0
    (repo / "spaces/imw1/florin.yaml").write_text("kind: [unclosed\n")
    _, patch_at = break_mailbox(repo, GUILDER)
    if commit:
        git(repo, "commit", "-qam", "the inventory broken; guilder's mailbox edited by hand")
    for memo in (repo / ".git").rglob("*.pickle"):
        memo.unlink()
    assert cli("reconcile", *mode, str(repo)).code == 2
    assert mailbox_reads == [f"{FLORIN}/objects", f"{FLORIN}/patches"]
    mailbox_reads.clear()
    second = cli("reconcile", *mode, str(repo))  # nothing changed
    assert second.code == 2
    assert mailbox_reads == [f"{GUILDER}/objects", f"{GUILDER}/patches"], second.err
    assert [line for line in warnings(second.err, GUILDER) if line.startswith(patch_at)], second.err
    assert "not read for files that do not read" not in second.err
    mailbox_reads.clear()
    third = cli("reconcile", *mode, str(repo))  # all read now: a proof holds again, nothing read
    assert mailbox_reads == [] and warnings(third.err, GUILDER) == warnings(second.err, GUILDER), third.err


def report_lands(repo: Path, *mailboxes: str) -> None:
    """What a WEC's transport pushes into its mailbox: a report, beside what reconcile wrote."""
    for mailbox in mailboxes:
        folder = repo / mailbox / "reported"
        folder.mkdir(exist_ok=True)
        (folder / "report.json").write_text('{"reportedAt": "%s"}\n' % len(list(folder.iterdir())))


def test_commit_mode_a_report_landing_in_a_frozen_mailbox_does_not_make_it_read(
        tmp_path: Path, cli: Any, mailbox_reads: list[str]) -> None:
    """What reconcile reads of a mailbox kept whole is its objects/ and patches/: a report in
    reported/ (every sync cycle of a live fleet) leaves it vouched for, written or read once."""
    repo = git_init(base_repo(tmp_path / "repo"))
    assert cli("reconcile", "--commit", str(repo)).code == 0
    source_change(repo)
    git(repo, "commit", "-qam", "a source change: a run that writes no mailbox comes between")
    assert cli("reconcile", "--commit", str(repo)).code == 0
    (repo / "spaces/imw1/florin.yaml").write_text("kind: [unclosed\n")  # both WECs of imw1 frozen
    git(repo, "commit", "-qam", "the inventory broken")
    for step in range(2):
        report_lands(repo, FLORIN, GUILDER)
        source_change(repo)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "reports, and a source change")
        result = cli("reconcile", "--commit", str(repo))
        assert result.code == 2 and "not read for files that do not read" not in result.err, result.err
        assert mailbox_reads == [], step
    for memo in (repo / ".git").rglob("*.pickle"):
        memo.unlink()  # the memos lost: read once
    source_change(repo)
    git(repo, "commit", "-qam", "a source change")
    assert cli("reconcile", "--commit", str(repo)).code == 2
    assert len(mailbox_reads) == 4
    mailbox_reads.clear()
    report_lands(repo, FLORIN, GUILDER)
    source_change(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "reports, and a source change")
    assert cli("reconcile", "--commit", str(repo)).code == 2
    assert mailbox_reads == []
