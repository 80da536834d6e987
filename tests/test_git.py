"""Git behaviour (docs/REFERENCE.md, "Commits, refs and local files") against real repositories made
with the git CLI."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pygit2
import pytest

from conftest import git
from ksgitops.app import usecases as app
from ksgitops.io.git import repo as gitio
from ksgitops.io.git.branch import signature
from ksgitops.io.git.commit import commit_generated
from ksgitops.model import GitError

MAILBOXES = ("spaces/imw1-mb-florin", "spaces/imw1-mb-guilder")


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def test_commit_creates_one_commit_with_trailer_and_updates_worktree(example_git: Path, cli) -> None:
    source = head(example_git)
    result = cli("reconcile", str(example_git), "--commit")
    assert result.code == 0, result
    new = head(example_git)
    assert new != source
    assert git(example_git, "rev-parse", "HEAD^") == source
    message = git(example_git, "log", "-1", "--format=%B")
    assert f"Ksgitops-Source: {source}" in message
    assert "[skip ci]" in message
    assert git(example_git, "log", "-1", "--format=%an <%ae>") == "ksgitops <ksgitops@users.noreply.github.com>"
    tracked = git(example_git, "ls-files").splitlines()
    for mailbox in MAILBOXES:
        assert f"{mailbox}/kustomization.yaml" in tracked
        assert (example_git / mailbox / "kustomization.yaml").is_file()
    assert git(example_git, "status", "--porcelain") == ""


def test_second_commit_run_makes_no_commit(example_git: Path, cli) -> None:
    assert cli("reconcile", str(example_git), "--commit").code == 0
    first = head(example_git)
    result = cli("reconcile", str(example_git), "--commit")
    assert result.code == 0
    assert "no commit" in result.out
    assert head(example_git) == first


def test_commit_output_equals_worktree_output(example_git: Path, tmp_path: Path, cli) -> None:
    """The in-memory tree writer and the work-tree writer produce the same files."""
    other = tmp_path / "other"
    shutil.copytree(example_git, other, ignore=shutil.ignore_patterns(".git"))
    assert cli("reconcile", str(other)).code == 0
    assert cli("reconcile", str(example_git), "--commit").code == 0
    for mailbox in MAILBOXES:
        files_a = sorted(p.relative_to(other) for p in (other / mailbox).rglob("*") if p.is_file())
        files_b = sorted(p.relative_to(example_git) for p in (example_git / mailbox).rglob("*") if p.is_file())
        assert files_a == files_b
        for rel in files_a:
            assert (other / rel).read_bytes() == (example_git / rel).read_bytes(), rel


def test_bare_repo_source_without_worktree(example_git: Path, tmp_path: Path, cli) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(example_git), str(bare)], check=True)
    result = cli("reconcile", str(bare), "--commit")
    assert result.code == 0, result
    repo = pygit2.Repository(str(bare))
    tree = repo.head.peel(pygit2.Commit).tree
    assert "spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/httpd-htdocs.yaml" in tree
    assert "Ksgitops-Source" in repo.head.peel(pygit2.Commit).message


def test_reused_subtrees_keep_their_ids(example_git: Path, cli) -> None:
    """Editing one WDS leaves the other WDS's generated subtree with the same tree id."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    before = git(example_git, "rev-parse", "HEAD:spaces/wmw-c/.ksgitops")
    spec = example_git / "spaces/wmw-s/httpd.yaml"
    spec.write_text(spec.read_text().replace("special web site", "very special web site"))
    git(example_git, "commit", "-qam", "edit special")
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert git(example_git, "rev-parse", "HEAD:spaces/wmw-c/.ksgitops") == before
    assert "very special" in (example_git / "spaces/imw1-mb-guilder/objects/core/configmaps/specialstuff/"
                              "httpd-htdocs.yaml").read_text()


def test_uncommitted_source_changes_are_ignored_with_a_warning(example_git: Path, cli) -> None:
    page = example_git / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("common web site", "edited web site"))
    result = cli("reconcile", str(example_git), "--commit")
    assert result.code == 0
    assert "uncommitted source changes are not used: spaces/wmw-c/httpd.yaml" in result.err
    assert "(--commit reconciles the commit, not the work tree: commit them, then run it again)" in result.err
    committed = git(example_git, "show", "HEAD:spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/httpd-htdocs.yaml")
    assert "common web site" in committed


def test_commit_needs_a_branch_source(example_git: Path, cli) -> None:
    git(example_git, "tag", "v1")
    result = cli("reconcile", str(example_git), "--commit", "--source", "v1")
    assert result.code == 2
    assert "--commit needs" in result.err


def test_source_ref_reads_the_commit_not_the_worktree(example_git: Path, cli) -> None:
    git(example_git, "checkout", "-qb", "feature")
    (example_git / "spaces/imw1/guilder.yaml").unlink()
    git(example_git, "commit", "-qam", "drop guilder")
    git(example_git, "checkout", "-q", "main")
    result = cli("reconcile", str(example_git), "--commit", "--source", "feature")
    assert result.code == 0, result
    names = git(example_git, "ls-tree", "--name-only", "feature:spaces").splitlines()
    assert "imw1-mb-florin" in names and "imw1-mb-guilder" not in names
    assert not (example_git / "spaces/imw1-mb-florin").exists()  # main's work tree is untouched


def test_ref_that_moved_is_not_overwritten(example_git: Path) -> None:
    src = app.open_source(example_git, "HEAD")
    result = app.compute(src)
    (example_git / "NOTE").write_text("someone else\n")
    git(example_git, "add", "NOTE")
    git(example_git, "commit", "-qm", "concurrent")
    moved = head(example_git)
    with pytest.raises(GitError):
        commit_generated(src.repo, src.ref_name, src.commit, result.generated,
                               signature("k", "k@e"), "m")
    assert head(example_git) == moved


def test_removed_synctarget_removes_mailbox_in_commit(example_git: Path, cli) -> None:
    assert cli("reconcile", str(example_git), "--commit").code == 0
    (example_git / "spaces/imw1/guilder.yaml").unlink()
    git(example_git, "commit", "-qam", "drop guilder")
    assert cli("reconcile", str(example_git), "--commit").code == 0
    names = git(example_git, "ls-tree", "--name-only", "HEAD:spaces").splitlines()
    assert "imw1-mb-guilder" not in names
    assert not (example_git / "spaces/imw1-mb-guilder").exists()
    assert git(example_git, "status", "--porcelain") == ""


def test_reported_files_survive_commit_reconcile(example_git: Path, cli) -> None:
    assert cli("reconcile", str(example_git), "--commit").code == 0
    report = example_git / "spaces/imw1-mb-florin/reported/core/configmaps/commonstuff/httpd-htdocs.yaml"
    report.parent.mkdir(parents=True)
    report.write_text("object: {kind: ConfigMap}\nstatus: {}\nreportedAt: '2026-01-01T00:00:00Z'\n")
    git(example_git, "add", "-A")
    git(example_git, "commit", "-qm", "report")
    page = example_git / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("common web site", "edited web site"))
    git(example_git, "commit", "-qam", "edit")
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert "reported/core/configmaps" in git(example_git, "ls-tree", "-r", "--name-only", "HEAD:spaces/imw1-mb-florin")
    assert report.is_file()


def test_customization_error_keeps_copy_from_head(example_git: Path, cli) -> None:
    assert cli("reconcile", str(example_git), "--commit").code == 0
    path = "spaces/imw1-mb-florin/patches/apps/replicasets/commonstuff/commond.json"
    before = git(example_git, "show", f"HEAD:{path}")
    customizer = example_git / "spaces/wmw-c/httpd.yaml"
    customizer.write_text(customizer.read_text().replace('"env is %(env)"', '"env is %(nope)"'))
    git(example_git, "commit", "-qam", "break customizer")
    result = cli("reconcile", str(example_git), "--commit")
    assert result.code == 0
    assert "nope" in result.err and "keeping the previous copy" in result.err
    assert git(example_git, "show", f"HEAD:{path}") == before


def test_hand_edited_generated_file_is_overwritten_and_source_edits_kept(example_git: Path, cli) -> None:
    """A conflict in a generated file (edited by hand) forces that root only; source edits stay."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    generated = example_git / "spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"
    generated.write_text("hand edited\n")
    page = example_git / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("common web site", "edited web site"))
    git(example_git, "commit", "-qm", "edit", "spaces/wmw-c/httpd.yaml")
    florin = example_git / "spaces/imw1/florin.yaml"
    florin.write_text(florin.read_text() + "\n# a local note\n")
    result = cli("reconcile", str(example_git), "--commit")
    assert result.code == 0, result
    assert "edited web site" in generated.read_text()
    assert florin.read_text().endswith("# a local note\n")
    assert "uncommitted source changes are not used: spaces/imw1/florin.yaml" in result.err
    assert git(example_git, "status", "--porcelain") == "M spaces/imw1/florin.yaml"


def test_a_new_wec_s_mailbox_left_by_a_plain_reconcile_is_no_uncommitted_source(example_git: Path, cli) -> None:
    """The mailbox a work-tree reconcile wrote for a WEC the commit does not have yet is generated
    output: --commit writes and commits it without calling it an uncommitted source change."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    florin = (example_git / "spaces/imw1/florin.yaml").read_text()
    (example_git / "spaces/imw1/bilbao.yaml").write_text(florin.replace("florin", "bilbao"))
    assert cli("reconcile", str(example_git)).code == 0
    assert (example_git / "spaces/imw1-mb-bilbao/kustomization.yaml").is_file()
    git(example_git, "add", "spaces/imw1/bilbao.yaml")
    git(example_git, "commit", "-qm", "a WEC")
    result = cli("reconcile", str(example_git), "--commit")
    assert result.code == 0, result
    assert "uncommitted" not in result.err, result.err
    assert "spaces/imw1-mb-bilbao/kustomization.yaml" in git(example_git, "ls-files").splitlines()
    assert git(example_git, "status", "--porcelain") == ""


def test_written_trees_are_canonical_git_objects(example_git: Path, cli) -> None:
    """Trees and blobs written as a pack are what git itself would write: fsck is clean and
    rebuilding the tree from a fresh index (no cached tree ids) gives the same id."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert list((example_git / ".git/objects/pack").glob("pack-*.idx"))
    subprocess.run(["git", "-C", str(example_git), "fsck", "--full", "--strict"], check=True, capture_output=True)
    env_index = str(example_git / ".git/probe-index")
    rebuilt = subprocess.run(
        "git ls-tree -r HEAD | git update-index --index-info && git write-tree", shell=True, cwd=example_git, check=True, capture_output=True,
        text=True, env={"GIT_INDEX_FILE": env_index, "PATH": "/usr/bin:/bin:/usr/local/bin"}).stdout.strip()
    assert rebuilt == git(example_git, "rev-parse", "HEAD^{tree}")


def test_a_linked_work_tree_commits_into_the_shared_object_database(tmp_path: Path, cli) -> None:
    """`git worktree add`: the work tree's git directory (`.git/worktrees/<name>`) holds its HEAD,
    index and ksgitops' state; the objects go where its `commondir` says, shared with the main one."""
    from conftest import EXAMPLE, git_init
    shutil.copytree(EXAMPLE, tmp_path / "repo")
    repo = git_init(tmp_path / "repo")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "other")
    page = linked / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("common web site", "edited web site"))
    git(linked, "commit", "-qam", "edit")
    result = cli("reconcile", str(linked), "--commit")
    assert result.code == 0, result
    assert git(repo, "log", "-1", "--format=%s", "other").startswith("ksgitops: reconcile")
    assert "edited web site" in git(repo, "show", "other:spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/"
                                                  "httpd-htdocs.yaml")
    assert git(linked, "status", "--porcelain") == ""
    subprocess.run(["git", "-C", str(repo), "fsck", "--full", "--strict"], check=True, capture_output=True)
    assert not list((repo / ".git/worktrees/linked").glob("objects"))
