"""The crash harness's modes (benchmarks/crash.py): each one's fleet, the command it kills, and how
the fleet goes back and forth between its two states (sources, reports, report refs)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pygit2

from crash_files import git, mailboxes, place_kept, reports_for, snapshot
from fleet import edit_workload_object, generate
from ksgitops.app import usecases as app


@dataclass
class Mode:
    name: str
    argv: list[str]
    checkout: bool
    toggle: Callable[["Run", int], None]
    rerun: Callable[[Path], Any]


class Run:
    """One mode's fleet and what it takes to move it between its two states."""

    def __init__(self, mode: Mode, repo: Path, wecs: int, objects: int) -> None:
        self.mode, self.repo = mode, repo
        generate(repo, wecs=wecs, objects=objects, seed=1)
        self.sources = {0: snapshot(repo)}
        edit_workload_object(repo)  # every prod WEC's mailbox changes between the two states
        self.sources[1] = snapshot(repo)
        self.write_sources(0)
        app.reconcile_worktree(repo)
        self.kept = place_kept(repo, 1)
        if mode.checkout:
            git(repo, "init", "-q", "-b", "main")
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", "fleet")
            for mb in mailboxes(repo):  # written by a person after the commit: untracked
                note = f"{mb}: handed over, not committed\n".encode()
                (repo / "spaces" / mb / "HANDOFF.txt").write_bytes(note)
                self.kept[f"spaces/{mb}/HANDOFF.txt"] = note

    def write_sources(self, state: int) -> None:
        for path, data in self.sources[state].items():
            if (self.repo / path).read_bytes() != data:
                (self.repo / path).write_bytes(data)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "ksgitops", *self.mode.argv, str(self.repo)]


def _toggle_sources(run: Run, state: int) -> None:
    run.write_sources(state)
    if run.mode.checkout:
        git(run.repo, "commit", "-qam", f"sources {state}")


def _toggle_reports(run: Run, state: int) -> None:
    for mb in mailboxes(run.repo):
        for path, data in reports_for(run.repo, mb, 10 + state).items():
            (run.repo / path).write_bytes(data)
            run.kept[path] = data
    if run.mode.checkout:
        git(run.repo, "add", "-A", "spaces")
        git(run.repo, "commit", "-qm", f"reports {state}")


def _toggle_refs(run: Run, state: int) -> None:
    """Every WEC's agent pushes a report ref dated by `state` (as `ksgitops sync` does)."""
    from ksgitops.io.git.repo import TreeWriter
    run.kept = {p: d for p, d in run.kept.items() if "/reported/" not in p and "/upsynced/" not in p}  # the refs' now
    repo = pygit2.Repository(str(run.repo))
    head = repo.head.peel(pygit2.Commit)
    writer = TreeWriter(repo)
    for mb in mailboxes(run.repo):
        files = reports_for(run.repo, mb, 20 + state)
        tree: dict[str, Any] = {}
        for path, data in files.items():
            node = tree
            *dirs, leaf = path.split("/")[3:]
            for part in dirs:
                node = node.setdefault(part, {})
            node[leaf] = data
        tree_id = writer.apply(None, {f"spaces/{mb}/reported": tree})
        ref = f"refs/heads/ksgitops/reported/{mb}"
        parent = repo.references[ref].target if ref in repo.references else head.id
        message = f"sync: reports of {mb}\n\nKsgitops-Source: {head.id}\nKsgitops-Mailbox: {mb}\n"
        oid = repo.create_commit(None, pygit2.Signature("agent", "a@example.invalid", 1_700_000_000 + state, 0),
                                 pygit2.Signature("agent", "a@example.invalid", 1_700_000_000 + state, 0),
                                 message, tree_id, [parent])
        repo.references.create(ref, oid, force=True)


def modes() -> dict[str, Mode]:
    return {m.name: m for m in (
        Mode("worktree", ["reconcile"], False, _toggle_sources, app.reconcile_worktree),
        Mode("commit", ["reconcile", "--commit"], True, _toggle_sources, lambda r: app.reconcile_commit(r, "HEAD")),
        Mode("status", ["status"], False, _toggle_reports, app.status_worktree),
        Mode("status-commit", ["status", "--commit"], True, _toggle_reports, lambda r: app.status_commit(r, "HEAD")),
        Mode("fold-in", ["fold-in"], True, _toggle_refs, lambda r: app.fold_in(r, "HEAD")),
    )}
