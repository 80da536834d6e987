"""io/git/discover.py answers as libgit2's discovery does, in every layout a command may start in;
the cases it does not know are left to libgit2 itself."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest

from conftest import git
from ksgitops.io.git import discover


def layouts(tmp: Path) -> list[Path]:
    work = tmp / "work"
    (work / "spaces" / "a" / "deep").mkdir(parents=True)
    (work / "f.txt").write_text("x\n")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "c")
    git(work, "worktree", "add", "-q", str(tmp / "linked"), "-b", "other")
    (tmp / "linked" / "sub").mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(tmp / "bare.git")], check=True)
    nested = work / "spaces" / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    (tmp / "none" / "x").mkdir(parents=True)
    (tmp / "link").symlink_to(work / "spaces")
    (tmp / "broken" / ".git").mkdir(parents=True)  # a .git folder that is no repository
    return [work, work / "spaces", work / "spaces" / "a" / "deep", work / ".git", work / ".git" / "objects",
            work / "f.txt", tmp / "linked", tmp / "linked" / "sub", tmp / "bare.git", tmp / "bare.git" / "refs",
            nested, tmp / "link", tmp / "link" / "a", tmp / "broken", tmp / "none" / "x", Path("relative-missing")]


def test_the_answer_is_libgit2s_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for place in layouts(tmp_path):
        try:
            expected = pygit2.discover_repository(str(place))
        except pygit2.GitError as e:
            expected = e
        try:
            found = discover.git_dir(place)
        except pygit2.GitError as e:
            found = e
        assert str(found) == str(expected), place


def test_the_usual_work_tree_is_answered_without_libgit2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layouts(tmp_path)
    monkeypatch.setattr(discover.pygit2, "discover_repository", lambda *a: pytest.fail("asked libgit2"))
    for place in (tmp_path / "work", tmp_path / "work" / "spaces" / "a" / "deep"):
        assert discover.git_dir(place) == f"{tmp_path / 'work' / '.git'}/"
    assert os.path.isdir(discover.git_dir(tmp_path / "work" / "spaces"))
