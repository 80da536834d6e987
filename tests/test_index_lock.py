"""`<git dir>/index.lock`, with real processes: a live `git commit` holding it, a ksgitops killed
while its git wrote the index, another git taking it while a checkout followed its commit.
ksgitops removes only the lock its own killed write left (io/git/indexlock.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

EDITED = "spaces/wmw-c/httpd.yaml"


def _ksgitops(*args: str, path: str | None = None, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KSGITOPS_MONITOR": "off"}
    if path:
        env["PATH"] = f"{path}:{env['PATH']}"
    return subprocess.run([sys.executable, "-m", "ksgitops", *args], capture_output=True, text=True, env=env,
                          timeout=120, **kwargs)  # type: ignore[call-overload]


def _reconciled_then_edited(example_git: Path) -> Path:
    assert _ksgitops("reconcile", str(example_git), "--commit").returncode == 0
    page = example_git / EDITED
    page.write_text(page.read_text().replace("common web site", "edited web site"))
    git(example_git, "commit", "-qam", "edit")
    return example_git


def _fake_git(tmp_path: Path, body: str) -> Path:
    """A folder holding a `git` that runs `body` (with $gd the git directory) when asked to update
    the index, and the real git otherwise."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "git"
    fake.write_text(f'#!/bin/bash\nfor a in "$@"; do case "$a" in --git-dir=*) gd="${{a#--git-dir=}}";; '
                    f'update-index) ui=1;; esac; done\nif [ -n "$ui" ]; then set -C; {body}; fi\n'
                    f'exec {shutil.which("git")} "$@"\n')
    fake.chmod(0o755)
    return folder


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert path.exists()


def test_a_live_git_commits_lock_is_refused_before_the_branch_moves_and_never_removed(example_git: Path,
                                                                                       tmp_path: Path) -> None:
    """A person's `git commit -a` holds index.lock while its editor is open. `reconcile --commit`
    said "git: the index is locked; ..." (no path) after its branch had moved, leaving the index
    behind and a journal, and the next command (any: a `reconcile` here) removed the live commit's
    lock. Now the commit is refused before anything moves, naming the lock, which stays; the
    person's commit completes."""
    repo = _reconciled_then_edited(example_git)
    (repo / "spaces/wmw-s/namespace.yaml").open("a").write("# a person's edit\n")
    release, editor = tmp_path / "release", tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\nwhile [ ! -f {release} ]; do sleep 0.05; done\necho "a person\'s commit" > "$1"\n')
    editor.chmod(0o755)
    env = {**os.environ, "GIT_EDITOR": str(editor), "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@e",
           "GIT_COMMITTER_NAME": "p", "GIT_COMMITTER_EMAIL": "p@e"}
    person = subprocess.Popen(["git", "-C", str(repo), "commit", "-aq"], env=env)
    try:
        lock = repo / ".git/index.lock"
        _wait_for(lock)
        head = git(repo, "rev-parse", "HEAD")
        found = _ksgitops("reconcile", str(repo), "--commit")
        assert found.returncode == 3, found
        assert "Traceback" not in found.stderr, found.stderr
        assert f"{lock}: another git process is writing the index" in found.stderr, found.stderr
        assert "nothing was changed" in found.stderr, found.stderr
        assert git(repo, "rev-parse", "HEAD") == head
        assert not (repo / ".git/ksgitops-state/checkout.json").exists()
        assert _ksgitops("reconcile", str(repo)).returncode == 0  # a work-tree run: no index write, no lock taken
        assert lock.exists()
    finally:
        release.touch()
        person.wait(timeout=60)
    assert person.returncode == 0
    assert git(repo, "log", "-1", "--format=%s") == "a person's commit"
    found = _ksgitops("reconcile", str(repo), "--commit")
    assert found.returncode == 0, found
    assert git(repo, "status", "--porcelain") == ""


def test_a_run_killed_while_its_git_wrote_the_index_is_finished_by_the_next_run(example_git: Path,
                                                                             tmp_path: Path) -> None:
    """`reconcile --commit` SIGKILLed while its `git update-index` holds index.lock (git ends with
    it): the lock is provably its own (the intent it names its index writes in is left), and
    `run --once` over the work tree finishes the checkout by itself."""
    repo = _reconciled_then_edited(example_git)
    started = tmp_path / "git.pid"
    fake = _fake_git(tmp_path, f': > "$gd/index.lock" && echo $$ > {started} && exec sleep 60')
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KSGITOPS_MONITOR": "off", "PATH": f"{fake}:{os.environ['PATH']}"}
    killed = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(repo), "--commit"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(started)
    killed.kill()
    killed.wait(timeout=60)
    assert (repo / ".git/index.lock").exists() and (repo / ".git/ksgitops-state/index-intent").exists()
    ran = _ksgitops("run", "--once", "--repo", str(repo), "--no-status")
    assert ran.returncode == 0, ran
    assert not (repo / ".git/index.lock").exists()
    assert not (repo / ".git/ksgitops-state/index-intent").exists()
    assert not (repo / ".git/ksgitops-state/checkout.json").exists()
    assert git(repo, "status", "--porcelain") == ""


def test_a_lock_another_git_took_during_the_checkout_is_named_and_left(example_git: Path, tmp_path: Path) -> None:
    """Another git takes index.lock while the checkout follows a commit (here a `git` that takes it
    and fails in place of the checkout's): the commit stands, the error names the lock, and the
    next command leaves the lock alone (it removed it) and says the checkout is not finished; once
    the lock is gone, the next command finishes it."""
    repo = _reconciled_then_edited(example_git)
    fake = _fake_git(tmp_path, ': > "$gd/index.lock"; exit 1')
    lock = repo / ".git/index.lock"
    found = _ksgitops("reconcile", str(repo), "--commit", path=str(fake))
    assert found.returncode == 3, found
    assert found.stderr.startswith(f"{lock}: committed "), found.stderr
    again = _ksgitops("reconcile", str(repo))
    assert again.returncode == 3, again
    assert f"{lock}: another git process is writing the index" in again.stderr, again.stderr
    assert "is not finished" in again.stderr and "Traceback" not in again.stderr, again.stderr
    assert lock.exists()
    lock.unlink()
    assert _ksgitops("reconcile", str(repo)).returncode == 0
    assert git(repo, "status", "--porcelain") == ""
