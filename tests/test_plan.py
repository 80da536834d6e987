"""A diff's plan (io/fs/plan.py), with a real monitor: the reconcile that follows applies it when
nothing changed since, leaving the same bytes and the same proof as one that computed; any change
since, another monitor's token, other code or a broken file means computing again."""
from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import benchmark_module, git_init, run_cli_subprocess, work_tree_files
from ksgitops.app import usecases as app
from ksgitops.core import pipeline as pipeline_module
from ksgitops.io.fs import plan as plans
from ksgitops.io.fs.feed import request
from monitor_process import alive, start
from test_worktree_proof import Pipeline, until_proven

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A fleet's work tree with a monitor, and its twin without one."""
    repos = _twin_repos(tmp_path)
    pid = start(repos[0])
    until_proven(repos[0])
    app.reconcile_worktree(repos[1])
    yield repos[0], repos[1]
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def _twin_repos(tmp_path: Path) -> list[Path]:
    for name in ("watched", "plain"):
        benchmark_module("fleet").generate(tmp_path / name, wecs=8, objects=12, seed=7)
    return [git_init(tmp_path / name) for name in ("watched", "plain")]


def _plan_file(repo: Path) -> Path:
    return repo / ".git" / "ksgitops-state" / plans.PLAN_FILE


def _label(repo: Path, wec: int) -> None:
    benchmark_module("fleet").change_location_label(repo, wec)


def test_a_reconcile_after_a_diff_applies_its_plan(twins: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    watched, plain = twins
    for repo in twins:
        _label(repo, 3)
    pipeline = Pipeline(monkeypatch)
    shown = app.plan_diff(watched, None)[1]
    assert shown.changed and pipeline.runs == 1 and _plan_file(watched).exists()
    outcome = app.reconcile_worktree(watched)
    assert pipeline.runs == 1  # applied, not computed
    assert not _plan_file(watched).exists()
    assert sorted(outcome.changed_roots) == sorted(f"spaces/{w.mailbox}" for w in shown.wecs) + \
        sorted(r for r in outcome.changed_roots if r.count("/") > 1)
    expected = app.reconcile_worktree(plain)
    assert work_tree_files(watched) == work_tree_files(plain)
    assert [str(p) for p in outcome.result.problems] == [str(p) for p in expected.result.problems]
    assert isinstance(until_proven(watched), app.ProvenOutcome)  # the proof it left holds
    runs = pipeline.runs
    for repo in twins:
        _label(repo, 5)
    assert not isinstance(app.reconcile_worktree(watched), app.ProvenOutcome)  # and an edit still counts
    app.reconcile_worktree(plain)
    assert pipeline.runs == runs + 2 and work_tree_files(watched) == work_tree_files(plain)


def test_a_change_after_the_diff_means_computing_again(twins: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    watched, plain = twins
    _label(watched, 2)
    app.plan_diff(watched, None)
    for repo in twins:
        _label(repo, 6)  # the diff saw wec 2's edit only
    _label(plain, 2)
    pipeline = Pipeline(monkeypatch)
    app.reconcile_worktree(watched)
    assert pipeline.runs == 1
    app.reconcile_worktree(plain)
    assert work_tree_files(watched) == work_tree_files(plain)


def test_a_second_diff_takes_the_plan(twins: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    watched, _ = twins
    _label(watched, 4)
    pipeline = Pipeline(monkeypatch)
    first = app.plan_diff(watched, None)[1]
    second = app.plan_diff(watched, None)[1]
    assert pipeline.runs == 1
    assert (second.changed, [(w.mailbox, w.diff) for w in second.wecs]) == \
        (first.changed, [(w.mailbox, w.diff) for w in first.wecs])


@pytest.mark.parametrize("spoil", ["token", "code", "garbage", "link"])
def test_a_plan_not_made_for_this_work_tree_as_it_stands_is_not_taken(twins: tuple[Path, Path], spoil: str,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    watched, plain = twins
    for repo in twins:
        _label(repo, 1)
    app.plan_diff(watched, None)
    path = _plan_file(watched)
    data = pickle.loads(path.read_bytes())
    if spoil == "token":
        data["plan"] = data["plan"]._replace(token=data["plan"].token + "0")
    elif spoil == "code":
        data["format"] += "-other"
    if spoil == "garbage":
        path.write_bytes(b"not a pickle")
    elif spoil == "link":
        elsewhere = tmp_path / "elsewhere.pickle"
        elsewhere.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(elsewhere)
    else:
        path.write_bytes(pickle.dumps(data))
    pipeline = Pipeline(monkeypatch)
    app.reconcile_worktree(watched)
    assert pipeline.runs == 1
    app.reconcile_worktree(plain)
    assert work_tree_files(watched) == work_tree_files(plain)
    if spoil == "link":
        assert (tmp_path / "elsewhere.pickle").exists() and path.is_symlink()  # a planted link is left alone


def test_without_a_monitor_no_plan_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = benchmark_module("fleet")
    fleet.generate(tmp_path / "repo", wecs=8, objects=12, seed=7)
    repo = git_init(tmp_path / "repo")
    app.reconcile_worktree(repo)
    _label(repo, 3)
    pipeline = Pipeline(monkeypatch)
    assert app.plan_diff(repo, None)[1].changed
    assert not _plan_file(repo).exists()
    app.reconcile_worktree(repo)
    assert pipeline.runs == 2


@pytest.mark.parametrize("where", ["another name", "a folder never watched"])
def test_a_source_changed_where_no_event_tells_is_still_seen(twins: tuple[Path, Path], tmp_path: Path, where: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A file the diff read that has another name (a hard-linked backup) edited through that name,
    or a file in a folder the monitor never watches: no event comes, but their stamps moved."""
    watched, plain = twins
    path = "spaces/apps/team-00/configmaps.yaml"
    if where == "a folder never watched":
        path = "spaces/apps/team-00/.shared.ksgitops-stash/cm.yaml"
        for repo in twins:
            (repo / path).parent.mkdir()
            (repo / path).write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stash, namespace: team-00}\n")
        until_proven(watched)
        app.reconcile_worktree(plain)
    else:
        os.link(watched / path, tmp_path / "backup.yaml")
    for repo in twins:
        _label(repo, 3)
    assert app.plan_diff(watched, None)[1].changed and _plan_file(watched).exists()
    late = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: added-late, namespace: team-00}\n"
    for name in (tmp_path / "backup.yaml" if where == "another name" else watched / path, plain / path):
        with open(name, "a") as f:  # after the diff, in place
            f.write(late)
    pipeline = Pipeline(monkeypatch)
    app.reconcile_worktree(watched)
    app.reconcile_worktree(plain)
    assert pipeline.runs == 2  # computed, not applied
    assert work_tree_files(watched) == work_tree_files(plain)
    assert any("added-late" in name for name in work_tree_files(watched))


def _current_plan(repo: Path) -> bool:
    """A plan is kept and the monitor saw nothing change since its token (one planned before the
    last edit may still be written after it: it is not the one waited for). Asked as `monitor
    status` asks: a run asking what changed would hold plans ahead back."""
    try:
        token = pickle.loads(_plan_file(repo).read_bytes())["plan"].token
    except (OSError, pickle.UnpicklingError, KeyError, EOFError):
        return False
    reply = request(str(repo / ".git"), {"op": "status"})
    return reply is not None and reply.get("token") == token


def _reconciled_apart(repo: Path) -> None:
    """Reconciled by commands of their own: a process that asked the monitor what changed holds
    plans ahead back while it lives, and this one lives on."""
    for _ in range(2):
        assert run_cli_subprocess("reconcile", str(repo)).returncode == 0


def _until(condition, seconds: float = 30.0, every: float = 0.05) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return False


@pytest.mark.parametrize("flag", ["", "--plan-ahead", "--no-plan-ahead"])
def test_a_monitor_started_to_plan_ahead_leaves_the_next_run_nothing_to_compute(
        tmp_path: Path, flag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`monitor start` plans ahead unless told not to: once the work tree is quiet, a quiet `diff`
    in the monitor keeps its plan; the next reconcile applies it (the same bytes as a twin without a
    monitor). With --no-plan-ahead, nothing runs on its own."""
    ahead = flag != "--no-plan-ahead"
    repos = _twin_repos(tmp_path)
    watched, plain = repos
    done = run_cli_subprocess("monitor", "start", str(watched), "-o", "json", *([flag] if flag else []))
    assert done.returncode == 0, done.stderr
    pid = int(json.loads(done.stdout)["pid"])
    try:
        _reconciled_apart(watched)
        app.reconcile_worktree(plain)
        for repo in repos:
            _label(repo, 3)
        assert _until(lambda: _current_plan(watched), 30.0 if ahead else 2.0) is ahead
        pipeline = Pipeline(monkeypatch)
        outcome = app.reconcile_worktree(watched)
        assert pipeline.runs == (0 if ahead else 1)
        assert outcome.changed_roots
        app.reconcile_worktree(plain)
        assert work_tree_files(watched) == work_tree_files(plain)
        assert alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def test_no_plan_ahead_runs_beside_a_run_that_asked_nor_outlives_its_monitor(tmp_path: Path) -> None:
    """A run in its own process that asked the monitor what changed may still be computing: no
    plan-ahead may save the record after it, so none starts until it ended. A monitor that ends
    takes its plan-ahead with it (a fleet large enough for a plan-ahead to be seen running)."""
    benchmark_module("fleet").generate(tmp_path / "repo", wecs=150, objects=30, seed=7)
    repo = git_init(tmp_path / "repo")
    done = run_cli_subprocess("monitor", "start", str(repo), "-o", "json", "--plan-ahead")
    pid = int(json.loads(done.stdout)["pid"])
    try:
        _reconciled_apart(repo)
        _label(repo, 3)
        asker = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom ksgitops.io.fs.feed import ask, identity_of\n"
                                  f"ask({str(repo / '.git')!r}, None, identity_of({str(repo)!r}))\n"
                                  "print('asked', flush=True)\ntime.sleep(3)"], stdout=subprocess.PIPE, text=True)
        assert asker.stdout is not None and asker.stdout.readline() == "asked\n"
        assert not _until(lambda: _current_plan(repo) or _children(pid), 2.0)  # it still runs: nothing planned
        asker.wait()
        assert _until(lambda: _current_plan(repo), 30.0)  # once it ended
        _label(repo, 4)
        assert _until(lambda: bool(_children(pid)), 30.0, every=0.005)  # planning ahead
        ahead = _children(pid)
        os.kill(pid, signal.SIGTERM)
        assert _until(lambda: not alive(pid), 30.0)
        assert not any(alive(child) for child in ahead)
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_diff_that_left_mailboxes_kept_whole_unread_keeps_no_plan(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Its result is not the next run's: the reconcile after it computes, reading the mailboxes
    kept whole it left unread, and leaves no proof that would answer the next runs with it."""
    watched = _twin_repos(tmp_path)[0]
    done = run_cli_subprocess("monitor", "start", str(watched), "-o", "json", "--no-plan-ahead")
    assert done.returncode == 0, done.stderr
    pid = int(json.loads(done.stdout)["pid"])
    try:
        _reconciled_apart(watched)
        inventory = next((watched / "spaces/inventory").iterdir())
        inventory.write_text(inventory.read_text() + "kind: [unclosed\n")  # every WEC frozen: kept whole
        for record in (watched / ".git").rglob("worktree.pickle"):
            record.unlink()  # nothing vouches for their mailboxes
        monkeypatch.setattr(pipeline_module, "KEPT_WHOLE_READS", 1)
        result = app.plan_diff(watched, None)[0]
        assert getattr(result, "unread_whole", ()) and not _plan_file(watched).exists()
    finally:
        os.kill(pid, signal.SIGKILL)
