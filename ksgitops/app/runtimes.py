"""The two runtimes of `ksgitops run` (runtime.py has the loop that drives them): `RemoteRuntime`,
a bare clone of a remote whose cycle is fetch, decide from what moved, one commit, push; and
`LocalRuntime`, a work tree reconciled and summarized in place."""
from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Any

from msgspec import Struct

from ..core.load.read import load, mailbox_space
from ..core.load.repoconfig import DEFAULT_POLL_INTERVAL
from ..core.results import PlannedResult
from ..core.status.summary import StatusMemo
from ..io.fs.locate import Need, locate
from ..io.fs.tree import WorkTreeSnapshot
from ..io.git import remote, repo as git
from ..io.git.cache import DiskCache
from ..io.git.foldin import PREFIXES
from ..io.git.remote import is_url
from ..io.git.reportref import REPORT_REF_PREFIX
from ..io.serve import Observer
from ..model import KsgitopsError, counted
from . import usecases as app
from .publish import move_branch, publish
from .shutdown import Shutdown

log = logging.getLogger("ksgitops")
REPORT_REFS = f"+{REPORT_REF_PREFIX}*:{PREFIXES[1]}*"  # every WEC's report ref, for the fold-in


def clone_dir(workdir: Path, url: str, branch: str) -> Path:
    name = hashlib.blake2b(f"{url}\0{branch}".encode(), digest_size=8).hexdigest()
    return workdir / f"{name}.git"


class Keys(Struct):
    """What decides a cycle's work: a digest of the sources and one of the reported state."""

    sources: str
    reports: str


class CycleResult(Struct):
    action: str  # idle | generated-only | reconciled | summarized | local
    seconds: float
    head: str = ""  # the branch head after the cycle
    pushed: bool = False
    source: str = ""  # the source commit reconciled or summarized ("worktree" in local mode)
    commit: str | None = None  # the one commit the cycle made
    changed_wecs: int = 0  # mailboxes whose generated files changed
    folded_wecs: int = 0  # mailboxes whose reports were folded in
    status_files: int = 0  # status files (and STATUS.md) that changed
    frozen: str = ""  # what the reconcile kept frozen (spaces, WECs), as the Ksgitops-Frozen trailer
    frozen_parts: int | None = None  # how many (None: the cycle did not reconcile)
    errors: tuple[str, ...] = ()  # errors of spaces or WECs, one line each: the cycle is degraded

    def describe(self) -> str:
        """The cycle's log line: what was reconciled, what was committed, whether it was pushed."""
        took = f"in {self.seconds:.3f}s"
        if self.action == "idle":
            return f"cycle: idle, nothing new at {self.head[:12]} {took}"
        if self.action == "generated-only":
            return f"cycle: {self.head[:12]} touched only generated files, nothing to do {took}"
        what = f" ({self.changes()})" if self.changes() else ""
        if self.action == "local":
            return f"cycle: local, the work tree: {f'written{what}' if what else 'nothing changed'} {took}{self.degraded()}"
        done = f"committed {self.commit[:12]}{what}, {'pushed' if self.pushed else 'not pushed'}" if self.commit \
            else "nothing changed, no commit"
        return f"cycle: {self.action} source {self.source[:12]}: {done} {took}{self.degraded()}"

    def degraded(self) -> str:
        frozen = f", frozen: {self.frozen}" if self.frozen else ""
        return f"; degraded: {counted(len(self.errors), 'error')} above{frozen}" if self.errors else ""

    def changes(self) -> str:
        said = ((self.changed_wecs, f"{counted(self.changed_wecs, 'WEC')} changed"),
                (self.folded_wecs, f"reports of {counted(self.folded_wecs, 'WEC')} folded in"),
                (self.status_files, f"{counted(self.status_files, 'status file')} changed"))
        return ", ".join(text for n, text in said if n)

    def fields(self) -> dict[str, Any]:
        """The same facts for the JSON log."""
        return {"event": "cycle", "action": self.action, "seconds": round(self.seconds, 4), "head": self.head,
                "source": self.source, "commit": self.commit, "changedWecs": self.changed_wecs,
                "foldedWecs": self.folded_wecs, "statusFiles": self.status_files, "pushed": self.pushed,
                "frozen": self.frozen}



def open_runtime(repo: str, branch: str, workdir: Path, observer: Observer, retries: int | None = None,
                 status: bool = True) -> "RemoteRuntime | LocalRuntime":
    """The runtime `--repo` asks for: a URL or a bare repository's path is a remote (cloned into
    `workdir`, pushed back to); a work tree is reconciled in place. The git directory of a work
    tree is refused: it is neither."""
    if is_url(repo):
        return RemoteRuntime(repo, branch, workdir, observer, retries, status)
    git_dir = git.git_dir_at(Path(repo))
    if git_dir is None:  # a work tree, checked as every command's REPO: not any folder, nor a linked work tree's git dir
        return LocalRuntime(locate(Path(repo), Need.WORKTREE), observer, status)
    bare, workdir_of = git_dir
    if not bare:
        raise KsgitopsError(f"--repo {repo}: is the git directory of the work tree {workdir_of}; "
                            f"give the work tree, or a URL or bare repository to clone")
    return RemoteRuntime(str(Path(repo).resolve()), branch, workdir, observer, retries, status)


class RemoteRuntime:
    def __init__(self, url: str, branch: str, workdir: Path, observer: Observer,
                 retries: int | None = None, status: bool = True) -> None:
        self.url, self.branch = url, branch
        self.path = clone_dir(workdir, url, branch)
        self.observer = observer
        self.retries = retries
        self.status = status
        self._repo: Any = None  # the clone, made by the first cycle
        self.last_head: str | None = None
        self.last_keys: Keys | None = None
        self.last_refs: dict[str, str] = {}
        self.cache: Any = None  # a DiskCache kept in memory from cycle to cycle
        self.memo = StatusMemo()
        self.poll_interval = DEFAULT_POLL_INTERVAL  # RepoConfig poll.intervalSeconds, as last read

    @property
    def repo(self) -> Any:
        """The bare clone (cloned on first use: a failing clone fails a cycle, like a fetch)."""
        if self._repo is None:
            self._repo = remote.clone(self.url, self.path, self.branch)
            self.cache = DiskCache.for_git_dir(self._repo.path)
            log.info(f"clone of {remote.redact(self.url)} ready in {self.path}", extra={"fields": {"event": "clone"}})
        return self._repo

    def cycle(self, guard: Shutdown | None = None) -> CycleResult:
        guard = guard or Shutdown()
        started = time.perf_counter()
        guard.checkpoint()
        upstream = remote.fetch(self.repo, self.branch, extra=(REPORT_REFS,) if self.status else ())
        refs = self._report_refs()
        if str(upstream) == self.last_head and refs == self.last_refs:
            return CycleResult("idle", time.perf_counter() - started, self.last_head)
        guard.checkpoint()
        move_branch(self.repo, f"refs/heads/{self.branch}", upstream)
        with guard.computing():
            keys = self.keys(str(upstream))
        last = self.last_keys
        do_reconcile = last is None or keys.sources != last.sources
        do_status = self.status and (do_reconcile or last is None or keys.reports != last.reports
                                     or refs != self.last_refs)
        self.last_refs = refs
        if not (do_reconcile or do_status):
            self.last_head = str(upstream)
            return CycleResult("generated-only", time.perf_counter() - started, self.last_head)
        outcome = publish(self.path, self.branch, retries=self.retries, do_reconcile=do_reconcile,
                          do_status=do_status, on_retry=self._retrying, cache=self.cache, memo=self.memo,
                          one_commit=True, guard=guard)
        guard.checkpoint()
        self.cache.next_run()
        git.consolidate_packs(self.repo)  # each commit wrote packs: keep their number bounded
        self.last_head = outcome.head
        self.last_keys = keys if outcome.attempts == 1 else self.keys(outcome.head)  # ours touch neither
        made = outcome.cycle
        assert made is not None  # one_commit
        result = (made.reconciled or made.status).result  # type: ignore[union-attr]
        assert not isinstance(result, PlannedResult)  # a commit's reconcile computes: plans are the work tree's
        self.poll_interval = result.config.poll_interval
        self.observer.wecs.set(len(result.wecs))
        self.observer.objects.set(sum(len(p.placed) for plans in result.placements.values() for p in plans))
        if outcome.pushed:
            self.observer.commits.inc()
        return CycleResult("reconciled" if do_reconcile else "summarized", time.perf_counter() - started,
                           outcome.head, outcome.pushed, made.source, made.commit, len(made.changed_wecs),
                           len(made.folded), len(made.status_files),
                           **app.frozen_facts(made.reconciled.result if made.reconciled else None))

    def _report_refs(self) -> dict[str, str]:
        """The WECs' report refs as fetched (ksgitops sync pushes them; status folds them in)."""
        prefix = PREFIXES[1]
        return {n: str(self.repo.references[n].target) for n in self.repo.references if n.startswith(prefix)}

    def keys(self, commit: str) -> Keys:
        snapshot = git.TreeSnapshot(self.repo, git.resolve_commit(self.repo, commit).tree)
        loaded = load(snapshot, self.cache.content)
        config = snapshot.file("ksgitops.yaml")
        sources = repr((sorted(loaded.digests.items()), config.key if config else ""))
        found = ((mb, snapshot.index.entry_id(f"spaces/{mb}/reported"), snapshot.index.entry_id(f"spaces/{mb}/upsynced"))
                 for mb in sorted(loaded.mailboxes))
        reports = repr([item for item in found if item[1] or item[2]])  # a new, silent mailbox is not news
        return Keys(hashlib.blake2b(sources.encode()).hexdigest(), hashlib.blake2b(reports.encode()).hexdigest())

    def _retrying(self, attempt: int, reason: str) -> None:
        self.observer.push_retries.inc()
        log.warning("push refused, recomputing on the new upstream head",
                    extra={"fields": {"event": "push-retry", "attempt": attempt, "reason": reason}})


class LocalRuntime:
    """A work tree: reconcile and summarize into it, never commit."""

    def __init__(self, path: Path, observer: Observer, status: bool = True) -> None:
        self.path = path
        self.observer = observer
        self.status = status
        self.generated: set[str] = set()
        self.snapshot = WorkTreeSnapshot(path)
        self.poll_interval = DEFAULT_POLL_INTERVAL  # RepoConfig poll.intervalSeconds, as last read

    def cycle(self, guard: Shutdown | None = None) -> CycleResult:
        """Reconcile, then summarize, into the work tree; each is one write step here (the
        computation and its write are not separated)."""
        guard = guard or Shutdown()
        started = time.perf_counter()
        guard.checkpoint()
        outcome = app.reconcile_worktree(self.path, advise=False)  # no monitor started, no hint in its log
        self.generated = set(outcome.roots if isinstance(outcome, app.ProvenOutcome) else outcome.result.generated)
        self.poll_interval = outcome.result.config.poll_interval
        status_files = 0
        if self.status:
            guard.checkpoint()
            status_files = len(app.status_worktree(self.path).changed)
        self.observer.wecs.set(len(outcome.result.wecs))
        changed = sum(1 for root in outcome.changed_roots if root.count("/") == 1)
        return CycleResult("local", time.perf_counter() - started, source="worktree", changed_wecs=changed,
                           status_files=status_files, **app.frozen_facts(outcome.result))

    def is_generated(self, path: str) -> bool:
        """Paths reconcile and status write (and their staging folders), .git, and anything hidden."""
        try:
            parts = Path(path).resolve().relative_to(self.path.resolve()).parts
        except ValueError:
            return True
        if not parts or parts[0] == ".git" or parts == ("STATUS.md",) or any(p.startswith(".") for p in parts):
            return True
        if parts[0] == "spaces" and len(parts) > 1:
            return f"spaces/{parts[1]}" in self.generated or mailbox_space(self.snapshot, parts[1]) is not None
        return False
