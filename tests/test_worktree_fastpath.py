"""The work tree's fast path (io/fs/statcache.py): a run proves sources and generated roots unchanged
by lstat against the record the last run kept, and still finds and repairs every change a person
or a tool made, whatever the timestamps say. A record is only a cache: without it, or with a
broken one, the output is the same."""
from __future__ import annotations

import os
import threading
import random
import shutil
import stat
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import benchmark_module, git, git_init, work_tree_files
from ksgitops.app import usecases as app
from ksgitops.core.emit import mailbox
from ksgitops.io.fs import tree as fs, statcache, worktree

RECORD = Path(".git/ksgitops-state/worktree.pickle")
FLORIN = "spaces/imw1-mb-florin"
FLORIN_FILE = f"{FLORIN}/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"
SOURCE = "spaces/wmw-c/httpd.yaml"


class Spy:
    """Counts the calls of functions the fast path must not reach."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: dict[str, list[Any]] = {}
        self.monkeypatch = monkeypatch

    def watch(self, owner: Any, name: str) -> None:
        original = getattr(owner, name)
        seen = self.calls.setdefault(name, [])

        def spy(*args: Any, **kwargs: Any) -> Any:
            seen.append(args)
            return original(*args, **kwargs)
        self.monkeypatch.setattr(owner, name, spy)


def reconciled_twice(repo: Path) -> Path:
    """Reconcile until the record vouches for every generated root: what a run wrote or read in
    the clock tick it recorded in is racy, and recorded by a later run."""
    for _ in range(100):
        generated = app.reconcile_worktree(repo).result.generated
        record = statcache.WorkTreeRecord.load(repo, str(repo / ".git"))
        record.check(repo)
        if all(record.intact.get(root) for root in generated):
            return repo
        time.sleep(0.01)
    raise AssertionError("the record never vouched for every root")


def stamps(repo: Path) -> dict[str, tuple[int, int]]:
    return {p: (os.lstat(repo / p).st_ino, os.lstat(repo / p).st_mtime_ns) for p in work_tree_files(repo)}


def test_an_unchanged_work_tree_is_neither_read_nor_built_nor_written(example_git: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    reconciled_twice(example_git)
    hashed = Spy(monkeypatch)
    hashed.watch(fs, "_blob_id")
    for _ in range(100):  # sources written in the clock tick a run recorded in are racy: hashed again
        count = len(hashed.calls["_blob_id"])
        app.reconcile_worktree(example_git)
        if len(hashed.calls["_blob_id"]) == count:
            break
        time.sleep(0.01)
    monkeypatch.undo()
    before = stamps(example_git)
    spy = Spy(monkeypatch)
    spy.watch(mailbox.MailboxBuilder, "build")  # a mailbox built
    spy.watch(worktree, "plan_root")  # a generated root read and compared
    spy.watch(worktree, "transact")  # anything written
    spy.watch(fs, "_blob_id")  # a source read and hashed
    outcome = app.reconcile_worktree(example_git)
    assert outcome.changed_roots == []
    assert {name: len(calls) for name, calls in spy.calls.items()} == \
        {"build": 0, "plan_root": 0, "transact": 0, "_blob_id": 0}
    assert stamps(example_git) == before


def _edit_same_size(repo: Path) -> None:
    path = repo / FLORIN_FILE
    data = path.read_bytes()
    path.write_bytes(data.replace(b"common", b"COMMON"))


def _append(repo: Path) -> None:
    with open(repo / FLORIN_FILE, "ab") as f:
        f.write(b"# a person was here\n")


def _delete(repo: Path) -> None:
    (repo / FLORIN_FILE).unlink()


def _add_stray(repo: Path) -> None:
    (repo / FLORIN / "objects/core/configmaps/commonstuff/stray.yaml").write_text("kind: ConfigMap\n")


def _make_executable(repo: Path) -> None:
    path = repo / FLORIN_FILE
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


ABSENT_ROOT = "spaces/imw1/.ksgitops/singleplacementslices"  # an inventory space places nothing


def _absent_root_made(repo: Path) -> None:
    """A root that must not exist, made by hand."""
    (repo / ABSENT_ROOT).mkdir(parents=True)
    (repo / ABSENT_ROOT / "x.yaml").write_text("kind: SinglePlacementSlice\n")


def _folder_replaced(repo: Path) -> None:
    folder = repo / FLORIN / "objects/core"
    shutil.copytree(folder, repo / "saved")
    shutil.rmtree(folder)
    shutil.copytree(repo / "saved", folder)  # same files, new inodes
    shutil.rmtree(repo / "saved")
    (folder / "configmaps/commonstuff/httpd-htdocs.yaml").write_text("edited in the copy\n")


@pytest.mark.parametrize("damage", [_edit_same_size, _append, _delete, _add_stray, _make_executable,
                                    _absent_root_made, _folder_replaced], ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_generated_root_is_repaired(example_git: Path, tmp_path: Path, damage: Callable[[Path], None],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    reconciled_twice(example_git)
    clean = work_tree_files(example_git)
    assert not (example_git / ABSENT_ROOT).exists()
    damage(example_git)
    spy = Spy(monkeypatch)
    spy.watch(worktree, "plan_root")
    outcome = app.reconcile_worktree(example_git)
    assert work_tree_files(example_git) == clean
    assert not os.stat(example_git / FLORIN_FILE).st_mode & 0o111
    assert set(outcome.changed_roots) <= {FLORIN, ABSENT_ROOT} and outcome.changed_roots
    assert {args[1] for args in spy.calls["plan_root"]} == set(outcome.changed_roots)  # only it was read
    assert app.reconcile_worktree(example_git).changed_roots == []


class _CoarseOs:
    """The os module as a file system with hour-long timestamps sees it: two changes within the
    same hour leave the same stamp (the racy case the record must not be fooled by)."""

    HOUR = 3600 * 10**9

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def lstat(self, path: Any, **kwargs: Any) -> Any:
        return self._coarse(os.lstat(path, **kwargs))

    def fstat(self, fd: int) -> Any:
        return self._coarse(os.fstat(fd))

    def _coarse(self, st: os.stat_result) -> os.stat_result:
        fields = list(st)
        for index in (7, 8, 9):  # the whole seconds of the tuple part
            fields[index] = fields[index] // 3600 * 3600
        return os.stat_result(fields, {"st_mtime_ns": st.st_mtime_ns // self.HOUR * self.HOUR,
                                       "st_ctime_ns": st.st_ctime_ns // self.HOUR * self.HOUR,
                                       "st_atime_ns": st.st_atime_ns // self.HOUR * self.HOUR})


def test_a_source_edited_within_the_stamps_granularity_is_read_again(example_git: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Written and recorded in the same tick, then edited again keeping its size: the stamp is
    the same, so only not having trusted a racy stamp finds the edit (like git's racy-git rule)."""
    monkeypatch.setattr(statcache, "os", _CoarseOs())
    app.reconcile_worktree(example_git)
    source = example_git / SOURCE
    text = source.read_text()
    assert "common web site" in text
    source.write_text(text.replace("common web site", "shared web site"))
    app.reconcile_worktree(example_git)
    assert b"shared web site" in (example_git / FLORIN_FILE).read_bytes()
    source.write_text(text.replace("common web site", "single web site"))  # same size, same hour
    app.reconcile_worktree(example_git)
    assert b"single web site" in (example_git / FLORIN_FILE).read_bytes()


def test_a_generated_file_edited_within_the_stamps_granularity_is_repaired(example_git: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """What the writer wrote in the tick it recorded in is racy too: an edit keeping the size in
    the same tick is still found."""
    monkeypatch.setattr(statcache, "os", _CoarseOs())
    monkeypatch.setattr(fs, "os", _CoarseOs())  # the stamps the writer takes as it writes
    app.reconcile_worktree(example_git)
    clean = work_tree_files(example_git)
    _edit_same_size(example_git)  # same hour, same size, same inode
    assert app.reconcile_worktree(example_git).changed_roots == [FLORIN]
    assert work_tree_files(example_git) == clean
    assert app.reconcile_worktree(example_git).changed_roots == []  # compared equal: racy, not recorded
    _edit_same_size(example_git)
    assert app.reconcile_worktree(example_git).changed_roots == [FLORIN]
    assert work_tree_files(example_git) == clean


def test_a_source_edited_keeping_its_size_and_mtime_is_read_again(example_git: Path) -> None:
    source = example_git / SOURCE
    for _ in range(100):  # until the record vouches for it (its first stamp may be racy)
        app.reconcile_worktree(example_git)
        record = statcache.WorkTreeRecord.load(example_git, str(example_git / ".git"))
        if SOURCE in record.sources:
            break
    assert SOURCE in record.sources
    before = source.stat()
    source.write_text(source.read_text().replace("common web site", "shared web site"))
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert source.stat().st_size == before.st_size and source.stat().st_mtime_ns == before.st_mtime_ns
    app.reconcile_worktree(example_git)
    assert b"shared web site" in (example_git / FLORIN_FILE).read_bytes()


@pytest.mark.parametrize("breakage", ["missing", "corrupt", "foreign"])
def test_a_missing_or_broken_record_gives_the_same_output(example_git: Path, tmp_path: Path, breakage: str) -> None:
    reconciled_twice(example_git)
    _edit_same_size(example_git)
    (example_git / SOURCE).write_text((example_git / SOURCE).read_text().replace("common web site", "shared web site"))
    clean = tmp_path / "clean"
    shutil.copytree(example_git, clean)
    shutil.rmtree(clean / ".git/ksgitops-state")
    app.reconcile_worktree(clean)
    record = example_git / RECORD
    if breakage == "missing":
        record.unlink()
    elif breakage == "corrupt":
        record.write_bytes(record.read_bytes()[:100])
    else:  # another folder's record, which would vouch for every root there
        other = tmp_path / "other"
        shutil.copytree(example_git, other)
        reconciled_twice(other)
        shutil.copy(other / RECORD, record)
    app.reconcile_worktree(example_git)
    assert work_tree_files(example_git) == work_tree_files(clean)


def test_diff_builds_and_reads_only_what_changed(example_git: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    reconciled_twice(example_git)
    florin = example_git / "spaces/imw1/florin.yaml"
    florin.write_text(florin.read_text().replace("loc-name: florin\n", "loc-name: florin-2\n"))
    spy = Spy(monkeypatch)
    spy.watch(mailbox.MailboxBuilder, "build")
    spy.watch(fs.WorkTreeSnapshot, "read_tree")
    result = cli("diff", str(example_git), "-o", "json")
    assert result.code == 1
    assert "florin-2" in result.out
    assert [args[1].mailbox for args in spy.calls["build"]] == ["imw1-mb-florin"]
    assert [args[1] for args in spy.calls["read_tree"]] == [FLORIN]
    assert cli("diff", str(example_git)).code == 1  # diff wrote nothing
    assert cli("reconcile", str(example_git)).code == 0
    assert cli("diff", str(example_git)).code == 0


# --- the work tree's results equal the bare path's, across random edits ----------------------------

def _hand_edit(repo: Path, rng: random.Random) -> None:
    files = sorted(p for p in work_tree_files(repo) if "-mb-" in p and "/objects/" in p)
    path = repo / rng.choice(files)
    action = rng.choice(["append", "delete", "chmod", "stray"])
    if action == "append":
        path.write_bytes(path.read_bytes() + b"x: 1\n")
    elif action == "delete":
        path.unlink()
    elif action == "chmod":
        path.chmod(0o755)
    else:
        (path.parent / "stray.yaml").write_text("stray: true\n")


def _drop_mailbox(repo: Path, rng: random.Random) -> None:
    mailboxes = sorted(p for p in os.listdir(repo / "spaces") if "-mb-" in p)
    shutil.rmtree(repo / "spaces" / rng.choice(mailboxes))


def test_the_work_tree_equals_the_bare_path_byte_for_byte_across_random_edits(tmp_path: Path, cli) -> None:
    fleet = benchmark_module("fleet")
    work = tmp_path / "work"
    fleet.generate(work, wecs=12, objects=24, seed=3)
    git_init(work)
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    rng = random.Random(13)
    edits: list[Callable[[Path, random.Random], None]] = [
        lambda repo, r: fleet.change_location_label(repo, r.randint(1, 12)),
        lambda repo, r: fleet.edit_workload_object(repo),
        _hand_edit, _hand_edit, _drop_mailbox,
    ]
    for step in range(8):
        if step:
            rng.choice(edits)(work, rng)
        assert cli("reconcile", str(work)).code == 0, step
        git(work, "add", "-A")
        git(work, "commit", "-q", "--allow-empty", "-m", f"step {step}")
        git(bare, "fetch", "-q", str(work), "+main:main")
        assert cli("reconcile", str(bare), "--commit").code == 0, step
        assert git(work, "rev-parse", "HEAD^{tree}") == git(bare, "rev-parse", "main^{tree}"), step
        assert app.reconcile_worktree(work).changed_roots == [], step  # and the record holds


def test_the_record_of_another_folder_is_not_used(example_git: Path, tmp_path: Path) -> None:
    reconciled_twice(example_git)
    record = statcache.WorkTreeRecord.load(example_git, str(example_git / ".git"))
    assert record.roots and record.sources
    moved = tmp_path / "moved"
    shutil.copytree(example_git, moved, copy_function=shutil.copy2)
    assert statcache.WorkTreeRecord.load(moved, str(moved / ".git")).roots == {}


def test_a_check_split_with_a_forked_child_finds_the_same(example_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large check runs half of the roots in a forked child: it finds what one process finds,
    a damaged root in the child's half included."""
    reconciled_twice(example_git)
    _edit_same_size(example_git)  # florin, among the last roots (the child's half)
    record = statcache.WorkTreeRecord.load(example_git, str(example_git / ".git"))
    roots = sorted(record.roots, key=lambda r: r == FLORIN)  # florin last: in the child's half
    record.check(example_git, roots)
    alone = dict(record.intact)
    assert alone[FLORIN] is False and sum(alone.values()) == len(roots) - 1
    forks: list[int] = []
    original_fork = os.fork

    def counted_fork() -> int:
        pid = original_fork()
        if pid:
            forks.append(pid)
        return pid
    monkeypatch.setattr(statcache, "FORK_FROM", 0)
    monkeypatch.setattr(os, "fork", counted_fork)
    # threads other tests of this process left running would forbid the fork (tested below)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    record.intact.clear()
    record.check(example_git, roots)
    assert len(forks) == 1
    assert record.intact == alone
    parent, original_observe = os.getpid(), statcache.observe

    def failing_in_child(base: str, shape: Any) -> Any:
        if os.getpid() != parent:
            raise OSError("the child fails")
        return original_observe(base, shape)
    monkeypatch.setattr(statcache, "observe", failing_in_child)
    record.intact.clear()
    record.check(example_git, roots)  # the parent does the child's half itself
    assert len(forks) == 2
    assert record.intact == alone


def test_reconcile_flushes_only_what_it_does_not_own(example_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reconcile's own files are regenerable: no syncfs, but the folders that kept files were
    renamed into are fsynced before the journal says done. Status (not regenerable) syncs."""
    reconciled_twice(example_git)
    (example_git / FLORIN / "reported").mkdir()
    (example_git / FLORIN / "reported" / "r.yaml").write_text("reported: true\n")
    _append(example_git)
    spy = Spy(monkeypatch)
    spy.watch(worktree, "sync_filesystem")
    spy.watch(worktree, "fsync_dir")
    assert app.reconcile_worktree(example_git).changed_roots == [FLORIN]
    assert spy.calls.get("sync_filesystem", []) == []
    assert {Path(args[0]) for args in spy.calls["fsync_dir"]} == {example_git / "spaces", example_git / FLORIN}
    assert (example_git / FLORIN / "reported" / "r.yaml").read_text() == "reported: true\n"
    assert app.status_worktree(example_git).changed
    assert spy.calls["sync_filesystem"]


def test_a_check_never_forks_beside_other_threads() -> None:
    """fork() copies only the calling thread: a lock another thread holds would stay locked in the child."""
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not statcache._may_fork()
    finally:
        release.set()
        other.join()
