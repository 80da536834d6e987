"""`ksgitops monitor`'s life: start, status and stop (its socket only its owner's); no monitor
outside a git work tree; starts racing each other leave one monitor, and a start racing a monitor
that does not listen yet waits for it; a monitor leaves with its work tree, or when its socket
file went; an answer from another user's process is never taken."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli_subprocess
from ksgitops.app import monitor as monitoring
from ksgitops.io.fs.feed import address, request
from monitor_process import alive, start
from monitor_process import monitored  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def test_start_status_and_stop(example_git: Path) -> None:
    assert run_cli_subprocess("monitor", "status", str(example_git)).returncode == 1
    pid = start(example_git)
    try:
        again = run_cli_subprocess("monitor", "start", str(example_git))
        assert again.returncode == 0 and again.stdout.startswith(f"already running: pid {pid}")
        status = run_cli_subprocess("monitor", "status", str(example_git), "-o", "json")
        assert json.loads(status.stdout)["pid"] == pid and json.loads(status.stdout)["folders"] == 5  # the top, spaces/ and its three spaces
        sock = Path(address(example_git / ".git"))
        if not str(sock).startswith("\0"):  # a short path: a file only its owner may use
            assert oct(sock.stat().st_mode & 0o777) == "0o700"
        assert run_cli_subprocess("monitor", "stop", str(example_git)).stdout == "stopped\n"
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
        assert not (example_git / ".git/ksgitops-state/monitor.sock").exists()
        assert request(str(example_git / ".git"), {"op": "status"}) is None
        assert run_cli_subprocess("monitor", "stop", str(example_git)).stdout == "no monitor was running\n"
        assert "watching" in (example_git / ".git/ksgitops-state/monitor.log").read_text()
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_outside_a_git_work_tree_it_says_why(example: Path) -> None:
    done = run_cli_subprocess("monitor", "start", str(example))
    assert done.returncode == 2 and "not in a git work tree" in done.stderr and "Traceback" not in done.stderr


def test_the_monitor_leaves_with_its_work_tree(monitored: tuple[Path, int]) -> None:
    repo, pid = monitored
    shutil.rmtree(repo)
    deadline = time.monotonic() + 20
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


def test_two_starts_racing_leave_one_monitor(example_git: Path) -> None:
    starts = [subprocess.Popen([sys.executable, "-m", "ksgitops", "monitor", "start", str(example_git), "-o", "json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in starts]
    assert all(p.returncode == 0 for p in starts), outs
    told = [json.loads(out) for out, _ in outs]
    pids = {t["pid"] for t in told}
    try:
        assert len(pids) == 1 and sorted(t["state"] for t in told).count("started") <= 1
        [pid] = pids
        deadline = time.monotonic() + 5
        others = []
        while time.monotonic() < deadline:  # the losers have exited: only the winner serves the work tree
            others = [p for p in _monitors_of(example_git) if p != pid]
            if not others:
                break
            time.sleep(0.05)
        assert others == [] and alive(pid)
    finally:
        for pid in pids | set(_monitors_of(example_git)):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("by_start", [True, False])
def test_a_start_racing_a_monitor_not_listening_yet_waits_for_it(example_git: Path, by_start: bool) -> None:
    """The window the three racing starts above hit now and then: a monitor holds the monitor's
    lock but does not answer yet (it walks the work tree), started by another `start` (which holds
    the start lock meanwhile) or otherwise (`--foreground`). A start then waits for it and tells
    of it, rather than failing with exit code 3 (its own monitor finds the lock taken)."""
    import fcntl
    state = example_git / ".git" / "ksgitops-state"
    state.mkdir(parents=True, exist_ok=True)
    pids: set[int] = set()
    with open(state / "monitor.start.lock", "a") as starting, open(state / "monitor.lock", "a") as lock:
        if by_start:
            fcntl.flock(starting, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX)
        late = subprocess.Popen([sys.executable, "-m", "ksgitops", "monitor", "start", str(example_git), "-o", "json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _its_monitor_gave_up(example_git, late, appears=not by_start)
        fcntl.flock(lock, fcntl.LOCK_UN)  # the other monitor, ready now (started as app/monitor.py does)
        read, write = os.pipe()
        first = subprocess.Popen([sys.executable, "-m", "ksgitops", "monitor", "start", str(example_git),
                                  "--ready-fd", str(write)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, pass_fds=(write,), start_new_session=True)
        os.close(write)
        pids.add(first.pid)
        try:
            assert monitoring._read_all(read, 60).startswith("ready")
        finally:
            fcntl.flock(starting, fcntl.LOCK_UN)
    try:
        out, err = late.communicate(timeout=60)
        assert late.returncode == 0, (out, err)
        told = json.loads(out)
        assert told["state"] == "already running" and told["pid"] == first.pid
    finally:
        for pid in pids | set(_monitors_of(example_git)):
            os.kill(pid, signal.SIGKILL)


def _its_monitor_gave_up(repo: Path, late: subprocess.Popen[str], appears: bool) -> None:
    """Wait until the late start's own monitor came and went (when `appears`; where it waits for
    the start lock, none comes: 3 s pass, in which an unguarded start's would have come)."""
    deadline, seen = time.monotonic() + (60 if appears else 3), False
    while time.monotonic() < deadline and late.poll() is None:
        found = bool(_monitors_of(repo))
        if seen and not found:
            return
        seen = seen or found
        time.sleep(0.05)
    assert not appears or late.poll() is not None, "the late start's monitor never gave up"


def _monitors_of(repo: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"monitor" in cmdline and b"--ready-fd" in cmdline and str(repo).encode() in cmdline:
            found.append(int(entry.name))
    return [p for p in found if alive(p)]


@pytest.mark.skipif(os.geteuid() != 0, reason="another user is made with setuid")
def test_an_answer_from_another_users_process_is_not_taken(example_git: Path, tmp_path: Path) -> None:
    """A socket name in the abstract namespace has no file mode: another user could take it first.
    The asker checks who answers (SO_PEERCRED) and takes nothing from another user."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    shutil.copytree(example_git, deep / "repo", symlinks=True)
    repo = deep / "repo"
    where = address(repo / ".git")
    assert where.startswith("\0")
    top = repo.stat()
    lie = json.dumps({"format": 1, "identity": [str(repo), top.st_dev, top.st_ino], "token": "x:1", "changed": []})
    impostor = subprocess.Popen([sys.executable, "-c", (
        "import os, socket, sys\nos.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind('\\0' + sys.argv[1]); s.listen(4)\n"
        "print('ready', flush=True)\n"
        "while True:\n    c, _ = s.accept(); c.recv(4096); c.sendall(sys.argv[2].encode() + b'\\n'); c.close()\n"),
        where[1:], lie], stdout=subprocess.PIPE, text=True)
    try:
        assert impostor.stdout.readline() == "ready\n"
        from ksgitops.io.fs.feed import ask
        assert ask(str(repo / ".git"), "x:0", [str(repo), top.st_dev, top.st_ino]) is None
        assert run_cli_subprocess("monitor", "status", str(repo)).returncode == 1
    finally:
        impostor.kill()


def test_a_monitor_whose_socket_went_stops(example_git: Path) -> None:
    """Nobody can ask a monitor whose socket file was removed or replaced: it leaves (its lock with
    it), so that `monitor start` can start one that answers."""
    import tempfile
    repo = Path(tempfile.mkdtemp(prefix="ks-", dir="/tmp")) / "r"  # a path short enough for a socket file
    shutil.copytree(example_git, repo, symlinks=True)
    pids = [start(repo)]
    try:
        where = address(repo / ".git")
        assert not where.startswith("\0")
        os.unlink(where)
        deadline = time.monotonic() + 20
        while alive(pids[0]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pids[0])
        pids.append(start(repo))
        assert pids[1] != pids[0] and monitoring.status(repo)["pid"] == pids[1]
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(repo.parent)
