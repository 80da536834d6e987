"""The state folder (`<git dir>/ksgitops-state/`) holds what the sources hold, Secret data
included (the parse cache, the plan, the status memos): its files are 0600 and its folders 0700
whatever the umask, and an earlier version's looser ones are tightened when next written. Real
files, real modes."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import copy_example_sources, git, git_init

SECRET = "spaces/wmw-c/secret.yaml"
VALUE = "hunter2-state-mode-probe"


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _modes(state: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(os.lstat(state).st_mode)}
    for folder, dirs, files in os.walk(state):
        for name in dirs + files:
            path = Path(folder) / name
            found[str(path.relative_to(state))] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


def _loose(state: Path) -> dict[str, str]:
    return {path: oct(mode) for path, mode in _modes(state).items()
            if mode != (0o700 if (state / path).is_dir() else 0o600)}


def _with_secret(repo: Path) -> Path:
    (repo / SECRET).write_text(f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s1\n  namespace: commonstuff\n"
                               f"stringData:\n  password: {VALUE}\n")
    return repo


def _every_writer(cli, repo: Path) -> None:
    """The commands that write state: a work tree's record, cache, plan and status memo; a
    commit's run record, checkout journal and intents, placements and status memo."""
    for args in (("reconcile", str(repo)), ("diff", str(repo)), ("status", str(repo))):
        assert cli(*args).code == 0, args
    page = repo / "spaces/wmw-c/httpd.yaml"
    text = page.read_text()
    page.write_text(text.replace("web site", "web site, again", 1))  # a new ConfigMap value each time
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "edit")
    for args in (("reconcile", str(repo), "--commit"), ("status", str(repo), "--commit")):
        assert cli(*args).code == 0, args


def test_state_files_are_the_owners_alone(example: Path, cli) -> None:
    """Before: every file 0644 and the folder 0755 (with umask 022), the Secret's value readable
    by every user of the machine in the parse cache."""
    repo = git_init(_with_secret(example))
    _every_writer(cli, repo)
    state = repo / ".git/ksgitops-state"
    assert any(VALUE.encode() in (state / p).read_bytes() for p in _modes(state) if (state / p).is_file())
    assert {"worktree.pickle", "reconciled.pickle", "placed.pickle", "status-git.sqlite",
            "status-worktree.sqlite", "cache.pickle"} <= set(_modes(state))
    assert _loose(state) == {}


def test_a_folder_below_the_tops_own_state_folder_is_the_owners_alone(tmp_path: Path, cli) -> None:
    top = tmp_path / "mono"
    folder = copy_example_sources(top / "infra" / "prod")
    git_init(top)
    assert cli("reconcile", str(folder)).code == 0
    assert cli("status", str(folder)).code == 0
    state = top / ".git/ksgitops-state"
    assert [p for p in _modes(state) if p.startswith("folders/") and p.count("/") == 1]  # the folder's own
    assert _loose(state) == {}


def test_an_earlier_versions_open_state_is_tightened_when_next_written(example: Path, cli) -> None:
    repo = git_init(_with_secret(example))
    _every_writer(cli, repo)
    state = repo / ".git/ksgitops-state"
    subprocess.run(["chmod", "-R", "go+rX", str(state)], check=True)
    before = {p: os.lstat(state / p) for p in _modes(state)}
    assert _loose(state)
    _every_writer(cli, repo)
    rewritten = [p for p, st in before.items() if (state / p).is_file()
                 and (os.lstat(state / p).st_ino, os.lstat(state / p).st_mtime_ns) != (st.st_ino, st.st_mtime_ns)]
    assert {"worktree.pickle", "reconciled.pickle"} <= set(rewritten)
    opened = {".", "status-git.sqlite", "status-worktree.sqlite"}  # SQLite's: every status run opens them
    assert {p: m for p, m in _loose(state).items() if p in rewritten or p in opened} == {}


def test_a_state_folder_made_meanwhile_by_another_process_is_taken(tmp_path: Path, monkeypatch) -> None:
    """Two processes making the same state folder (its parent missing): the one that loses the
    race takes the folder the other made, and it stays the owner's alone."""
    from ksgitops.io.fs import folderstate
    target = tmp_path / "state" / "folders" / "x"
    real_mkdir, calls = os.mkdir, []

    def racing_mkdir(path, mode=0o777):
        calls.append(str(path))
        if str(path) == str(target) and calls.count(str(path)) == 2:
            real_mkdir(path, 0o755)  # the other process wins, with its own (open) mode
        real_mkdir(path, mode)

    monkeypatch.setattr(folderstate.os, "mkdir", racing_mkdir)
    folderstate.private_folder(target)
    assert target.is_dir() and stat.S_IMODE(target.stat().st_mode) == 0o700


KILLED_MID_WRITE = """
import os, signal, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)  # as an earlier version's write_new
os.write(fd, sys.argv[2].encode())
os.kill(os.getpid(), signal.SIGKILL)  # before its rename over the file
"""


def test_staging_files_a_killed_writer_left_are_tightened_and_old_ones_removed(example: Path, cli, monkeypatch) -> None:
    """Before: a `.NAME.ksgitops-tmp` a kill left stayed as it was, 0644 with the Secret's value in
    it, for as long as nothing wrote NAME again (a work tree's commands never write the run record).
    Now the next command that writes the state folder tightens it, and removes it once it is an
    hour old; what is not its own (a link, another user's file, another name) it leaves alone."""
    from ksgitops.io.fs import folderstate
    repo = git_init(_with_secret(example))
    _every_writer(cli, repo)
    state = repo / ".git/ksgitops-state"
    young, old = state / ".reconciled.pickle.ksgitops-tmp", state / ".placed.pickle.ksgitops-tmp"
    for path in (young, old):
        killed = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(path), VALUE])
        assert killed.returncode == -9 and stat.S_IMODE(path.stat().st_mode) == 0o644
    os.utime(old, (time.time() - 2 * 3600, time.time() - 2 * 3600))
    link = state / ".linked.ksgitops-tmp"
    link.symlink_to(young)
    other = state / ".notes.txt"
    other.write_text("mine")
    foreign = state / ".theirs.ksgitops-tmp"
    foreign.write_text("theirs")
    if os.geteuid() == 0:
        os.chown(foreign, 65534, 65534)
    os.utime(foreign, (0, 0))
    foreign.chmod(0o644)
    monkeypatch.setattr(folderstate, "_tidied", {}, raising=False)  # a new process: the commands above ran in this one
    page = repo / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("web site", "web site, once more", 1))
    assert cli("reconcile", str(repo)).code == 0
    assert stat.S_IMODE(young.stat().st_mode) == 0o600 and young.read_text() == VALUE
    assert not old.exists()
    assert link.is_symlink() and other.read_text() == "mine" and stat.S_IMODE(other.stat().st_mode) == 0o644
    if os.geteuid() == 0:  # another user's: neither tightened nor removed
        assert foreign.exists() and stat.S_IMODE(foreign.stat().st_mode) == 0o644
    else:  # ours, an hour old: removed
        assert not foreign.exists()


WRITE_STATE = """
import sys
from pathlib import Path
from ksgitops.io.fs.paths import write_state
write_state(Path(sys.argv[1]), b"secret memo")
"""


def test_a_staging_name_that_is_a_link_or_a_fifo_is_never_written_through(tmp_path: Path) -> None:
    """Before: a `.NAME.ksgitops-tmp` FIFO kept the writer (the memo keeper a command forks, holding
    `memos.lock`, so every later command too) waiting forever; a link to a file outside had the
    state file's content, Secret data and all, written there, and NAME replaced by the link."""
    state = tmp_path / ".git/ksgitops-state"
    state.mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("someone's file")
    os.mkfifo(state / ".a.pickle.ksgitops-tmp")
    (state / ".b.pickle.ksgitops-tmp").symlink_to(outside)
    for name in ("a.pickle", "b.pickle"):
        done = subprocess.run([sys.executable, "-c", WRITE_STATE, str(state / name)], capture_output=True,
                              text=True, timeout=30, cwd=Path(__file__).resolve().parents[1])
        assert done.returncode == 0, done.stderr
        assert not (state / name).is_symlink() and (state / name).read_bytes() == b"secret memo"
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600
    assert outside.read_text() == "someone's file"
    assert sorted(p.name for p in state.iterdir()) == ["a.pickle", "b.pickle"]


WRITE_DURABLY = """
import sys
from pathlib import Path
from ksgitops.io.fs.durable import write_durably
write_durably(Path(sys.argv[1]), b"journal", 0o600)
"""


def test_a_durable_write_never_goes_through_a_link_or_into_a_fifo_at_its_staging_name(tmp_path: Path) -> None:
    """The journals (a checkout's, in the state folder; the work tree's) are written as state files
    are: before, the same FIFO or link at the staging name hung the write or sent it out."""
    state = tmp_path / ".git/ksgitops-state"
    state.mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("someone's file")
    os.mkfifo(state / ".a.json.ksgitops-tmp")
    (state / ".b.json.ksgitops-tmp").symlink_to(outside)
    for name in ("a.json", "b.json"):
        done = subprocess.run([sys.executable, "-c", WRITE_DURABLY, str(state / name)], capture_output=True,
                              text=True, timeout=30, cwd=Path(__file__).resolve().parents[1])
        assert done.returncode == 0, done.stderr
        assert not (state / name).is_symlink() and (state / name).read_bytes() == b"journal"
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600
    assert outside.read_text() == "someone's file"
    assert sorted(p.name for p in state.iterdir()) == ["a.json", "b.json"]
