"""Mailboxes built in forked children (pipeline._build over io/fs/forked.spread) are the mailboxes
one process builds: the same bytes and problems, previous copies kept where a customization or
two workload description spaces fail, what a frozen space placed; a previous copy a child read is
read again here, and a change to it in between means building that mailbox here."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import copy_example_sources
from ksgitops.app import sources, usecases as app
from ksgitops.core.emit.mailbox import MailboxBuilder
from ksgitops.io.fs import forked
from test_bad_input import CM_REL, DUP_CM, HTTPD_C, WIDEN_S, edit


def _missing_parameter(repo: Path) -> None:
    edit(repo, HTTPD_C, "Running in %(loc-name).", "Running in %(nope).")
    edit(repo, HTTPD_C, "replicas: 1", "replicas: 3")


def _two_spaces_one_identity(repo: Path) -> None:
    (repo / "spaces/wmw-s/dup.yaml").write_text(DUP_CM)
    edit(repo, "spaces/wmw-s/edge-placement-s.yaml", *WIDEN_S)
    edit(repo, HTTPD_C, "This is a common web site.", "This is THE common web site.")


def _failing_patch(repo: Path) -> None:
    edit(repo, HTTPD_C, "  value: '\"env is %(env)\"'\n",
         "  value: '\"env is %(env)\"'\njsonPatch:\n- {op: remove, path: /spec/nothere}\n")
    edit(repo, HTTPD_C, "image: library/httpd:2.4", "image: library/httpd:2.5")


def _frozen_space(repo: Path) -> None:
    edit(repo, "spaces/wmw-s/httpd.yaml", "library/httpd:2.4", "library/httpd:2.5")
    (repo / "spaces/wmw-s/broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: [not, a, map]\n")


BREAKAGES: dict[str, Callable[[Path], None]] = {
    "a missing parameter": _missing_parameter, "two spaces, one identity": _two_spaces_one_identity,
    "a failing patch": _failing_patch, "a frozen space": _frozen_space}


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def _reconcile(repo: Path) -> tuple[list[str], list[str]]:
    try:
        outcome = app.reconcile_worktree(repo)
    except Exception as e:  # noqa: BLE001 - a refusal is compared too
        return [], [str(e)]
    return sorted(outcome.changed_roots), sorted(str(p) for p in outcome.problems)


@pytest.mark.parametrize("name", sorted(BREAKAGES))
def test_mailboxes_built_in_children_are_those_built_here(tmp_path: Path, name: str, monkeypatch) -> None:
    """Twin work trees, reconciled, broken alike, reconciled again: one with every mailbox in a
    forked child of its own, one in this process. Every file and problem is the same."""
    where = tmp_path / "built-by"  # a file: what a child notes in memory, this process never sees
    build, parent = MailboxBuilder.build, os.getpid()

    def noting(self: MailboxBuilder, *args: Any, **kwargs: Any) -> Any:
        with open(where, "a") as out:
            out.write(f"{os.getpid()}\n")
        if os.getpid() == parent:
            time.sleep(0.5)  # a child takes the next unit meanwhile, however busy the machine
        return build(self, *args, **kwargs)
    monkeypatch.setattr(MailboxBuilder, "build", noting)
    twins = [copy_example_sources(tmp_path / twin) for twin in ("spread", "here")]
    outcomes: dict[str, list[Any]] = {"spread": [], "here": []}
    for step in (lambda repo: None, BREAKAGES[name]):
        for repo in twins:
            step(repo)
            with monkeypatch.context() as m:
                m.setattr(forked, "workers", lambda: 3 if repo.name == "spread" else 1)
                m.setattr(forked, "LEAST", 1)
                outcomes[repo.name].append(_reconcile(repo))
    assert outcomes["spread"] == outcomes["here"]
    assert files_of(twins[0]) == files_of(twins[1])
    assert {int(pid) for pid in where.read_text().split()} - {os.getpid()}  # some were built in children


def test_a_previous_copy_a_child_read_is_read_again_here_and_a_change_means_building_here(
        example: Path, monkeypatch) -> None:
    """Both WECs keep their previous copy of the ConfigMap (a parameter went missing): a read of
    the mailbox's files. Between the units built "there" (packed, as a child sends them) and
    unpacked here, florin's copy changes: florin is built again here, guilder is not, and the
    result is that of a run after the change."""
    app.reconcile_worktree(example)
    _missing_parameter(example)
    built: list[str] = []
    build = MailboxBuilder.build

    def noting(self: MailboxBuilder, wec: Any, *args: Any, **kwargs: Any) -> Any:
        built.append(wec.mailbox)
        return build(self, wec, *args, **kwargs)
    monkeypatch.setattr(MailboxBuilder, "build", noting)
    patch = example / f"spaces/imw1-mb-florin/patches/{CM_REL}.json"

    def there_then_here(items: Any, work: Any, *, pack: Any = None, unpack: Any = None, **_: Any) -> Any:
        packed = [pack(item, work(item)) for item in items]
        patch.write_bytes(patch.read_bytes().replace(b"florin", b"FLORIN"))
        del built[:]
        return [unpack(item, delta) for item, delta in zip(items, packed)]
    monkeypatch.setattr(sources, "spread", there_then_here)
    result = app.compute(app.open_source(example, app.WORKTREE))
    assert built == ["imw1-mb-florin"]
    monkeypatch.setattr(sources, "spread", forked.spread)
    after = app.compute(app.open_source(example, app.WORKTREE))
    assert b"FLORIN" in patch.read_bytes() and result.generated == after.generated
    assert result.problems == after.problems
