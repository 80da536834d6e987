"""Shortcuts taken for speed give the answers of the full computation."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from conftest import git
from ksgitops.app import usecases as app
from ksgitops.core.load import parse
from test_incremental import relabel_florin

DEEP = "[" * 101 + "]" * 101


@pytest.mark.parametrize("text", [
    '{"n": %d}' % 2**53, '{"n": %d}' % (2**53 + 1), '{"n": -%d}' % (2**53 + 1), '{"n": %d}' % (2**63 - 1),
    '{"n": 1234567890123456.5}', '{"a": %s}' % DEEP, '{"a": %s}' % ("[" * 99 + "]" * 99),
    '{"a": {"b": [1, 2.5, "x", null, true]}}', '{"s": "%s"}' % ("9" * 40),
])
def test_json_check_agrees_with_the_full_shape_check(text: str) -> None:
    """parse_json skips the walk over the document only when it could find nothing."""
    found = parse.parse_json("r.json", text.encode())
    from ksgitops.core.load.jsonshape import located, shape_error
    shape = shape_error(orjson.loads(text))
    error = located(*shape) if shape else None
    assert [p.message for p in found.problems] == ([error] if error else [])
    assert bool(found.docs) == (error is None)


def test_a_changed_file_checks_only_its_changed_objects(example_git: Path, monkeypatch) -> None:
    """The per-object checks of objects whose content and line did not change come from the cache
    even when their file changed (florin.yaml holds a SyncTarget and a Location)."""
    from ksgitops.core.load import validate
    assert isinstance(app.reconcile_commit(example_git, "HEAD"), app.ReconcileOutcome)
    relabel_florin(example_git)
    git(example_git, "commit", "-qam", "relabel")
    checked: list[str] = []
    original = validate._object_problems

    def counting(obj, kinds):  # type: ignore[no-untyped-def]
        checked.append(f"{obj.kind}/{obj.name}")
        return original(obj, kinds)

    monkeypatch.setattr(validate, "_object_problems", counting)
    warm = app.reconcile_commit(example_git, "HEAD")
    assert checked == ["Location/florin"]
    warm_tree = git(example_git, "rev-parse", "HEAD^{tree}")
    source = git(example_git, "rev-parse", "HEAD~1")
    for name in ("cache.pickle", "reconciled.pickle"):
        (example_git / ".git/ksgitops-state" / name).unlink()
    git(example_git, "reset", "-q", "--hard", source)
    cold = app.reconcile_commit(example_git, "HEAD")
    assert git(example_git, "rev-parse", "HEAD^{tree}") == warm_tree
    assert cold.problems == warm.problems


def test_the_run_after_a_commit_reads_no_mailbox_folder_it_wrote(example_git: Path, monkeypatch) -> None:
    """A commit remembers each mailbox it rewrote by its new tree id: the next run recognises
    them without reading their space.yaml, and its result is the one a cold cache gives."""
    from ksgitops.core.load import read
    assert isinstance(app.reconcile_commit(example_git, "HEAD"), app.ReconcileOutcome)
    relabel_florin(example_git)
    git(example_git, "commit", "-qam", "relabel")
    read_here: list[str] = []
    original = read._mailbox_space

    def reading(snapshot, space, cache):  # type: ignore[no-untyped-def]
        read_here.append(space)
        return original(snapshot, space, cache)

    monkeypatch.setattr(read, "_mailbox_space", reading)
    warm = app.reconcile_commit(example_git, "HEAD")
    assert isinstance(warm, app.ReconcileOutcome) and warm.result.loaded.mailboxes
    # the one source space whose folder the user changed; then, after the commit, the mailbox it rewrote
    assert read_here == ["imw1", "imw1-mb-florin"]
    warm_tree = git(example_git, "rev-parse", "HEAD^{tree}")
    monkeypatch.setattr(read, "_mailbox_space", original)
    for name in ("cache.pickle", "reconciled.pickle"):
        (example_git / ".git/ksgitops-state" / name).unlink()
    git(example_git, "reset", "-q", "--hard", "HEAD~1")
    cold = app.reconcile_commit(example_git, "HEAD")
    assert git(example_git, "rev-parse", "HEAD^{tree}") == warm_tree
    assert sorted(cold.result.loaded.mailboxes) == sorted(warm.result.loaded.mailboxes)
