"""A bare repository's branch tip read from its files (io/git/refs.py) answers as libgit2 does, or
not at all; and `reconcile --commit` of a bare repository whose branch still points at the commit
its record was made on answers without opening the repository, while any move of the branch
(forward, back, a force-push to a commit with other sources) is looked at."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pygit2
import pytest

from conftest import git
from ksgitops.app import usecases as app
from ksgitops.io.git.refs import bare_git_dir, branch_tip

SOURCES = ["HEAD", "main", "refs/heads/main", "other", "refs/heads/other", "v1", "missing", "refs/tags/v1"]


def libgit2_tip(bare: Path, source: str) -> tuple[str, str] | None:
    """What the slow path (io/git/branch.py, repo.py) takes `source` to mean: its branch and commit."""
    from ksgitops.io.git.branch import branch_ref
    repo = pygit2.Repository(str(bare))
    ref = branch_ref(repo, source)
    try:
        commit = repo.revparse_single(source).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return (ref, str(commit.id)) if ref is not None else None


@pytest.fixture
def bare(example_git: Path, tmp_path: Path) -> Path:
    git(example_git, "branch", "other")
    git(example_git, "tag", "v1")
    path = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(example_git), str(path)], check=True)
    return path


def layouts(bare: Path) -> Iterator[str]:
    """The same repository in the ways git may store its refs, one after the other."""
    yield "loose"
    git(bare, "pack-refs", "--all")
    yield "packed"
    newer = git(bare, "commit-tree", "-p", "main", "-m", "newer", git(bare, "rev-parse", "main^{tree}"))
    git(bare, "update-ref", "refs/heads/other", newer)
    yield "packed, with a loose ref over it"
    git(bare, "tag", "main", "other")  # a tag named like the branch: git's revision order makes it win
    yield "a tag shadowing the branch"
    git(bare, "tag", "-d", "main")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/other")
    yield "HEAD on another branch"
    git(bare, "update-ref", "--no-deref", "HEAD", git(bare, "rev-parse", "main"))
    yield "a detached HEAD"


def test_the_tip_is_libgit2s_or_unknown(bare: Path) -> None:
    assert bare_git_dir(str(bare)) == f"{bare}/"
    for layout in layouts(bare):
        for source in SOURCES:
            mine = branch_tip(str(bare), source)
            if mine is not None:
                assert mine == libgit2_tip(bare, source), (layout, source)
        assert branch_tip(str(bare), "main") is not None or layout == "a tag shadowing the branch"


def test_what_is_not_a_plain_bare_repository_is_left_to_libgit2(bare: Path, example_git: Path, tmp_path: Path) -> None:
    assert bare_git_dir(str(example_git)) is None and bare_git_dir(str(example_git / ".git")) is None
    assert bare_git_dir(str(tmp_path / "nothing")) is None
    config = bare / "config"
    original = config.read_text()
    config.write_text(original + "[include]\n\tpath = elsewhere\n")
    assert bare_git_dir(str(bare)) is None
    config.write_text(original + "[extensions]\n\trefStorage = reftable\n")
    assert bare_git_dir(str(bare)) is None
    config.write_text(original.replace("bare = true", "bare = false"))
    assert bare_git_dir(str(bare)) is None
    config.write_text(original)
    link = tmp_path / "link.git"
    link.symlink_to(bare)
    assert bare_git_dir(str(link)) is None


def test_a_branch_at_the_recorded_commit_opens_no_repository(bare: Path, example_git: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    first = app.reconcile_commit(bare, "HEAD")
    assert isinstance(first, app.ReconcileOutcome) and first.commit
    opened = []
    original = app.open_branch
    monkeypatch.setattr(app, "open_branch", lambda *a: opened.append(a) or original(*a))
    again = app.reconcile_commit(bare, "HEAD")
    assert isinstance(again, app.ProvenOutcome) and opened == []
    assert again.problems == first.result.problems and again.wec_count == 2
    # a new source commit with the same inputs: looked at, proven by its tree, and its tip kept
    git(bare, "update-ref", "refs/heads/main",
        git(bare, "commit-tree", "-p", "main", "-m", "empty", git(bare, "rev-parse", "main^{tree}")))
    assert isinstance(app.reconcile_commit(bare, "HEAD"), app.ProvenOutcome) and len(opened) == 1
    assert isinstance(app.reconcile_commit(bare, "main"), app.ProvenOutcome) and len(opened) == 1
    # the branch put back on the sources alone: computed again, and committed
    git(bare, "update-ref", "refs/heads/main", git(example_git, "rev-parse", "HEAD"))
    outcome = app.reconcile_commit(bare, "HEAD")
    assert isinstance(outcome, app.ReconcileOutcome) and outcome.commit and len(opened) == 2


def test_the_cli_answers_a_proven_bare_commit_without_libgit2(bare: Path) -> None:
    subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", str(bare), "--commit"], check=True, capture_output=True)
    code = ("import sys\nfrom ksgitops.cli.commands import main\n"
            f"try:\n    main(['reconcile', {str(bare)!r}, '--commit'])\nexcept SystemExit:\n    pass\n"
            "print('RESULT', 'pygit2._pygit2' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "no commit (unchanged)" in done.stdout
    assert done.stderr.splitlines()[-1] == "RESULT False", done.stderr
