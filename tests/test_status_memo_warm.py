"""The status memos a monitor holds for its workers (io/status_sources.py `warm_memos`), under a
repository path that is not UTF-8: the memo is opened as a `file:` URI made from the path's bytes
(a quote of the text would encode it as strict UTF-8 and fail, and the monitor with it)."""
from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import copy_example_sources, git_init, run_cli_subprocess


@pytest.fixture
def odd(tmp_path: Path) -> Path:
    """A folder whose name is not UTF-8."""
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    folder.mkdir()
    return folder


def test_a_memo_under_a_path_that_is_not_utf8_is_held(odd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ksgitops.io import status_sources as ss
    monkeypatch.setattr(ss, "_warm", {})
    path = odd / "status-git.sqlite"
    memo = ss.load_memo(path)
    memo.changed = True
    ss.save_memo(path, memo)
    assert sqlite3.connect(os.fsencode(path)).execute("SELECT count(*) FROM memo").fetchone()[0] >= 1
    assert ss.warm_memos(str(odd))
    assert os.fspath(path) in ss._warm


def test_a_worker_finds_the_held_memo_under_a_relative_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ksgitops.io import status_sources as ss
    monkeypatch.setattr(ss, "_warm", {})
    path = tmp_path / "status-git.sqlite"
    memo = ss.load_memo(path)
    memo.changed = True
    memo.problems = {"p": ["held"]}
    ss.save_memo(path, memo)
    assert ss.warm_memos(str(tmp_path))
    monkeypatch.setattr(ss, "_read_small", lambda *a: pytest.fail("read again: the held copy was not found"))
    monkeypatch.chdir(tmp_path)
    assert ss.load_memo(Path("status-git.sqlite")).problems == {"p": ["held"]}


def test_the_monitor_survives_a_repository_path_that_is_not_utf8(odd: Path) -> None:
    repo = git_init(copy_example_sources(odd / "repo"))
    assert run_cli_subprocess("status", str(repo)).returncode == 0  # writes status-worktree.sqlite
    assert (repo / ".git/ksgitops-state/status-worktree.sqlite").exists()
    started = run_cli_subprocess("monitor", "start", str(repo))
    try:
        assert started.returncode == 0, started.stderr
        time.sleep(6)  # a refresh or two
        assert run_cli_subprocess("monitor", "status", str(repo)).returncode == 0, \
            (repo / ".git/ksgitops-state/monitor.log").read_text(errors="replace")
    finally:
        run_cli_subprocess("monitor", "stop", str(repo))
