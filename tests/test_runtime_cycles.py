"""`ksgitops run`'s cycles against a real `git daemon`: one commit per cycle, what each cycle logs,
backoff on failing cycles and the readiness it drives.

Helpers (a served example, a human's clone) come from test_runtime.py.
"""
from __future__ import annotations

import io
import json
import logging
import random
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import git
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from ksgitops.app import runtime, runtimes
from ksgitops.core.load.repoconfig import SOURCE_TRAILER
from ksgitops.io.serve import JsonFormatter, Observer
from ksgitops.model import GitError, KsgitopsError, Origin, Problem
from served_fleet import (BRANCH, fast_forward_only, fresh_generated, generated_ids, human_clone, human_edit,
                         remote_head, remote_runtime, served_example)

REPORT = ('{"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "commonstuff", "name": "httpd-htdocs"},'
          ' "reportedAt": "2030-01-01T00:00:00Z"}\n')


def push_report_ref(daemon: GitDaemon, tmp_path: Path, mailbox: str) -> None:
    """What a `ksgitops sync` agent pushes: a commit holding only its mailbox's reported/ folder."""
    agent = tmp_path / f"agent-{mailbox}"
    report = agent / f"spaces/{mailbox}/reported/core/configmaps/commonstuff/httpd-htdocs.yaml"
    report.parent.mkdir(parents=True)
    report.write_text(REPORT)
    subprocess.run(["git", "init", "-q", "-b", "reports", str(agent)], check=True)
    git(agent, "add", "-A")
    git(agent, "commit", "-qm", f"reports of {mailbox}")
    git(agent, "push", "-q", daemon.url("fleet.git"), f"HEAD:refs/heads/ksgitops/reported/{mailbox}")


def message(bare: Path, rev: str) -> str:
    return git(bare, "log", "-1", "--format=%B", rev)


@pytest.fixture
def log_lines() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """The `ksgitops` logger's records, as text lines and as JSON lines."""
    text, data = io.StringIO(), io.StringIO()
    handlers = [logging.StreamHandler(text), logging.StreamHandler(data)]
    handlers[1].setFormatter(JsonFormatter())
    logger = logging.getLogger("ksgitops")
    old = logger.level
    logger.setLevel(logging.INFO)
    for h in handlers:
        logger.addHandler(h)
    try:
        yield text, data
    finally:
        for h in handlers:
            logger.removeHandler(h)
        logger.setLevel(old)


def events(data: io.StringIO, event: str) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, data.getvalue().splitlines()) if e.get("event") == event]


# --- one commit per cycle ---------------------------------------------------------------------------

def test_each_cycle_is_one_commit_on_the_remote(git_daemon: GitDaemon, tmp_path: Path) -> None:  # noqa: F811
    """Reconcile + status (first cycle), a source edit (reconcile + status), a report ref (fold-in +
    status): each cycle puts exactly one commit on the remote, right on top of what it read, with
    one Ksgitops-Source trailer; and the result equals reconcile, then status, run separately."""
    bare = served_example(git_daemon, tmp_path)
    rt = remote_runtime(git_daemon, tmp_path)
    human = human_clone(git_daemon, tmp_path)
    cycles = []

    def cycle() -> runtimes.CycleResult:
        before = remote_head(bare)
        result = rt.cycle()
        assert result.commit is not None and result.pushed and remote_head(bare) == result.commit == result.head
        assert git(bare, "rev-parse", f"{result.commit}^") == before  # one commit, on what it read
        cycles.append(result)
        return result

    seed = remote_head(bare)
    first = cycle()
    assert (first.action, first.source, first.changed_wecs, first.folded_wecs) == ("reconciled", seed, 2, 0)
    text = message(bare, BRANCH)
    assert text.startswith(f"ksgitops: reconcile {seed[:7]}\n\nreconcile: 2 mailboxes changed\nstatus: ")
    assert "[skip ci]" in text and text.count(f"{SOURCE_TRAILER}: ") == 1 and text.endswith(f"{SOURCE_TRAILER}: {seed}")
    assert "STATUS.md" in git(bare, "ls-tree", "--name-only", BRANCH).split()

    edited = human_edit(human, "spaces/imw1/florin.yaml", "env: prod", "env: dev", "florin leaves prod")
    second = cycle()
    assert (second.action, second.source, second.changed_wecs) == ("reconciled", edited, 1)

    push_report_ref(git_daemon, tmp_path, "imw1-mb-guilder")
    third = cycle()
    assert (third.action, third.source, third.changed_wecs, third.folded_wecs) == ("summarized", edited, 0, 1)
    assert third.status_files >= 1
    assert message(bare, BRANCH).startswith("ksgitops: fold in reports of 1 WEC\n\nfold-in: reports of 1 WEC\nstatus: ")
    assert "2030-01-01T00:00:00Z" in git(bare, "show", f"{BRANCH}:STATUS.md")
    assert git(bare, "ls-tree", "-r", "--name-only", BRANCH, "spaces/imw1-mb-guilder/reported")

    assert rt.cycle().action == "idle"  # its own commits trigger nothing
    commits = git(bare, "rev-list", f"{seed}..{BRANCH}").split()
    assert len(commits) == 4  # three cycles, one commit each, and the human's
    fast_forward_only(bare)
    assert generated_ids(bare) == fresh_generated(bare, tmp_path, "two-step")


def test_a_cycle_with_nothing_to_change_commits_nothing(git_daemon: GitDaemon, tmp_path: Path,  # noqa: F811
                                                        log_lines: tuple[io.StringIO, io.StringIO]) -> None:
    bare = served_example(git_daemon, tmp_path)
    rt = remote_runtime(git_daemon, tmp_path)
    observer = rt.observer
    assert runtime.loop(rt, 0.1, threading.Event(), once=True) == 0
    human = human_clone(git_daemon, tmp_path)
    (human / "spaces/wmw-c/unplaced.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unplaced, namespace: nowhere}\ndata: {a: b}\n")
    git(human, "add", "-A")
    git(human, "commit", "-qm", "an object no placement selects")
    git(human, "push", "-q", "origin", BRANCH)
    unplaced = git(human, "rev-parse", "HEAD")
    assert runtime.loop(rt, 0.1, threading.Event(), once=True) == 0
    assert remote_head(bare) == unplaced and observer.ready
    text, data = log_lines
    lines = [line for line in text.getvalue().splitlines() if line.startswith("cycle: ")]
    assert re.fullmatch(rf"cycle: reconciled source {unplaced[:12]}: nothing changed, no commit in \d+\.\d+s", lines[-1])
    last = events(data, "cycle")[-1]
    assert (last["source"], last["commit"], last["changedWecs"], last["pushed"]) == (unplaced, None, 0, False)


# --- the log says what each cycle did ------------------------------------------------------------------

def test_log_lines_name_the_source_the_commit_and_the_push(git_daemon: GitDaemon, tmp_path: Path,  # noqa: F811
                                                           log_lines: tuple[io.StringIO, io.StringIO]) -> None:
    bare = served_example(git_daemon, tmp_path)
    seed = remote_head(bare)
    rt = remote_runtime(git_daemon, tmp_path)
    assert runtime.loop(rt, 0.1, threading.Event(), once=True) == 0
    assert runtime.loop(rt, 0.1, threading.Event(), once=True) == 0
    head = remote_head(bare)
    text, data = log_lines
    lines = [line for line in text.getvalue().splitlines() if line.startswith("cycle: ")]
    assert re.fullmatch(rf"cycle: reconciled source {seed[:12]}: committed {head[:12]} \(2 WECs changed, "
                        rf"\d+ status files changed\), pushed in \d+\.\d+s", lines[0]), lines
    assert re.fullmatch(rf"cycle: idle, nothing new at {head[:12]} in \d+\.\d+s", lines[1]), lines
    first, second = events(data, "cycle")
    assert {k: first[k] for k in ("action", "source", "commit", "changedWecs", "foldedWecs", "pushed", "head")} == {
        "action": "reconciled", "source": seed, "commit": head, "changedWecs": 2, "foldedWecs": 0, "pushed": True,
        "head": head}
    assert first["statusFiles"] >= 2 and first["seconds"] > 0
    assert (second["action"], second["commit"], second["pushed"]) == ("idle", None, False)


# --- backoff and readiness ---------------------------------------------------------------------------

def test_backoff_doubles_from_the_interval_with_jitter_and_stops_at_the_maximum() -> None:
    backoff = runtime.Backoff(2.0, 30.0, random.Random(7))
    assert backoff.delay(0) == 2.0  # after a success: the interval, untouched
    for failures, nominal in ((1, 2.0), (2, 4.0), (3, 8.0), (4, 16.0)):
        waits = [backoff.delay(failures) for _ in range(200)]
        assert all(0.8 * nominal <= w <= 1.2 * nominal for w in waits), (failures, min(waits), max(waits))
        assert max(waits) - min(waits) > 0.2 * nominal  # jittered, not a fixed step
    for failures in (5, 6, 50, 10**6):
        waits = [backoff.delay(failures) for _ in range(200)]
        assert all(24.0 <= w <= 30.0 for w in waits)  # the maximum bounds it, jitter stays below it
    slow = runtime.Backoff(600.0, 300.0, random.Random(1))  # an interval above the maximum is not shortened
    assert all(480.0 <= slow.delay(n) <= 600.0 for n in (1, 2, 9))


def test_failing_cycles_back_off_make_readyz_fail_with_the_reason_and_a_success_resets(
        git_daemon: GitDaemon, tmp_path: Path, log_lines: tuple[io.StringIO, io.StringIO]) -> None:  # noqa: F811
    served_example(git_daemon, tmp_path)
    observer = Observer(unready_after=3)
    rt = runtimes.RemoteRuntime(git_daemon.url("fleet.git"), BRANCH, tmp_path / "work", observer, retries=8)
    assert runtime.loop(rt, 0.05, threading.Event(), once=True) == 0 and observer.ready
    human = human_clone(git_daemon, tmp_path)
    (human / "ksgitops.yaml").write_text("apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: RepoConfig\n"
                                         "spec: {push: {retries: many}}\n")
    git(human, "add", "-A")
    git(human, "commit", "-qm", "a broken RepoConfig")
    git(human, "push", "-q", "origin", BRANCH)
    stop = threading.Event()
    thread = threading.Thread(target=runtime.loop, args=(rt, 0.05, stop),
                              kwargs={"max_backoff": 0.4, "rng": random.Random(3)})
    thread.start()
    try:
        _, data = log_lines
        deadline = time.monotonic() + 30
        while len(events(data, "cycle-failed")) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        failed = events(data, "cycle-failed")
        assert len(failed) >= 6
        ready, why = observer.readiness()
        assert not ready and why.startswith("not ready: ") and "ksgitops.yaml" in why and "\n" not in why
        waits = [e["backoffSeconds"] for e in failed]
        for n, wait in enumerate(waits[:6], start=1):
            nominal = min(0.4, 0.05 * 2 ** (n - 1))
            assert 0.8 * nominal - 1e-3 <= wait <= min(0.4, 1.2 * nominal) + 1e-3, waits
        assert [e["failuresInARow"] for e in failed[:6]] == [1, 2, 3, 4, 5, 6]
        assert [e["ready"] for e in failed[:3]] == [True, True, False]
        assert observer.backoff._value.get() >= 0.32  # noqa: SLF001 - the gauge's own value
        git(human, "rm", "-q", "ksgitops.yaml")
        git(human, "commit", "-qm", "fixed")
        git(human, "push", "-q", "origin", BRANCH)
        while not observer.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        assert observer.readiness() == (True, "ready")
        assert observer.backoff._value.get() == 0 and observer.failures_in_a_row._value.get() == 0  # noqa: SLF001
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()


def test_readiness_reason_is_one_line_without_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSGITOPS_GIT_TOKEN", "tok-123-secret")
    observer = Observer(unready_after=1)
    rt = runtimes.RemoteRuntime("http://user:pa55word@127.0.0.1:9/none.git", BRANCH, tmp_path, observer)
    assert runtime.loop(rt, 0.05, threading.Event(), once=True) == 3
    ready, why = observer.readiness()
    assert not ready and "127.0.0.1:9" in why and "clone failed" in why
    assert "pa55word" not in why and "tok-123-secret" not in why and "\n" not in why


def test_failure_reasons_are_scrubbed_one_line_and_bounded() -> None:
    error = GitError("push to https://bot:hunter2@example.invalid/fleet.git refused:\n  remote says no")
    assert runtime.failure_reason(error) == (
        "ksgitops: push to https://***@example.invalid/fleet.git refused: remote says no")
    many = KsgitopsError([Problem(Origin("b.yaml", 2), "second"), Problem(Origin("a.yaml", 1), "first"),
                          Problem(Origin("c.yaml", 3), "third")])
    assert runtime.failure_reason(many) == "a.yaml:1: first (and 2 more problems)"
    assert len(runtime.failure_reason(KsgitopsError("x" * 5000))) == runtime.MAX_REASON
    assert runtime.failure_reason(ZeroDivisionError("secret detail")) == (
        "internal error (ZeroDivisionError); the next cycle starts afresh")


def test_local_mode_logs_what_it_wrote(example: Path, log_lines: tuple[io.StringIO, io.StringIO]) -> None:
    rt = runtimes.LocalRuntime(example, Observer())
    assert runtime.loop(rt, 0.1, threading.Event(), once=True) == 0
    assert runtime.loop(rt, 0.1, threading.Event(), once=True) == 0
    text, data = log_lines
    lines = [line for line in text.getvalue().splitlines() if line.startswith("cycle: ")]
    assert re.fullmatch(r"cycle: local, the work tree: written \(2 WECs changed, \d+ status files changed\) "
                        r"in \d+\.\d+s", lines[0]), lines
    assert re.fullmatch(r"cycle: local, the work tree: nothing changed in \d+\.\d+s", lines[1]), lines
    first = events(data, "cycle")[0]
    assert (first["source"], first["commit"], first["changedWecs"], first["pushed"]) == ("worktree", None, 2, False)


@pytest.mark.parametrize("configured, given, expected", [(0.25, None, 0.25), (0.25, 7.0, 7.0), (None, None, 60.0)])
def test_the_poll_interval_comes_from_repoconfig_unless_given(example: Path, configured: float | None,
                                                               given: float | None, expected: float) -> None:
    """`run` without --interval waits RepoConfig's poll.intervalSeconds (of what it last
    reconciled) between cycles, 60 s without one; --interval wins."""
    if configured is not None:
        (example / "ksgitops.yaml").write_text("apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: RepoConfig\n"
                                               f"spec:\n  poll: {{intervalSeconds: {configured}}}\n")
    rt = runtimes.LocalRuntime(example, Observer())
    waits: list[float] = []

    class Recording(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waits.append(float(timeout or 0))
            if len(waits) == 2:
                self.set()
            return self.is_set()

    assert runtime.loop(rt, given, Recording()) == 0
    assert waits == [expected, expected] and rt.observer.stall_after >= 10 * expected
