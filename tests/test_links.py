"""Symbolic links on the way to what ksgitops owns are refused: exit 2 naming the link, and nothing
outside the repository is read through, written, moved or deleted (the outside folder stays byte
for byte as it was), nor is anything inside the repository changed."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pygit2
import pytest

from conftest import git
from ksgitops.core.status.reported import dump_report

FLORIN = "imw1-mb-florin"


def files_below(root: Path) -> dict[str, bytes]:
    """Every file below `root` (links not followed), with its bytes; links shown as their target."""
    out = {}
    for folder, dirs, names in os.walk(root):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            out[rel] = f"-> {os.readlink(path)}".encode() if os.path.islink(path) else Path(path).read_bytes()
    return out


def work_tree(repo: Path) -> dict[str, bytes]:
    return {k: v for k, v in files_below(repo).items() if not k.startswith(".git/")}


def link_outside(repo: Path, rel: str, outside: Path) -> Path:
    """Move `rel` out of the repository to `outside` and leave a link to it in its place."""
    target = outside / rel.replace("/", "_")
    outside.mkdir(parents=True, exist_ok=True)
    place = repo / rel
    if place.exists():
        shutil.move(str(place), str(target))
    else:
        target.mkdir(parents=True)
        (target / "someone-elses.txt").write_text("not ksgitops' to touch\n")
    place.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, place)
    return target


def change_florin(repo: Path) -> None:
    """A source change that rewrites florin's mailbox (the common web page, on every prod WEC)."""
    path = repo / "spaces" / "wmw-c" / "httpd.yaml"
    path.write_text(path.read_text().replace("This is a common web site.", "This is the common web site.", 1))


def assert_refused(result, link: str, repo: Path, before: dict[str, bytes], outside: Path,
                   outside_before: dict[str, bytes]) -> None:
    assert result.code == 2, result
    assert result.err.startswith(f"{link}: is a symbolic link"), result.err
    assert "Traceback" not in result.err
    assert files_below(outside) == outside_before, "something outside the repository was touched"
    assert work_tree(repo) == before, "something in the repository changed"


WORKTREE_LINKS = [
    "spaces",
    f"spaces/{FLORIN}",
    f"spaces/{FLORIN}/space.yaml",
    f"spaces/{FLORIN}/objects",
    f"spaces/{FLORIN}/reported",
    f"spaces/{FLORIN}/objects/core",
    "spaces/wmw-c/.ksgitops",
    "spaces/wmw-c/.ksgitops/singleplacementslices",
    "spaces/wmw-c/.ksgitops/placements",
]


@pytest.mark.parametrize("link", WORKTREE_LINKS)
def test_reconcile_of_a_work_tree_refuses_links(example: Path, cli, tmp_path: Path, link: str) -> None:
    assert cli("reconcile", str(example)).code == 0
    change_florin(example)
    outside = tmp_path / "outside"
    link_outside(example, link, outside)
    before, outside_before = work_tree(example), files_below(outside)
    assert_refused(cli("reconcile", str(example)), link, example, before, outside, outside_before)


@pytest.mark.parametrize("link", ["spaces/wmw-c/.ksgitops/placements", "spaces/wmw-c/.ksgitops/singleplacementslices"])
def test_a_frozen_space_never_reads_its_records_through_a_link(example: Path, cli, tmp_path: Path, link: str) -> None:
    """A WDS with errors is frozen from its records and slices: a link there is refused too."""
    assert cli("reconcile", str(example)).code == 0
    (example / "spaces/wmw-c/broken.yaml").write_text("kind: [unclosed\n")
    outside = tmp_path / "outside"
    link_outside(example, link, outside)
    before, outside_before = work_tree(example), files_below(outside)
    assert_refused(cli("reconcile", str(example)), link, example, before, outside, outside_before)


@pytest.mark.parametrize("link", ["STATUS.md", "spaces/wmw-c/.ksgitops/status", f"spaces/{FLORIN}/reported",
                                  f"spaces/{FLORIN}"])
def test_status_of_a_work_tree_refuses_links(example: Path, cli, tmp_path: Path, link: str) -> None:
    assert cli("reconcile", str(example)).code == 0
    assert cli("status", str(example)).code == 0
    outside = tmp_path / "outside"
    if link == "STATUS.md":
        outside.mkdir()
        (outside / "STATUS.md").write_text("someone else's status page\n")
        (example / "STATUS.md").unlink()
        os.symlink(outside / "STATUS.md", example / "STATUS.md")
    else:
        link_outside(example, link, outside)
    (example / "spaces" / "imw1-mb-guilder" / "reported").mkdir(exist_ok=True)
    before, outside_before = work_tree(example), files_below(outside)
    assert_refused(cli("status", str(example)), link, example, before, outside, outside_before)


def test_the_cache_folder_in_the_git_directory_is_not_followed(example_git: Path, cli, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "cache.pickle").write_bytes(b"someone else's file")
    os.symlink(outside, example_git / ".git" / "ksgitops-state")
    before, outside_before = work_tree(example_git), files_below(outside)
    result = cli("reconcile", str(example_git))
    assert result.code == 2, result
    assert result.err.startswith(f"{example_git / '.git' / 'ksgitops-state'}: is a symbolic link"), result.err
    assert files_below(outside) == outside_before
    assert work_tree(example_git) == before


def _committed_fleet(example_git: Path, cli) -> str:
    assert cli("reconcile", str(example_git), "--commit").code == 0
    return str(pygit2.Repository(str(example_git)).head.target)


@pytest.mark.parametrize("link", [f"spaces/{FLORIN}/objects", f"spaces/{FLORIN}/objects/core", f"spaces/{FLORIN}"])
def test_reconcile_commit_in_a_checkout_refuses_links(example_git: Path, cli, tmp_path: Path, link: str) -> None:
    _committed_fleet(example_git, cli)
    change_florin(example_git)
    git(example_git, "commit", "-qam", "florin changes")
    head = str(pygit2.Repository(str(example_git)).head.target)
    outside = tmp_path / "outside"
    link_outside(example_git, link, outside)
    before, outside_before = work_tree(example_git), files_below(outside)
    assert_refused(cli("reconcile", str(example_git), "--commit"), link, example_git, before, outside, outside_before)
    assert str(pygit2.Repository(str(example_git)).head.target) == head, "the branch moved"


def test_status_commit_in_a_checkout_refuses_a_linked_status_folder(example_git: Path, cli, tmp_path: Path) -> None:
    _committed_fleet(example_git, cli)
    report = example_git / "spaces" / FLORIN / "reported" / "core" / "namespaces" / "_cluster" / "commonstuff.yaml"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_bytes(dump_report({"object": {"apiVersion": "v1", "kind": "Namespace", "name": "commonstuff"},
                                    "status": {"phase": "Active"}, "reportedAt": "2026-11-23T00:00:00Z"}))
    git(example_git, "add", "-A")
    git(example_git, "commit", "-qm", "a report")
    head = str(pygit2.Repository(str(example_git)).head.target)
    outside = tmp_path / "outside"
    link_outside(example_git, "spaces/wmw-c/.ksgitops/status", outside)
    before, outside_before = work_tree(example_git), files_below(outside)
    assert_refused(cli("status", str(example_git), "--commit"), "spaces/wmw-c/.ksgitops/status", example_git,
                   before, outside, outside_before)
    assert str(pygit2.Repository(str(example_git)).head.target) == head


def test_fold_in_refuses_a_linked_reported_folder(example_git: Path, cli, tmp_path: Path) -> None:
    head = _committed_fleet(example_git, cli)
    repo = pygit2.Repository(str(example_git))
    from ksgitops.io.git.repo import TreeWriter
    report = dump_report({"object": {"apiVersion": "v1", "kind": "Namespace", "name": "commonstuff"},
                          "status": {"phase": "Active"}, "reportedAt": "2026-11-23T00:00:00Z"})
    tree = TreeWriter(repo).apply(None, {f"spaces/{FLORIN}/reported": {"core": {"namespaces": {"_cluster": {
        "commonstuff.yaml": report}}}}})
    signature = pygit2.Signature("agent", "agent@example.invalid")
    repo.create_commit(f"refs/heads/ksgitops/reported/{FLORIN}", signature, signature,
                       f"reports\n\nKsgitops-Mailbox: {FLORIN}\n", tree, [repo.head.target])
    outside = tmp_path / "outside"
    link_outside(example_git, f"spaces/{FLORIN}/reported", outside)
    before, outside_before = work_tree(example_git), files_below(outside)
    assert_refused(cli("fold-in", str(example_git)), f"spaces/{FLORIN}/reported", example_git, before, outside,
                   outside_before)
    assert str(pygit2.Repository(str(example_git)).head.target) == head


def test_collect_refuses_a_linked_reported_folder(example_git: Path, cli, tmp_path: Path, kube_wecs) -> None:
    from test_collect_cmd import mailbox_objects, seed
    _committed_fleet(example_git, cli)
    wecs = kube_wecs(["florin", "guilder"])
    seed(wecs["florin"], mailbox_objects(example_git, FLORIN))
    outside = tmp_path / "outside"
    link_outside(example_git, f"spaces/{FLORIN}/reported", outside)
    before, outside_before = work_tree(example_git), files_below(outside)
    result = cli("collect", str(example_git), "--kubeconfig", str(wecs.kubeconfig))
    assert_refused(result, f"spaces/{FLORIN}/reported", example_git, before, outside, outside_before)


def test_links_inside_source_spaces_are_still_skipped_not_refused(example: Path, cli, tmp_path: Path) -> None:
    """A link among a space's source files is not an owned path: it is skipped, as before."""
    elsewhere = tmp_path / "shared.yaml"
    elsewhere.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: commonstuff}\n")
    os.symlink(elsewhere, example / "spaces" / "wmw-c" / "shared.yaml")
    assert cli("reconcile", str(example)).code == 0
    assert not list((example / "spaces" / FLORIN / "objects").rglob("shared.yaml"))


def test_a_linked_mailbox_space_yaml_is_refused_with_or_without_a_record(example_git: Path, cli, tmp_path: Path) -> None:
    """`space.yaml` says a folder is a mailbox: a link there is refused the same way whether or not
    the work tree's record remembers the folder as a mailbox (a record never changes the outcome)."""
    assert cli("reconcile", str(example_git)).code == 0
    assert cli("reconcile", str(example_git)).code == 0  # the record now holds every mailbox
    twin = tmp_path / "twin"
    shutil.copytree(example_git, twin, symlinks=True)
    shutil.rmtree(twin / ".git" / "ksgitops-state")  # no record
    results = []
    for repo in (example_git, twin):
        link_outside(repo, f"spaces/{FLORIN}/space.yaml", tmp_path / f"outside-{repo.name}")
        before = work_tree(repo)
        results.append(cli("reconcile", str(repo)))
        assert work_tree(repo) == before
    assert [r.code for r in results] == [2, 2]
    assert results[0].err == results[1].err and results[0].err.startswith(f"spaces/{FLORIN}/space.yaml: is a symbolic link")
