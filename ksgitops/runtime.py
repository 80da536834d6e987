"""`ksgitops run`: the long-running loop (DESIGN §4, §7; issue 4).

Remote mode (`--repo URL`): a bare clone (shallow where the transport allows) in the work
directory; each cycle fetches the branch and, when its head moved, looks at what moved:
- the sources (every non-mailbox space's source files, and ksgitops.yaml): reconcile + status;
- only reported/ or upsynced/ of mailboxes: status;
- nothing else (a commit that only touched generated paths, such as ksgitops' own or another
  reconciler's): nothing at all, which is what keeps reconcilers from triggering each other.
Commits are pushed without force; a refused push is recomputed on the new upstream head
(app.publish). Local mode (`--repo PATH` of a work tree): the same on the work tree, without
commits, on every change (`--watch`, debounced with watchfiles) or every interval.

A cycle is all-or-nothing toward the remote: the branch moves only after a whole commit exists,
and a push is atomic on the server, so a process killed at any point leaves the old head.
"""
from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import app
from .core.load import mailbox_space
from .io.foldin import PREFIXES
from .io.fs import WorkTreeSnapshot
from .io.reportref import REPORT_REF_PREFIX
from .io.serve import Observer
from .model import KsgitopsError

log = logging.getLogger("ksgitops")
REPORT_REFS = f"+{REPORT_REF_PREFIX}*:{PREFIXES[1]}*"  # every WEC's report ref, for the fold-in


def clone_dir(workdir: Path, url: str, branch: str) -> Path:
    name = hashlib.blake2b(f"{url}\0{branch}".encode(), digest_size=8).hexdigest()
    return workdir / f"{name}.git"


@dataclass
class Keys:
    """What decides a cycle's work: a digest of the sources and one of the reported state."""

    sources: str
    reports: str


@dataclass
class CycleResult:
    action: str  # idle | generated-only | reconciled | summarized | local
    seconds: float
    head: str = ""
    pushed: bool = False
    commits: list[str] = field(default_factory=list)


class RemoteRuntime:
    def __init__(self, url: str, branch: str, workdir: Path, observer: Observer,
                 retries: int | None = None, status: bool = True) -> None:
        from .io import remote
        self.url, self.branch = url, branch
        self.path = clone_dir(workdir, url, branch)
        self.observer = observer
        self.retries = retries
        self.status = status
        from .core.status import StatusMemo
        from .io.cache import DiskCache
        self.repo = remote.clone(url, self.path, branch)
        self.last_head: str | None = None
        self.last_keys: Keys | None = None
        self.last_refs: dict[str, str] = {}
        self.cache = DiskCache.for_git_dir(self.repo.path)  # kept in memory from cycle to cycle
        self.memo = StatusMemo()

    def cycle(self) -> CycleResult:
        from .io import git, remote
        started = time.perf_counter()
        upstream = remote.fetch(self.repo, self.branch, extra=(REPORT_REFS,) if self.status else ())
        refs = self._report_refs()
        if str(upstream) == self.last_head and refs == self.last_refs:
            return CycleResult("idle", time.perf_counter() - started, self.last_head)
        app.move_branch(self.repo, f"refs/heads/{self.branch}", upstream)
        keys = self.keys(str(upstream))
        last = self.last_keys
        do_reconcile = last is None or keys.sources != last.sources
        do_status = self.status and (do_reconcile or last is None or keys.reports != last.reports
                                     or refs != self.last_refs)
        self.last_refs = refs
        if not (do_reconcile or do_status):
            self.last_head = str(upstream)
            return CycleResult("generated-only", time.perf_counter() - started, self.last_head)
        outcome = app.publish(self.path, self.branch, retries=self.retries, do_reconcile=do_reconcile,
                              do_status=do_status, on_retry=self._retrying, cache=self.cache, memo=self.memo)
        self.cache.next_run()
        git.consolidate_packs(self.repo)  # each commit wrote a pack: keep their number bounded
        self.last_head = outcome.head
        self.last_keys = keys if outcome.attempts == 1 else self.keys(outcome.head)  # ours touch neither
        result = (outcome.reconciled or outcome.status).result  # type: ignore[union-attr]
        self.observer.wecs.set(len(result.wecs))
        self.observer.objects.set(sum(len(p.placed) for plans in result.placements.values() for p in plans))
        commits = [c for c in ((outcome.reconciled.commit if outcome.reconciled else None),
                               (outcome.status.commit if outcome.status else None)) if c]
        if outcome.pushed:
            self.observer.commits.inc(len(commits) or 1)
        return CycleResult("reconciled" if do_reconcile else "summarized", time.perf_counter() - started,
                           outcome.head, outcome.pushed, commits)

    def _report_refs(self) -> dict[str, str]:
        """The WECs' report refs as fetched (ksgitops sync pushes them; status folds them in)."""
        prefix = PREFIXES[1]
        return {n: str(self.repo.references[n].target) for n in self.repo.references if n.startswith(prefix)}

    def keys(self, commit: str) -> Keys:
        from .core.load import load
        from .io import git
        snapshot = git.TreeSnapshot(self.repo, self.repo[commit].peel(git.pygit2.Commit).tree)
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
                    extra={"fields": {"attempt": attempt, "reason": reason}})


class LocalRuntime:
    """A work tree: reconcile and summarize into it, never commit."""

    def __init__(self, path: Path, observer: Observer, status: bool = True) -> None:
        self.path = path
        self.observer = observer
        self.status = status
        self.generated: set[str] = set()
        self.snapshot = WorkTreeSnapshot(path)

    def cycle(self) -> CycleResult:
        started = time.perf_counter()
        outcome = app.reconcile_worktree(self.path)
        self.generated = set(outcome.result.generated)
        if self.status:
            app.status_worktree(self.path)
        self.observer.wecs.set(len(outcome.result.wecs))
        return CycleResult("local", time.perf_counter() - started)

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


def loop(runtime: RemoteRuntime | LocalRuntime, interval: float, stop: threading.Event,
         once: bool = False, watch: bool = False, on_cycle: Callable[[CycleResult], None] | None = None) -> int:
    """Run cycles until `stop` is set (SIGTERM sets it: the current cycle finishes first).
    Returns the exit code: 0, or with `once` the failed cycle's code."""
    changes = _watch(runtime, stop) if watch and isinstance(runtime, LocalRuntime) else None
    while True:
        observer = runtime.observer
        observer.cycle_started()
        observer.cycles.inc()
        try:
            result = runtime.cycle()
        except KsgitopsError as e:
            observer.failures.inc()
            observer.ready = False
            for problem in e.problems:
                log.error(str(problem), extra={"fields": {"event": "cycle-failed"}})
            if once:
                return e.exit_code
        except Exception as e:  # noqa: BLE001 - a long-running loop outlives one bad cycle
            observer.failures.inc()
            observer.ready = False
            log.error(f"internal error ({type(e).__name__}); the next cycle starts afresh",
                      extra={"fields": {"event": "cycle-failed"}}, exc_info=log.isEnabledFor(logging.DEBUG))
            if once:
                return 4
        else:
            if result.action not in ("idle", "generated-only"):
                observer.reconcile_seconds.observe(result.seconds)
            observer.last_success.set(time.time())
            observer.ready = True
            log.info(f"cycle: {result.action} in {result.seconds:.3f}s",
                     extra={"fields": {"event": "cycle", "action": result.action, "seconds": round(result.seconds, 4),
                                       "head": result.head, "pushed": result.pushed, "commits": result.commits}})
            if on_cycle is not None:
                on_cycle(result)
        if once or stop.is_set():
            return 0
        if changes is not None:
            changes.wait_for_change(stop, interval)
        else:
            stop.wait(interval)
        if stop.is_set():
            return 0


class _Changes:
    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def wait_for_change(self, stop: threading.Event, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not stop.is_set() and time.monotonic() < deadline:
            if self._event.wait(0.1):
                self._event.clear()
                return


def _watch(runtime: LocalRuntime, stop: threading.Event, debounce_ms: int = 300) -> _Changes:
    """A thread that sets the returned flag when a source file changes (debounced by watchfiles)."""
    import watchfiles
    changes = _Changes()

    def run() -> None:
        for batch in watchfiles.watch(runtime.path, stop_event=stop, debounce=debounce_ms,
                                      watch_filter=lambda _change, path: not runtime.is_generated(path)):
            if batch:
                changes.set()

    threading.Thread(target=run, name="ksgitops-watch", daemon=True).start()
    return changes
