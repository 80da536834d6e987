"""A monitor a work-tree command starts by itself (KSGITOPS_MONITOR), and a monitor that stops
after a time without commands (`--idle-exit`): real detached processes beside a work tree."""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import run_cli_subprocess
from ksgitops.app import monitor as monitoring, usecases as app
from ksgitops.io.fs.feed import MONITOR_LOCK
from ksgitops.io.fs.paths import STATE_DIR
from monitor_process import alive
from test_worktree_proof import until_proven

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def _running(repo: Path, within: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        facts = monitoring.status(repo)
        if facts is not None:
            return facts
        time.sleep(0.1)
    raise AssertionError(f"no monitor answered within {within} s")


@pytest.fixture
def stopped_after(example_git: Path) -> Iterator[Path]:
    """The example's work tree; whatever monitor runs for it at the end is killed."""
    yield example_git
    kill_monitor_of(example_git)


def kill_monitor_of(repo: Path, within: float = 60.0) -> None:
    """Kill the monitor of `repo`, also one a command started that does not answer yet (it walks
    the work tree, or its process is still starting): left, it would run for its 3 hours."""
    tried = (repo / ".git" / STATE_DIR / monitoring.LOG).exists()  # a start was tried: wait for it
    deadline = time.monotonic() + (within if tried else 0.0)
    free_since = time.monotonic()
    while True:
        facts = monitoring.status(repo)
        if facts is not None:
            os.kill(int(facts["pid"]), signal.SIGKILL)
            return
        if _lock_taken(repo):
            free_since = time.monotonic()
        elif time.monotonic() - free_since > 1.5 or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def _lock_taken(repo: Path) -> bool:
    return not monitoring._lock_free(repo / ".git" / STATE_DIR)  # the monitor's own test of it


@pytest.mark.parametrize("asked, terminal, ci, paths, wanted", [
    ("auto", True, False, 60_000, True),
    ("auto", True, False, 1_000, False),  # a small work tree: its checks cost less than asking a monitor
    ("auto", False, False, 60_000, False),  # no person waits at a terminal: a script, a pipe
    ("auto", True, True, 60_000, False),  # a CI job ends: a monitor would outlive it for nothing
    ("off", True, False, 60_000, False),
    ("on", False, True, 0, True),
])
def test_who_gets_a_monitor_started(asked: str, terminal: bool, ci: bool, paths: int, wanted: bool) -> None:
    assert monitoring.autostart_wanted(asked, terminal, ci, paths, 50_000) is wanted


def test_a_command_asked_to_starts_a_monitor_that_the_next_one_asks(stopped_after: Path) -> None:
    repo = stopped_after
    done = _cli_with_env({"KSGITOPS_MONITOR": "on"}, "reconcile", str(repo))
    assert done.returncode == 0, done.stderr
    assert "starting `ksgitops monitor` for this work tree" in done.stderr
    facts = _running(repo)
    assert facts["idleExit"] == monitoring.AUTO_IDLE_EXIT
    shown = _cli_with_env({}, "monitor", "status", str(repo))
    assert "it stops after 3 hours without a command" in shown.stdout, shown.stdout
    again = _cli_with_env({"KSGITOPS_MONITOR": "on"}, "reconcile", str(repo))
    assert again.returncode == 0, again.stderr
    assert "starting" not in again.stderr  # the monitor answered: nothing to start
    assert monitoring.status(repo)["pid"] == facts["pid"]  # the same monitor, not a second one
    assert monitoring.stop(repo)


def test_at_a_terminal_a_large_work_tree_gets_one_and_a_small_one_does_not(
        stopped_after: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = stopped_after
    until_proven(repo)
    monkeypatch.delenv("KSGITOPS_MONITOR", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    capsys.readouterr()
    monkeypatch.setattr(app, "ADVISE_FROM", 10_000_000)
    app.reconcile_worktree(repo)
    assert capsys.readouterr().err == ""
    assert not (repo / ".git" / STATE_DIR / monitoring.LOG).exists()  # no start was even tried
    monkeypatch.setattr(app, "ADVISE_FROM", 10)
    app.reconcile_worktree(repo)
    assert "starting `ksgitops monitor`" in capsys.readouterr().err
    _running(repo)
    app.reconcile_worktree(repo)
    assert capsys.readouterr().err == ""  # the monitor answers: no start, no hint
    monkeypatch.setenv("CI", "true")  # a CI job with a terminal: told, nothing started
    monitoring.stop(repo)
    app.reconcile_worktree(repo)
    assert "hint: this run checked" in capsys.readouterr().err
    assert monitoring.status(repo) is None


def test_a_work_tree_beyond_the_kernels_watches_gets_a_hint_and_no_monitor(
        stopped_after: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = stopped_after
    until_proven(repo)
    monkeypatch.setenv("KSGITOPS_MONITOR", "on")
    monkeypatch.setattr(monitoring, "watches_allowed", lambda: 100)
    capsys.readouterr()
    app.reconcile_worktree(repo)
    err = capsys.readouterr().err
    assert "more than the kernel allows (fs.inotify.max_user_watches = 100)" not in err  # no terminal: not told
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    app.reconcile_worktree(repo)
    assert "more than the kernel allows (fs.inotify.max_user_watches = 100)" in capsys.readouterr().err
    time.sleep(0.5)
    assert monitoring.status(repo) is None


def test_a_monitor_with_an_idle_exit_stops_when_no_command_asks(example_git: Path) -> None:
    done = run_cli_subprocess("monitor", "start", str(example_git), "--idle-exit", "1.5", "-o", "json")
    assert done.returncode == 0, done.stderr
    pid = int(json.loads(done.stdout)["pid"])
    try:
        asked = time.monotonic()
        for _ in range(3):  # each command's question puts the stop off
            time.sleep(0.8)
            assert app.reconcile_worktree(example_git) is not None
            asked = time.monotonic()
        assert alive(pid)
        deadline = time.monotonic() + 30
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
        assert time.monotonic() - asked >= 1.4
        log = (example_git / ".git" / STATE_DIR / monitoring.LOG).read_text()
        assert "no command asked for 1.5 s: stopping" in log
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def _cli_with_env(env: dict[str, str], *args: str) -> Any:
    import subprocess
    return subprocess.run([sys.executable, "-m", "ksgitops", *args], capture_output=True, text=True,
                          env={**os.environ, **env})


@pytest.mark.parametrize("how", ["auto", "start"])
def test_a_monitor_works_in_the_folder_it_watches_not_where_it_was_started(stopped_after: Path, how: str) -> None:
    """It outlives the command by hours: in the folder the command ran in, it kept that folder in
    use (an unmount refused, a deleted folder held)."""
    repo = stopped_after
    below = repo / "spaces" / "wmw-c"
    if how == "auto":
        done = _cli_in(below, {"KSGITOPS_MONITOR": "on"}, "reconcile")
    else:
        done = _cli_in(below, {}, "monitor", "start")
    assert done.returncode == 0, done.stderr
    pid = int(_running(repo)["pid"])
    assert os.readlink(f"/proc/{pid}/cwd") == str(repo.resolve())


def _cli_in(folder: Path, env: dict[str, str], *args: str) -> Any:
    import subprocess
    return subprocess.run([sys.executable, "-m", "ksgitops", *args], capture_output=True, text=True, cwd=folder,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), **env})


def test_a_repository_below_the_top_of_a_work_tree_gets_its_monitor(tmp_path: Path) -> None:
    """The monitor watches a work tree's files wherever spaces/ lies in it (`ksgitops init` inside
    a monorepo makes one there); only commands that read commits need spaces/ at the top."""
    from conftest import copy_example_sources, git
    outer = tmp_path / "mono"
    outer.mkdir()
    git(outer, "init", "-q", "-b", "main")
    repo = copy_example_sources(outer / "fleet")
    try:
        done = _cli_with_env({"KSGITOPS_MONITOR": "on"}, "reconcile", str(repo))
        assert done.returncode == 0 and "starting `ksgitops monitor`" in done.stderr, done.stderr
        facts = _running(repo, within=30)
        assert facts["idleExit"] == monitoring.AUTO_IDLE_EXIT
        assert monitoring.stop(repo)
        shown = run_cli_subprocess("monitor", "start", str(repo), "-o", "json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["state"] == "started"
    finally:
        kill_monitor_of(repo)


def test_runs_loop_starts_no_monitor_and_prints_no_hint(
        stopped_after: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`run` (its local work tree's cycles) logs in its own format (JSON lines) and a monitor it
    started would outlive it by hours: its reconciles neither start one nor print a hint."""
    from ksgitops.app import runtimes
    from ksgitops.io.serve import Observer
    repo = stopped_after
    until_proven(repo)
    monkeypatch.setenv("KSGITOPS_MONITOR", "on")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setattr(app, "ADVISE_FROM", 1)
    capsys.readouterr()
    runtimes.LocalRuntime(repo, Observer(), status=False).cycle()
    assert capsys.readouterr().err == ""
    time.sleep(0.5)
    assert not (repo / ".git" / STATE_DIR / monitoring.LOG).exists()  # no start was even tried
    assert monitoring.status(repo) is None


def test_while_a_monitor_holds_its_lock_a_command_says_nothing_of_starting_one(
        stopped_after: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A monitor still walking the work tree (or one watching another folder of the repository)
    holds the lock and answers no command yet: the command neither says it starts one nor tries."""
    import fcntl
    repo = stopped_after
    until_proven(repo)
    monkeypatch.setenv("KSGITOPS_MONITOR", "on")
    state = repo / ".git" / STATE_DIR
    lock = os.open(state / MONITOR_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as a monitor does for its life, from before its first walk
        capsys.readouterr()
        app.reconcile_worktree(repo)
        assert capsys.readouterr().err == ""
    finally:
        os.close(lock)
    assert not (state / monitoring.LOG).exists()  # no start was tried
    app.reconcile_worktree(repo)  # the lock free: this one starts it
    assert "starting `ksgitops monitor`" in capsys.readouterr().err
    _running(repo)
