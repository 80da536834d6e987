"""Index formats and index flags git uses that the checkout after `--commit` must keep or refuse
before anything moves: split and sparse indexes, skip-worktree entries, CRLF checkouts."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import EXAMPLE, git

WECS = 40  # > checkout.BULK whole roots appearing or changing at once


def add_wecs(repo: Path, count: int = WECS) -> None:
    florin = (EXAMPLE / "spaces" / "imw1" / "florin.yaml").read_text()
    for i in range(count):
        (repo / "spaces" / "imw1" / f"w{i}.yaml").write_text(florin.replace("florin", f"w{i}"))


def edit_common_site(repo: Path) -> None:
    """A source change that changes every WEC's mailbox."""
    httpd = repo / "spaces" / "wmw-c" / "httpd.yaml"
    httpd.write_text(httpd.read_text().replace("This is a common web site.", "This is a shared web site."))
    git(repo, "commit", "-q", "-am", "edit")


@pytest.mark.parametrize("make", [
    ("config", "core.splitIndex", "true"),  # then `git update-index --split-index`
    ("sparse-checkout", "set", "--cone", "--sparse-index", "spaces/wmw-c"),
])
def test_an_index_libgit2_cannot_read_never_leaves_the_branch_moved_and_the_repository_stuck(
        example_git: Path, cli, make: tuple[str, ...]) -> None:
    """A split index (`core.splitIndex`, extension `link`) or a sparse index (`sdir`): libgit2
    cannot read it. `reconcile --commit` moved the branch, then failed reading the index ("git:
    unsupported mandatory extension"), leaving the work tree and index behind HEAD and a checkout
    journal that every later command (even a work-tree `reconcile`) tried to finish and failed on,
    with no way out named. Either the commit is refused before the branch moves, or the checkout
    completes."""
    if make[0] == "config":
        git(example_git, *make)
        git(example_git, "update-index", "--split-index")
    else:
        assert cli("reconcile", str(example_git), "--commit").code == 0
        git(example_git, "status")
        git(example_git, *make)
        edit_common_site(example_git)
    head = git(example_git, "rev-parse", "HEAD")
    found = cli("reconcile", str(example_git), "--commit")
    assert "Traceback" not in found.err
    if found.code == 0:
        assert git(example_git, "status", "--porcelain") == ""
    else:
        assert git(example_git, "rev-parse", "HEAD") == head, "the branch moved, the checkout failed"
        assert "nothing was changed" in found.err, found.err
    again = cli("reconcile", str(example_git))
    assert again.code == 0, again


def test_a_sparse_checkout_keeps_its_skip_worktree_entries_when_many_mailboxes_change(example_git: Path, cli) -> None:
    """In a cone-mode sparse checkout of the sources only, a change that rewrites 32 mailboxes or
    more took the checkout's bulk path (`index.read_tree` of the new tree), which drops every
    entry's skip-worktree bit: every file outside the cone (sources included) then showed as
    deleted in `git status`, and a `git commit -a` would delete them."""
    add_wecs(example_git)
    git(example_git, "add", "-A")
    git(example_git, "commit", "-q", "-m", "wecs")
    assert cli("reconcile", str(example_git), "--commit").code == 0
    git(example_git, "status")  # stat data for every entry, as a user's checkout has
    git(example_git, "sparse-checkout", "set", "spaces/wmw-c")
    assert git(example_git, "status", "--porcelain") == ""
    edit_common_site(example_git)
    found = cli("reconcile", str(example_git), "--commit")
    assert found.code == 0, found
    assert git(example_git, "status", "--porcelain") == ""
    assert (example_git / "spaces" / "imw1" / "florin.yaml").exists() or \
        git(example_git, "ls-files", "-t", "spaces/imw1/florin.yaml").startswith("S ")


def test_a_skip_worktree_file_keeps_its_bit_when_many_mailboxes_appear(example_git: Path, cli) -> None:
    """`git update-index --skip-worktree` on a source with a local edit: 40 new WECs' mailboxes
    appearing at once (the bulk path) dropped its bit, and the local edit showed as a change."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    local = example_git / "spaces" / "imw1" / "guilder.yaml"
    git(example_git, "update-index", "--skip-worktree", "spaces/imw1/guilder.yaml")
    local.write_text(local.read_text() + "# a local note\n")
    add_wecs(example_git)
    git(example_git, "add", "spaces/imw1")
    git(example_git, "commit", "-q", "-m", "wecs")
    assert git(example_git, "status", "--porcelain") == ""
    found = cli("reconcile", str(example_git), "--commit")
    assert found.code == 0, found
    assert git(example_git, "ls-files", "-t", "spaces/imw1/guilder.yaml") == "S spaces/imw1/guilder.yaml"
    assert git(example_git, "status", "--porcelain") == ""


def test_core_autocrlf_sources_are_not_reported_as_uncommitted(example_git: Path, cli) -> None:
    """core.autocrlf=true (Git for Windows' default): git checks sources out with CRLF and
    `git status` is clean, but `reconcile --commit` compared raw bytes with the committed blobs
    and warned that every source had uncommitted changes that are not used."""
    git(example_git, "config", "core.autocrlf", "true")
    for path in (example_git / "spaces").rglob("*.yaml"):
        path.unlink()
    git(example_git, "checkout", "--", ".")
    assert b"\r\n" in (example_git / "spaces" / "wmw-c" / "httpd.yaml").read_bytes()
    assert git(example_git, "status", "--porcelain") == ""
    found = cli("reconcile", str(example_git), "--commit")
    assert found.code == 0, found
    assert "uncommitted source changes" not in found.err, found.err


def test_a_no_op_reconcile_leaves_a_core_autocrlf_clone_clean(example_git: Path, tmp_path: Path, cli) -> None:
    """A clone made with core.autocrlf=true (Git for Windows' default) holds the committed
    mailboxes with CRLF line ends. `diff` printed "0 WECs affected" yet exited 1 (changes), and
    `reconcile` rewrote every generated folder with LF line ends ("6 generated folders changed"),
    after which `git status` showed every generated file as modified: a no-op dirties a clean
    checkout. Now a file git's checkout writes with CRLF is as generated (io/fs/eol.py)."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    clone = tmp_path / "clone"
    subprocess.run(["git", "-c", "core.autocrlf=true", "clone", "-q", str(example_git), str(clone)], check=True)
    git(clone, "config", "core.autocrlf", "true")
    assert b"\r\n" in (clone / "spaces" / "imw1-mb-florin" / "space.yaml").read_bytes()
    assert git(clone, "status", "--porcelain") == ""
    previewed = cli("diff", str(clone))
    assert previewed.code == 0 or "0 WECs affected" not in previewed.out, previewed
    found = cli("reconcile", str(clone))
    assert found.code == 0, found
    assert "0 generated folders changed" in found.out, found.out
    assert git(clone, "status", "--porcelain") == ""


@pytest.mark.parametrize("gone", ["the mailbox's folder", "another mailbox's folder", "nothing"])
def test_a_conflict_in_a_generated_root_is_replaced_not_left_beside_it(example_git: Path, cli, gone: str) -> None:
    """A merge stopped on a conflict in a mailbox's file: the index holds that path at stages
    1-3. `reconcile --commit` rewrote the mailbox through libgit2 (taken when any root is written
    whole: its folder, or another mailbox's, gone from the work tree), whose additions replace
    stage 0 only: the new stage-0 entries sat beside the conflict's stages, an index git refuses
    ("multiple stage entries for merged file"). ksgitops' content replaces the conflict, as it
    does when git makes the change."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    target, other = "spaces/imw1-mb-florin/kustomization.yaml", "spaces/imw1-mb-guilder/kustomization.yaml"
    git(example_git, "checkout", "-q", "-b", "other")
    with open(example_git / target, "a") as f:
        f.write("# other\n")
    git(example_git, "commit", "-qam", "other")
    git(example_git, "checkout", "-q", "main")
    for path in (target, other):
        with open(example_git / path, "a") as f:
            f.write("# main\n")
    git(example_git, "commit", "-qam", "main")
    merged = subprocess.run(["git", "-C", str(example_git), "-c", "user.name=t", "-c", "user.email=t@e", "merge",
                             "other"], capture_output=True, text=True)
    assert merged.returncode != 0 and git(example_git, "ls-files", "-u"), merged.stdout
    if gone != "nothing":
        shutil.rmtree(example_git / ("spaces/imw1-mb-florin" if gone == "the mailbox's folder" else "spaces/imw1-mb-guilder"))
    found = cli("reconcile", str(example_git), "--commit")
    assert found.code == 0, found
    assert git(example_git, "ls-files", "-s", "--", target).split()[2] == "0"
    assert git(example_git, "ls-files", "-u") == ""
    subprocess.run(["git", "-C", str(example_git), "fsck", "--no-dangling"], check=True, capture_output=True)
    assert git(example_git, "status", "--porcelain", "--untracked-files=no", "--", "spaces/imw1-mb-florin") == ""
