"""Blast radius = the broken part, in the long-running loop (`run` against a real git daemon) and
in the GitHub Action: each isolation case (isolation_cases.py) commits the healthy part with the
Ksgitops-Frozen trailer, keeps the frozen part byte for byte and ends in exit 2; the loop counts
it as a degraded cycle (readiness stands, a gauge counts the frozen parts); RepoConfig, which is
repo-wide, commits nothing and fails the cycle.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import git, git_init
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from isolation_cases import CASES, assert_isolated, base_repo, break_it, tree_files
from ksgitops.app import runtime, runtimes
from ksgitops.app.shutdown import Shutdown
from action_runner import run_action
from served_fleet import BRANCH, remote_head, remote_runtime


def sample(rt: runtimes.RemoteRuntime, name: str) -> float:
    value = rt.observer.registry.get_sample_value(name)
    return 0.0 if value is None else value


@pytest.mark.parametrize("name", sorted(CASES))
def test_run_mode(name: str, git_daemon: GitDaemon, tmp_path: Path) -> None:  # noqa: F811
    case = CASES[name]
    bare = git_daemon.bare("fleet.git", git_init(base_repo(tmp_path / "seed")))
    rt = remote_runtime(git_daemon, tmp_path)
    assert runtime.loop(rt, 0.01, Shutdown(), once=True) == 0  # the good state, committed and pushed
    before = tree_files(bare, BRANCH)
    human = tmp_path / "human"
    subprocess.run(["git", "clone", "-q", git_daemon.url("fleet.git"), str(human)], check=True)
    break_it(human, case)
    git(human, "add", "-A")
    git(human, "commit", "-qm", f"break: {name}")
    git(human, "push", "-q", "origin", BRANCH)
    pushed = remote_head(bare)
    code = runtime.loop(rt, 0.01, Shutdown(), once=True)
    assert code == 2 and rt.observer.ready
    if not case.trailer:  # repo-wide: the cycle fails, nothing is committed
        assert remote_head(bare) == pushed and tree_files(bare, BRANCH) == before
        assert sample(rt, "ksgitops_cycle_failures_total") == 1
        return
    head = remote_head(bare)
    assert git(bare, "rev-parse", f"{head}~1") == pushed  # one commit, on top of what the cycle read
    message = git(bare, "log", "-1", "--format=%B", head)
    assert f"Ksgitops-Frozen: {case.trailer}\nKsgitops-Source: {pushed}" in message
    after = tree_files(bare, BRANCH)
    assert_isolated(case, before, after)
    status = git(bare, "show", f"{head}:STATUS.md")
    assert "## Frozen" in status and f"| {case.space} | Frozen |" in status
    assert sample(rt, "ksgitops_cycle_failures_total") == 0 and sample(rt, "ksgitops_degraded_cycles_total") == 1
    assert sample(rt, "ksgitops_frozen_parts") == len(case.trailer.split(", "))
    assert runtime.loop(rt, 0.01, Shutdown(), once=True) == 0  # nothing new: an idle cycle
    assert remote_head(bare) == head


@pytest.mark.parametrize("name", sorted(CASES))
def test_action_mode(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    repo = git_init(base_repo(tmp_path / "ws" / "example"))
    assert run_action(tmp_path / "ws", command="reconcile", path="example", commit="true").returncode == 0
    before = tree_files(repo)
    break_it(repo, case)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"break: {name}")
    broken = git(repo, "rev-parse", "HEAD")
    run = run_action(tmp_path / "ws", command="reconcile", path="example", commit="true")
    assert run.returncode == 2, run.log
    assert case.problem[0] in run.log and "::error::" in run.log
    if not case.trailer:
        assert git(repo, "rev-parse", "HEAD") == broken and "ksgitops diff failed (exit 2)" in run.log
        return
    head = git(repo, "rev-parse", "HEAD")
    assert run.outputs["commit"] == head != broken and run.outputs["changed"] == "true"
    assert {f["space"] for f in json.loads(run.outputs["frozen"])} == {case.space}
    assert f"Ksgitops-Frozen: {case.trailer}\n" in git(repo, "log", "-1", "--format=%B")
    assert_isolated(case, before, tree_files(repo))
    status = run_action(tmp_path / "ws", command="status", path="example", commit="true")
    assert status.returncode == 2 and status.outputs["frozen"] == run.outputs["frozen"], status.log
    assert f"| {case.space} | Frozen |" in git(repo, "show", "HEAD:STATUS.md")


def test_the_local_loop_counts_a_frozen_part_as_a_degraded_cycle(tmp_path: Path) -> None:
    """`run --repo <work tree>`: the cycle writes the healthy part, exits 2 with --once, and stays ready."""
    from ksgitops.io.serve import Observer
    repo = base_repo(tmp_path / "repo")
    rt = runtimes.LocalRuntime(repo, Observer())
    assert runtime.loop(rt, 0.01, Shutdown(), once=True) == 0
    break_it(repo, CASES["wds-unparseable"])
    assert runtime.loop(rt, 0.01, Shutdown(), once=True) == 2
    assert rt.observer.ready and rt.observer.registry.get_sample_value("ksgitops_frozen_parts") == 1
    assert b"httpd:2.5" in (repo / "spaces/imw2-mb-zloty/objects/apps/deployments/specialstuff/speciald.yaml").read_bytes()
    assert "## Frozen" in (repo / "STATUS.md").read_text()
