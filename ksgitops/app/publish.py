"""Publishing: commit the generated files, then push without force, recomputing on a moved remote.

`publish` serves `reconcile --push`, `status --push` and `run`. With `one_commit` (what `run`
asks for), a cycle's whole work is one commit (`commit_cycle`): reconcile, the fold-in of the WECs'
report refs and status are computed one after the other on one source commit, each on the tree
the step before built in memory, and the last tree is committed once, on top of the source, and
pushed once. `app` re-exports the names here: the CLI reaches every use case through `app`.

The steps that write (see app/shutdown.py) are: objects into the object database, the commit with
its branch move, the push, the fetch and the branch move of a retry. Computation between them is
marked, so a second signal can abandon a cycle without cutting a write step short.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable

from msgspec import Struct, field

from ..core.status.summary import STATUS_MD, StatusMemo
from ..core.tree import Subtree
from ..io.git import branch, remote as remotes, repo as git
from ..io.git.cache import DiskCache
from ..io.git.commit import commit_generated
from ..io.git.keptwhole import note_kept_clean
from ..model import GitError, KsgitopsError, Progress, counted
from . import usecases as app
from .shutdown import Shutdown
from .sources import Source
from .status import STATUS_SUBJECT, StatusOutcome, fold_subject
from .usecases import ProvenOutcome, ReconcileOutcome


class CycleCommit(Struct):
    """What one cycle committed (at most one commit)."""

    source: str  # the source commit the commit stands for (its Ksgitops-Source trailer)
    commit: str | None  # None: nothing changed, nothing was committed
    reconciled: ReconcileOutcome | None
    status: StatusOutcome | None
    changed_wecs: list[str] = field(default_factory=list)  # mailboxes whose generated files changed
    folded: list[str] = field(default_factory=list)  # mailboxes whose reports were folded in
    status_files: list[str] = field(default_factory=list)  # status roots (and STATUS.md) that changed
    frozen: str = ""  # what the reconcile kept frozen (the Ksgitops-Frozen trailer), "" when nothing


class PublishOutcome(Struct):
    reconciled: ReconcileOutcome | ProvenOutcome | None
    status: StatusOutcome | None
    head: str  # the branch head after the run (pushed when `pushed`)
    pushed: bool
    attempts: int
    cycle: CycleCommit | None = None  # with one_commit


def publish(path: Path, branch: str, remote: str = "origin", retries: int | None = None,
            do_reconcile: bool = True, do_status: bool = False,
            sleep: Callable[[float], None] | None = None, on_retry: Callable[[int, str], None] | None = None,
            progress: Progress | None = None, cache: Any = None, memo: Any = None,
            one_commit: bool = False, guard: Shutdown | None = None) -> PublishOutcome:
    """Reconcile (and/or summarize) the branch head, commit, push. A refused push means the remote
    moved: fetch, put the branch on the new upstream head (our commits are dropped: generated files
    are recomputed, never merged), recompute, push again, with jittered backoff, `retries` times
    (default RepoConfig pushRetries); then fail loudly (GitError, exit 3). Never a forced push."""
    # One loop, read whole: an attempt recomputes and pushes, or backs off and moves onto upstream;
    # split, the attempt's state (count, limit, outcomes) would be threaded through three functions.
    guard = guard or Shutdown()
    repo = git.open_repo(path)
    ref = f"refs/heads/{branch}"
    wait = sleep or guard.sleep
    attempt = 0
    reconciled: ReconcileOutcome | ProvenOutcome | None
    while True:
        attempt += 1
        made = commit_cycle(path, ref, do_reconcile, do_status, cache, memo, progress, guard) if one_commit else None
        if made is not None:
            reconciled, status = made.reconciled, made.status
        else:
            reconciled = app.reconcile_commit(path, ref, progress, cache) if do_reconcile else None
            status = app.status_commit(path, ref, memo, cache) if do_status else None
        config = reconciled.config if reconciled is not None else status.result.config  # type: ignore[union-attr]
        limit = config.push_retries if retries is None else retries
        head = repo.references[ref].target
        tracking = repo.references.get(f"refs/remotes/{remote}/{branch}")
        if tracking is not None and tracking.target == head:
            return PublishOutcome(reconciled, status, str(head), False, attempt, made)
        guard.checkpoint()
        try:
            remotes.push(repo, branch, remote)
            return PublishOutcome(reconciled, status, str(head), True, attempt, made)
        except remotes.PushRejected as rejected:
            if attempt > limit:
                raise GitError(f"{rejected.problems[0].message}; gave up after {attempt} attempts "
                               f"(nothing was forced; run again)") from None
            if on_retry is not None:
                on_retry(attempt, rejected.problems[0].message)
            wait(min(30.0, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random()))
            guard.checkpoint()
            upstream = remotes.fetch(repo, branch, remote)
            guard.checkpoint()
            move_branch(repo, ref, upstream)


def commit_cycle(path: Path, ref: str, do_reconcile: bool = True, do_status: bool = True, cache: Any = None,
                 memo: Any = None, progress: Progress | None = None,
                 guard: Shutdown | None = None) -> CycleCommit:
    """Reconcile, fold in and summarize the branch head of a bare clone, then commit it all once."""
    src = app.open_branch(path, ref)
    if branch.is_checked_out(src.repo, str(src.ref_name)):  # type: ignore[arg-type]
        raise KsgitopsError(f"{src.ref_name} is checked out here: one commit per cycle needs a bare clone")
    cycle = _OneCommit(src, cache or DiskCache.for_git_dir(src.repo.path), guard or Shutdown())  # type: ignore[attr-defined]
    if do_reconcile:
        cycle.reconcile(progress)
    if do_status:
        cycle.summarize(StatusMemo() if memo is None else memo)
    return cycle.commit()


class _OneCommit:
    """One cycle's tree, built step by step in memory (objects are written, no ref moves), then
    committed once on top of the source commit."""

    def __init__(self, src: Source, cache: Any, guard: Shutdown) -> None:
        repo: Any = src.repo
        base: Any = src.commit
        self.src, self.cache, self.guard, self.repo, self.base = src, cache, guard, repo, base
        self.writer = git.TreeWriter(repo)
        self.tree = self.reconciled_tree = base.tree
        self.roots: list[str] = []  # the owned roots written, outermost first where they nest
        self.result: Any = None  # the reconcile's core.pipeline.Result
        self.folded: Any = None  # io.foldin.FoldIn
        self.status: Any = None  # (Result, core.status.StatusOutput)

    def reconcile(self, progress: Progress | None) -> None:
        with self.guard.computing():
            self.result = app.reconcile_reusing(self.src, self.cache, progress)
        self._apply(self.result.generated)
        self.reconciled_tree = self.tree

    def summarize(self, memo: Any) -> None:
        with self.guard.computing():
            self.folded, _ = app.plan_fold_in(self._source(), self.cache.content)
        self._apply(self.folded.generated)
        with self.guard.computing():
            self.status = app.summarize_commit(self._source(), self.cache, memo)
        output = self.status[1]
        self._apply({**output.generated, STATUS_MD: output.markdown})

    def commit(self) -> CycleCommit:
        old, new = git.TreeIndex(self.repo, self.base.tree), git.TreeIndex(self.repo, self.tree)
        made, reconciled_roots = self._describe(old, new)
        config = (self.result or self.status[0]).config
        self.guard.checkpoint()
        committed = commit_generated(self.repo, str(self.src.ref_name), self.base,
                                     _changed_entries(self.repo, old, new, self.roots),
                                     branch.signature(config.author_name, config.author_email),
                                     _message(config, made, bool(reconciled_roots)))
        made.commit = committed.commit
        if self.result is not None:
            note_kept_clean(self.result, new, self.cache.content)
            self.cache.save(app.clean_mailboxes(self.result, new))
            made.reconciled = app.ReconcileOutcome(self.result, reconciled_roots, committed.commit)
        else:
            self.cache.save_content()
        if self.status is not None:
            result, output = self.status
            problems = sorted(set(result.problems + output.problems + self.folded.problems))
            fold = app.FoldOutcome(committed.commit if self.folded.folded else None, self.folded.folded,
                                   self.folded.problems)
            made.status = app.StatusOutcome(result, output, made.status_files, problems, committed.commit, fold)
        return made

    def _describe(self, old: Any, new: Any) -> tuple[CycleCommit, list[str]]:
        """What the commit will hold, and the reconcile's roots that changed."""
        reconciled_roots = git.changed_roots(old, git.TreeIndex(self.repo, self.reconciled_tree),
                                             list(self.result.generated)) if self.result else []
        status_roots = [*self.status[1].generated, STATUS_MD] if self.status else []
        made = CycleCommit(str(self.base.id) if reconciled_roots else app.source_of(self.base), None, None, None,
                           [root.split("/")[1] for root in reconciled_roots if root.count("/") == 1],
                           self.folded.folded if self.folded else [], git.changed_roots(old, new, status_roots),
                           self.result.frozen.trailer() if self.result is not None else "")
        return made, reconciled_roots

    def _apply(self, generated: dict[str, Any]) -> None:
        if not generated:
            return
        self.guard.checkpoint()
        self.tree = git.tree_at(self.repo, self.writer.apply(self.tree, generated))
        self.roots += [r for r in generated if not any(r.startswith(f"{outer}/") for outer in self.roots)]

    def _source(self) -> Source:
        """The source commit, read through the tree built so far."""
        return app.Source(self.src.path, git.TreeSnapshot(self.repo, self.tree), self.repo, self.base,
                          self.src.ref_name)


def _changed_entries(repo: Any, old: Any, new: Any, roots: list[str]) -> dict[str, Any]:
    """The roots that differ between two trees, as the new tree has them (linked by id)."""
    changes: dict[str, Any] = {}
    for root in git.changed_roots(old, new, roots):
        entry = new.get(root)
        if entry is None:
            changes[root] = None
        elif entry.type_str == "blob":
            changes[root] = git.blob_data(repo, entry.id)
        else:
            changes[root] = Subtree(str(entry.id))
    return changes


def _message(config: Any, made: CycleCommit, reconciled: bool) -> str:
    """RepoConfig's message for what the commit holds: the reconcile template when `reconciled`
    (mailboxes or SPSes changed), else the fold-in or status subject; a body line per part; the
    one Ksgitops-Source trailer, after Ksgitops-Frozen when the reconcile froze something."""
    parts = []
    if made.changed_wecs:
        parts.append(f"reconcile: {counted(len(made.changed_wecs), 'mailbox', 'mailboxes')} changed")
    if made.folded:
        parts.append(f"fold-in: reports of {counted(len(made.folded), 'WEC')}")
    if made.status_files:
        parts.append(f"status: {counted(len(made.status_files), 'file')} changed")
    subject = config.message_template if reconciled else (fold_subject(len(made.folded)) if made.folded else STATUS_SUBJECT)
    first, _, rest = subject.partition("\n")
    template = f"{first}\n\n" + "\n".join(parts) + (f"\n{rest}" if rest else "")
    affected = len(made.changed_wecs) if reconciled else len(made.folded)
    return str(config.commit_message(made.source, affected, subject=template, frozen=made.frozen))


def branch_of(path: Path, source: str) -> str:
    """The branch name a --source names (HEAD: the checked-out branch)."""
    ref = branch.branch_ref(git.open_repo(path), source)
    if ref is None:
        raise KsgitopsError(f"--push needs a branch, not {source!r}")
    return ref[len("refs/heads/"):]


def move_branch(repo: Any, ref: str, target: Any) -> None:
    """Put a branch on `target` (io/git/repo.py move_branch)."""
    branch.move_branch(repo, ref, target)
