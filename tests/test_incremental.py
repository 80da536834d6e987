"""Reuse is sound: a reconcile helped by the local cache commits exactly the tree a cold one does."""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Callable

import pytest

from conftest import git

CACHE = Path(".git/ksgitops-state/cache.pickle")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def drop_extended(repo: Path) -> None:
    edit(repo / "spaces/imw1/guilder.yaml", "    extended: si\nspec:", "spec:")


def relabel_florin(repo: Path) -> None:
    edit(repo / "spaces/imw1/florin.yaml", "loc-name: florin\n    env: prod\nspec:", "loc-name: florin-2\n    env: prod\nspec:")


def edit_workload(repo: Path) -> None:
    edit(repo / "spaces/wmw-c/httpd.yaml", "common web site", "shared web site")


def edit_customizer(repo: Path) -> None:
    edit(repo / "spaces/wmw-c/httpd.yaml", '"env is %(env)"', '"environment: %(env)"')


def remove_guilder(repo: Path) -> None:
    (repo / "spaces/imw1/guilder.yaml").unlink()


def break_customizer(repo: Path) -> None:
    edit(repo / "spaces/wmw-c/httpd.yaml", '"env is %(env)"', '"env is %(missing)"')


def add_placement(repo: Path) -> None:
    text = (repo / "spaces/wmw-s/edge-placement-s.yaml").read_text()
    text = re.sub(r"name: edge-placement-s", "name: edge-placement-s2", text)
    text = text.replace("{env: prod, extended: si}", "{env: prod}")
    (repo / "spaces/wmw-s/edge-placement-s2.yaml").write_text(text)


def add_foreign_location(repo: Path) -> None:
    """A Location earlier by name also selecting florin, used only by a new WDS's placement."""
    (repo / "spaces/imw1/aaa-edge.yaml").write_text(
        "apiVersion: edge.kubestellar.io/v2alpha1\nkind: Location\nmetadata:\n  name: aaa-edge\n"
        "  labels: {tier: edge, loc-name: edge-site, env: test}\nspec:\n  instanceSelector: {matchLabels: {id: florin}}\n")
    (repo / "spaces/wmw-e").mkdir()
    (repo / "spaces/wmw-e/p.yaml").write_text(
        "apiVersion: edge.kubestellar.io/v2alpha1\nkind: EdgePlacement\nmetadata: {name: edge}\nspec:\n"
        "  locationSelectors: [{matchLabels: {tier: edge}}]\n  downsync: [{apiGroup: \"\", resources: [configmaps]}]\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\n  namespace: edge\n"
        "  annotations: {edge.kubestellar.io/expand-parameters: \"true\"}\ndata: {site: \"%(loc-name)\"}\n")


@pytest.mark.parametrize("change", [drop_extended, relabel_florin, edit_workload, edit_customizer,
                                    remove_guilder, break_customizer, add_placement, add_foreign_location],
                         ids=lambda f: f.__name__)
def test_cached_run_commits_the_same_tree_as_a_cold_run(example_git: Path, cli, change: Callable[[Path], None]) -> None:
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert (example_git / CACHE).is_file()
    change(example_git)
    git(example_git, "add", "-A")
    git(example_git, "commit", "-qm", change.__name__)
    source = git(example_git, "rev-parse", "HEAD")
    assert cli("reconcile", str(example_git), "--commit").code == 0
    warm = git(example_git, "rev-parse", "HEAD^{tree}")
    (example_git / CACHE).unlink()
    git(example_git, "reset", "-q", "--hard", source)
    assert cli("reconcile", str(example_git), "--commit").code == 0
    cold = git(example_git, "rev-parse", "HEAD^{tree}")
    assert warm == cold


def test_unchanged_mailbox_is_reused_not_rebuilt(example_git: Path, cli, monkeypatch) -> None:
    """With a warm cache, a change to florin alone builds florin's mailbox only."""
    from ksgitops.core.emit import mailbox
    assert cli("reconcile", str(example_git), "--commit").code == 0
    relabel_florin(example_git)
    git(example_git, "commit", "-qam", "relabel")
    built: list[str] = []
    original = mailbox.MailboxBuilder.build

    def spy(self, wec, plans, *kept):  # type: ignore[no-untyped-def]
        built.append(wec.mailbox)
        return original(self, wec, plans, *kept)
    monkeypatch.setattr(mailbox.MailboxBuilder, "build", spy)
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert built == ["imw1-mb-florin"]
    assert "florin-2" in (example_git / "spaces/imw1-mb-florin/patches/core/configmaps/commonstuff/httpd-htdocs.json").read_text()


def test_corrupt_cache_means_a_full_run(example_git: Path, cli) -> None:
    assert cli("reconcile", str(example_git), "--commit").code == 0
    (example_git / CACHE).write_bytes(b"not a pickle")
    edit_workload(example_git)
    git(example_git, "commit", "-qam", "edit")
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert "shared web site" in git(example_git, "show",
                                    "HEAD:spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/httpd-htdocs.yaml")


@pytest.mark.parametrize("change", [edit_workload, break_customizer, relabel_florin], ids=lambda f: f.__name__)
def test_work_tree_runs_share_the_cache_and_stay_exact(example_git: Path, cli, change) -> None:
    """Without --commit, a work tree inside a git repo uses the same content cache: a warm run
    writes exactly what a cold one does."""
    assert cli("validate", str(example_git)).code == 0
    assert (example_git / CACHE).is_file()
    assert cli("reconcile", str(example_git)).code == 0
    change(example_git)
    assert cli("reconcile", str(example_git)).code == 0
    warm = {p: p.read_bytes() for p in (example_git / "spaces").rglob("*") if p.is_file()}
    (example_git / CACHE).unlink()
    for folder in [*(example_git / "spaces").glob("*-mb-*"), *(example_git / "spaces").glob("*/.ksgitops")]:
        shutil.rmtree(folder)
    assert cli("reconcile", str(example_git)).code == 0
    cold = {p: p.read_bytes() for p in (example_git / "spaces").rglob("*") if p.is_file()}
    if change is not break_customizer:  # a broken customizer keeps the previous copy, gone in the cold run
        assert warm == cold
    else:
        assert set(cold) <= set(warm)


def test_an_edited_inventory_file_checks_only_the_documents_that_changed(tmp_path: Path, monkeypatch) -> None:
    """Schema findings are memoized by document content without its metadata, and kept while the
    file they came from is unchanged: relabelling a Location checks nothing, and rewriting one
    Location's selector in a file of many WECs checks that one document, whichever file was edited
    last."""
    from conftest import benchmark_module, git_init
    from ksgitops.app import usecases as app
    from ksgitops.core.load import convert
    from ksgitops.io.fs import proof
    fleet = benchmark_module("fleet")
    repo = tmp_path / "fleet"
    fleet.generate(repo, wecs=250, objects=4, seed=5)
    git_init(repo)
    clean = tmp_path / "clean"
    app.reconcile_worktree(repo)
    checked: list[str] = []
    original = convert.schema_findings

    def counted(schema: str, body: dict) -> list:
        checked.append(body["metadata"]["name"])
        return original(schema, body)
    monkeypatch.setattr(convert, "schema_findings", counted)
    with monkeypatch.context() as computing:  # not answered from the record, which would read nothing
        computing.setattr(proof, "proven", lambda record: None)
        app.reconcile_worktree(repo)  # reads the mailboxes' space.yaml files the first run wrote
    assert checked == []  # the 250 mailboxes' space.yaml are read back as written: nothing to check
    files = set()
    for wec in (1, 120, 240, 2):  # three files, then the first again
        files.add(fleet.change_location_label(repo, wec).name)
        checked.clear()
        app.reconcile_worktree(repo)
        assert checked == [], wec
        edited = _select_by_expression(repo, wec)
        checked.clear()
        app.reconcile_worktree(repo)
        assert checked == [f"wec-{wec:04d}"], (wec, edited)
    assert len(files) == 3
    shutil.copytree(repo, clean, ignore=shutil.ignore_patterns("ksgitops-state"))
    monkeypatch.undo()
    app.reconcile_worktree(clean)
    assert app.reconcile_worktree(repo).result.problems == app.reconcile_worktree(clean).result.problems


def _select_by_expression(repo: Path, wec: int) -> Path:
    """Rewrite the `instanceSelector` of WEC `wec`'s Location as the same selection by expression."""
    name = f"wec-{wec:04d}"
    plain = f"  instanceSelector:\n    matchLabels:\n      id: {name}\n"
    for path in sorted((repo / "spaces").glob("*/wecs-*.yaml")):
        text = path.read_text()
        if plain in text:
            path.write_text(text.replace(plain, "  instanceSelector:\n    matchExpressions:\n"
                                                f"    - {{key: id, operator: In, values: [{name}]}}\n"))
            return path
    raise AssertionError(f"no Location selecting {name}")
