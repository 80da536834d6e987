"""The container's PID 1: the Dockerfile's ENTRYPOINT (dumb-init), run as the image runs it.

A command run in a container (`docker exec`, `kubectl exec`) that keeps memos after its answer,
as `reconcile --commit` does, ends while its child writes them: the child is adopted by the PID
namespace's init. `ksgitops run` as PID 1 never reaps it (a zombie per command, each holding a
process slot); dumb-init does. The container's own command keeps its memos before it ends (a
child would die with the container), and a stop signal reaches ksgitops alone, as when it was
PID 1. Checked in PID namespaces of our own (`unshare`, which needs root), a command entered into
one with `nsenter` as `docker exec` does; skipped where namespaces cannot be made.
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
from test_dockerfile import entrypoint

KSGITOPS = [sys.executable, "-m", "ksgitops"]


def image_init() -> list[str]:
    """The image's ENTRYPOINT up to `ksgitops`, with this machine's dumb-init (the test extra's)."""
    *init, program = entrypoint()
    assert init and init[0] == "dumb-init" and program == "ksgitops", entrypoint()
    found = shutil.which("dumb-init") or str(Path(sys.executable).parent / "dumb-init")
    if not os.access(found, os.X_OK):
        pytest.fail("dumb-init is not installed: pip install -e '.[test]' (pyproject.toml)")
    return [found, *init[1:]]


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
        outer.kill()  # --kill-child: PID 1 goes with it, and the namespace with PID 1
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
    with pid_namespace([*image_init(), *run], env) as init:
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


def test_the_container_s_own_command_keeps_its_memos(namespaces: None, tmp_path: Path) -> None:
    """`docker run IMAGE reconcile REPO --commit`: the container ends with the command, so the
    command keeps its memos itself (the next run in the same volume reuses them)."""
    repo = git_init(copy_example_sources(tmp_path / "repo"))
    done = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "--", *image_init(), *KSGITOPS,
                           "reconcile", str(repo), "--commit"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    kept = sorted(p.name for p in (repo / ".git" / "ksgitops-state").iterdir())
    assert "reconciled.pickle" in kept and "cache.pickle" in kept, kept


STOPPED = '''
import signal, subprocess, sys, time
mine, childs, ready = sys.argv[1:4]
child = subprocess.Popen([sys.executable, "-c", CHILD, childs, ready])
def stop(*_):
    open(mine, "w").close()
    time.sleep(1.0)  # a signal sent to the whole group would reach the child meanwhile
    child.kill()
    child.wait()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
time.sleep(60)
'''
CHILD = '''
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: (open(sys.argv[1], "w").close(), sys.exit(0)))
open(sys.argv[2], "w").close()
time.sleep(60)
'''


def test_a_stop_signal_reaches_ksgitops_alone(namespaces: None, tmp_path: Path) -> None:
    """`docker stop` signals PID 1: ksgitops gets it, its children (git, the workers of a status
    run) do not, as when ksgitops was PID 1; it ends them itself when it is done."""
    mine, childs, ready = tmp_path / "mine", tmp_path / "child", tmp_path / "ready"
    program = [sys.executable, "-c", f"CHILD = {CHILD!r}\n{STOPPED}", str(mine), str(childs), str(ready)]
    with pid_namespace([*image_init(), *program], dict(os.environ)) as init:
        assert _wait_for(ready.exists, 30), "the child never started"
        os.kill(init, signal.SIGTERM)
        assert _wait_for(mine.exists, 30), "the program was not told to stop"
        assert _wait_for(lambda: not Path(f"/proc/{init}").exists(), 30), "PID 1 did not end with the program"
    assert not childs.exists(), "the stop signal reached the program's child too"
