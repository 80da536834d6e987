"""Linked work trees, `.git` files and links, symbolic branch refs, a branch named like a tag:
real repositories made with git, as users have them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import copy_example_sources, git, git_init

KILLED_MID_MOVE = """
import os, signal, sys
from ksgitops.io.fs.durable import moving_refs
with moving_refs(sys.argv[1], "refs/heads/feat"):
    open(os.path.join(sys.argv[2], "refs", "heads", "feat.lock"), "w").close()  # as libgit2 does, in the common dir
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_branch_checked_out_in_another_work_tree_is_not_moved_behind_its_back(example_git: Path,
                                                                                tmp_path: Path, cli) -> None:
    """`reconcile --commit --source main` from a linked work tree (on `feat`) moved `main`, which the
    main work tree has checked out, without that work tree or its index following: `git status`
    there showed every generated file as a staged deletion. git refuses such a move (`git branch -f
    main` says "cannot force update the branch 'main' checked out at ..."): refuse, or follow."""
    linked = tmp_path / "linked"
    git(example_git, "worktree", "add", "-q", "-b", "feat", str(linked))
    head = git(example_git, "rev-parse", "main")
    found = cli("reconcile", str(linked), "--commit", "--source", "main")
    assert "Traceback" not in found.err and found.code in (0, 3), found
    if git(example_git, "rev-parse", "main") != head:  # moved: the work tree holding it must follow
        assert git(example_git, "status", "--porcelain") == ""
    assert git(example_git, "status", "--porcelain") == "", "the main work tree no longer matches its HEAD"


def test_a_ref_lock_left_by_a_killed_ksgitops_in_a_linked_work_tree_is_cleared(example_git: Path,
                                                                               tmp_path: Path, cli) -> None:
    """moving_refs kept its intent and cleared `<ref>.lock` relative to the linked work tree's own
    git directory (`.git/worktrees/<name>`), but branches and their lock files live in the common
    one: the lock a killed run left was never cleared, and every later commit failed on it."""
    linked = tmp_path / "linked"
    git(example_git, "worktree", "add", "-q", "-b", "feat", str(linked))
    own = example_git / ".git" / "worktrees" / "linked"
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_MOVE, str(own), str(example_git / ".git")], timeout=60)
    assert killed.returncode == -9
    assert (example_git / ".git" / "refs" / "heads" / "feat.lock").exists()
    found = cli("reconcile", str(linked), "--commit")
    assert found.code == 0, found
    assert not (example_git / ".git" / "refs" / "heads" / "feat.lock").exists()
    assert git(linked, "status", "--porcelain") == ""


@pytest.mark.parametrize("how", ["separate-git-dir", "symlinked-.git"])
def test_a_git_dir_kept_elsewhere_work_tree_follows_the_commit_and_nothing_lands_beside_it(tmp_path: Path, cli,
                                                                                         how: str) -> None:
    """`git init --separate-git-dir` (the work tree's `.git` is a file) or a `.git` that is a
    symbolic link to a git directory kept elsewhere, whose config names no core.worktree. open_repo
    opened the git directory found by discovery, where libgit2 takes the (resolved) git
    directory's parent for the work tree: `reconcile --commit` wrote every generated root into that
    folder (outside the repository), and the real work tree and its index were left not matching
    HEAD (and every source was reported as an uncommitted change)."""
    work = copy_example_sources(tmp_path / "work")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if how == "separate-git-dir":
        git(work, "init", "-q", "-b", "main", "--separate-git-dir", str(elsewhere / "fleet.git"))
    else:
        git(work, "init", "-q", "-b", "main")
        (work / ".git").rename(elsewhere / "fleet.git")
        (work / ".git").symlink_to(elsewhere / "fleet.git")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "sources")
    found = cli("reconcile", str(work), "--commit")
    assert found.code == 0, found
    assert sorted(p.name for p in elsewhere.iterdir()) == ["fleet.git"], "written outside the repository"
    assert git(work, "status", "--porcelain") == ""
    assert (work / "spaces" / "imw1-mb-florin" / "kustomization.yaml").is_file()
    assert "uncommitted source changes" not in found.err


def test_a_symbolic_branch_ref_to_the_checked_out_branch_brings_the_work_tree_along(example_git: Path, cli) -> None:
    """refs/heads/main is a symbolic ref to refs/heads/real, which is checked out. `--source main`
    committed on real (through the link) but, comparing the unresolved name with HEAD's branch,
    took it for a branch not checked out: the work tree and index stayed behind HEAD."""
    git(example_git, "branch", "-m", "real")
    git(example_git, "symbolic-ref", "refs/heads/main", "refs/heads/real")
    found = cli("reconcile", str(example_git), "--commit", "--source", "main")
    assert found.code == 0, found
    assert git(example_git, "log", "-1", "--format=%s", "real").startswith("ksgitops")
    assert git(example_git, "status", "--porcelain") == ""
    assert git(example_git, "symbolic-ref", "refs/heads/main") == "refs/heads/real"


def test_a_bare_repository_does_not_move_a_branch_a_linked_work_tree_has_checked_out(tmp_path: Path, cli) -> None:
    """A bare repository with a linked work tree (`git worktree add` from the bare one): a
    `reconcile --commit` of the bare repository moved the branch the work tree has checked out."""
    sources = git_init(copy_example_sources(tmp_path / "sources"))
    bare = tmp_path / "fleet.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(sources), str(bare)], check=True)
    work = tmp_path / "work"
    git(bare, "worktree", "add", "-q", str(work), "main")
    found = cli("reconcile", str(bare), "--commit")
    assert "Traceback" not in found.err and found.code in (0, 3), found
    assert git(work, "status", "--porcelain") == "", "the linked work tree no longer matches its HEAD"


def test_a_branch_that_shares_its_name_with_a_tag_is_committed_on(example_git: Path, cli) -> None:
    """A tag `main` beside the branch `main` (git's revision order reads the tag first): `--commit
    --source main` reconciled the tag's commit but committed on refs/heads/main, and failed every
    time with "refs/heads/main moved while reconciling; nothing was committed (run again)"."""
    git(example_git, "tag", "main")
    namespace = example_git / "spaces" / "wmw-c" / "namespace.yaml"
    namespace.write_text(namespace.read_text() + "# moved on\n")
    git(example_git, "commit", "-q", "-am", "after the tag")
    tip = git(example_git, "rev-parse", "refs/heads/main")
    found = cli("reconcile", str(example_git), "--commit", "--source", "main")
    assert found.code == 0, found
    assert git(example_git, "rev-parse", "refs/heads/main^") == tip
    assert git(example_git, "status", "--porcelain") == ""
