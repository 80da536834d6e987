"""`diff` and a work tree's `reconcile` answer first: the work tree's record, a diff's plan and the
cache are kept after the answer (io/fs/afterwards.py), by the monitor's worker or by a child of
the program, and the next command waits for them: the reconcile that follows a diff still takes
its plan, and leaves what a twin without any of this leaves."""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from conftest import work_tree_files
from ksgitops.app import usecases as app
from ksgitops.io.fs import paths
from ksgitops.io.fs.folderstate import held
from ksgitops.io.fs.statcache import WorkTreeRecord
from handoff_twins import ks, served
from test_plan import _label, _plan_file, _twin_repos
from test_worktree_proof import Pipeline, until_proven

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the monitor is Linux's")

SLOW_RECORD = '''
import os, time
if os.environ.get("KSGITOPS_TEST_SLOW_RECORD"):
    import ksgitops.app.usecases as usecases
    keep = usecases.keep_record
    def slow(*args, **kwargs):
        time.sleep(float(os.environ["KSGITOPS_TEST_SLOW_RECORD"]))
        return keep(*args, **kwargs)
    usecases.keep_record = slow
'''


@pytest.mark.parametrize("handed", [True, False], ids=["handed", "own process"])
def test_a_diff_answers_before_its_plan_is_kept_and_the_reconcile_after_it_takes_the_plan(
        tmp_path: Path, handed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    watched, plain = _twin_repos(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_RECORD)  # loaded by the monitor and by the askers
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "KSGITOPS_TEST_SLOW_RECORD": "3"}
    started = ks("monitor", "start", str(watched), "-o", "json", "--no-plan-ahead", env=env)
    assert started.returncode == 0, started.stderr
    pid = int(json.loads(started.stdout)["pid"])
    try:
        until_proven(watched)
        app.reconcile_worktree(plain)
        for repo in (watched, plain):
            _label(repo, 3)
        before = served(watched)
        shown = ks("diff", str(watched), "-o", "json", env=env, handed=handed)
        assert shown.returncode == 1 and json.loads(shown.stdout)["changed"], shown.stderr
        assert served(watched) == before + handed
        assert not _plan_file(watched).exists()  # answered; the plan not yet kept
        pipeline = Pipeline(monkeypatch)
        outcome = app.reconcile_worktree(watched)  # waits for the diff's memos, then takes its plan
        assert pipeline.runs == 0 and outcome.changed_roots
        assert not _plan_file(watched).exists()
        app.reconcile_worktree(plain)
        assert work_tree_files(watched) == work_tree_files(plain)
        _label(watched, 5)
        kept = watched / ".git" / paths.STATE_DIR / "worktree.pickle"
        before_stamp = kept.stat().st_mtime_ns
        done = ks("reconcile", str(watched), env=env, handed=handed)
        assert done.returncode == 0, done.stderr
        assert kept.stat().st_mtime_ns == before_stamp  # answered; its record not yet kept
        WorkTreeRecord.load(watched, f"{watched}/.git/")  # a reader waits for it
        assert kept.stat().st_mtime_ns != before_stamp
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_plan_made_ahead_is_kept_by_the_worker_the_monitor_stops(tmp_path: Path) -> None:
    """The monitor's plan-ahead worker keeps its plan itself, after its diff: a stopped monitor stops
    it, and nothing is written once the monitor is gone (no process of its own left behind)."""
    watched = _twin_repos(tmp_path)[0]
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_RECORD)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "KSGITOPS_TEST_SLOW_RECORD": "4"}
    started = ks("monitor", "start", str(watched), "-o", "json", env=env)
    assert started.returncode == 0, started.stderr
    pid = int(json.loads(started.stdout)["pid"])
    state = watched / ".git" / paths.STATE_DIR
    try:
        app.reconcile_worktree(watched)
        _label(watched, 3)
        deadline = time.monotonic() + 60
        while not held(state / "memos.lock") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert held(state / "memos.lock"), "no plan was made ahead"
        stopped = ks("monitor", "stop", str(watched))
        assert stopped.returncode == 0, stopped.stderr
    finally:
        if os.path.exists(f"/proc/{pid}"):
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    assert not held(state / "memos.lock"), "a process of the stopped monitor still keeps its memos"
    time.sleep(4.5)
    assert not _plan_file(watched).exists()  # stopped before it was kept: nothing written after
