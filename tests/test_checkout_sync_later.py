"""A checkout's sync of the file system left until the command has answered (io/git/ondisk.py):
the journal stays, marked as written in this boot, until the sync is done; a kill before costs the
next command the sync only, a power loss (another boot) a full finish of the checkout."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ROOT, git, work_tree_files as tree_files
from ksgitops.app import usecases as app
from ksgitops.io.fs import afterwards
from ksgitops.io.fs.paths import STATE_DIR
from ksgitops.io.git import checkout, ondisk

pytestmark = pytest.mark.skipif(ondisk.boot_id() is None, reason="no boot id here: the sync is never left for later")


@pytest.fixture(autouse=True)
def _nothing_left_queued() -> Iterator[None]:
    yield
    afterwards._queue = None


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The file systems synced, by the folder given."""
    calls: list[Path] = []
    real = ondisk.sync_filesystem
    monkeypatch.setattr(ondisk, "sync_filesystem", lambda path: (calls.append(Path(path)), real(path))[1])
    return calls


def _state(repo: Path) -> Path:
    return repo / ".git" / STATE_DIR


def _answered(repo: Path) -> None:
    """`reconcile --commit` up to its answer, as the program runs it: what it leaves for later queued."""
    afterwards.defer()
    assert app.reconcile_commit(repo, "HEAD").commit


def _a_generated_file(repo: Path) -> Path:
    return next(p for p in sorted((repo / "spaces").rglob("*.yaml")) if "-mb-" in str(p) and "/objects/" in str(p))


def test_the_answer_comes_before_the_sync_and_the_journal_goes_after_it(example_git: Path, syncs: list[Path]) -> None:
    _answered(example_git)
    marker = json.loads((_state(example_git) / ondisk.MARKER).read_bytes())
    assert marker == {"commit": git(example_git, "rev-parse", "HEAD"), "boot": ondisk.boot_id()}
    assert (_state(example_git) / ondisk.JOURNAL).exists() and syncs == []
    assert git(example_git, "status", "--porcelain", "--untracked-files=no") == ""  # written whole already
    afterwards.finish()  # after the answer
    assert syncs == [example_git]
    assert not (_state(example_git) / ondisk.JOURNAL).exists() and not (_state(example_git) / ondisk.MARKER).exists()


def test_a_kill_before_the_sync_costs_the_next_command_the_sync_only(example_git: Path, syncs: list[Path],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _answered(example_git)
    afterwards._queue = None  # killed before it did what it left for later
    index = example_git / ".git" / "index"
    before, files = (index.stat().st_ino, index.stat().st_mtime_ns), tree_files(example_git)
    finished: list[str] = []
    real = checkout.apply
    monkeypatch.setattr(checkout, "apply", lambda *a, **k: (finished.append(a[2]), real(*a, **k))[1])
    app.open_source(example_git, app.WORKTREE)  # what the next command does first
    assert syncs == [example_git] and finished == []  # synced, nothing finished again
    assert not (_state(example_git) / ondisk.JOURNAL).exists() and not (_state(example_git) / ondisk.MARKER).exists()
    assert (index.stat().st_ino, index.stat().st_mtime_ns) == before and tree_files(example_git) == files


def test_a_branch_moved_before_the_sync_still_gets_it(example_git: Path, syncs: list[Path]) -> None:
    """The same command moves the branch on before its answer (a refused push's retry resets it
    to the remote's): the journal goes, not without the sync it was owed."""
    _answered(example_git)
    git(example_git, "reset", "-q", "--soft", "HEAD~1")
    git(example_git, "commit", "-q", "--allow-empty", "-m", "upstream")
    app.open_source(example_git, "HEAD")  # the retry opens the branch again
    assert syncs == [example_git]
    afterwards.finish()  # after the answer: nothing owed any more
    assert syncs == [example_git]
    assert not (_state(example_git) / ondisk.JOURNAL).exists() and not (_state(example_git) / ondisk.MARKER).exists()


def test_a_late_child_leaves_another_checkout_s_journal(example_git: Path, syncs: list[Path]) -> None:
    """The child comes after the next command settled its journal, and a later checkout was
    interrupted meanwhile: that one's journal is not the child's to remove."""
    _answered(example_git)
    first, afterwards._queue = afterwards._queue, None  # its child not yet at work
    app.open_source(example_git, app.WORKTREE)  # the next command settles the first's journal
    journal = _state(example_git) / ondisk.JOURNAL
    other = {"format": checkout.FORMAT, "ref": "refs/heads/main", "commit": "f" * 40, "old": "0" * 40,
             "new": "0" * 40, "steps": []}
    journal.write_text(json.dumps(other))  # a later checkout, killed before it was written whole
    afterwards._queue = first
    afterwards.finish()
    assert json.loads(journal.read_text()) == other and syncs == [example_git]


def test_a_journal_of_a_branch_no_longer_checked_out_is_not_finished_on_another(example_git: Path,
                                                                             syncs: list[Path]) -> None:
    """The child killed, a person switches branch, the system reboots: the next command does not
    write the journal's checkout into the other branch's work tree."""
    git(example_git, "branch", "other")
    _answered(example_git)
    afterwards._queue = None
    git(example_git, "switch", "-q", "other")
    marker = _state(example_git) / ondisk.MARKER
    marker.write_text(json.dumps({"commit": git(example_git, "rev-parse", "main"), "boot": "an earlier boot"}))
    app.open_source(example_git, app.WORKTREE)
    assert git(example_git, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(example_git, "symbolic-ref", "HEAD") == "refs/heads/other"
    assert not (_state(example_git) / ondisk.JOURNAL).exists() and not marker.exists() and syncs == [example_git]


def test_a_person_s_commit_after_a_killed_sync_does_not_lose_it(example_git: Path, syncs: list[Path]) -> None:
    _answered(example_git)
    afterwards._queue = None
    git(example_git, "commit", "-q", "--allow-empty", "-m", "a person's commit")
    app.open_source(example_git, app.WORKTREE)
    assert syncs == [example_git]
    assert not (_state(example_git) / ondisk.JOURNAL).exists() and not (_state(example_git) / ondisk.MARKER).exists()


def test_a_new_journal_over_one_whose_sync_is_owed_syncs_first(example_git: Path, syncs: list[Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A second commit that found no journal to recover (it looked just before the first wrote
    its own) writes its journal over the first's: the first's sync is done before."""
    from test_incremental import relabel_florin
    _answered(example_git)
    first, afterwards._queue = afterwards._queue, None  # its child not yet at work
    relabel_florin(example_git)
    git(example_git, "commit", "-qam", "relabel")
    monkeypatch.setattr(checkout, "recover", lambda repo: False)  # it looked too early
    assert app.reconcile_commit(example_git, "HEAD").commit
    assert syncs == [example_git]
    afterwards._queue = first
    afterwards.finish()  # the first's child, late: its marker is gone, nothing of the second's touched
    assert syncs == [example_git] and not (_state(example_git) / ondisk.JOURNAL).exists()


def test_after_a_power_loss_the_next_command_finishes_the_checkout(example_git: Path, tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    subprocess.run(["cp", "-a", str(example_git), str(clean)], check=True)
    app.reconcile_commit(clean, "HEAD")
    _answered(example_git)
    afterwards._queue = None
    marker = _state(example_git) / ondisk.MARKER
    marker.write_text(json.dumps({"commit": git(example_git, "rev-parse", "HEAD"), "boot": "an earlier boot"}))
    lost, gone = sorted(p for p in (example_git / "spaces").rglob("*") if p.is_file() and "-mb-" in str(p))[:2]
    lost.write_bytes(b"")  # data written, not synced, lost with the power
    gone.unlink()
    app.open_source(example_git, app.WORKTREE)
    assert not (_state(example_git) / ondisk.JOURNAL).exists() and not marker.exists()
    assert tree_files(example_git) == tree_files(clean)
    assert git(example_git, "status", "--porcelain", "--untracked-files=no") == ""


def test_while_another_command_holds_the_repository_the_sync_is_left_to_it(example_git: Path,
                                                                          syncs: list[Path]) -> None:
    """A command holding the repository's lock after the answer (its own recovery, which settles the
    journal, or a commit after that) is not waited for: the journal stays for the next recovery."""
    _answered(example_git)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); "
                               "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
                               os.path.realpath(example_git / ".git")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        afterwards.finish()
        assert syncs == [] and (_state(example_git) / ondisk.JOURNAL).exists()
    finally:
        holder.communicate("", timeout=60)
    app.open_source(example_git, app.WORKTREE)
    assert syncs == [example_git] and not (_state(example_git) / ondisk.JOURNAL).exists()


HELD_SYNC = """
import os, sys, time
from ksgitops.io.git import ondisk
real, go = ondisk.sync_filesystem, sys.argv[2]

def held(path):
    deadline = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.01)
    real(path)
ondisk.sync_filesystem = held
from ksgitops.cli.entry import main
sys.argv = ["ksgitops", "reconcile", sys.argv[1], "--commit"]
main()
"""


def test_the_program_answers_then_its_child_syncs_and_removes_the_journal(example_git: Path, tmp_path: Path) -> None:
    """`ksgitops reconcile --commit` as a process, its sync held until the test says go: it has
    answered with the checkout whole and its journal still there; a reader of the memos (the next
    command) waits for the child, and then there is none."""
    go = tmp_path / "go"
    run = subprocess.run([sys.executable, "-c", HELD_SYNC, str(example_git), str(go)], capture_output=True,
                         text=True, cwd=example_git.parent, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "KSGITOPS_HANDOFF": "0"})
    assert run.returncode == 0, run.stderr
    assert (_state(example_git) / ondisk.JOURNAL).exists() and (_state(example_git) / ondisk.MARKER).exists()
    assert git(example_git, "status", "--porcelain", "--untracked-files=no") == ""
    go.touch()
    afterwards.settled(_state(example_git))
    assert not (_state(example_git) / ondisk.JOURNAL).exists() and not (_state(example_git) / ondisk.MARKER).exists()


def test_a_file_by_file_checkout_of_many_files_leaves_its_sync_too(example_git: Path, syncs: list[Path],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from test_incremental import relabel_florin
    assert app.reconcile_commit(example_git, "HEAD").commit
    relabel_florin(example_git)
    git(example_git, "commit", "-qam", "relabel")
    monkeypatch.setattr(ondisk, "FSYNC_AT_MOST", 0)  # more files than are fsynced one by one
    syncs.clear()
    _answered(example_git)
    assert syncs == [] and (_state(example_git) / ondisk.MARKER).exists()
    assert git(example_git, "status", "--porcelain", "--untracked-files=no") == ""
    afterwards.finish()
    assert syncs == [example_git] and not (_state(example_git) / ondisk.JOURNAL).exists()


def test_a_marker_that_cannot_be_written_means_the_sync_now(example_git: Path, syncs: list[Path],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(ondisk, "write_state", full)
    _answered(example_git)
    assert syncs == [example_git] and not (_state(example_git) / ondisk.JOURNAL).exists()


def test_a_sync_that_fails_in_a_recovery_says_what_was_being_done(example_git: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    from ksgitops.model import EnvError
    _answered(example_git)
    afterwards._queue = None

    def failing(path: Path) -> None:
        raise OSError(errno.EIO, "Input/output error", str(path))
    monkeypatch.setattr(ondisk, "sync_filesystem", failing)
    with pytest.raises(EnvError) as raised:
        app.open_source(example_git, app.WORKTREE)
    assert "while finishing an interrupted checkout" in str(raised.value)
    assert (_state(example_git) / ondisk.JOURNAL).exists()  # for the next run
