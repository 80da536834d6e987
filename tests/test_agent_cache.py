"""The `sync` agent's cache repository is whole or absent: a kill while it was being made, or a
half-made one (a HEAD file and nothing else), never stops the agent."""
from __future__ import annotations

from pathlib import Path

import pygit2

from ksgitops.io.git.reportref import open_cache


def test_a_half_made_cache_is_made_afresh(tmp_path: Path) -> None:
    path = tmp_path / "repo-abc.git"
    path.mkdir()
    (path / "HEAD").write_text("ref: refs/heads/main\n")  # what a kill during `git init` can leave
    repo = open_cache(path)
    assert repo.is_bare and (path / "objects").is_dir()
    assert pygit2.Repository(str(path)).is_bare


def test_a_kill_while_the_cache_was_made_leaves_nothing_in_its_place(tmp_path: Path) -> None:
    path = tmp_path / "repo-abc.git"
    staging = tmp_path / ".repo-abc.git.ksgitops-new"
    staging.mkdir()
    (staging / "config").write_text("[core]\n")  # a kill in the middle of init, beside the place
    open_cache(path)
    assert not staging.exists() and pygit2.Repository(str(path)).is_bare


def test_an_existing_cache_is_reused(tmp_path: Path) -> None:
    path = tmp_path / "repo-abc.git"
    first = open_cache(path)
    blob = first.create_blob(b"kept")
    assert blob in open_cache(path).odb
