"""`ksgitops sync` as a process under signals: a SIGTERM while it reads from its git remote.

The remote is a real `git daemon` behind a proxy that holds the daemon's answer back, so the
agent is blocked in a socket read inside libgit2 when the signal comes. libgit2 does not retry a
read that a signal cut short (EINTR): unless the agent's handlers restart interrupted system calls,
the fetch fails and the cycle applies and reports nothing. The rules are `run`'s: the first signal
lets the cycle under way finish (its fetch, apply, report commit and push) and no other start; a
second one lets the write step under way finish and no other start.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, git
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from kube_fixtures import Wec
from stallproxy import StallingProxy, stalling_proxy  # noqa: F401 - the fixture
from sync_fleet import FLORIN, REF, Fleet, fleet, wec, writes  # noqa: F401 - the fixtures


def start_sync(fleet: Fleet, wec: Wec, url: str, cache: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ksgitops", "sync", "--mailbox", FLORIN, "--kubeconfig", str(wec.kubeconfig),
         "--context", wec.context, "--repo", url, "--cache-dir", str(cache),
         "--inventory-namespace", fleet.names.ns(), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})


def signalled_during_fetch(fleet: Fleet, wec: Wec, git_daemon: GitDaemon, proxies: type[StallingProxy],  # noqa: F811
                           tmp_path: Path, signals: int, *extra: str) -> tuple[int, str, str, Path]:
    """Run the agent on the fleet served through a stalling proxy; send `signals` SIGTERMs while its
    first fetch waits for the daemon's answer, then let the answer through: (code, out, err, remote)."""
    remote = git_daemon.bare("fleet.git", fleet.work)
    proxy = proxies(git_daemon.port)
    proxy.arm()
    process = start_sync(fleet, wec, proxy.url("fleet.git"), tmp_path / "agent-cache", *extra)
    try:
        assert proxy.stalled.wait(60), "the agent never fetched"
        time.sleep(0.2)  # the agent is now blocked reading the answer
        for i in range(signals):
            if i:
                time.sleep(0.2)  # two signals at once would be one (the kernel does not queue them)
            process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        proxy.release()
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, out, err, remote


def has_ref(remote: Path, ref: str) -> bool:
    return subprocess.run(["git", "-C", str(remote), "rev-parse", "--verify", "-q", ref],
                          capture_output=True).returncode == 0


@pytest.mark.parametrize("mode", [[], ["--once"]], ids=["loop", "once"])
def test_a_sigterm_during_the_fetch_lets_the_cycle_finish(fleet: Fleet, wec: Wec, git_daemon: GitDaemon,  # noqa: F811
                                                          stalling_proxy: type[StallingProxy], tmp_path: Path,  # noqa: F811
                                                          mode: list[str]) -> None:
    code, out, err, remote = signalled_during_fetch(fleet, wec, git_daemon, stalling_proxy, tmp_path, 1,
                                                    "--interval", "60", *mode)
    assert code == 0, err
    assert "fetch" not in err and "Traceback" not in err, err
    cycles = [line for line in out.splitlines() if line.startswith(f"{FLORIN} @ ")]
    assert len(cycles) == 1 and "pushed" in cycles[0], out  # the cycle under way finished, no other began
    assert has_ref(remote, REF)
    assert git(remote, "rev-parse", f"{REF}^{{tree}}") != git(remote, "rev-parse", "main^{tree}")  # reports in it


def test_a_second_sigterm_lets_the_apply_under_way_finish_and_starts_no_other_write(
        fleet: Fleet, wec: Wec, git_daemon: GitDaemon, stalling_proxy: type[StallingProxy],  # noqa: F811
        tmp_path: Path) -> None:
    """The first SIGTERM comes during the fetch, the second during the apply (the WEC answers
    slowly): the apply finishes, and neither the report commit nor the push starts."""
    remote = git_daemon.bare("fleet.git", fleet.work)
    proxy = stalling_proxy(git_daemon.port)
    proxy.arm()
    wec.wire.delay = 0.2  # an apply of a few seconds
    process = start_sync(fleet, wec, proxy.url("fleet.git"), tmp_path / "agent-cache", "--interval", "60")
    try:
        assert proxy.stalled.wait(60), "the agent never fetched"
        time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        proxy.release()
        deadline = time.monotonic() + 60
        while not writes(wec.wire) and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)  # the apply is under way
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0 and "Traceback" not in err, err
    assert "stopped: a second signal abandoned the cycle" in err and f"{FLORIN} @ " not in out, (out, err)
    applied = {r.path.rsplit("/", 1)[-1].split("?")[0] for r in writes(wec.wire) if r.method == "PATCH"}
    assert {"commond", "httpd-htdocs"} <= applied  # the apply under way ran to its end
    assert not has_ref(remote, REF)  # no report commit was pushed
    cache = next((tmp_path / "agent-cache").iterdir())
    check = subprocess.run(["git", "-C", str(cache), "fsck", "--no-dangling"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert not [ref for ref in git(cache, "for-each-ref", "--format=%(refname)").splitlines()
                if ref.startswith("refs/heads/")]  # nor any made


def test_an_in_process_sync_leaves_the_callers_signal_handlers_alone(fleet: Fleet, cli, wec: Wec) -> None:  # noqa: F811
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    result = cli("sync", "--mailbox", FLORIN, "--kubeconfig", str(wec.kubeconfig), "--context", wec.context,
                 "--repo", str(fleet.remote), "--cache-dir", str(fleet.cache), "--once",
                 "--inventory-namespace", fleet.names.ns())
    assert result.code == 0, result
    assert {sig: signal.getsignal(sig) for sig in before} == before
