"""The runtime as a service: its probes and metrics, the `ksgitops run` process (JSON logs, exit 0
on SIGTERM), credentials kept out of errors, the local watch mode, and a remote that becomes
unreachable failing cycles without ending the loop. The remote is a real `git daemon` on
127.0.0.1 (tests/served_fleet.py)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from ksgitops.app import runtime, runtimes
from ksgitops.io.serve import Observer, serve
from ksgitops.model import GitError
from served_fleet import BRANCH, served_example


# --- the process: signals, probes, metrics, logs ------------------------------------------------------

def test_probes_and_metrics(git_daemon: GitDaemon, tmp_path: Path) -> None:
    served_example(git_daemon, tmp_path)
    observer = Observer()
    server = serve(0, observer, host="127.0.0.1")
    port = server.port

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    try:
        assert get("/readyz")[0] == 503 and get("/healthz")[0] == 200
        rt = runtimes.RemoteRuntime(git_daemon.url("fleet.git"), BRANCH, tmp_path / "work", observer)
        assert runtime.loop(rt, 0.1, threading.Event(), once=True) == 0
        assert get("/readyz") == (200, "ready\n")
        status, text = get("/metrics")
        assert status == 200
        values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
                  if line and not line.startswith("#")}
        assert values["ksgitops_cycles_total"] == 1 and values["ksgitops_cycle_failures_total"] == 0
        assert values["ksgitops_wecs"] == 2 and values["ksgitops_commits_total"] == 1
        assert values["ksgitops_reconcile_seconds_count"] == 1 and values["ksgitops_last_success_timestamp_seconds"] > 0
        assert get("/nope")[0] == 404
    finally:
        server.shutdown()


def test_run_process_serves_probes_logs_json_and_exits_0_on_sigterm(git_daemon: GitDaemon, tmp_path: Path) -> None:
    served_example(git_daemon, tmp_path)
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, KSGITOPS_GIT_TOKEN="s3cr3t-token-value", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "run", "--repo", git_daemon.url("fleet.git"),
                             "--interval", "0.2", "--port", str(port), "--log-format", "json",
                             "--workdir", str(tmp_path / "work")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        ready = False
        while time.monotonic() < deadline and not ready:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                    ready = r.status == 200
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert ready, "never became ready"
        time.sleep(0.5)  # a few idle cycles
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    actions = [e["action"] for e in events if e.get("event") == "cycle"]
    assert actions[0] == "reconciled" and "idle" in actions[1:]
    assert "s3cr3t-token-value" not in err


def test_credentials_never_appear_in_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSGITOPS_GIT_TOKEN", "tok-123-secret")
    with pytest.raises(GitError) as info:
        runtimes.RemoteRuntime("http://user:pa55word@127.0.0.1:9/none.git", BRANCH, tmp_path, Observer()).cycle()
    text = str(info.value.problems[0])
    assert "127.0.0.1:9" in text and "pa55word" not in text and "tok-123-secret" not in text


def test_local_watch_mode_reconciles_on_change(example: Path) -> None:
    rt = runtimes.LocalRuntime(example, Observer())
    stop = threading.Event()
    cycles: list[Any] = []
    thread = threading.Thread(target=runtime.loop, args=(rt, 30.0, stop),
                              kwargs={"watch": True, "on_cycle": cycles.append})
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not cycles and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (example / "spaces/imw1-mb-florin/kustomization.yaml").is_file()
        assert (example / "STATUS.md").is_file()
        florin = example / "spaces/imw1/florin.yaml"
        florin.write_text(florin.read_text().replace("env: prod", "env: dev"))
        while len(cycles) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(cycles) >= 2, "no cycle after a source change (the interval is 30 s: only the watch can do it)"
        assert not (example / "spaces/imw1-mb-florin/objects/core/configmaps/commonstuff").exists()
        time.sleep(1.0)
        assert len(cycles) == 2  # its own writes do not trigger it again
    finally:
        stop.set()
        thread.join(timeout=10)


def test_an_unreachable_remote_fails_cycles_without_ending_the_loop(tmp_path: Path) -> None:
    with GitDaemon(tmp_path / "served") as daemon:
        served_example(daemon, tmp_path)
        observer = Observer()
        rt = runtimes.RemoteRuntime(daemon.url("fleet.git"), BRANCH, tmp_path / "work", observer)
        assert runtime.loop(rt, 0.05, threading.Event(), once=True) == 0 and observer.ready
    # the daemon is gone: every fetch fails
    assert runtime.loop(rt, 0.05, threading.Event(), once=True) == 3
    assert observer.ready  # one failed cycle is not enough to be taken out of service
    stop = threading.Event()
    thread = threading.Thread(target=runtime.loop, args=(rt, 0.05, stop), kwargs={"max_backoff": 0.1})
    thread.start()
    time.sleep(0.5)
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()
    failures = observer.failures._value.get()  # noqa: SLF001 - the counter's own value
    assert failures >= 3, failures
    assert not observer.ready and "fetch of main" in observer.readiness()[1]
