"""`ksgitops run`: the long-running loop.

Remote mode (`--repo URL`, or the path of a bare repository, which is a remote like any URL): a
bare clone (shallow where the transport allows) in the work directory, made by the first cycle;
each cycle fetches the branch and, when its head moved, looks at what moved:
- the sources (every non-mailbox space's source files, and ksgitops.yaml): reconcile + status;
- only reported/ or upsynced/ of mailboxes, or the WECs' report refs: status (with the fold-in);
- nothing else (a commit that only touched generated paths, such as ksgitops' own or another
  reconciler's): nothing at all, which is what keeps reconcilers from triggering each other.
A cycle's work is one commit, pushed without force; a refused push is recomputed on the new
upstream head (app/publish.py). Local mode (`--repo PATH` of a work tree): the same on the work tree,
without commits, on every change (`--watch`, debounced with watchfiles) or every interval.

A cycle is all-or-nothing toward the remote: the branch moves only after a whole commit exists,
and a push is atomic on the server, so a process killed at any point leaves the old head. Signals
stop the loop between write steps (app/shutdown.py). A failing cycle (fetch, reconcile, push, any
error) is retried after an exponential, jittered backoff (`Backoff`), reset by a success.
"""
from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import usecases as app
from ..core.load.read import mailbox_space
from ..core.load.repoconfig import DEFAULT_POLL_INTERVAL
from ..io.git.foldin import PREFIXES
from ..io.fs.tree import WorkTreeSnapshot
from ..io.git.remote import scrub
from ..io.git.reportref import REPORT_REF_PREFIX
from ..io.serve import Observer
from ..model import KsgitopsError
from .publish import move_branch, publish
from .shutdown import Abandoned, Shutdown

log = logging.getLogger("ksgitops")
REPORT_REFS = f"+{REPORT_REF_PREFIX}*:{PREFIXES[1]}*"  # every WEC's report ref, for the fold-in
DEFAULT_MAX_BACKOFF = 300.0
MAX_REASON = 300  # characters of an error kept for /readyz


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
        return f"; degraded: {len(self.errors)} errors above{frozen}" if self.errors else ""

    def changes(self) -> str:
        counted = ((self.changed_wecs, f"{_n(self.changed_wecs, 'WEC')} changed"),
                   (self.folded_wecs, f"reports of {_n(self.folded_wecs, 'WEC')} folded in"),
                   (self.status_files, f"{_n(self.status_files, 'status file')} changed"))
        return ", ".join(text for n, text in counted if n)

    def fields(self) -> dict[str, Any]:
        """The same facts for the JSON log."""
        return {"event": "cycle", "action": self.action, "seconds": round(self.seconds, 4), "head": self.head,
                "source": self.source, "commit": self.commit, "changedWecs": self.changed_wecs,
                "foldedWecs": self.folded_wecs, "statusFiles": self.status_files, "pushed": self.pushed,
                "frozen": self.frozen}


def _n(count: int, thing: str) -> str:
    return f"{count} {thing}{'' if count == 1 else 's'}"


def open_runtime(repo: str, branch: str, workdir: Path, observer: Observer, retries: int | None = None,
                 status: bool = True) -> "RemoteRuntime | LocalRuntime":
    """The runtime `--repo` asks for: a URL or a bare repository's path is a remote (cloned into
    `workdir`, pushed back to); a work tree is reconciled in place. The git directory of a work
    tree is refused: it is neither."""
    from ..io.git.remote import is_url
    if is_url(repo):
        return RemoteRuntime(repo, branch, workdir, observer, retries, status)
    git_dir = _git_dir_at(Path(repo))
    if git_dir is None:
        return LocalRuntime(Path(repo), observer, status)
    bare, workdir_of = git_dir
    if not bare:
        raise KsgitopsError(f"--repo {repo}: is the git directory of the work tree {workdir_of}; "
                            f"give the work tree, or a URL or bare repository to clone")
    return RemoteRuntime(str(Path(repo).resolve()), branch, workdir, observer, retries, status)


def _git_dir_at(path: Path) -> tuple[bool, str] | None:
    """(bare, work tree) when `path` itself is a git directory (not a work tree), else None."""
    import pygit2
    if not (path / "HEAD").is_file() or not (path / "objects").is_dir():
        return None
    try:
        repo = pygit2.Repository(str(path))
    except pygit2.GitError:
        return None
    if Path(repo.path).resolve() != path.resolve():
        return None
    return repo.is_bare, str(repo.workdir or "")


class RemoteRuntime:
    def __init__(self, url: str, branch: str, workdir: Path, observer: Observer,
                 retries: int | None = None, status: bool = True) -> None:
        from ..core.status.summary import StatusMemo
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
            from ..io.git import remote
            from ..io.git.cache import DiskCache
            self._repo = remote.clone(self.url, self.path, self.branch)
            self.cache = DiskCache.for_git_dir(self._repo.path)
            log.info(f"clone of {remote.redact(self.url)} ready in {self.path}", extra={"fields": {"event": "clone"}})
        return self._repo

    def cycle(self, guard: Shutdown | None = None) -> CycleResult:
        from ..io.git import repo as git, remote
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
        from ..core.load.read import load
        from ..io.git import repo as git
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
        outcome = app.reconcile_worktree(self.path)
        self.generated = set(outcome.result.generated)
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


@dataclass
class Backoff:
    """How long the loop waits before the next cycle: `interval` after a success; after the n-th
    failed cycle in a row, interval × 2^(n-1) jittered by ±20 % (so reconcilers that fail together
    do not retry together), never more than `maximum` (or the interval, when that is longer)."""

    interval: float
    maximum: float = DEFAULT_MAX_BACKOFF
    rng: random.Random | None = None

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return self.interval
        ceiling = max(self.maximum, self.interval)
        step = min(ceiling, self.interval * 2.0 ** min(failures - 1, 60))
        return min(ceiling, step * (self.rng or random).uniform(0.8, 1.2))


def loop(runtime: RemoteRuntime | LocalRuntime, interval: float | None, stop: Shutdown | threading.Event,
         once: bool = False, watch: bool = False, on_cycle: Callable[[CycleResult], None] | None = None,
         max_backoff: float = DEFAULT_MAX_BACKOFF, rng: random.Random | None = None) -> int:
    """Run cycles until `stop` is set (the first SIGTERM sets it: the current cycle finishes
    first; a second one abandons the cycle between write steps). A failed cycle is retried after
    `Backoff`. Returns the exit code: 0, or with `once` the failed cycle's code. `interval` None:
    RepoConfig's `poll.intervalSeconds` of the last commit reconciled (60 s before any)."""
    guard = stop if isinstance(stop, Shutdown) else Shutdown(stop)
    backoff = Backoff(interval or runtime.poll_interval, max_backoff, rng)
    changes = _watch(runtime, guard.requested) if watch and isinstance(runtime, LocalRuntime) else None
    try:
        while not guard.requested.is_set():
            code, failed, reason = _cycle(runtime, guard, on_cycle)
            backoff.interval = interval or runtime.poll_interval
            observer = runtime.observer  # /healthz must not call a loop that waits as told stalled
            observer.stall_after = max(observer.stall_after, 10 * backoff.interval)
            wait = backoff.delay(failed)
            if failed:
                runtime.observer.backoff.set(wait)
                _log_failure(runtime.observer, failed, reason, None if once else wait)
            if once:
                return code
            if changes is not None:
                changes.wait_for_change(guard.requested, wait)
            else:
                guard.requested.wait(wait)
    except Abandoned:
        log.warning("stopped: a second signal abandoned the cycle between two write steps; nothing was cut "
                    "short, the next start begins afresh", extra={"fields": {"event": "stop", "abandoned": True}})
        return 0
    log.info("stopped", extra={"fields": {"event": "stop", "abandoned": False}})
    return 0


def _cycle(runtime: RemoteRuntime | LocalRuntime, guard: Shutdown,
           on_cycle: Callable[[CycleResult], None] | None) -> tuple[int, int, str]:
    """One cycle, its metrics and its log line: (exit code, failed cycles in a row, why it failed); a
    degraded cycle (errors of spaces or WECs: those are frozen, the rest committed) is no failure: exit 2."""
    observer = runtime.observer
    observer.cycle_started()
    observer.cycles.inc()
    try:
        result = runtime.cycle(guard)
    except KsgitopsError as e:
        for problem in e.problems[1:]:  # the first one is the failure's own line
            log.error(str(problem), extra={"fields": {"event": "problem"}})
        reason = failure_reason(e)
        return e.exit_code, observer.cycle_failed(reason), reason
    except Exception as e:  # noqa: BLE001 - a long-running loop outlives one bad cycle
        log.debug("internal error", exc_info=True)
        reason = failure_reason(e)
        return 4, observer.cycle_failed(reason), reason
    if result.action not in ("idle", "generated-only"):
        observer.reconcile_seconds.observe(result.seconds)
    observer.cycle_succeeded()
    if result.frozen_parts is not None:
        observer.frozen.set(result.frozen_parts)
    for line in result.errors:
        log.error(line, extra={"fields": {"event": "problem"}})
    observer.degraded.inc(1 if result.errors else 0)
    (log.warning if result.errors else log.info)(result.describe(), extra={"fields": result.fields()})
    if on_cycle is not None:
        on_cycle(result)
    return (2 if result.errors else 0), 0, ""


def failure_reason(error: BaseException) -> str:
    """A failed cycle's cause on one line, credentials in URLs masked, at most MAX_REASON characters."""
    if isinstance(error, KsgitopsError):
        more = len(error.problems) - 1
        text = str(error.problems[0]) + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")
    else:
        text = f"internal error ({type(error).__name__}); the next cycle starts afresh"
    text = scrub(text)
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 1] + "…"


def _log_failure(observer: Observer, failed: int, reason: str, wait: float | None) -> None:
    ready = observer.ready
    after = f"; next cycle in {wait:.1f}s" if wait is not None else ""
    log.error(f"cycle failed ({failed} in a row{'' if ready else ', not ready'}): {reason}{after}",
              extra={"fields": {"event": "cycle-failed", "error": reason, "failuresInARow": failed,
                                "backoffSeconds": None if wait is None else round(wait, 3), "ready": ready}})


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
