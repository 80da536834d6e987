"""`ksgitops monitor`: start, stop and ask after a work tree's change feed (io/fs/monitor.py).

The monitor runs as its own process, detached from the command that started it, and writes its
log beside the folder's records (`monitor.log` in its own state folder: `<git dir>/ksgitops-state/`
for the folder at the top of the work tree, a sub-folder of it for one below: io/fs/folderstate.py).
"""
from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..io.fs.afterwards import later
from ..io.fs.feed import ANOTHER, hold_monitor_lock, identity_of, request
from ..io.fs.folderstate import PRIVATE_FILE, make_own, place_of
from ..io.fs.paths import LinkError, check_path
from ..io.git.discover import git_dir
from ..model import KsgitopsError

if TYPE_CHECKING:
    from ..io.fs.handoff_worker import Runner

AUTO_IDLE_EXIT = 3 * 3600.0  # seconds without a command after which a monitor started by a command stops
POLICY = "KSGITOPS_MONITOR"  # auto (the default), on, off: whether a work-tree command starts one
START_TIMEOUT = 300.0  # seconds the first walk of a large work tree may take
LOG = "monitor.log"
ANOTHER_WAIT = 60.0  # seconds another monitor holding the lock may take to answer
STARTING = "monitor.start.lock"  # held by a `start` from its check that none runs until its monitor answers


def state_of(root: Path) -> tuple[str, str, Path]:
    """(git directory, the folder's own state folder in it, log file) of the ksgitops folder `root`."""
    where = git_dir(root)
    if where is None:
        raise KsgitopsError(f"{root}: not in a git work tree (the monitor keeps its socket in the git directory)")
    place = place_of(root)
    check_path(Path(where), f"{place}/{LOG}", shown=where.rstrip("/"))  # never written through a link
    return where, place, Path(where) / place / LOG


def status(root: Path) -> dict[str, Any] | None:
    """What the running monitor of `root` says of itself (None: none runs for it)."""
    where, place, _ = state_of(root)
    reply = request(where, {"op": "status"}, timeout=10.0, place=place)
    if reply is None or not _watches(reply, root):
        return None
    return reply


def start(root: Path, plan_ahead: bool = True, idle_exit: float = 0.0) -> tuple[dict[str, Any], bool]:
    """Start the monitor of `root` unless one runs: (its status, whether this call started it)."""
    running = status(root)
    if running is not None:
        return running, False
    _, _, log = state_of(root)
    make_own(str(log.parent), str(root))
    # One start at a time: another one's monitor may hold its lock but not answer yet (walking the
    # work tree), and this one's would then fail for that lock with no monitor to show for it.
    starting = os.open(log.parent / STARTING, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(starting, fcntl.LOCK_EX)  # released when this start ends, or at once should it die
        return _start(root, log, plan_ahead, idle_exit)
    finally:
        os.close(starting)


def _start(root: Path, log: Path, plan_ahead: bool, idle_exit: float) -> tuple[dict[str, Any], bool]:
    running = status(root)  # the start this one waited for started it
    if running is not None:
        return running, False
    read, write = os.pipe()
    home = _home(root)
    with open(_log_fd(log), "ab") as out:
        argv = [sys.executable, "-m", "ksgitops", "monitor", "start", home, "--ready-fd", str(write),
                "--idle-exit", f"{idle_exit:g}"]
        child = subprocess.Popen(argv + (["--plan-ahead"] if plan_ahead else ["--no-plan-ahead"]),
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=out, pass_fds=(write,),
                                 start_new_session=True, close_fds=True, cwd=home)
    os.close(write)
    told = _read_all(read, START_TIMEOUT)
    if not told.startswith("ready"):
        if child.poll() is None:
            child.terminate()
        running = status(root) if ANOTHER not in told else _answer_of_another(root)
        if running is not None:  # another start won the race, or a monitor started otherwise answers now
            return running, False
        raise KsgitopsError(f"{root}: the monitor did not start: {told.removeprefix('error: ') or 'no answer'} "
                            f"(its log: {log})", exit_code=3)
    running = status(root)
    if running is None:
        raise KsgitopsError(f"{root}: the monitor started but does not answer (its log: {log})", exit_code=3)
    return running, True


def policy() -> str:
    value = os.environ.get(POLICY, "auto").strip().lower()
    return value if value in ("on", "off") else "auto"


def autostart_wanted(asked: str, terminal: bool, ci: bool, paths: int, least: int) -> bool:
    """Whether a work-tree command that no monitor answered starts one: asked `on`; or `auto` for a
    person at a terminal (not a CI job) whose work tree has at least `least` generated paths to
    check one by one (smaller ones are checked in less time than a monitor's answer saves)."""
    if asked != "auto":
        return asked == "on"
    return terminal and not ci and paths >= least and sys.platform.startswith("linux")


def watches_allowed() -> int | None:
    """The inotify watches the kernel allows this user (None: unknown)."""
    try:
        return int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    except (OSError, ValueError):
        return None


def start_in_background(root: Path, idle_exit: float = AUTO_IDLE_EXIT) -> None:
    """Start the monitor of `root` as `monitor start --foreground` in its own session, without
    waiting for its first walk (the command that starts it has answered); nothing when one runs or
    is starting (it holds its lock), or it cannot be started. A monitor that then fails to watch
    says why in its log and leaves nothing behind."""
    try:
        _, _, log = state_of(root)
    except LinkError:
        return
    if not _lock_free(log.parent):
        return
    home = _home(root)
    try:
        with open(_log_fd(log), "ab") as out:
            subprocess.Popen([sys.executable, "-m", "ksgitops", "monitor", "start", home, "--foreground",
                              "--idle-exit", f"{idle_exit:g}"], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                             start_new_session=True, close_fds=True, cwd=home)
    except OSError:
        pass


def _log_fd(log: Path) -> int:
    """The monitor's log, in its state folder: the owner's alone, as the folder's other files."""
    return os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)


def _home(root: Path) -> str:
    """The folder a monitor that outlives the command starting it watches, resolved: named so on
    its command line, and its working folder rather than the one the command ran in (which it
    would keep from being unmounted, or keep in use once deleted, for hours)."""
    return str(root.resolve())


def _lock_free(state: Path) -> bool:
    """No monitor holds the lock of the state folder `state` (one that runs, or walks the work
    tree to start, holds it), and the folder can hold one."""
    try:
        os.close(hold_monitor_lock(state))
    except OSError:
        return False
    return True


def advise(record: Any, least: int) -> None:
    """After a work-tree command's checks that no monitor answered (`record`: its stat record):
    start one in the background once the command has answered, when `autostart_wanted`, else tell
    a person at a terminal of `monitor start` when the checks were many."""
    asked, terminal = policy(), sys.stderr.isatty()
    paths = sum(len(rec.shape) for rec in record.roots.values())
    if not autostart_wanted(asked, terminal, bool(os.environ.get("CI")), paths, least):
        if terminal and paths >= least:
            print(f"hint: this run checked {paths:,} generated paths one by one; `ksgitops monitor start` keeps a "
                  "change feed, so that reconcile and diff look only at what changed", file=sys.stderr)
        return
    folders, allowed = _folders(record), watches_allowed()
    if allowed is not None and folders >= allowed * 0.9:  # it would fail for watches: others use some too
        if terminal:
            print(f"hint: this run checked {paths:,} generated paths one by one; a monitor would watch {folders:,} "
                  f"folders, more than the kernel allows (fs.inotify.max_user_watches = {allowed:,})", file=sys.stderr)
        return
    work_tree = Path(record.work_tree)
    if not _lock_free(record.path.parent):  # one is starting (its first walk): nothing to start, and a
        return  # hint would not help
    later(record.state, lambda: start_in_background(work_tree))
    print("starting `ksgitops monitor` for this work tree: from the next command on, reconcile and diff look only "
          "at what changed (it stops after 3 hours without a command, or with `ksgitops monitor stop`; "
          f"{POLICY}=off starts none)", file=sys.stderr)


def _folders(record: Any) -> int:
    """The folders of the recorded generated roots (each non-empty one holds a path its shape names),
    and a margin for the sources'."""
    return sum(len({path.rpartition("/")[0] for path in rec.shape}) for rec in record.roots.values()) + 1_000


def _answer_of_another(root: Path) -> dict[str, Any] | None:
    """The status of the monitor holding the lock: one started otherwise than by `start` (a service
    manager's `monitor start --foreground`) may still be walking the work tree."""
    deadline = time.monotonic() + ANOTHER_WAIT
    while True:
        running = status(root)
        if running is not None or time.monotonic() > deadline:
            return running
        time.sleep(0.1)


def stop(root: Path) -> bool:
    """Stop the monitor of `root`; False when none was running."""
    where, place, _ = state_of(root)
    if status(root) is None:
        return False
    request(where, {"op": "stop"}, place=place)
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and request(where, {"op": "status"}, timeout=1.0, place=place) is not None:
        time.sleep(0.05)
    return True


def serve(root: Path, ready_fd: int | None, run: Runner | None = None,
          preload: Callable[[], None] | None = None, plan_ahead: bool = True, idle_exit: float = 0.0) -> int:
    """Run the monitor of `root` in this process, until it is stopped; with `run` (and the
    `preload` that imports what it needs), it also runs the commands handed to it, and with
    `plan_ahead` a quiet `diff` whenever the work tree settles (io/fs/plan.py keeps its plan)."""
    where, _, _ = state_of(root)
    if not sys.platform.startswith("linux"):
        raise KsgitopsError("the monitor watches with Linux's inotify; without it, every run looks at every path")
    from ..io.fs import monitor  # inotify, loaded only by the monitor itself
    for number in (signal.SIGQUIT, signal.SIGTSTP):  # a command's memo child, which started it, ignores them
        signal.signal(number, signal.SIG_DFL)
    from ..io.fs.handoff_worker import Warm
    warm = Warm(run, preload or (lambda: None)) if run is not None else None
    if warm is not None:
        warm.plan_ahead = plan_ahead
    return monitor.serve(root, Path(where), ready_fd, warm, idle_exit)


def _watches(reply: dict[str, Any], root: Path) -> bool:
    mine = identity_of(root)
    return mine is not None and reply.get("identity") == mine


def _read_all(fd: int, timeout: float) -> str:
    import selectors
    data = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while time.monotonic() < deadline and b"\n" not in data:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    os.close(fd)
    return data.decode(errors="replace").strip()
