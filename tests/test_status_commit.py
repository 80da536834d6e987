"""`ksgitops status --commit` and the work tree's status: a commit only when a summary changed
(with its source trailer and `[skip ci]`, work tree and index following), a submodule entry among
the reports read as no report, a bare clone with a lost memo, `--commit` needing a branch, and the
work tree's status memo following edits of reports.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pygit2
import pytest

from conftest import EXAMPLE, git, git_init
from ksgitops.app import usecases as app
from ksgitops.core.load.repoconfig import SOURCE_TRAILER
from ksgitops.core.serialize import load_yaml
from ksgitops.core.status.summary import STATUS_MD
from status_reports import COMMOND, FLORIN, GUILDER, rs_report


@pytest.fixture
def reconciled(tmp_path: Path) -> Path:
    """The bundled example with its generated files and sample reports, committed."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    return git_init(repo)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def test_status_commit_only_when_a_summary_changed(reconciled: Path, cli) -> None:
    before = head(reconciled)
    first = cli("status", str(reconciled), "--commit")
    assert first.code == 0, first.err
    assert head(reconciled) == before and "no commit (unchanged)" in first.out  # the example is up to date
    report = reconciled / "spaces" / FLORIN / "reported" / f"{COMMOND}.yaml"
    report.write_bytes(rs_report(0, "2027-02-02T00:00:00Z"))
    git(reconciled, "commit", "-qam", "florin reports commond unavailable")
    source = head(reconciled)
    second = cli("status", str(reconciled), "--commit")
    assert second.code == 0, second.err
    assert head(reconciled) != source
    changed = git(reconciled, "diff", "--name-only", "HEAD~1", "HEAD").splitlines()
    assert STATUS_MD in changed and f"spaces/wmw-c/.ksgitops/status/{COMMOND}.yaml" in changed
    assert all(p == STATUS_MD or p.startswith("spaces/wmw-") for p in changed)
    message = git(reconciled, "log", "-1", "--format=%B")
    assert f"{SOURCE_TRAILER}: {source}" in message and "[skip ci]" in message
    assert git(reconciled, "status", "--porcelain") == ""  # work tree and index follow
    assert "2027-02-02T00:00:00Z" in (reconciled / STATUS_MD).read_text()
    third = cli("status", str(reconciled), "--commit")
    assert third.code == 0 and "no commit" in third.out


def test_a_submodule_entry_among_the_reports_is_no_report(reconciled: Path, cli) -> None:
    """A gitlink (a commit, mode 160000) where a report file would be: a checkout holds a folder
    there, or nothing; status reads it as no report, as it reads the work tree."""
    cli("status", str(reconciled), "--commit")
    before = (reconciled / STATUS_MD).read_bytes()
    where = f"spaces/{FLORIN}/reported/core/configmaps/commonstuff/submodule.yaml"
    git(reconciled, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{where}")
    git(reconciled, "commit", "-qm", "a gitlink among the reports")
    done = cli("status", str(reconciled), "--commit")
    assert done.code == 0 and "internal error" not in done.err, done.err
    assert (reconciled / STATUS_MD).read_bytes() == before


def test_status_commit_on_a_bare_clone_with_a_lost_memo(reconciled: Path, tmp_path: Path) -> None:
    report = reconciled / "spaces" / GUILDER / "reported" / f"{COMMOND}.yaml"
    report.write_bytes(rs_report(0, "2027-03-03T00:00:00Z"))
    git(reconciled, "commit", "-qam", "guilder reports")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(reconciled), str(bare))
    outcome = app.status_commit(bare, "main")
    assert outcome.commit is not None
    repo = pygit2.Repository(str(bare))
    text = repo[repo.revparse_single("main").tree[STATUS_MD].id].data.decode()
    assert "2027-03-03T00:00:00Z" in text
    memo = bare / "ksgitops-state" / "status-git.sqlite"
    assert memo.is_file()
    memo.write_bytes(b"garbage")  # a broken memo costs time, never correctness
    assert app.status_commit(bare, "main").commit is None


def test_status_commit_needs_a_branch(reconciled: Path, cli) -> None:
    sha = head(reconciled)
    found = cli("status", str(reconciled), "--commit", "--source", sha)
    assert found.code == 2 and "--commit needs" in found.err


def test_worktree_status_memo_follows_edits(reconciled: Path) -> None:
    first = app.status_worktree(reconciled)
    assert first.changed == []
    report = reconciled / "spaces" / FLORIN / "reported" / f"{COMMOND}.yaml"
    report.write_bytes(rs_report(0, "2027-04-04T00:00:00Z"))
    second = app.status_worktree(reconciled)
    assert sorted(second.changed) == [STATUS_MD, "spaces/wmw-c/.ksgitops/status"]
    status = load_yaml((reconciled / f"spaces/wmw-c/.ksgitops/status/{COMMOND}.yaml").read_bytes())
    assert any(w["reportedAt"] == "2027-04-04T00:00:00Z" for w in status["wecs"])
    report.unlink()
    third = app.status_worktree(reconciled)
    status = load_yaml((reconciled / f"spaces/wmw-c/.ksgitops/status/{COMMOND}.yaml").read_bytes())
    assert STATUS_MD in third.changed and status["reportedCount"] == 1
