"""`ksgitops run` as a process: option checks, a port in use, a bare repository as `--repo`, and
signals (a real subprocess, real SIGTERMs), plus the shutdown rules in-process with real signals.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import copy_example_sources, git, git_init
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from ksgitops.app.shutdown import Abandoned, Shutdown
from served_fleet import BRANCH, remote_head, served_example

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ksgitops", "run", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def start(*args: str, hangup: object = signal.SIG_DFL) -> subprocess.Popen[str]:
    """`ksgitops run` with SIGHUP as `hangup` (default: the default action, whatever this test run ignores)."""
    return subprocess.Popen([sys.executable, "-m", "ksgitops", "run", "--log-format", "json", "--port", "0", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"),
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, hangup))  # noqa: PLW1509


def wait_for_event(proc: subprocess.Popen[str], event: str, timeout: float = 60) -> list[dict]:
    """Read the JSON log until `event`; returns the events read."""
    seen = []
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if line.startswith("{"):
            seen.append(json.loads(line))
            if seen[-1].get("event") == event:
                return seen
    raise AssertionError(f"no {event} event; saw {seen}")


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in folder.rglob("*") if p.is_file()}


# --- options ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, shown", [
    (["--interval", "0"], "0.0"), (["--interval", "-5"], "-5.0"), (["--interval", "nan"], "nan"),
    (["--interval", "inf"], "inf"), (["--port", "70000"], "70000"), (["--port", "-1"], "-1"),
    (["--push-retries", "-1"], "-1"), (["--max-backoff", "0"], "0.0"), (["--unready-after", "0"], "0"),
])
def test_bad_numbers_are_usage_errors_naming_the_value(args: list[str], shown: str, tmp_path: Path) -> None:
    found = run("--repo", str(tmp_path / "nowhere.git"), "--workdir", str(tmp_path / "work"), "--once", *args)
    assert found.returncode == 2, found.stderr
    option = args[0]
    assert f"Invalid value for '{option}': {shown}" in found.stderr
    assert "Traceback" not in found.stderr and "internal error" not in found.stderr
    assert not (tmp_path / "work").exists()


def test_a_port_in_use_is_one_line_exit_2(tmp_path: Path) -> None:
    with socket.create_server(("0.0.0.0", 0)) as taken:  # noqa: S104 - where run listens
        port = taken.getsockname()[1]
        found = run("--repo", str(tmp_path / "nowhere.git"), "--port", str(port), "--once",
                    "--workdir", str(tmp_path / "work"))
    assert found.returncode == 2
    assert found.stderr.splitlines() == [f"ksgitops: --port {port}: already in use (another process listens on it)"]
    assert not (tmp_path / "work").exists()


def test_a_bad_port_from_the_environment_names_it(tmp_path: Path) -> None:
    found = run("--repo", str(tmp_path), "--once", env={"KSGITOPS_PORT": "http"})
    assert found.returncode == 2 and "Invalid value for '--port': 'http'" in found.stderr
    assert "Traceback" not in found.stderr


# --- --repo PATH of a bare repository -----------------------------------------------------------------

def test_a_bare_repository_is_a_remote_written_only_by_pushes(tmp_path: Path) -> None:
    seed = git_init(copy_example_sources(tmp_path / "seed"))
    bare = tmp_path / "fleet.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], check=True)
    before, head = files_of(bare), remote_head(bare)
    found = run("--repo", str(bare), "--once", "--port", "0", "--workdir", str(tmp_path / "work"))
    assert found.returncode == 0, found.stderr
    assert git(bare, "rev-parse", f"{BRANCH}^") == head  # one commit, pushed onto what was there
    assert "STATUS.md" in git(bare, "ls-tree", "--name-only", BRANCH).split()
    after = files_of(bare)
    touched = {p for p in after if before.get(p) != after[p]} | (set(before) - set(after))
    assert touched and all(p.split("/")[0] in ("objects", "refs", "logs", "packed-refs") for p in touched), touched
    assert not any(name in after for name in ("STATUS.md", "ksgitops-state/cache.pickle"))
    assert not (bare / "spaces").exists()
    assert list((tmp_path / "work").glob("*.git"))  # the clone it worked in


def test_the_git_directory_of_a_work_tree_is_refused(tmp_path: Path) -> None:
    checkout = git_init(copy_example_sources(tmp_path / "checkout"))
    before = files_of(checkout)
    found = run("--repo", str(checkout / ".git"), "--once", "--port", "0", "--workdir", str(tmp_path / "work"))
    assert found.returncode == 2
    assert found.stderr.splitlines() == [
        f"ksgitops: --repo {checkout / '.git'}: is the git directory of the work tree {checkout}/; give the work "
        f"tree, or a URL or bare repository to clone"]
    assert files_of(checkout) == before  # nothing written, in the git directory or the work tree


# --- signals -----------------------------------------------------------------------------------------

def run_until_signalled(url: str, workdir: Path, signals: int, after: str = "clone",
                        sig: signal.Signals = signal.SIGTERM) -> tuple[int, str, list[dict]]:
    """`ksgitops run` on `url` (polling every 60 s), sent `signals` times `sig` once it logged `after`
    (its clone is ready: the first cycle is under way): (exit code, stderr, the JSON log events)."""
    proc = start("--repo", url, "--interval", "60", "--workdir", str(workdir))
    try:
        seen = wait_for_event(proc, after)
        for i in range(signals):
            if i:
                time.sleep(0.2)  # two signals at once would be one (the kernel does not queue them)
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err, seen + [json.loads(line) for line in err.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])  # SIGHUP: a closed session, `docker kill -s HUP`
def test_sigterm_finishes_the_cycle_under_way_then_exits_0(sig: signal.Signals, git_daemon: GitDaemon,  # noqa: F811
                                                           tmp_path: Path) -> None:
    bare = served_example(git_daemon, tmp_path)
    seed = remote_head(bare)
    code, err, logged = run_until_signalled(git_daemon.url("fleet.git"), tmp_path / "work", 1, sig=sig)
    assert code == 0, err
    cycle = [e for e in logged if e.get("event") in ("cycle", "cycle-failed")]
    assert [(e["action"], e["pushed"]) for e in cycle] == [("reconciled", True)], err  # finished, and no other
    assert logged[-1]["event"] == "stop" and logged[-1]["abandoned"] is False
    assert git(bare, "rev-parse", f"{BRANCH}^") == seed and remote_head(bare) == cycle[0]["commit"]


def test_sigterm_while_waiting_for_the_next_poll_exits_at_once(git_daemon: GitDaemon, tmp_path: Path) -> None:  # noqa: F811
    served_example(git_daemon, tmp_path)
    started = time.monotonic()
    code, err, logged = run_until_signalled(git_daemon.url("fleet.git"), tmp_path / "work", 1, after="cycle")
    assert code == 0, err
    assert time.monotonic() - started < 30  # not the 60 s interval
    assert [e["event"] for e in logged][-2:] == ["cycle", "stop"]


def test_a_second_sigterm_abandons_a_long_reconcile_between_write_steps(git_daemon: GitDaemon, tmp_path: Path) -> None:  # noqa: F811
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import fleet
    finally:
        sys.path.remove(str(BENCHMARKS))
    fleet.generate(tmp_path / "big", 600, 100)  # a reconcile of some seconds
    bare = git_daemon.bare("fleet.git", git_init(tmp_path / "big"))
    seed = remote_head(bare)
    code, err, logged = run_until_signalled(git_daemon.url("fleet.git"), tmp_path / "work", 2)
    assert code == 0 and "Traceback" not in err, err
    messages = [e["message"] for e in logged]
    assert not [e for e in logged if e.get("event") in ("cycle", "cycle-failed")], messages  # the rest was skipped
    assert logged[-1]["event"] == "stop" and logged[-1]["abandoned"] is True, messages
    assert remote_head(bare) == seed
    for repo in [bare, *(tmp_path / "work").glob("*.git")]:
        check = subprocess.run(["git", "-C", str(repo), "fsck", "--no-dangling"], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


@pytest.fixture
def shutdown() -> Shutdown:
    """A Shutdown handling this process's SIGTERM; the previous handler is restored after."""
    guard = Shutdown()
    old = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, guard.on_signal)
    yield guard
    signal.signal(signal.SIGTERM, old)


def sigterm() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.01)  # the handler runs in this thread at the next bytecode


def test_a_write_step_is_never_cut_short(shutdown: Shutdown) -> None:
    written = []
    sigterm()
    assert shutdown.requested.is_set() and not shutdown.abandoned
    shutdown.checkpoint()  # the first signal only asks: the cycle goes on
    for i in range(5):  # a write step: both signals arrive inside it
        written.append(i)
        if i == 2:
            sigterm()
    assert written == [0, 1, 2, 3, 4] and shutdown.abandoned
    with pytest.raises(Abandoned):
        shutdown.checkpoint()  # the next write step does not start


def test_computation_stops_at_once_on_the_second_signal(shutdown: Shutdown) -> None:
    sigterm()
    reached = []
    with pytest.raises(Abandoned):
        with shutdown.computing():
            for i in range(1000):
                reached.append(i)
                if i == 10:
                    sigterm()
    assert reached[-1] < 1000 - 1
    with pytest.raises(Abandoned):
        with shutdown.computing():  # nothing more is computed
            reached.append(-1)
    assert reached[-1] != -1


@pytest.fixture
def hangup_default() -> Iterator[None]:
    """SIGHUP with its default action, as a session's process has it (the suite may run under nohup)."""
    old = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGHUP, old)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_each_stop_signal_asks_then_abandons_and_its_handler_goes_after(sig: signal.Signals,
                                                                          hangup_default: None) -> None:
    """`installed()`, as `run` and `sync` use it: the first signal asks, the second abandons;
    afterwards the handlers before it are back."""
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    guard = Shutdown()
    with guard.installed():
        os.kill(os.getpid(), sig)
        time.sleep(0.01)
        assert guard.requested.is_set() and not guard.abandoned
        os.kill(os.getpid(), sig)
        time.sleep(0.01)
        assert guard.abandoned
    assert {s: signal.getsignal(s) for s in before} == before


def test_under_nohup_sighup_stays_ignored(hangup_default: None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    guard = Shutdown()
    with guard.installed():
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.01)
        assert not guard.requested.is_set()
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN


def test_run_started_under_nohup_outlives_a_hangup(git_daemon: GitDaemon, tmp_path: Path) -> None:  # noqa: F811
    served_example(git_daemon, tmp_path)
    proc = start("--repo", git_daemon.url("fleet.git"), "--interval", "60", "--workdir", str(tmp_path / "work"),
                 hangup=signal.SIG_IGN)
    try:
        wait_for_event(proc, "cycle")
        proc.send_signal(signal.SIGHUP)
        time.sleep(1)
        assert proc.poll() is None  # still running
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err


def test_python_m_ksgitops_works_with_the_current_directory_in_a_git_directory(example_git: Path, tmp_path: Path) -> None:
    """ksgitops keeps its state in `<git dir>/ksgitops-state/`: a folder named like the package there
    made `python -m ksgitops`, started inside a bare repository (or `.git/`), import that folder."""
    bare = tmp_path / "fleet.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(example_git), str(bare)], check=True)
    for cwd, repo in ((bare, bare), (example_git / ".git", example_git)):
        done = subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", "--commit", "--source", "main", str(repo)],
                              cwd=cwd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert (cwd / "ksgitops-state").is_dir() and not (cwd / "ksgitops").exists()
        again = subprocess.run([sys.executable, "-m", "ksgitops", "--version"], cwd=cwd, capture_output=True, text=True,
                               timeout=60)
        assert again.returncode == 0 and "ksgitops, version" in again.stdout, again.stderr
