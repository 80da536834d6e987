"""What a monitor must not run for an asker (io/fs/handoff_worker.py `Warm.refusal`), and what an
asker must not do to it: other code (the package or a library edited since it started), other
interpreter settings, other limits or priority, a closed standard stream, a malformed or hostile
request. Each time the command runs in its own process with the output it would have had."""
from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from conftest import copy_example_sources, git_init
from ksgitops.io.fs import handoff
from ksgitops.io.fs.feed import request
from handoff_twins import ks, served

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the monitor is Linux's")
EXTRA = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: commonstuff\n"


@pytest.fixture
def copied(tmp_path: Path) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """A monitor running a copy of the package and of one library (jsonpatch) from tmp_path/lib:
    (the repo, the lib folder, the environment that loads the copies)."""
    lib = tmp_path / "lib"
    shutil.copytree(Path(handoff.__file__).parents[2], lib / "ksgitops", ignore=shutil.ignore_patterns("__pycache__"))
    import jsonpatch
    shutil.copy(jsonpatch.__file__, lib / "jsonpatch.py")
    repo = git_init(copy_example_sources(tmp_path / "repo"))
    env = {"PYTHONPATH": str(lib)}  # run from tmp_path: `python -m` puts the working folder first
    started = subprocess.run([sys.executable, "-m", "ksgitops", "monitor", "start", str(repo), "-o", "json"],
                             capture_output=True, text=True, env={**os.environ, **env}, timeout=120, cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    pid = int(json.loads(started.stdout)["pid"])
    assert ks("reconcile", str(repo), env=env, cwd=tmp_path).returncode == 0
    assert served(repo) == 1
    yield repo, lib, env
    os.kill(pid, signal.SIGKILL)


def test_other_interpreter_settings_limits_or_priority_run_here(copied: tuple[Path, Path, dict[str, str]]) -> None:
    repo, lib, env = copied
    here = lib.parent
    assert ks("diff", str(repo), env={**env, "PYTHONHASHSEED": "7"}, cwd=here).returncode == 0
    assert ks("diff", str(repo), env=env, python=("-X", "dev"), cwd=here).returncode == 0
    assert ks("diff", str(repo), cwd=here).returncode == 0  # the installed package, not the monitor's copy
    for limit in (lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30)), lambda: os.nice(3)):
        other = subprocess.run([sys.executable, "-m", "ksgitops", "diff", str(repo)], capture_output=True, cwd=here,
                               env={**os.environ, **env}, timeout=300, preexec_fn=limit)
        assert other.returncode == 0, other.stderr  # a file size limit, a priority: they must hold for the command
    assert served(repo) == 1
    assert ks("diff", str(repo), env=env, cwd=here).returncode == 0
    assert served(repo) == 2  # the same settings again: handed


@pytest.mark.parametrize("edited", ["ksgitops/core/pipeline.py", "jsonpatch.py"])
def test_a_package_or_library_edited_since_the_monitor_started_runs_here(copied: tuple[Path, Path, dict[str, str]],
                                                                        edited: str) -> None:
    repo, lib, env = copied
    path = lib / edited
    path.write_text(path.read_text() + "\n")
    (repo / "spaces/wmw-c/extra.yaml").write_text(EXTRA)
    assert ks("diff", str(repo), env=env, cwd=lib.parent).returncode == 1
    assert served(repo) == 1
    reply = request(str(repo / ".git"), {"op": "status"})
    assert reply is not None and "changed since the monitor started" in reply["refused"]


@pytest.mark.parametrize("touched", ["ksgitops/core/pipeline.py", "jsonpatch.py"])
def test_a_file_touched_but_not_changed_still_runs_in_the_monitor(copied: tuple[Path, Path, dict[str, str]],
                                                                  touched: str) -> None:
    """An editor's save of the same bytes, a checkout back and forth: the content decides."""
    repo, lib, env = copied
    path = lib / touched
    path.write_bytes(path.read_bytes())
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert ks("diff", str(repo), env=env, cwd=lib.parent).returncode == 0
    assert served(repo) == 2


@pytest.fixture
def monitored(tmp_path: Path) -> Iterator[Path]:
    repo = git_init(copy_example_sources(tmp_path / "repo"))
    started = subprocess.run([sys.executable, "-m", "ksgitops", "monitor", "start", str(repo), "-o", "json"],
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    pid = int(json.loads(started.stdout)["pid"])
    yield repo
    os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("closed", [0, 1, 2])
def test_a_closed_standard_stream_runs_here(monitored: Path, closed: int) -> None:
    """Its number would be taken by the socket; here, the command fails as it would without a monitor."""
    (monitored / "spaces/wmw-c/extra.yaml").write_text(EXTRA)
    code = f"import os, runpy, sys; os.close({closed}); sys.argv = ['ksgitops', 'diff', {str(monitored)!r}]; " \
           "runpy.run_module('ksgitops', run_name='__main__')"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300,
                           env={**os.environ, handoff.ENV: flag}) for flag in ("1", "0")]
    handed, here = ((r.returncode, r.stdout, r.stderr) for r in runs)
    assert handed == here
    assert served(monitored) == 0


def _ask(repo: Path, payload: bytes, fds: list[int] | None = None) -> None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(10)
    conn.connect(handoff.address(str(repo / ".git")))
    if fds:
        socket.send_fds(conn, [handoff.FDS], fds)
    conn.sendall(payload)
    try:
        conn.recv(1 << 16)
    except OSError:
        pass
    conn.close()


def test_a_malformed_or_hostile_request_costs_the_monitor_nothing(monitored: Path) -> None:
    here = os.open(".", os.O_RDONLY)
    try:
        _ask(monitored, b"[" * 200_000 + b"\n")  # nesting past the JSON reader's recursion
        _ask(monitored, json.dumps({"op": "exec", "interpreter": handoff.interpreter(), "streams": 5, "argv": ["x"],
                                    "env": {}, "umask": 18}).encode() + b"\n", [here])
        _ask(monitored, json.dumps({"op": "exec", "interpreter": handoff.interpreter(), "streams": [0, 1, 2],
                                    "argv": [1], "env": {"A": 2}, "umask": "x"}).encode() + b"\n", [here, here])
        _ask(monitored, b"\xff" * 100 + b"\n", [here] * 8)
    finally:
        os.close(here)
    reply = request(str(monitored / ".git"), {"op": "status"})
    assert reply is not None and reply["served"] == 0
    assert ks("wecs", str(monitored)).returncode == 0 and served(monitored) == 1


def test_a_large_environment_is_handed_over(monitored: Path) -> None:
    big = {f"BIG{i}": "x" * 100_000 for i in range(4)}  # one variable holds at most 128 KiB
    assert ks("wecs", str(monitored), env=big).returncode == 0
    assert served(monitored) == 1
