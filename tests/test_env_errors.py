"""The environment failing while ksgitops writes (a full disk, a file size limit, a read-only file
system, a locked ref, a folder it may not write): one line naming the path, exit 3, nothing
half-written, and the next run (once the cause is gone) equals a clean run. Exit 4 is for bugs only.

Real failures, no mocks: a file size limit (RLIMIT_FSIZE) on a real subprocess; a tiny tmpfs and a
read-only remount where this machine lets the tests mount (else skipped); a stale ref lock; a
folder made unwritable (chattr +i as root, chmod otherwise).
"""
from __future__ import annotations

import os
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pygit2
import pytest

from conftest import git, work_tree_files as files

ROOT = Path(__file__).resolve().parents[1]
FLORIN = "imw1-mb-florin"
BIG = random.Random(1).randbytes(6000).hex()  # 12 kB that no compression brings under the limits


def ksgitops(*args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([sys.executable, "-m", "ksgitops", *args], capture_output=True, text=True,
                          preexec_fn=cap, cwd=ROOT)


def one_clean_line(result: subprocess.CompletedProcess[str], *parts: str) -> None:
    assert result.returncode == 3, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    for part in parts:
        assert part in lines[0], result.stderr


def big_configmap(repo: Path) -> None:
    """A common ConfigMap larger than the limits below (it reaches every prod WEC's mailbox)."""
    path = repo / "spaces" / "wmw-c" / "big.yaml"
    path.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: big, namespace: commonstuff}}\n"
                    f"data: {{blob: {BIG}}}\n")


def commit_big_configmap(repo: Path) -> None:
    """The example reconciled and committed, then the big ConfigMap committed as a source change."""
    assert ksgitops("reconcile", str(repo), "--commit").returncode == 0
    big_configmap(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "big")


def test_a_file_size_limit_while_writing_is_exit_3_and_nothing_is_half_written(example: Path, tmp_path: Path) -> None:
    assert ksgitops("reconcile", str(example)).returncode == 0
    big_configmap(example)
    before = files(example)
    result = ksgitops("reconcile", str(example), limit=4096)
    one_clean_line(result, "File too large", "spaces/imw1-mb-", "nothing was changed")
    assert files(example) == before

    clean = tmp_path / "clean"
    shutil.copytree(example, clean)
    assert ksgitops("reconcile", str(clean)).returncode == 0
    assert ksgitops("reconcile", str(example)).returncode == 0  # the cause gone: as a clean run
    assert files(example) == files(clean)


def test_a_file_size_limit_on_commit_leaves_branch_and_work_tree_as_they_were(example_git: Path) -> None:
    commit_big_configmap(example_git)
    head, before = git(example_git, "rev-parse", "HEAD"), files(example_git)
    result = ksgitops("reconcile", str(example_git), "--commit", limit=4096)
    one_clean_line(result, "File too large")
    assert git(example_git, "rev-parse", "HEAD") == head and files(example_git) == before
    assert ksgitops("reconcile", str(example_git), "--commit").returncode == 0
    assert git(example_git, "status", "--porcelain", "--untracked-files=no") == ""


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (skipped where the tests may not mount one)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_is_exit_3_and_nothing_is_half_written(tmpfs: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from fleet import generate
    repo = tmpfs / "repo"
    generate(repo, wecs=30, objects=20, seed=1)
    before = files(repo)
    result = ksgitops("reconcile", str(repo))
    one_clean_line(result, "No space left on device", "nothing was changed")
    assert files(repo) == before

    clean = tmp_path / "clean"
    generate(clean, wecs=30, objects=20, seed=1)
    assert ksgitops("reconcile", str(clean)).returncode == 0
    subprocess.run(["mount", "-o", "remount,size=64m", str(tmpfs)], check=True)
    assert ksgitops("reconcile", str(repo)).returncode == 0
    assert files(repo) == files(clean)


def test_a_read_only_file_system_is_exit_3(tmpfs: Path, example: Path) -> None:
    repo = tmpfs / "repo"
    shutil.copytree(example, repo)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    try:
        result = ksgitops("reconcile", str(repo))
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(tmpfs)], check=True)
    one_clean_line(result, "Read-only file system")
    assert files(repo) == files(example)


def test_a_commit_that_fails_leaves_the_work_tree_untouched(example_git: Path) -> None:
    """The ref cannot move (another writer's lock): the commit fails, and the checkout had not begun."""
    commit_big_configmap(example_git)
    head, before = git(example_git, "rev-parse", "HEAD"), files(example_git)
    lock = example_git / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")
    result = ksgitops("reconcile", str(example_git), "--commit")
    assert result.returncode == 3 and "nothing was changed" in result.stderr, result
    assert "main.lock" in result.stderr and "remove the .lock file" in result.stderr, result.stderr
    assert "None" not in result.stderr and "Traceback" not in result.stderr
    assert git(example_git, "rev-parse", "HEAD") == head and files(example_git) == before
    assert lock.exists(), "a lock ksgitops did not leave is never removed"
    lock.unlink()
    assert ksgitops("reconcile", str(example_git), "--commit").returncode == 0


KILLED_MID_MOVE = """
import os, signal, sys
from ksgitops.io.fs.durable import moving_refs
with moving_refs(sys.argv[1], "refs/heads/main"):
    open(os.path.join(sys.argv[1], "refs", "heads", "main.lock"), "w").close()  # as libgit2 does
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_ref_lock_left_by_a_killed_ksgitops_is_cleared_by_the_next_run(example_git: Path) -> None:
    """A process killed while it moved a ref (holding the repository's lock, its intent written,
    libgit2's `<ref>.lock` made): the next run knows the writer died and removes that lock only."""
    commit_big_configmap(example_git)
    other = example_git / ".git" / "refs" / "heads" / "other.lock"  # another git's: not ours to remove
    other.write_text("")
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_MOVE, str(example_git / ".git")], timeout=60)
    assert killed.returncode == -9
    assert (example_git / ".git" / "refs" / "heads" / "main.lock").exists()
    result = ksgitops("reconcile", str(example_git), "--commit")
    assert result.returncode == 0, result.stderr
    assert git(example_git, "log", "-1", "--format=%s").startswith("ksgitops")
    assert not (example_git / ".git" / "refs" / "heads" / "main.lock").exists() and other.exists()
    assert git(example_git, "status", "--porcelain", "--untracked-files=no") == ""


def _freeze(folder: Path) -> bool:
    if os.geteuid() == 0:
        return subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
    folder.chmod(0o555)
    return True


def _thaw(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o755)


@pytest.mark.parametrize("journal_from", ["this version", "an earlier version"])
def test_a_work_tree_that_cannot_follow_is_finished_by_the_next_run(example_git: Path, journal_from: str) -> None:
    """Also when the interrupted run kept its journal where earlier versions did (<git dir>/ksgitops/)."""
    commit_big_configmap(example_git)
    folder = example_git / "spaces" / FLORIN / "objects" / "core" / "configmaps" / "commonstuff"
    if not _freeze(folder):
        pytest.skip("cannot make a folder unwritable here")
    try:
        result = ksgitops("reconcile", str(example_git), "--commit")
    finally:
        _thaw(folder)
    one_clean_line(result, "committed", "could not follow", "run again")
    head = pygit2.Repository(str(example_git)).head.peel(pygit2.Commit)
    assert "big.yaml" in str([e.name for e in head.tree[f"spaces/{FLORIN}/objects/core/configmaps/commonstuff"]])
    if journal_from == "an earlier version":
        (example_git / ".git" / "ksgitops").mkdir()
        (example_git / ".git" / "ksgitops-state" / "checkout.json").rename(example_git / ".git" / "ksgitops" / "checkout.json")
    assert ksgitops("validate", str(example_git)).returncode == 0  # any command finishes the checkout first
    assert git(example_git, "status", "--porcelain", "--untracked-files=no") == ""
    assert not (example_git / ".git" / "ksgitops-state" / "checkout.json").exists()
    assert not (example_git / ".git" / "ksgitops" / "checkout.json").exists()


def test_an_object_name_too_long_for_the_file_system_is_never_an_internal_error(example: Path) -> None:
    """A valid 253-character name: encoded into a shorter file name, or a clean exit 3."""
    assert ksgitops("reconcile", str(example)).returncode == 0
    (example / "spaces" / "wmw-c" / "long.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {'a' * 253}, namespace: commonstuff}}\n")
    before = files(example)
    result = ksgitops("reconcile", str(example))
    if result.returncode == 0:
        return
    one_clean_line(result, "File name too long")
    assert files(example) == before
