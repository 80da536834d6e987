"""A checkout's index changes go through `git update-index` when a git program is there, else (or
when it fails) through libgit2: the index ends the same either way, and matches the commit."""
from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pygit2
import pytest

from conftest import EXAMPLE, git, git_init
from ksgitops.io.git import indexupdate


def _fleet(tmp_path: Path, name: str) -> Path:
    """The example with its mailboxes, committed and reconciled once."""
    shutil.copytree(EXAMPLE, tmp_path / name)
    return git_init(tmp_path / name)


def _edit(repo: Path) -> None:
    page = repo / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("common web site", "edited web site"))
    florin = repo / "spaces/imw1/florin.yaml"
    florin.write_text(florin.read_text().replace("env: prod", "env: test") if "env: prod" in florin.read_text()
                      else florin.read_text() + "\n")
    git(repo, "commit", "-qam", "edit")


@pytest.mark.parametrize("how", ["git", "no git", "git fails"])
def test_the_index_follows_the_commit_with_or_without_git(tmp_path: Path, cli, how: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _fleet(tmp_path, "repo")
    assert cli("reconcile", str(repo), "--commit").code == 0
    _edit(repo)
    calls: list[bool] = []
    by_git = indexupdate._by_git

    def counted(*args):  # type: ignore[no-untyped-def]
        calls.append(made := by_git(*args))
        return made

    monkeypatch.setattr(indexupdate, "_by_git", counted)
    if how == "no git":
        monkeypatch.setattr(indexupdate.shutil, "which", lambda name: None)
    elif how == "git fails":
        fake = tmp_path / "bin/git"
        fake.parent.mkdir()
        fake.write_text("#!/bin/sh\nexit 1\n")
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setattr(indexupdate.shutil, "which", lambda name: str(fake))
    before = git(repo, "rev-parse", "HEAD")
    result = cli("reconcile", str(repo), "--commit")
    assert result.code == 0, result
    assert git(repo, "rev-parse", "HEAD") != before  # a commit that changed mailboxes file by file
    assert calls == [how == "git"]
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
