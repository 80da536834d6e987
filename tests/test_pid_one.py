"""The container's PID 1 (Dockerfile ENTRYPOINT `dumb-init -- ksgitops`).

A command run in a container (`docker exec`, `kubectl exec`) that keeps memos after its answer,
as `reconcile --commit` does, ends while its child writes them: the child is adopted by the PID
namespace's init. `ksgitops run` as PID 1 never reaps it (a zombie per command, each holding a
process slot); dumb-init does. Checked in a PID namespace of our own (`unshare`, which needs root)
with `ksgitops run` serving in it, the command entered into it with `nsenter` as `docker exec`
does; skipped where namespaces cannot be made.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from conftest import copy_example_sources, git_init

KSGITOPS = [sys.executable, "-m", "ksgitops"]


def _dumb_init() -> str:
    found = shutil.which("dumb-init") or str(Path(sys.executable).parent / "dumb-init")
    if not os.access(found, os.X_OK):
        pytest.fail("dumb-init is not installed: it is a dependency of ksgitops on Linux (pyproject.toml)")
    return found


@pytest.fixture(scope="module")
def namespaces() -> None:
    missing = [tool for tool in ("unshare", "nsenter") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (util-linux)")
    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode:
        pytest.skip(f"no PID namespace can be made here: {probe.stderr.strip()[-200:]}")


@contextlib.contextmanager
def pid_namespace(argv: list[str], env: dict[str, str]) -> Iterator[int]:
    """Run `argv` as PID 1 of a new PID namespace; yields its process id as seen from here."""
    outer = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--", *argv], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        children: list[str] = []
        while not children and time.monotonic() < deadline:
            children = Path(f"/proc/{outer.pid}/task/{outer.pid}/children").read_text().split()
            time.sleep(0.05)
        assert children, "unshare started no process"
        yield int(children[0])
    finally:
        outer.send_signal(signal.SIGTERM)  # --kill-child: PID 1 goes with it, and the namespace
        try:
            outer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            outer.kill()
            outer.wait()


def zombies_of(pid: int) -> list[int]:
    """The processes `pid` adopted or made that ended and were not reaped."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(line.split(":\t", 1) for line in Path(entry.path, "status").read_text().splitlines()
                          if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid) and fields.get("State", "").startswith("Z"):
            found.append(int(entry.name))
    return found


def _exec_a_committing_command(init: int, repo: Path, env: dict[str, str]) -> None:
    """`reconcile --commit` entered into the namespace; returns once its memos are kept."""
    entered = subprocess.run(["nsenter", "--target", str(init), "--pid", "--", *KSGITOPS, "reconcile", str(repo),
                              "--commit"], env=env, capture_output=True, text=True, timeout=300)
    assert entered.returncode == 0, entered.stderr
    subprocess.run(["flock", "-s", str(repo / ".git" / "ksgitops-state" / "memos.lock"), "true"], check=True,
                   timeout=60)


def _wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def served(tmp_path: Path) -> tuple[list[str], Path, dict[str, str]]:
    """`ksgitops run` over one repository (the container's command) and another to run commands in."""
    watched = git_init(copy_example_sources(tmp_path / "watched"))
    worked = git_init(copy_example_sources(tmp_path / "worked"))
    env = {**os.environ, "KSGITOPS_WORKDIR": str(tmp_path / "clones")}
    run = [*KSGITOPS, "run", "--repo", str(watched), "--port", "0", "--interval", "3600"]
    return run, worked, env


def test_dumb_init_reaps_the_child_a_command_leaves(namespaces: None,
                                                   served: tuple[list[str], Path, dict[str, str]]) -> None:
    run, worked, env = served
    with pid_namespace([_dumb_init(), "--", *run], env) as init:
        for _ in range(3):
            _exec_a_committing_command(init, worked, env)
        assert _wait_for(lambda: not zombies_of(init), 10), f"zombies left under PID 1: {zombies_of(init)}"


def test_ksgitops_run_as_pid_one_would_leave_it_a_zombie(namespaces: None,
                                                          served: tuple[list[str], Path, dict[str, str]]) -> None:
    """Why the image needs an init: without one the adopted child is never reaped (the command
    ends before its child, which writes the memos, so that child is adopted)."""
    run, worked, env = served
    with pid_namespace(run, env) as init:
        left = False
        for _ in range(3):  # the child may, rarely, end before its parent: then no one adopts it
            _exec_a_committing_command(init, worked, env)
            left = _wait_for(lambda: bool(zombies_of(init)), 5)
            if left:
                break
        assert left, "no adopted child was left unreaped by `ksgitops run` as PID 1"
