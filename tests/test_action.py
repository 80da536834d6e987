"""The GitHub Action (`action.yml`), executed for real by `run_action` (tests/action_runner.py): its
declared inputs and outputs, no expression interpolated into a script, the validate, reconcile and
status commands, inputs never executed as shell, and (`test_install_step_...`) the pip install step
into a fresh venv. The diff and its pull-request comment: tests/test_action_diff.py."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, git
from github_api import FakeGitHub
from action_runner import ACTION, EXPRESSION, cli_supports, run_action
from action_runner import api, workspace  # noqa: F401 - the fixtures


# --- action.yml itself -------------------------------------------------------------------------

def test_action_declares_the_documented_inputs_and_outputs() -> None:
    assert {"command", "path", "commit", "push", "comment-on-pr", "github-token", "python-version"} <= set(ACTION["inputs"])
    assert set(ACTION["outputs"]) == {"changed", "commit", "affected-wecs", "frozen"}
    assert ACTION["runs"]["using"] == "composite"
    assert ACTION["inputs"]["command"]["default"] == "diff"
    assert ACTION["inputs"]["github-token"]["default"] == "${{ github.token }}"
    uses = [s["uses"] for s in ACTION["runs"]["steps"] if "uses" in s]
    assert uses and uses[0].startswith("actions/setup-python@")


def test_no_expression_is_interpolated_into_a_script() -> None:
    """Script injection: inputs reach bash through env:, so `${{` never appears in a run: script."""
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step.get("name")
        for value in (step.get("env") or {}).values():
            for expr in EXPRESSION.findall(str(value)):
                name = expr.split(".", 1)
                assert name[0] in ("inputs", "github") and (name[0] != "inputs" or name[1] in ACTION["inputs"])


# --- validate, reconcile, status ------------------------------------------------------------------

def test_validate_passes_on_a_valid_repo_and_fails_on_an_invalid_one(workspace: Path, api: FakeGitHub) -> None:
    run = run_action(workspace, api=api, command="validate", path="example")
    assert run.returncode == 0, run.log
    assert run.outputs["changed"] == "false" and "valid: 2 WECs" in run.summary
    (workspace / "example" / "spaces" / "wmw-c" / "bad.yaml").write_text(  # the API server refuses that name
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name, namespace: commonstuff}\ndata: {a: b}\n")
    run = run_action(workspace, api=api, command="validate", path="example")
    assert run.returncode == 2
    assert "bad.yaml" in run.log and "::error::" in run.log and "bad.yaml" in run.summary
    assert api.calls == []


def test_reconcile_with_commit_outputs_the_commit(workspace: Path, api: FakeGitHub) -> None:
    repo = workspace / "example"
    run = run_action(workspace, api=api, command="reconcile", path="example", commit="true")
    assert run.returncode == 0, run.log
    head = git(repo, "rev-parse", "HEAD")
    assert run.outputs == {"changed": "true", "commit": head, "affected-wecs": '["florin","guilder"]', "frozen": "[]"}
    assert "Ksgitops-Source:" in git(repo, "log", "-1", "--format=%B")
    assert git(repo, "status", "--porcelain") == ""
    assert head in run.summary
    again = run_action(workspace, api=api, command="reconcile", path="example", commit="true")
    assert again.returncode == 0, again.log
    assert again.outputs == {"changed": "false", "commit": "", "affected-wecs": "[]", "frozen": "[]"}
    assert git(repo, "rev-parse", "HEAD") == head
    assert api.calls == []  # reconcile never comments


def test_reconcile_without_commit_writes_the_work_tree(workspace: Path) -> None:
    repo = workspace / "example"
    run = run_action(workspace, command="reconcile", path="example")
    assert run.returncode == 0, run.log
    assert run.outputs["changed"] == "true" and run.outputs["commit"] == ""
    assert (repo / "spaces" / "imw1-mb-florin" / "kustomization.yaml").is_file()
    assert git(repo, "rev-list", "--count", "HEAD") == "1"


def test_reconcile_with_push_pushes_to_the_remote(tmp_path: Path, example_git: Path) -> None:
    if not cli_supports("reconcile", "--push"):
        pytest.skip("`ksgitops reconcile --push` is not implemented yet")
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(example_git), str(remote))
    git(example_git, "remote", "add", "origin", str(remote))
    git(example_git, "fetch", "-q", "origin")
    git(example_git, "branch", "-q", "--set-upstream-to=origin/main")
    run = run_action(tmp_path, command="reconcile", path="example", push="true")
    assert run.returncode == 0, run.log
    assert run.outputs["commit"] and git(remote, "rev-parse", "main") == run.outputs["commit"]


def test_status_with_commit(workspace: Path) -> None:
    if not cli_supports("status", "--commit"):
        pytest.skip("`ksgitops status --commit` is not implemented yet")
    repo = workspace / "example"
    subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", "--commit", str(repo)], check=True, capture_output=True)
    run = run_action(workspace, command="status", path="example", commit="true")
    assert run.returncode == 0, run.log
    if run.outputs["commit"]:
        assert run.outputs["commit"] == git(repo, "rev-parse", "HEAD") and run.outputs["changed"] == "true"


def test_an_unknown_command_fails(workspace: Path) -> None:
    run = run_action(workspace, command="destroy", path="example")
    assert run.returncode == 2 and "unknown command" in run.log


def test_inputs_are_never_executed_as_shell(workspace: Path, api: FakeGitHub) -> None:
    hostile = ["$(touch pwned-path)", "`touch pwned-tick`", "x; touch pwned-semi", "-o json; touch pwned-opt"]
    for value in hostile:
        run = run_action(workspace, api=api, command="validate", path=value)
        assert run.returncode != 0  # no such repository
    run = run_action(workspace, api=api, command="diff", path="example", against="$(touch pwned-against)",
                     comment_on_pr="$(touch pwned-comment)")
    assert run.returncode == 2
    run = run_action(workspace, api=api, command="$(touch pwned-command)")
    assert run.returncode == 2
    found = [p for p in workspace.parent.rglob("pwned*")] + list(Path.cwd().glob("pwned*"))
    assert found == []


# --- the pip install step, for real ---------------------------------------------------------------

def test_install_step_installs_ksgitops_from_the_action_checkout(tmp_path: Path, example_git: Path) -> None:
    """The install step builds ksgitops from the action's own checkout (a copy here) into a fresh
    venv; the venv sees the test interpreter's site-packages, so only ksgitops itself is built and
    installed (about 5 s) while its dependencies resolve against those already installed."""
    action = tmp_path / "action"
    shutil.copytree(ROOT, action, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".*cache", ".hypothesis", ".benchmarks"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    run = run_action(example_git.parent, action_path=action, install=True, path_prefix=f"{venv / 'bin'}:",
                     command="validate", path="example")
    assert run.returncode == 0, run.log
    assert run.steps_run == ["install", "ksgitops"]
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import ksgitops; print(ksgitops.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert where.startswith(str(venv)), where
    assert (venv / "bin" / "ksgitops").is_file()
