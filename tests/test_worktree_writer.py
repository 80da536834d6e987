"""The crash-safe work-tree writer (io/fs/worktree.py) and the checkout that follows a commit
(io/git/checkout.py): a crash after any single file-system step is recovered, kept files are never
lost, leftovers of the earlier writer are put right, and a mailbox keeps what reconcile does not own.

A "crash" here stops the writer right before its Nth file-system call (rename, mkdir, unlink,
rmtree, a file write, a sync), for every N until a run completes: no cleanup code runs, as after a
SIGKILL (tests/test_crash.py kills real processes at random moments; this enumerates every step).
"""
from __future__ import annotations

import contextlib
import os
import shutil
from itertools import count
from pathlib import Path
from typing import Callable, Iterator

import pygit2
import pytest

from conftest import git, git_init, work_tree_files as tree_files, write_tree
from ksgitops.app import usecases as app
from ksgitops.io.git import checkout, indexupdate, ondisk
from ksgitops.io.fs import afterwards, durable, paths, rootplan, staging, worktree
from minimal_fleet import minimal_fleet

FLORIN = "imw1-mb-florin"
KEPT = {
    f"spaces/{FLORIN}/reported/apps/replicasets/commonstuff/commond.yaml": b"object: {}\nreportedAt: x\n",
    f"spaces/{FLORIN}/upsynced/core/configmaps/orbital/george.yaml": b"upsynced: true\n",
    f"spaces/{FLORIN}/NOTES.md": b"# florin\nA person wrote this.\n",
}
MARKS = (".ksgitops-stage", ".ksgitops-trash", ".ksgitops-journal", ".ksgitops-tmp", ".ksgitops-new", ".ksgitops-old")


class Crash(BaseException):
    """Not an Exception: nothing in ksgitops catches it, as nothing runs after a SIGKILL."""


@contextlib.contextmanager
def crash_before_step(monkeypatch: pytest.MonkeyPatch, at: int) -> Iterator[list[int]]:
    """Raise Crash right before the `at`-th file-system step; yields the step counter."""
    steps = [0]

    def counted(call: Callable[..., object]) -> Callable[..., object]:
        def step(*args: object, **kwargs: object) -> object:
            steps[0] += 1
            if steps[0] == at:
                raise Crash()
            return call(*args, **kwargs)
        return step

    with monkeypatch.context() as m:
        for module, name in ((os, "rename"), (os, "replace"), (os, "mkdir"), (os, "unlink"), (os, "rmdir"),
                             (shutil, "rmtree"), (paths, "write_new"), (staging, "write_new"),
                             (worktree, "write_durably"), (checkout, "write_durably"),
                             (worktree, "sync_filesystem"), (worktree, "fsync_dir"), (ondisk, "sync_filesystem"),
                             (pygit2.Index, "write"), (indexupdate, "_start_git")):
            m.setattr(module, name, counted(getattr(module, name)))
        yield steps


def generated_roots(files: dict[str, bytes]) -> dict[str, dict[str, bytes]]:
    """Each generated root's own files (a mailbox without what it keeps)."""
    owned = ("space.yaml", "syncerconfig.yaml", "kustomization.yaml", "objects", "patches")
    roots: dict[str, dict[str, bytes]] = {}
    for path, data in files.items():
        parts = path.split("/")
        if path == "STATUS.md":
            root = path
        elif len(parts) > 3 and parts[2] == ".ksgitops":
            root = "/".join(parts[:4])
        elif len(parts) > 2 and "-mb-" in parts[1] and parts[2] in owned:
            root = "/".join(parts[:2])
        else:
            continue
        roots.setdefault(root, {})[path] = data
    return roots


def assert_old_or_new(now: dict[str, bytes], old: dict[str, bytes], new: dict[str, bytes], at: int) -> None:
    mine, before, after = generated_roots(now), generated_roots(old), generated_roots(new)
    for root in set(mine) | set(before) | set(after):
        assert mine.get(root, {}) in (before.get(root, {}), after.get(root, {})), f"step {at}: {root} is torn"
    for path, data in KEPT.items():
        assert now.get(path) == data, f"step {at}: {path} lost"
    left = [p for p in now if any(mark in p for mark in MARKS)]
    assert not left, f"step {at}: left over: {left}"


def change_sources(repo: Path) -> None:
    path = repo / "spaces" / "wmw-c" / "httpd.yaml"
    path.write_text(path.read_text().replace("This is a common web site.", "This is the common web site.", 1))


def add_a_wec(repo: Path) -> None:
    """A WEC more: its mailbox is a whole new root (the checkout's whole-root path)."""
    florin = (repo / "spaces" / "imw1" / "florin.yaml").read_text()
    (repo / "spaces" / "imw1" / "thaler.yaml").write_text(florin.replace("florin", "thaler"))


@pytest.fixture
def reconciled(example: Path) -> Path:
    app.reconcile_worktree(example)
    write_tree(example, KEPT)
    return example


def test_a_crash_at_any_step_of_a_work_tree_write_is_recovered(reconciled: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    old = tree_files(reconciled)
    change_sources(reconciled)
    clean = tmp_path / "clean"
    shutil.copytree(reconciled, clean)
    app.reconcile_worktree(clean)
    new = tree_files(clean)
    for at in count(1):
        work = tmp_path / f"crash{at}"
        shutil.copytree(reconciled, work, symlinks=True)
        with crash_before_step(monkeypatch, at) as steps:
            with contextlib.suppress(Crash):
                app.reconcile_worktree(work)
        app.open_source(work, app.WORKTREE)  # what the next command does first
        assert_old_or_new(tree_files(work), old, new, at)
        app.reconcile_worktree(work)
        assert tree_files(work) == new, f"step {at}: the rerun differs from a clean run"
        shutil.rmtree(work)
        if steps[0] < at:  # the run completed before the crash point
            break
    assert at > 60, f"only {at} steps: the crash points did not reach the writer"


def _commit_as_the_program(work: Path, after_the_answer: bool) -> None:
    """`reconcile --commit`; `after_the_answer`: as the program runs it, with what it leaves until it
    has answered (the file system's sync, the memos) done after it, as its child would (a crash
    before stops the child too)."""
    if not after_the_answer:
        app.reconcile_commit(work, "HEAD")
        return
    afterwards.defer()
    try:
        app.reconcile_commit(work, "HEAD")
        afterwards.finish()
    finally:
        afterwards._queue = None  # a crash: the child never does what was left


@pytest.mark.parametrize("after_the_answer, change", [(False, change_sources), (True, change_sources),
                                                     (True, add_a_wec)],
                         ids=["in order", "sync after the answer", "a whole root, sync after the answer"])
def test_a_crash_at_any_step_of_commit_and_checkout_is_recovered(reconciled: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                after_the_answer: bool,
                                                                change: Callable[[Path], None]) -> None:
    if after_the_answer:  # the file system synced (not each file fsynced), after the answer
        monkeypatch.setattr(ondisk, "FSYNC_AT_MOST", 0)
    git_init(reconciled)
    (reconciled / "spaces" / FLORIN / "HANDOFF.txt").write_text("untracked, a person's\n")
    change(reconciled)
    git(reconciled, "add", "-A", "spaces/imw1", "spaces/wmw-c")  # sources only
    git(reconciled, "commit", "-qm", "change")
    old_tree = str(pygit2.Repository(str(reconciled)).head.peel(pygit2.Commit).tree_id)
    clean = tmp_path / "clean"
    shutil.copytree(reconciled, clean)
    app.reconcile_commit(clean, "HEAD")
    new, new_tree = tree_files(clean), str(pygit2.Repository(str(clean)).head.peel(pygit2.Commit).tree_id)
    for at in count(1):
        work = tmp_path / f"crash{at}"
        shutil.copytree(reconciled, work, symlinks=True)
        with crash_before_step(monkeypatch, at) as steps:
            with contextlib.suppress(Crash):
                _commit_as_the_program(work, after_the_answer)
        app.open_source(work, app.WORKTREE)  # what the next command does first
        tree = str(pygit2.Repository(str(work)).head.peel(pygit2.Commit).tree_id)
        assert tree in (old_tree, new_tree), f"step {at}: HEAD is neither old nor new"
        assert git(work, "status", "--porcelain", "--untracked-files=no") == "", f"step {at}: work tree off HEAD"
        assert (work / "spaces" / FLORIN / "HANDOFF.txt").read_text() == "untracked, a person's\n"
        assert not (work / ".git" / "ksgitops-state" / "checkout.json").exists()
        app.reconcile_commit(work, "HEAD")
        assert str(pygit2.Repository(str(work)).head.peel(pygit2.Commit).tree_id) == new_tree
        assert tree_files(work) == new, f"step {at}: the rerun differs from a clean run"
        shutil.rmtree(work)
        if steps[0] < at:
            break
    assert at > 15, f"only {at} steps: the crash points did not reach the checkout"


def test_leftovers_of_the_earlier_writer_give_back_the_reports(reconciled: Path, tmp_path: Path) -> None:
    """The earlier writer moved reported/ and upsynced/ into `.NAME.ksgitops-new` before renaming
    it in, and the next run deleted that folder: here it was killed right after the move."""
    change_sources(reconciled)
    clean = tmp_path / "clean"
    shutil.copytree(reconciled, clean)
    app.reconcile_worktree(clean)
    mailbox = reconciled / "spaces" / FLORIN
    staging = reconciled / "spaces" / f".{FLORIN}.ksgitops-new"
    (staging / "objects").mkdir(parents=True)
    (staging / "space.yaml").write_bytes((mailbox / "space.yaml").read_bytes())
    for kept in ("reported", "upsynced"):
        os.rename(mailbox / kept, staging / kept)

    app.reconcile_worktree(reconciled)
    assert tree_files(reconciled) == tree_files(clean)


@pytest.mark.parametrize("mailbox_there", [True, False])
def test_an_old_folder_of_the_earlier_writer_does_not_stay(reconciled: Path, mailbox_there: bool) -> None:
    """Killed after its renames (the mailbox there, `.old` left for good) or between them (no
    mailbox, `.new` complete with the kept folders, `.old` the previous mailbox)."""
    expected = tree_files(reconciled)
    mailbox = reconciled / "spaces" / FLORIN
    old = reconciled / "spaces" / f".{FLORIN}.ksgitops-old"
    shutil.copytree(mailbox, old)
    shutil.rmtree(old / "reported")
    if not mailbox_there:
        os.rename(mailbox, reconciled / "spaces" / f".{FLORIN}.ksgitops-new")
    app.reconcile_worktree(reconciled)
    assert tree_files(reconciled) == expected


def test_a_mailbox_keeps_what_reconcile_does_not_own(reconciled: Path) -> None:
    change_sources(reconciled)
    app.reconcile_worktree(reconciled)
    files = tree_files(reconciled)
    assert all(files.get(path) == data for path, data in KEPT.items())
    assert b"This is the common web site." in files[f"spaces/{FLORIN}/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"]
    assert not app.plan_diff(reconciled, None)[1].changed  # nor does diff see the kept files as changes
    assert app.reconcile_worktree(reconciled).changed_roots == []


def test_a_stale_patches_folder_still_goes(tree, tmp_path: Path) -> None:
    repo = tree(minimal_fleet("team"))
    app.reconcile_worktree(repo)
    mailbox = next(p for p in (repo / "spaces").iterdir() if "-mb-" in p.name)
    assert not (mailbox / "patches").exists()
    stale = mailbox / "patches" / "core" / "configmaps" / "team" / "settings.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("[]\n")
    assert app.reconcile_worktree(repo).changed_roots == [f"spaces/{mailbox.name}"]
    assert not (mailbox / "patches").exists()


def test_a_committed_file_of_a_person_stays_in_the_mailbox_commit(reconciled: Path) -> None:
    git_init(reconciled)
    change_sources(reconciled)
    git(reconciled, "commit", "-qam", "change")
    app.reconcile_commit(reconciled, "HEAD")
    head = pygit2.Repository(str(reconciled)).head.peel(pygit2.Commit)
    assert head.tree[f"spaces/{FLORIN}/NOTES.md"].data == KEPT[f"spaces/{FLORIN}/NOTES.md"]
    assert b"the common web site" in head.tree[f"spaces/{FLORIN}/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"].data


def test_a_journal_from_a_run_that_finished_its_renames_rolls_forward(reconciled: Path, tmp_path: Path) -> None:
    """A kill after the journal said done: the next run removes what is left of the old roots."""
    change_sources(reconciled)
    result = app.compute(app.open_source(reconciled, app.WORKTREE))
    root = f"spaces/{FLORIN}"
    change = rootplan.plan_root(reconciled, root, result.generated[root])  # type: ignore[arg-type]
    assert change is not None and sorted(change.keep) == ["NOTES.md", "reported", "upsynced"]
    trash = worktree.sibling(reconciled / root, "trash")
    shutil.copytree(reconciled / root, trash)  # the old root, as a kill after step 5 leaves it
    durable.write_durably(reconciled / worktree.JOURNAL,
                          f'{{"format": "{worktree.FORMAT}", "state": "done", "roots": '
                          f'[{{"path": "{root}", "existed": true, "keep": []}}]}}'.encode())
    assert worktree.recover(reconciled)
    assert not trash.exists() and not (reconciled / worktree.JOURNAL).exists()


def test_recovery_waits_for_a_write_another_live_process_is_doing(reconciled: Path) -> None:
    """A journal in flight belongs to a live writer while it holds the work tree's lock: a command
    started meanwhile (`diff` beside `run --watch`) waits for it instead of rolling its write back."""
    import subprocess
    import sys
    import time
    root = f"spaces/{FLORIN}"
    trash = worktree.sibling(reconciled / root, "trash")
    os.rename(reconciled / root, trash)  # the live writer is between its renames
    journal = reconciled / worktree.JOURNAL
    durable.write_durably(journal, f'{{"format": "{worktree.FORMAT}", "state": "started", "roots": '
                                   f'[{{"path": "{root}", "existed": true, "keep": []}}]}}'.encode())
    writer = subprocess.Popen([sys.executable, "-c", f"""
import fcntl, os, sys, time
fd = os.open({str(reconciled)!r}, os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(1.0)
os.rename({str(trash)!r}, {str(reconciled / root)!r})  # it finishes its own way
os.unlink({str(journal)!r})
"""], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline() == "locked\n"
    started = time.monotonic()
    assert not worktree.recover(reconciled)  # nothing left to recover once the writer is done
    assert time.monotonic() - started > 0.5
    assert writer.wait() == 0 and (reconciled / root / "NOTES.md").exists() and not trash.exists()


def test_folders_already_as_generated_are_moved_into_the_new_root_not_written(reconciled: Path) -> None:
    """A change to one object stages the folders it touched; every other folder of the mailbox is
    the old one, moved (same inodes), and the result is what a full write gives."""
    mailbox = reconciled / "spaces" / FLORIN
    before = {p.relative_to(mailbox): p.stat().st_ino for p in mailbox.rglob("*") if p.is_file()}
    change_sources(reconciled)
    written: list[str] = []
    real = staging.write_new

    def noted(path: str, data: bytes, observe: bool = False):  # type: ignore[no-untyped-def]
        written.append(path)
        return real(path, data, observe)
    staging.write_new = noted
    try:
        app.reconcile_worktree(reconciled)
    finally:
        staging.write_new = real
    after = {p.relative_to(mailbox): p.stat().st_ino for p in mailbox.rglob("*") if p.is_file()}
    same = [rel for rel, ino in after.items() if before.get(rel) == ino]
    assert same and len(same) < len(after)  # some files moved, the changed ones anew
    assert len([w for w in written if f"{FLORIN}.ksgitops-stage" in w]) == len(after) - len(same)
    for path, data in KEPT.items():
        assert (reconciled / path).read_bytes() == data
    clean = reconciled.parent / "clean"
    shutil.copytree(reconciled, clean)
    shutil.rmtree(clean / "spaces" / FLORIN / "objects")
    app.reconcile_worktree(clean)
    assert tree_files(clean) == tree_files(reconciled)
