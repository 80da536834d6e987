"""io/fs/folderstate.py's `settle` on odd state folders: what an older version left for a folder
that is still there, and what in a sub-folder is no regular file (a link, a FIFO)."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from ksgitops.io.fs.folderstate import OWNER, make_own, name_of, place_of


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(top, staging, prod): a work tree (its `.git` a plain folder) whose two folders hold spaces/."""
    top = tmp_path / "mono"
    (top / ".git").mkdir(parents=True)
    staging, prod = top / "infra/staging", top / "infra/prod"
    for folder in (staging, prod):
        (folder / "spaces").mkdir(parents=True)
    return top, staging, prod


def _old(path: Path) -> None:
    then = time.time() - 7200
    os.utime(path, (then, then))


class Blocked(BaseException):
    pass


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail (rather than hang) a test whose code blocks for more than 2 seconds."""
    def stop(*_: Any) -> None:
        raise Blocked  # no OSError, which the code under test may catch
    before = signal.signal(signal.SIGALRM, stop)
    signal.alarm(2)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


@pytest.mark.parametrize("rel", ["infra/prod", "prod-1.2"])
def test_an_older_versions_state_of_a_folder_still_there_stays(repo: tuple[Path, Path, Path], rel: str) -> None:
    """A version before `OWNER` left the folders' state unnamed: a folder still holding spaces/
    keeps its state when another folder's first save settles in, however long it was left."""
    top, staging, _ = repo
    (top / rel / "spaces").mkdir(parents=True, exist_ok=True)
    kept = top / ".git" / place_of(top / rel)
    kept.mkdir(parents=True)
    (kept / "worktree.pickle").write_bytes(b"record")
    _old(kept)
    gone = top / ".git/ksgitops-state/folders" / name_of("infra/renamed")
    gone.mkdir()
    _old(gone)
    make_own(str(top / ".git" / place_of(staging)), str(staging))
    assert (kept / "worktree.pickle").read_bytes() == b"record"
    assert not gone.exists()  # its folder holds no spaces/


def test_a_linked_owner_file_is_not_followed(repo: tuple[Path, Path, Path], tmp_path: Path) -> None:
    top, staging, _ = repo
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("infra/gone")
    planted = top / ".git/ksgitops-state/folders" / name_of("infra/gone")
    planted.mkdir(parents=True)
    (planted / OWNER).symlink_to(elsewhere)
    make_own(str(top / ".git" / place_of(staging)), str(staging))
    assert planted.is_dir()  # not judged by what a link names: not ours to judge
    assert elsewhere.read_text() == "infra/gone"


@pytest.mark.parametrize("name", [OWNER, "monitor.lock"])
def test_a_fifo_in_a_state_folder_does_not_block_the_command(repo: tuple[Path, Path, Path], alarm: None,
                                                              name: str) -> None:
    top, staging, _ = repo
    odd = top / ".git/ksgitops-state/folders" / name_of("infra/gone")
    odd.mkdir(parents=True)
    if name != OWNER:
        (odd / OWNER).write_text("infra/gone")
    os.mkfifo(odd / name)
    make_own(str(top / ".git" / place_of(staging)), str(staging))
    assert (top / ".git" / place_of(staging) / OWNER).read_text() == "infra/staging"


def test_a_status_memo_of_a_folder_still_there_stays(repo: tuple[Path, Path, Path]) -> None:
    """A sub-folder naming no folder, whose name does not spell its path whole, is not judged."""
    top, staging, _ = repo
    folder = top / "infra/environments/production/eu-west-1/a"  # longer than a name keeps whole
    (folder / "spaces").mkdir(parents=True)
    kept = top / ".git" / place_of(folder)
    kept.mkdir(parents=True)
    (kept / "status-worktree.sqlite").write_bytes(b"memo")
    _old(kept)
    make_own(str(top / ".git" / place_of(staging)), str(staging))
    assert (kept / "status-worktree.sqlite").read_bytes() == b"memo"
