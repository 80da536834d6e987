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

import logging
import random
import threading
import time
from typing import Callable

from msgspec import Struct

from ..io.git.remote import scrub
from ..io.serve import Observer
from ..model import KsgitopsError, counted
from .runtimes import CycleResult, LocalRuntime, RemoteRuntime
from .shutdown import Abandoned, Shutdown

log = logging.getLogger("ksgitops")
DEFAULT_MAX_BACKOFF = 300.0
MAX_REASON = 300  # characters of an error kept for /readyz


class Backoff(Struct):
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
        text = str(error.problems[0]) + (f" (and {counted(more, 'more problem')})" if more else "")
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
    import watchfiles  # on first use: ~45 ms of start-up (python -X importtime) only `run --watch` needs
    changes = _Changes()

    def run() -> None:
        for batch in watchfiles.watch(runtime.path, stop_event=stop, debounce=debounce_ms,
                                      watch_filter=lambda _change, path: not runtime.is_generated(path)):
            if batch:
                changes.set()

    threading.Thread(target=run, name="ksgitops-watch", daemon=True).start()
    return changes
