"""A checkout's index changes go through `git update-index` when a git program is there, else (or
when it fails) through libgit2: the index ends the same either way, and matches the commit."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest

from conftest import EXAMPLE, git, git_init
from ksgitops.io.git import indexupdate
from monitor_process import alive


def _fleet(tmp_path: Path, name: str) -> Path:
    """The example with its mailboxes, committed and reconciled once."""
    shutil.copytree(EXAMPLE, tmp_path / name)
    return git_init(tmp_path / name)


def _git_that_waits(tmp_path: Path) -> tuple[Path, Path]:
    """A `git` that writes its pid into a file and sleeps (the pid stays: it execs)."""
    started, fake = tmp_path / "git.pid", tmp_path / "bin/git"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho $$ > {started}\nexec sleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake, started


def _pid_in(started: Path) -> int:
    deadline = time.monotonic() + 60
    while not (started.exists() and started.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return int(started.read_text())


def _edit(repo: Path) -> None:
    page = repo / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("common web site", "edited web site"))
    florin = repo / "spaces/imw1/florin.yaml"
    florin.write_text(florin.read_text().replace("env: prod", "env: test") if "env: prod" in florin.read_text()
                      else florin.read_text() + "\n")
    git(repo, "commit", "-qam", "edit")


@pytest.mark.parametrize("how", ["git", "no git", "git fails", "git says something", "beside a thread"])
def test_the_index_follows_the_commit_with_or_without_git(tmp_path: Path, cli, how: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`beside a thread`: no code may run between fork and exec (git's end with this process is
    asked for there), so libgit2 does it."""
    repo = _fleet(tmp_path, "repo")
    # earlier tests may have left idle threads in this worker: only the thread this test starts counts
    monkeypatch.setattr(indexupdate, "may_fork", lambda: how != "beside a thread")
    assert cli("reconcile", str(repo), "--commit").code == 0
    _edit(repo)
    started: list[bool] = []
    finished: list[bool] = []
    start, finish = indexupdate._start_git, indexupdate._finished
    monkeypatch.setattr(indexupdate, "_start_git", lambda *a: started.append(bool(got := start(*a))) or got)
    monkeypatch.setattr(indexupdate, "_finished", lambda *a: finished.append(done := finish(*a)) or done)
    if how == "no git":
        monkeypatch.setattr(indexupdate.shutil, "which", lambda name: None)
    elif how in ("git fails", "git says something"):  # exit 0 with a message: a path it skipped, say
        fake = tmp_path / "bin/git"
        fake.parent.mkdir()
        fake.write_text("#!/bin/sh\nexit 1\n" if how == "git fails" else "#!/bin/sh\necho 'Ignoring path x' >&2\n")
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setattr(indexupdate.shutil, "which", lambda name: str(fake))
    before = git(repo, "rev-parse", "HEAD")
    result = cli("reconcile", str(repo), "--commit")
    assert result.code == 0, result
    assert git(repo, "rev-parse", "HEAD") != before  # a commit that changed mailboxes file by file
    assert started == [how in ("git", "git fails", "git says something")]
    assert finished == ([how == "git"] if started[0] else [])
    assert git(repo, "status", "--porcelain") == ""
    tree = [line.split(" ", 2) for line in git(repo, "ls-tree", "-r", "HEAD").splitlines()]  # mode, type, id\tpath
    assert git(repo, "ls-files", "-s").splitlines() == [f"{mode} {rest.replace(chr(9), ' 0' + chr(9), 1)}"
                                                         for mode, _, rest in tree]
    assert not (repo / ".git/ksgitops-state/checkout.json").exists()


def test_a_removal_of_a_path_the_index_lacks_is_no_change(tmp_path: Path) -> None:
    repo = _fleet(tmp_path, "repo")
    before = git(repo, "ls-files", "-s")
    updates = indexupdate.IndexUpdates()
    updates.remove("spaces/no-such/file.yaml")
    updates.write(pygit2.Repository(str(repo)))
    assert git(repo, "ls-files", "-s") == before


def test_git_ends_with_the_run_that_started_it(tmp_path: Path) -> None:
    """A run killed while git writes the index takes git along: the next run's recovery removes the
    index.lock left, which a git still running would later rename into place over its work."""
    repo = _fleet(tmp_path, "repo")
    fake, started = _git_that_waits(tmp_path)
    script = (f"import pygit2\nfrom ksgitops.io.git import indexupdate\n"
              f"indexupdate.shutil.which = lambda name: {str(fake)!r}\n"
              f"indexupdate._finished(indexupdate._start_git(pygit2.Repository({str(repo)!r}), [('a', '', 0)], {{}}))\n")
    run = subprocess.Popen([sys.executable, "-c", script])
    pid = _pid_in(started)
    os.kill(pid, 0)  # git (here a sleep in its place) runs
    run.kill()
    run.wait(timeout=60)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pid)


def test_a_failed_sync_takes_git_along_and_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files' sync runs while git writes the index; when it fails, git is stopped and waited
    for, and the error goes up (the journal stays: the next command finishes the checkout)."""
    repo = _fleet(tmp_path, "repo")
    fake, started = _git_that_waits(tmp_path)
    monkeypatch.setattr(indexupdate.shutil, "which", lambda name: str(fake))
    monkeypatch.setattr(indexupdate, "may_fork", lambda: True)
    updates = indexupdate.IndexUpdates()
    updates.remove("spaces/imw1/florin.yaml")

    def failing_sync() -> None:
        _pid_in(started)
        raise OSError(5, "Input/output error")

    before = git(repo, "ls-files", "-s")
    with pytest.raises(OSError):
        updates.write(pygit2.Repository(str(repo)), meanwhile=failing_sync)
    assert not alive(int(started.read_text()))
    assert git(repo, "ls-files", "-s") == before


@pytest.mark.parametrize("pidfd", [True, False])
def test_a_git_that_hangs_is_given_up_and_libgit2_makes_the_changes(tmp_path: Path, pidfd: bool,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Woken by the process's pidfd where the system has one, else by Popen's own wait."""
    repo = _fleet(tmp_path, "repo")
    fake, started = _git_that_waits(tmp_path)
    monkeypatch.setattr(indexupdate.shutil, "which", lambda name: str(fake))
    monkeypatch.setattr(indexupdate, "may_fork", lambda: True)
    monkeypatch.setattr(indexupdate, "TIMEOUT", 0.5)
    if not pidfd:
        monkeypatch.delattr(indexupdate.os, "pidfd_open", raising=False)
    assert "spaces/imw1/florin.yaml" in git(repo, "ls-files")
    updates = indexupdate.IndexUpdates()
    updates.remove("spaces/imw1/florin.yaml")
    updates.write(pygit2.Repository(str(repo)))
    pid = _pid_in(started)
    assert not alive(pid)  # killed and waited for
    assert "spaces/imw1/florin.yaml" not in git(repo, "ls-files")  # libgit2 made the change


def test_the_wait_gives_git_s_exit_status(tmp_path: Path) -> None:
    for code in (0, 3):
        process = subprocess.Popen(["sh", "-c", f"sleep 0.1; exit {code}"])
        assert indexupdate._wait(process, 30) == code
    process = subprocess.Popen(["sleep", "30"])
    with pytest.raises(subprocess.TimeoutExpired):
        indexupdate._wait(process, 0.2)
    process.kill()
    process.wait()
