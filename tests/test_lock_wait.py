"""A command that waits for one of ksgitops's locks (the repository's write lock; a state folder's
`memos.lock`) held by a process that does not go on (stopped by SIGSTOP): after `waiting.NOTICE`
seconds it says once, on stderr, which process holds it, that it is stopped, and how to stop
waiting; it waits on, and answers once the holder is gone, its `-o json` output untouched (in
`run`, whose log may be JSON lines, the notice is one of them).

Real processes, real SIGSTOP and SIGKILL, real flocks.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import git_init

NOTICE = 2.0  # seconds: ksgitops.io.fs.waiting.NOTICE

ROOT = Path(__file__).resolve().parents[1]

HOLD_STOPPED = """
import fcntl, os, signal, sys
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if os.path.isdir(path) else os.O_CREAT), 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)  # as durable.exclusive and afterwards.hold take theirs
print("held", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
"""


def hold_stopped(path: Path, *more: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_STOPPED, str(path), *more], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    for _ in range(500):  # until it is stopped
        with open(f"/proc/{holder.pid}/stat") as f:
            if f.read().rpartition(")")[2].split()[0] == "T":
                return holder
        time.sleep(0.01)
    raise AssertionError("the holder did not stop")


def ksgitops(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "ksgitops", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "KSGITOPS_MONITOR": "off"})


def first_stderr_line(proc: subprocess.Popen[str], timeout: float = 30) -> tuple[str, float]:
    """The first line the command writes on stderr, and how long it took to come."""
    started = time.monotonic()
    assert proc.stderr is not None
    ready, _, _ = select.select([proc.stderr], [], [], timeout)
    assert ready, f"nothing said on stderr in {timeout} s of waiting"
    return proc.stderr.readline(), time.monotonic() - started


@pytest.fixture
def repo(example: Path) -> Path:
    repo = git_init(example)
    found = subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", str(repo)], cwd=ROOT,
                           capture_output=True, text=True, env={**os.environ, "KSGITOPS_MONITOR": "off"})
    assert found.returncode == 0, found.stderr  # the memos' lock file and state folder are there
    return repo


@pytest.mark.parametrize("locked", ["the repository's write lock", "memos.lock"])
def test_a_command_waiting_for_a_stopped_holder_says_who_and_waits_on(repo: Path, locked: str) -> None:
    """Before: the command waited without a word, for as long as the holder stayed stopped."""
    path = repo if locked != "memos.lock" else repo / ".git/ksgitops-state/memos.lock"
    holder = hold_stopped(path, "https://someone:s3cret-token@example.com/repo.git")
    try:
        proc = ksgitops("reconcile", str(repo), "-o", "json")
        line, after = first_stderr_line(proc)
        assert after >= NOTICE - 0.5, line
        assert line.startswith(f"ksgitops: waiting for the lock on {path}, held by process {holder.pid} (")
        assert "s3cret" not in line and "example.com" not in line  # the holder's name, never its arguments
        assert line.rstrip().endswith(f"which is stopped (`kill -CONT {holder.pid}` lets it go on); waiting until "
                                      f"it lets go (Ctrl-C stops waiting)"), line
        time.sleep(0.5)
        assert proc.poll() is None  # still waiting, as documented
    finally:
        holder.kill()
        holder.wait()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert isinstance(json.loads(out), dict)  # stdout is the JSON document alone
    assert err == ""  # the notice was said once


def test_run_s_json_log_gets_the_notice_as_an_event(repo: Path) -> None:
    holder = hold_stopped(repo)
    try:
        proc = ksgitops("run", "--repo", str(repo), "--once", "--port", "0", "--log-format", "json")
        events = []
        while not any(e.get("event") == "waiting-for-lock" for e in events):
            line, _ = first_stderr_line(proc)
            assert line, events
            events.append(json.loads(line))  # every line of the log is JSON
        [notice] = [e for e in events if e.get("event") == "waiting-for-lock"]
        assert notice["level"] == "warning" and f"held by process {holder.pid}" in notice["message"]
        # before: "(Ctrl-C stops waiting)", but run's Ctrl-C (twice, or SIGTERM) did not stop this wait
        assert "Ctrl-C" not in notice["message"], notice
        assert notice["message"].endswith("(a signal to stop this run takes effect once it has the lock)"), notice
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert proc.poll() is None  # as it says
    finally:
        holder.kill()
        holder.wait()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert all(json.loads(line) for line in err.splitlines())


def test_an_uncontended_lock_is_taken_at_once_without_a_word(repo: Path) -> None:
    started = time.monotonic()
    proc = ksgitops("reconcile", str(repo), "-o", "json")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == "" and json.loads(out)
    assert time.monotonic() - started < 30


def test_the_notice_without_proc_names_no_process() -> None:
    from ksgitops.io.fs import waiting
    assert waiting.notice("/r", []) == "ksgitops: waiting for the lock on /r, held by another process (Ctrl-C stops waiting)"
