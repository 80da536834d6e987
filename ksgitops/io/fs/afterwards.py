"""Work a command may leave until it has answered: the memos a run keeps for the next one (the
local cache, the run record; io/git/cache.py; in a work tree its stat record and a diff's plan,
io/fs/statcache.py, io/fs/plan.py). Called by a library or a test (or as `render`, `explain`,
`validate`), a command does it at once, under the lock below; while another run keeps its memos it
keeps none.
A command handed to the monitor answers first (its output, then its exit code) and keeps them
after, in the worker the monitor forked, as git leaves `gc --auto` until a command is done: they
only save the next run time, and the asker waits for nothing that its command's result needs.
A checkout's sync of the file system rides the same queue (io/git/ondisk.py): left undone (a
kill, a lock another run holds, an error swallowed here), its journal stays and the next command
does it.

Run as the program, `reconcile` (every form), `diff` and `status` do the same with a child they fork once
they have answered (`answered_first`): the process the caller waits for ends, the child keeps the
memos (not when the process is its PID namespace's init or init's child, as a container's command
is: the child would die with the container; it keeps them itself before it ends). The program
itself ends without freeing its objects one by one (`leave`).

The next run reads no memo half-kept: from just before the answer until the work is done, the
worker holds the state folder's `memos.lock` (flock; `hold`), and a reader of the memos waits for
it (`settled`); a lock another run's memos hold then is waited for after the answer, never
before. Until the answer nothing is held (a push after the commit, its retries, a stopped
asker keep no one waiting); a reader meanwhile reads the memos as they were, which are true. The
worker's own reads of a state folder do its queued work first, in order. A killed worker's lock
goes with it, and each memo file is replaced whole."""
from __future__ import annotations

import atexit
import fcntl
import os
import signal
import sys
import threading
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from . import waiting
from .paths import open_plain

LOCK_FILE = "memos.lock"

_queue: list[tuple[str, Callable[[], None]]] | None = None  # None: work is done at once
_handed: list[Any] = []  # the work a child took over
_held: list[int] = []  # the locks taken by `hold`
_waiting: list[int] = []  # the locks `hold` found taken: `finish` waits for them
_program = False  # this process is the program (cli/entry.py), not a library's caller nor a test's


def as_program() -> None:
    global _program
    _program = True


_answering = False  # in the program's own process, inside a command that ends it once answered


def answering() -> bool:
    """Inside `answered_first` in the program's own process: what exists now lives until it ends."""
    return _answering


@contextmanager
def answered_first() -> Iterator[None]:
    """Around a command that leaves memos for later (`reconcile`, `diff`, `status`), in the program's own
    process: once the command has answered (its output written: its exit code follows), a forked
    child keeps them while this process ends. Elsewhere (a test, a monitor's worker, which defers
    already) nothing changes."""
    global _answering
    if not _program or _queue is not None:
        yield
        return
    defer()
    _answering = True
    try:
        yield
    finally:
        _answering = False
        _leave_to_a_child()


def _last_of_its_kind() -> bool:
    """This process is the init of its PID namespace, or init's child (a container's command under
    dumb-init, a systemd service): when it ends, what it leaves behind is killed with the
    container (or the unit's cgroup), so a child would never keep the memos."""
    return os.getpid() == 1 or os.getppid() == 1


def _leave_to_a_child() -> None:
    global _queue
    flush_streams()  # written once, here: a child's copy of a buffer is never flushed
    if not _queue or threading.active_count() > 1 or _last_of_its_kind():  # no fork beside a thread
        _keep_here()
        return
    hold()
    try:
        pid = os.fork()
    except OSError:
        finish()
        return
    if pid == 0:
        try:
            let_go()
            finish()
        finally:
            os._exit(0)
    _handed.append(_queue)  # not freed here: the objects it holds are the run's, which the exit frees at once
    _queue = None  # the child does the work and holds the locks (an flock is the open file's, shared by the fork)
    _close_locks()


def _keep_here() -> None:
    """The queued work done by this process before it ends, each state folder's under its lock
    (as a child would keep it); a folder whose lock another run holds is left, as `later` leaves
    it: the exit code waits for no other run."""
    global _queue
    try:
        for state in dict.fromkeys(state for state, _ in _queue or []):
            _locked(state, lambda: _do(state))  # noqa: B023 - called at once
    finally:
        _queue = None


def exit_code(run: Callable[[], None], catch_all: bool = False) -> int:
    """The exit code of `run` (a command, which may raise SystemExit) as the interpreter would
    give it; with `catch_all`, an uncaught error is shown as the interpreter shows one."""
    try:
        run()
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        print(e.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if not catch_all:
            raise
        traceback.print_exc()
        return 130
    except BaseException:  # noqa: BLE001 - an uncaught error, shown as the interpreter shows one
        if not catch_all:
            raise
        traceback.print_exc()
        return 1
    return 0


def leave(code: int) -> None:
    """End the program with `code` once its command is over: the exit handlers run and the streams
    are written out, but the objects of a large run are not freed one by one (0.2 s after a status
    of 166k reports), which the system does at once. Beside another thread, the plain exit."""
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    flush_streams()
    os._exit(code)


def flush_streams() -> None:
    """stdout and stderr written out, as the interpreter does when it ends (a failure ignored)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # started with it closed
                stream.flush()
        except (OSError, ValueError):
            pass


def let_go(*also: signal.Signals) -> None:
    """Once the command has answered, in the process keeping its memos: the terminal's signals
    (and `also`) ignored, the command being over for its user, and the standard streams on
    /dev/null, so that a pipe's reader sees its end at the answer. The working folder stays: the
    memos' paths may be relative to it."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP, signal.SIGPIPE, *also):
        signal.signal(sig, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def later(state: Path | None, work: Callable[[], None]) -> None:
    """Do `work`, which writes memos into the state folder `state` (or a checkout's sync, whose
    journal waits there for it): now (under the folder's lock, as a reader of them expects), or
    after the answer."""
    if state is None:
        work()
    elif _queue is None:
        _locked(os.path.realpath(state), work)
    else:
        _queue.append((os.path.realpath(state), work))


def _locked(state: str, work: Callable[[], None]) -> None:
    """`work` holding the lock of `state` (without one when there is no lock to take: see
    _open_lock). While another run keeps its memos there, this run's are not kept: its answer
    (`render`, `validate`, a library's call) waits for no other run, the other's memos are as
    true, and the next run recomputes what is missing."""
    fd = _open_lock(state, create=True)
    if fd is None:
        work()
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        work()
    finally:
        os.close(fd)


def deferring() -> bool:
    """Work given to `later` now waits until the command has answered."""
    return _queue is not None


def defer() -> None:
    """From now on, `later` queues work until `finish` (a monitor's worker, before its command)."""
    global _queue
    _queue = []


def hold() -> None:
    """Take the lock of every state folder with work queued (just before the answer). A folder
    whose lock cannot be taken has its work done now, before the answer, as in its own process.
    A lock another run's memos hold is waited for after the answer (`finish`): the answer never
    waits for another run, and a reader meanwhile reads memos that are true."""
    for state in dict.fromkeys(state for state, _ in _queue or []):
        fd = _open_lock(state, create=True)
        if fd is None:
            _do(state)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _held.append(fd)
        except BlockingIOError:
            _waiting.append(fd)


def finish() -> None:
    """Do the work left for later, then let readers in. A failure costs only time next run."""
    global _queue
    try:
        for fd in _waiting:
            fcntl.flock(fd, fcntl.LOCK_EX)
        _do(None)
    finally:
        _queue = None
        _close_locks()


def _close_locks() -> None:
    for fd in _held + _waiting:
        os.close(fd)
    _held.clear()
    _waiting.clear()


def settled(state: Path) -> None:
    """Before reading the memos of `state`: this process's queued work for it done, and no other
    process's left to do."""
    key = os.path.realpath(state)
    if _queue:
        _do(key)
    fd = _open_lock(key, create=False)
    if fd is None:
        return
    try:
        waiting.take(fd, os.path.join(key, LOCK_FILE), fcntl.LOCK_SH)
    finally:
        os.close(fd)


def _do(state: str | None) -> None:
    """The queued work of `state` (None: all of it), in the order it came."""
    if not _queue:
        return
    mine = [item for item in _queue if state is None or item[0] == state]
    _queue[:] = [item for item in _queue if item not in mine]
    for _, work in mine:
        try:
            work()
        except Exception:  # noqa: BLE001 - memos: the next run computes what is missing
            pass


def _open_lock(state: str, create: bool) -> int | None:
    """The lock file's descriptor, or None: no state folder or lock file yet, a link, anything but
    a plain file (a FIFO would block the open), a full or read-only disk."""
    try:
        return open_plain(os.path.join(state, LOCK_FILE), create)
    except OSError:
        return None
