"""Large work shared with forked children: the GIL lets threads overlap little of a pure-Python
loop (or of lstat, one system call per path), and a forked child's share costs the parent only
the pipe's bytes. A child that fails costs only time: the parent does its share itself."""
from __future__ import annotations

import ctypes
import gc
import os
import pickle
import signal
import threading
from typing import Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")
MOST_WORKERS = 8
CHUNKS_PER_WORKER = 64  # the last chunk is what a process may wait for at the end: a short one


def may_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1  # never fork beside other threads


def workers() -> int:
    """The processes a spread may use: the CPUs this process may run on."""
    return min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
               MOST_WORKERS)


def spread(items: Sequence[T], work: Callable[[T], R], least: int = 64) -> Iterator[R]:
    """`[work(item) for item in items]`, shared with forked children when there are at least
    `least` items per process, more than one CPU and no other thread. The items are cut into
    chunks that each process takes in turn, so a slower process takes fewer. Results travel
    pickled, so they must be plain data; `work` must not write anything but its result (a
    child's writes are lost). Results are made (or unpickled) as they are taken: a caller that
    keeps only part of each holds no more."""
    count = min(workers(), len(items) // max(least, 1))
    if count < 2 or not may_fork():
        return (work(item) for item in items)
    cuts = count * CHUNKS_PER_WORKER
    chunks = [items[i * len(items) // cuts:(i + 1) * len(items) // cuts] for i in range(cuts)]
    tokens, filled = os.pipe()
    _write_all(filled, b"".join(i.to_bytes(4, "big") for i in range(cuts)))  # 4 bytes a chunk, far below a pipe's size
    os.close(filled)  # once every token is taken, a read finds the end

    def taken() -> Iterator[tuple[int, list[R]]]:
        while token := os.read(tokens, 4):  # one read takes one whole token: the pipe holds whole ones
            index = int.from_bytes(token, "big")
            yield index, [work(item) for item in chunks[index]]

    def pickled() -> bytes:  # chunk by chunk: the last chunk's pickling is all that is left at the end
        return pickle.dumps([(index, pickle.dumps(results, pickle.HIGHEST_PROTOCOL)) for index, results in taken()],
                            pickle.HIGHEST_PROTOCOL)
    theirs: list[Child] = []
    done: dict[int, list[R] | bytes] = {}  # a child's chunks stay pickled until they are taken
    finished = False
    try:
        for _ in range(count - 1):
            theirs.append(in_child(pickled))
        done.update(taken())
        for child in theirs:  # one child's bytes held at a time
            data = child()
            done.update(pickle.loads(data) if data is not None else ())  # noqa: S301 - our own child's
            del data
        finished = True
    finally:
        os.close(tokens)
        for child in theirs:  # every child is waited for, whatever happens here; killed first when
            if not finished:  # this process is leaving (an error, Ctrl-C, an abandoned cycle)
                child.kill()
            child()
    return _in_order(done, chunks, work)


def _in_order(done: dict[int, list[R] | bytes], chunks: list[Sequence[T]], work: Callable[[T], R]) -> Iterator[R]:
    for index, chunk in enumerate(chunks):
        found = done.pop(index, None)
        if found is None:  # a failed child's chunk is done here
            yield from (work(item) for item in chunk)
        else:
            yield from pickle.loads(found) if isinstance(found, bytes) else found  # noqa: S301 - our own child's


class Child:
    """A forked child's result: calling it waits for the bytes the child said it sends (`size` of
    them when given), None when the child failed, was killed or never started (the caller then
    does the work itself); asked again, it answers None at once."""

    def __init__(self, pid: int, read: int, size: int | None) -> None:
        self.pid, self._read, self._size, self._waited = pid, read, size, pid == 0

    def kill(self) -> None:
        if not self._waited:
            os.kill(self.pid, signal.SIGKILL)

    def __call__(self) -> bytearray | None:
        if self._waited:
            return None
        self._waited = True
        try:
            data = _read_framed(self._read)
        finally:
            os.close(self._read)
            _, status = os.waitpid(self.pid, 0)
        return data if status == 0 and data is not None and (self._size is None or len(data) == self._size) else None


_CHILD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
                  signal.SIGCHLD, signal.SIGPIPE)


def in_child(work: Callable[[], bytes], size: int | None = None) -> Child:
    """Start `work` in a forked child. Signals wait while it forks, so the child meets none of its
    parent's handlers: it takes the default actions (Ctrl-C ends it), never writes to the parent's
    wake-up descriptor, and ends with its parent. A fork the system refuses (a pid limit, memory)
    gives a child that failed: the work is the caller's."""
    read, write = os.pipe()
    parent = os.getpid()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(read)
        os.close(write)
        return Child(0, -1, size)
    if pid == 0:  # the child: no cleanup, no output but the pipe
        try:
            signal.set_wakeup_fd(-1)
            for number in _CHILD_SIGNALS:
                signal.signal(number, signal.SIG_DFL)
            end_with(parent)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            gc.freeze()  # the parent's objects stay untouched by collections: shared, not copied
            os.close(read)
            found = work()
            _write_all(write, len(found).to_bytes(8, "big"))
            _write_all(write, found)
            os._exit(0)
        finally:
            os._exit(1)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    os.close(write)
    return Child(pid, read, size)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_framed(fd: int) -> bytearray | None:
    """The bytes after an 8-byte length, read into one buffer (a large result is not copied)."""
    head = bytearray()
    while len(head) < 8 and (chunk := os.read(fd, 8 - len(head))):
        head += chunk
    if len(head) < 8:
        return None
    data = bytearray(int.from_bytes(head, "big"))
    view, got = memoryview(data), 0
    while got < len(data) and (n := os.readv(fd, [view[got:]])):
        got += n
    return data if got == len(data) and not os.read(fd, 1) else None


def end_with(parent: int) -> None:
    """A child's work is for its parent only: it ends when the parent does (Linux's
    PR_SET_PDEATHSIG), not seconds later. Called in the child, which may `exec` after."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent ended before the signal was asked for
        os._exit(1)
