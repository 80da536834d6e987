"""Commands handed to the work tree's monitor (io/fs/handoff.py, handoff_worker.py), with real
monitor processes: a handed command prints, exits and writes exactly what it does run in its own
process (errors, two at once, from another folder included); a signal reaches the worker, Ctrl-Z
stops it with its asker; a pager runs in the asking process, on its terminal. What a worker finds
and keeps: tests/test_handoff_worker.py; what a monitor refuses: tests/test_handoff_refusals.py."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli_on_a_terminal, work_tree_files
from ksgitops.io.fs import handoff
from handoff_twins import ks, same_run, served
from handoff_twins import twins  # noqa: F401 - the fixture
from monitor_process import alive


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the monitor is Linux's")


def test_a_handed_command_prints_exits_and_writes_as_one_run_here(twins: tuple[Path, Path]) -> None:
    mine, other = twins
    assert ks("reconcile", str(mine), handed=False).returncode == 0  # the monitor's first look covers everything
    assert ks("reconcile", str(other), handed=False).returncode == 0
    same_run(mine, other, "reconcile")
    for repo in twins:
        path = repo / "spaces/imw1/florin.yaml"
        path.write_text(path.read_text().replace("env: prod", "env: staging", 1))
    assert "staging" in (mine / "spaces/imw1/florin.yaml").read_text()
    same_run(mine, other, "diff", "{}")
    same_run(mine, other, "-C", "{}", "diff", "-o", "json")
    same_run(mine, other, "validate", ".", cwd="spaces")  # the asker's working folder
    same_run(mine, other, "reconcile", ".")
    same_run(mine, other, "wecs", "{}", "-o", "json")
    wec = json.loads(ks("wecs", str(other), "-o", "json", handed=False).stdout)["wecs"][0]["wec"]
    assert "kind:" in same_run(mine, other, "render", wec, "{}")
    for repo in twins:  # invalid input: the error, its exit code, the part frozen
        (repo / "spaces/wmw-c/broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: [\n")
    same_run(mine, other, "reconcile", "{}")
    same_run(mine, other, "diff", "{}", "--debug")


def test_two_handed_commands_at_once_end_as_two_runs_here(twins: tuple[Path, Path]) -> None:
    mine, other = twins
    for repo in twins:
        (repo / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                        "  namespace: commonstuff\ndata:\n  a: b\n")
    before = served(mine)
    env = {**os.environ, handoff.ENV: "1"}
    racing = [subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(mine)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    codes = [p.wait(timeout=300) for p in racing]
    assert codes == [0, 0], [p.stderr.read() for p in racing]  # type: ignore[union-attr]
    assert served(mine) == before + 2
    assert ks("reconcile", str(other), handed=False).returncode == 0
    assert work_tree_files(mine) == work_tree_files(other)


def test_a_signal_to_the_asker_reaches_the_worker(twins: tuple[Path, Path]) -> None:
    """Ctrl-C while a handed `reconcile` waits for another writer's lock: it ends as the same run
    here ends, and writes nothing."""
    mine, other = twins
    for repo in twins:
        (repo / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                        "  namespace: commonstuff\n")
    codes = []
    for repo, handed in ((mine, True), (other, False)):
        before = work_tree_files(repo)
        lock = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(repo)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env={**os.environ, handoff.ENV: "1" if handed else "0"})
            _until_waiting_for(repo, proc)
            proc.send_signal(signal.SIGINT)
            codes.append(proc.wait(timeout=60))
        finally:
            os.close(lock)
        assert work_tree_files(repo) == before
    assert codes == [130, 130]
    assert served(mine) == 1


def _until_waiting_for(folder: Path, proc: subprocess.Popen[bytes]) -> int:
    """Until some process waits for the lock on `folder` (/proc/locks lists a waiter with `->`): its pid."""
    inode = os.stat(folder).st_ino
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if "->" in fields and fields[-3].endswith(f":{inode}"):
                    return int(fields[5])
        assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
        time.sleep(0.02)
    raise AssertionError("no process waits for the lock")


def _held(repo: Path) -> int:
    lock = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def test_an_asker_killed_outright_takes_its_worker_along(twins: tuple[Path, Path]) -> None:
    """SIGKILL cannot be passed on: the worker sees its asker's end of the socket close and dies
    as the command run there would have, before it writes anything."""
    mine, _ = twins
    (mine / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                  "  namespace: commonstuff\n")
    before = work_tree_files(mine)
    lock = _held(mine)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(mine)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, handoff.ENV: "1"})
        worker = _until_waiting_for(mine, proc)
        assert worker != proc.pid and served(mine) == 1
        proc.kill()
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(worker)
    finally:
        os.close(lock)
    time.sleep(0.2)
    assert work_tree_files(mine) == before


@pytest.mark.parametrize("how", ["nohup", "terminated"])
def test_a_signal_ignored_or_fatal_ends_a_handed_command_as_one_run_here(twins: tuple[Path, Path], how: str) -> None:
    """`nohup`: SIGHUP ignored, the run goes on; SIGTERM: the asker dies of it, as the command here would."""
    for repo in twins:
        (repo / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                      "  namespace: commonstuff\n")
    ended = []
    for repo, handed in zip(twins, (True, False)):
        lock = _held(repo)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(repo)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env={**os.environ, handoff.ENV: "1" if handed else "0"},
                                    preexec_fn=(lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
                                    if how == "nohup" else None)
            _until_waiting_for(repo, proc)
            proc.send_signal(signal.SIGHUP if how == "nohup" else signal.SIGTERM)
            time.sleep(0.3)
        finally:
            os.close(lock)
        ended.append(proc.wait(timeout=120))
    assert ended == ([0, 0] if how == "nohup" else [-signal.SIGTERM, -signal.SIGTERM])
    assert work_tree_files(twins[0]) == work_tree_files(twins[1])  # both written, or neither
    assert served(twins[0]) == 1


def test_a_pager_runs_in_the_asking_process_on_its_terminal(twins: tuple[Path, Path], tmp_path: Path) -> None:
    mine, other = twins
    for repo in twins:
        path = repo / "spaces/imw1/florin.yaml"
        path.write_text(path.read_text().replace("env: prod", "env: staging", 1))
    pages = []
    for repo, handed in ((mine, True), (other, False)):
        out = tmp_path / f"paged-{handed}"
        script = f"import os, sys; open('{out}', 'w').write(str(os.getsid(0)) + '\\n' + sys.stdin.read())"
        pager = f'{sys.executable} -c "{script}"'
        code, _ = run_cli_on_a_terminal("diff", str(repo),
                                        env={"KSGITOPS_PAGER": pager, handoff.ENV: "1" if handed else "0"})
        assert code == 1
        sid, _, text = out.read_text().partition("\n")
        assert int(sid) == os.getsid(0)  # the asker's session, not the monitor's
        pages.append(text.replace(str(repo), "REPO"))
    assert pages[0] == pages[1] and "WECs affected" in pages[0]
    assert served(mine) == 1


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(") ", 1)[1][0]


@pytest.mark.parametrize("orphaned", [False, True])
def test_ctrl_z_stops_the_worker_with_its_asker(twins: tuple[Path, Path], orphaned: bool) -> None:
    """Ctrl-Z (SIGTSTP) stops both, SIGCONT resumes both; in an orphaned process group the kernel
    stops neither (a stopped worker with a running asker would wait forever)."""
    mine, _ = twins
    (mine / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                  "  namespace: commonstuff\n")
    lock = _held(mine)
    try:
        placed: dict[str, Any] = {"start_new_session": True} if orphaned else {"process_group": 0}
        proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(mine)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, handoff.ENV: "1"}, **placed)
        worker = _until_waiting_for(mine, proc)
        proc.send_signal(signal.SIGTSTP)
        if orphaned:
            time.sleep(0.5)
            assert "T" not in (_state(proc.pid), _state(worker))
            os.close(lock)
            assert proc.wait(timeout=120) == 0
            return
        deadline = time.monotonic() + 10
        while not (_state(proc.pid) == "T" and _state(worker) == "T") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (_state(proc.pid), _state(worker)) == ("T", "T")
        proc.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 10
        while "T" in (_state(proc.pid), _state(worker)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "T" not in (_state(proc.pid), _state(worker))
    finally:
        with contextlib.suppress(OSError):
            os.close(lock)
        with contextlib.suppress(OSError, NameError):
            os.kill(worker, signal.SIGCONT)  # never left stopped, whatever failed
    assert proc.wait(timeout=120) == 0
