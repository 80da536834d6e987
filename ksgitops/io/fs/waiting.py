"""A wait for one of ksgitops's locks (flocks: the repository's write lock, `durable.exclusive`; a
state folder's `memos.lock`, which a reader of the memos waits for, `afterwards.settled`) that says
what it waits for.

A process that holds the lock and does not go on (stopped by SIGSTOP or Ctrl-Z, hung on a file
system, paused in a debugger) would keep the next command waiting without a word. The lock is
first tried without blocking; when it is held, the command blocks on it as before, and a thread
beside the wait says once, after `NOTICE` seconds, on stderr (or in `run`'s log, as an event),
which process holds it, as the kernel tells (Linux's /proc/locks: flock records no owner anywhere
else), whether that process is stopped, and how to stop waiting. The holder is named by its pid
and process name, never its arguments (a URL given on a command line may carry a credential).
An uncontended lock costs one non-blocking flock; the lock is taken the moment it is let go.
"""
from __future__ import annotations

import fcntl
import os
import sys
import threading

NOTICE = 2.0  # seconds of waiting before the command says what it waits for


def take(fd: int, what: str, mode: int = fcntl.LOCK_EX) -> None:
    """Take the flock `mode` on the file or folder open as `fd` (named `what` in the notice),
    saying who holds it should that take long."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    taken = threading.Event()

    def watch() -> None:
        if not taken.wait(NOTICE):
            say(what, holders(fd))

    watcher = threading.Thread(target=watch, name="ksgitops-lock-notice", daemon=True)
    watcher.start()
    try:
        fcntl.flock(fd, mode)
    finally:
        taken.set()
        watcher.join()  # gone before the caller goes on: a process forks only without other threads


def holders(fd: int) -> list[int]:
    """The processes holding an flock on the file open as `fd`, as /proc/locks lists them (the
    process that took it; a child it forked may hold it on). Empty where that cannot be told."""
    st = os.fstat(fd)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    found = []
    try:
        with open("/proc/locks") as locks:
            for line in locks:
                fields = line.split()
                if "->" in fields[:2] or len(fields) < 6:
                    continue  # a waiter's line, not a holder's
                if fields[1] == "FLOCK" and fields[5] == inode and fields[4].isdigit() and int(fields[4]) > 0:
                    found.append(int(fields[4]))
    except OSError:
        return []
    return sorted(set(found))


CTRL_C = "Ctrl-C stops waiting"
# `run` handles its stop signals itself (app/shutdown.py): they are acted on between write steps,
# and a wait for the lock, restarted by the kernel under SA_RESTART, is inside one
IN_RUN = "a signal to stop this run takes effect once it has the lock"


def notice(folder: str, pids: list[int], way_out: str = CTRL_C) -> str:
    """What a waiting command says: whose the lock is, in what state, and how to stop waiting."""
    if not pids:
        return f"ksgitops: waiting for the lock on {folder}, held by another process ({way_out})"
    described = "; ".join(_describe(pid) for pid in pids)
    return f"ksgitops: waiting for the lock on {folder}, held by {described}; waiting until it lets go ({way_out})"


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            name = f.read().decode(errors="replace").strip()
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0].decode()
    except (OSError, IndexError):
        return f"process {pid} (or a child it forked, which holds it on)"
    name = "".join(c if c.isprintable() else "?" for c in name)
    stopped = (f", which is stopped (`kill -CONT {pid}` lets it go on)" if state in ("T", "t") else "")
    return f"process {pid} ({name}){stopped}"


def say(folder: str, pids: list[int]) -> None:
    """The notice on stderr; in `ksgitops run`, whose log may be JSON lines, as a log event."""
    import logging
    log = logging.getLogger("ksgitops")
    if log.handlers:
        log.warning(notice(folder, pids, IN_RUN).removeprefix("ksgitops: "),
                    extra={"fields": {"event": "waiting-for-lock"}})
    else:
        print(notice(folder, pids), file=sys.stderr, flush=True)
