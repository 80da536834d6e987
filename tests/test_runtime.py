"""`ksgitops run` and `--push` against a real `git daemon` on 127.0.0.1: one reconciler's cycles,
reconcilers racing each other and a human, and SIGKILL at random points.

A "human" is the git CLI in a clone of its own; reconcilers are RemoteRuntimes (in-process) or
`ksgitops` subprocesses. Every remote is a bare repository that logs its ref updates, so a test
can prove that no update was forced: each logged head is a descendant of the one before
(tests/served_fleet.py). The process around the loop: tests/test_runtime_service.py.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import git
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from ksgitops.app import publish as publishing
from ksgitops.model import GitError
from served_fleet import (BRANCH, fast_forward_only, flip_env, fresh_generated, generated_ids, human_clone,
                          human_edit, remote_head, remote_runtime, served_example, trailer)


# --- one reconciler -----------------------------------------------------------------------------------

def test_cycles_reconcile_summarize_push_and_ignore_their_own_commits(git_daemon: GitDaemon, tmp_path: Path) -> None:
    bare = served_example(git_daemon, tmp_path)
    sources = remote_head(bare)
    rt = remote_runtime(git_daemon, tmp_path)
    assert rt.repo.is_bare
    first = rt.cycle()
    assert first.action == "reconciled" and first.pushed and first.commit == first.head  # reconcile + status: one commit
    assert remote_head(bare) == first.head and git(bare, "rev-parse", f"{BRANCH}~1") == sources
    assert trailer(bare) == sources
    assert "[skip ci]" in git(bare, "log", "-1", "--format=%B")
    tree = git(bare, "ls-tree", "--name-only", BRANCH).split()
    assert "STATUS.md" in tree
    assert rt.cycle().action == "idle"  # its own commits trigger nothing

    human = human_clone(git_daemon, tmp_path)
    edited = human_edit(human, "spaces/imw1/florin.yaml", "env: prod", "env: dev", "florin leaves prod")
    second = rt.cycle()
    assert second.action == "reconciled" and second.pushed
    assert trailer(bare) == edited
    ls = git(bare, "ls-tree", "-r", "--name-only", BRANCH, "spaces/imw1-mb-florin/objects")
    assert "commonstuff" not in ls  # placement c no longer reaches florin
    fast_forward_only(bare)


def test_a_commit_touching_only_generated_paths_triggers_nothing(git_daemon: GitDaemon, tmp_path: Path) -> None:
    bare = served_example(git_daemon, tmp_path)
    ours = remote_runtime(git_daemon, tmp_path, who="ours")
    assert ours.cycle().action == "reconciled"
    other = remote_runtime(git_daemon, tmp_path, who="other")  # another reconciler, started later
    assert other.cycle().action == "reconciled" and not other.cycle().pushed  # it had nothing to add
    human = human_clone(git_daemon, tmp_path)
    (human / "spaces/wmw-c/.ksgitops/status/note.txt").parent.mkdir(parents=True, exist_ok=True)
    (human / "spaces/wmw-c/.ksgitops/status/note.txt").write_text("generated-looking\n")
    git(human, "add", "-A")
    git(human, "commit", "-qm", "a generated-only change")
    git(human, "push", "-q", "origin", BRANCH)
    assert ours.cycle().action == "generated-only"
    assert remote_head(bare) == git(human, "rev-parse", "HEAD")


def test_new_reports_are_summarized_without_reconciling(git_daemon: GitDaemon, tmp_path: Path) -> None:
    bare = served_example(git_daemon, tmp_path)
    rt = remote_runtime(git_daemon, tmp_path)
    rt.cycle()
    human = human_clone(git_daemon, tmp_path)
    report = human / "spaces/imw1-mb-florin/reported/core/configmaps/commonstuff/httpd-htdocs.yaml"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text('{"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "commonstuff", '
                      '"name": "httpd-htdocs"}, "reportedAt": "2030-01-01T00:00:00Z"}\n')
    git(human, "add", "-A")
    git(human, "commit", "-qm", "florin reports")
    git(human, "push", "-q", "origin", BRANCH)
    result = rt.cycle()
    assert result.action == "summarized" and result.pushed and result.commit == remote_head(bare)
    assert "2030-01-01T00:00:00Z" in git(bare, "show", f"{BRANCH}:STATUS.md")


# --- concurrent writers -----------------------------------------------------------------------------

def test_racing_reconcilers_and_a_human_lose_nothing_and_never_force(git_daemon: GitDaemon, tmp_path: Path) -> None:
    bare = served_example(git_daemon, tmp_path)
    human = human_clone(git_daemon, tmp_path)
    runtimes = [remote_runtime(git_daemon, tmp_path, who=f"r{i}") for i in range(3)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def reconciler(rt: runtimes.RemoteRuntime) -> None:
        while not stop.is_set():
            try:
                rt.cycle()
            except BaseException as e:  # noqa: BLE001 - reported by the test
                errors.append(e)
                return

    threads = [threading.Thread(target=reconciler, args=(rt,)) for rt in runtimes]
    for t in threads:
        t.start()
    pushed = []
    try:
        for i in range(4):
            pushed.append(flip_env(human, "spaces/imw1/guilder.yaml", f"edit {i}"))
            time.sleep(0.2)
    finally:
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors
    for rt in runtimes:  # settle: one more cycle each, then all agree
        rt.cycle()
    final = remote_head(bare)
    for sha in pushed:  # no human commit lost
        assert subprocess.run(["git", "-C", str(bare), "merge-base", "--is-ancestor", sha, final]).returncode == 0
    fast_forward_only(bare)
    assert trailer(bare) == pushed[-1] or trailer(bare, f"{BRANCH}~1") == pushed[-1]
    assert generated_ids(bare) == fresh_generated(bare, tmp_path, "final")


def test_reconcile_push_recomputes_when_the_remote_moved(git_daemon: GitDaemon, tmp_path: Path, cli) -> None:
    bare = served_example(git_daemon, tmp_path)
    mine = human_clone(git_daemon, tmp_path, who="ci")
    other = human_clone(git_daemon, tmp_path, who="other")
    edited = human_edit(other, "spaces/imw1/florin.yaml", "env: prod", "env: dev", "meanwhile")
    result = cli("reconcile", str(mine), "--push", "-o", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["pushed"] is True
    assert trailer(bare) == edited  # reconciled on the new upstream head, not the stale one
    assert git(mine, "rev-parse", "HEAD") == remote_head(bare)
    assert git(mine, "status", "--porcelain") == ""
    fast_forward_only(bare)


@pytest.mark.parametrize("one_commit", [False, True], ids=["reconcile-push", "run-cycle"])
def test_push_gives_up_loudly_after_the_bound(git_daemon: GitDaemon, tmp_path: Path, one_commit: bool) -> None:
    """`reconcile --push` in a checkout, and a `run` cycle (reconcile + status, one commit) in a bare clone."""
    bare = served_example(git_daemon, tmp_path)
    mine = tmp_path / "ci.git"
    if one_commit:
        subprocess.run(["git", "clone", "-q", "--bare", git_daemon.url("fleet.git"), str(mine)], check=True)
    else:
        mine = human_clone(git_daemon, tmp_path, who="ci")
    other = human_clone(git_daemon, tmp_path, who="other")
    retries: list[str] = []

    def meanwhile(stage: str, done: int, total: int) -> None:  # someone pushes while every attempt reconciles
        if stage == "computing" and done == 1:
            flip_env(other, "spaces/imw1/florin.yaml", f"race {len(retries)}")

    with pytest.raises(GitError) as info:
        publishing.publish(mine, BRANCH, retries=2, sleep=lambda s: None, progress=meanwhile, do_status=one_commit,
                    one_commit=one_commit, on_retry=lambda attempt, reason: retries.append(reason))
    assert "gave up after 3 attempts" in str(info.value.problems[0]) and len(retries) == 2
    assert trailer(bare) is None  # the remote holds only the other's commits
    fast_forward_only(bare)


# --- crashes -----------------------------------------------------------------------------------------

def test_sigkill_at_random_points_never_leaves_a_partial_commit(git_daemon: GitDaemon, tmp_path: Path) -> None:
    """50 reconcilers killed at random moments (0 to 0.8 s into `reconcile --push`): every ref,
    local and remote, points at a complete commit (git fsck), and the remote only fast-forwarded."""
    import random
    bare = served_example(git_daemon, tmp_path)
    human = human_clone(git_daemon, tmp_path)
    rng = random.Random(1234)
    deadline = time.monotonic() + 150
    trials = 0
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    while trials < 50 and time.monotonic() < deadline:
        if trials % 10 == 0:  # new sources now and then, so there is something to commit
            flip_env(human, "spaces/imw1/guilder.yaml", f"edit {trials}")
        clone = tmp_path / f"k{trials}"
        subprocess.run(["git", "clone", "-q", git_daemon.url("fleet.git"), str(clone)], check=True)
        proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(clone), "--push"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, 0.8))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        check = subprocess.run(["git", "-C", str(clone), "fsck", "--no-dangling", "--connectivity-only"],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        trials += 1
    assert trials >= 50, f"only {trials} trials in the time bound"
    check = subprocess.run(["git", "-C", str(bare), "fsck", "--no-dangling"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    fast_forward_only(bare)
