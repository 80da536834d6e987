"""The GitHub Action (`action.yml`), executed for real: its `run:` steps under bash, as the runner does.

`run_action` plays the runner's part for a composite action: it reads action.yml, evaluates the
`${{ }}` expressions it uses (inputs with their defaults, github.*, steps.<id>.outputs.*), gives
every step its env, its own GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, GITHUB_EVENT_PATH (a
pull_request payload), GITHUB_REPOSITORY and GITHUB_API_URL pointing at `tests/github_api.py`, a
loopback stand-in for the GitHub REST API. It runs each script with `bash --noprofile --norc -eo
pipefail` in the workspace, stops at the first failing step, and evaluates the action's outputs.

What is not run: `uses:` steps (actions/setup-python; the test interpreter stands in for it). The
`pip install` step is run for real by one test (`test_install_step_...`) into a fresh venv; the
others skip it, because ksgitops is already installed (editable) in the interpreter whose bin/ is
first on PATH, so the run step executes this checkout's code either way.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, git
from github_api import FakeGitHub

from ksgitops.io import github as gh

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
TOKEN = "ghs_s3cr3tT0kenThatMustNeverBePrinted"
REPOSITORY = "octo/fleet"
PR = 7
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
DOTTED = re.compile(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*")


@dataclass
class ActionRun:
    returncode: int
    outputs: dict[str, str]
    summary: str
    log: str
    steps_run: list[str] = field(default_factory=list)


def evaluate(text: str, context: dict[str, Any]) -> str:
    """Substitute `${{ a.b.c }}` as the runner would; anything beyond a property path fails the test
    (so a new kind of expression in action.yml needs this harness taught, not silently ignored)."""
    def one(match: re.Match[str]) -> str:
        expr = match.group(1)
        assert DOTTED.fullmatch(expr), f"the test harness does not evaluate {expr!r}"
        value: Any = context
        for part in expr.split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return "" if value is None else str(value)
    return EXPRESSION.sub(one, text)


def read_outputs(path: Path) -> dict[str, str]:
    """Parse a GITHUB_OUTPUT file: `name=value` lines and `name<<DELIMITER` blocks."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    outputs: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        name, _, value = line.partition("=")
        outputs[name] = value
        i += 1
    return outputs


def run_action(workspace: Path, *, api: FakeGitHub | None = None, event_name: str = "pull_request",
               install: bool = False, action_path: Path = ROOT, path_prefix: str = "",
               **inputs: str) -> ActionRun:
    """Run action.yml's steps like the runner; `inputs` use the action's names with _ for -."""
    given = {k.replace("_", "-"): v for k, v in inputs.items()}
    unknown = set(given) - set(ACTION["inputs"])
    assert not unknown, f"action.yml has no inputs {unknown}"
    tmp = workspace.parent / f"runner-{os.urandom(4).hex()}"
    (tmp / "home").mkdir(parents=True)
    event = tmp / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": PR,
                                 "pull_request": {"number": PR, "head": {"ref": "topic"}, "base": {"ref": "main"}},
                                 "repository": {"full_name": REPOSITORY}}), encoding="utf-8")
    github = {"token": TOKEN, "action_path": str(action_path), "workspace": str(workspace),
              "event_name": event_name, "event_path": str(event), "repository": REPOSITORY}
    context: dict[str, Any] = {"github": github, "steps": {}, "runner": {"temp": str(tmp)}}
    context["inputs"] = {name: given.get(name, evaluate(str(spec.get("default", "")), context))
                         for name, spec in ACTION["inputs"].items()}
    bin_dir = str(Path(sys.executable).parent)  # `python` and `ksgitops` of the test interpreter
    base_env = {
        "PATH": f"{path_prefix}{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp / "home"), "LANG": "C.UTF-8",
        "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(action_path), "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": REPOSITORY, "GITHUB_API_URL": api.url if api else "http://127.0.0.1:9",
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "1234", "RUNNER_TEMP": str(tmp),
        **{k: v for k, v in os.environ.items() if k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV", "PYENV"))}}
    summary, log, ran = "", "", []
    for n, step in enumerate(ACTION["runs"]["steps"]):
        if "uses" in step or (step.get("id") == "install" and not install):
            continue
        output_file, summary_file, script = tmp / f"output-{n}", tmp / f"summary-{n}", tmp / f"step-{n}.sh"
        output_file.touch()
        summary_file.touch()
        script.write_text(evaluate(step["run"], context), encoding="utf-8")
        env = {**base_env, "GITHUB_OUTPUT": str(output_file), "GITHUB_STEP_SUMMARY": str(summary_file),
               **{k: evaluate(str(v), context) for k, v in (step.get("env") or {}).items()}}
        assert step.get("shell") == "bash"
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=300)
        ran.append(step.get("id") or step.get("name", str(n)))
        log += proc.stdout + proc.stderr
        summary += summary_file.read_text(encoding="utf-8")
        if step.get("id"):
            context["steps"][step["id"]] = {"outputs": read_outputs(output_file)}
        if proc.returncode:  # the runner still records what the failing step wrote to GITHUB_OUTPUT
            assert TOKEN not in log
            return ActionRun(proc.returncode, action_outputs(context), summary, log, ran)
    assert TOKEN not in log, "the token was printed"
    return ActionRun(0, action_outputs(context), summary, log, ran)


def action_outputs(context: dict[str, Any]) -> dict[str, str]:
    """The action's outputs from its steps' outputs; empty when no step with an id wrote any."""
    if not any(step["outputs"] for step in context["steps"].values()):
        return {}
    return {name: evaluate(str(spec["value"]), context) for name, spec in ACTION["outputs"].items()}


@pytest.fixture
def api() -> Any:
    with FakeGitHub(TOKEN, REPOSITORY) as server:
        yield server


@pytest.fixture
def workspace(example_git: Path) -> Path:
    """The runner's workspace (GITHUB_WORKSPACE) holding the example repo at `example/`."""
    return example_git.parent


def marked(api: FakeGitHub) -> list[dict[str, Any]]:
    return [c for c in api.comments(PR) if c["body"].startswith(gh.MARKER)]


def change_source(repo: Path, text: str) -> None:
    page = repo / "spaces" / "wmw-c" / "httpd.yaml"
    page.write_text(page.read_text().replace("This is a common web site.", text, 1))


def cli_supports(*args: str) -> bool:
    *command, option = args
    proc = subprocess.run([sys.executable, "-m", "ksgitops", *command, "--help"], capture_output=True, text=True)
    return proc.returncode == 0 and option in proc.stdout


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


# --- diff: job summary, outputs and the sticky comment ------------------------------------------

def test_diff_on_a_pull_request_writes_summary_outputs_and_one_comment(workspace: Path, api: FakeGitHub) -> None:
    run = run_action(workspace, api=api, command="diff", path="example")
    assert run.returncode == 0, run.log  # diff's exit 1 (changes) does not fail the step
    assert run.outputs == {"changed": "true", "commit": "", "affected-wecs": '["florin","guilder"]', "frozen": "[]"}
    assert "### ksgitops diff: 2 WECs affected" in run.summary and "```diff" in run.summary
    assert [c.method for c in api.writes()] == ["POST"]
    assert all(c.authorized for c in api.calls)
    [comment] = api.comments(PR)
    assert comment["body"].startswith(gh.MARKER + "\n### ksgitops diff: 2 WECs affected")
    assert "spaces/imw1-mb-florin" in comment["body"]


def test_a_second_run_edits_the_comment_in_place(workspace: Path, api: FakeGitHub) -> None:
    assert run_action(workspace, api=api, path="example").returncode == 0
    [first] = api.comments(PR)
    change_source(workspace / "example", "This is a changed web site.")
    run = run_action(workspace, api=api, path="example")
    assert run.returncode == 0, run.log
    [second] = api.comments(PR)
    assert second["id"] == first["id"] and "This is a changed web site." in second["body"]
    assert [c.method for c in api.writes()] == ["POST", "PATCH"]
    assert api.writes()[1].path == f"/repos/{REPOSITORY}/issues/comments/{first['id']}"
    run_action(workspace, api=api, path="example")  # the same diff again: nothing to edit
    assert [c.method for c in api.writes()] == ["POST", "PATCH"]


def test_the_comment_is_deleted_when_the_diff_becomes_empty(workspace: Path, api: FakeGitHub) -> None:
    api.seed(PR, ["LGTM"])
    assert run_action(workspace, api=api, path="example").returncode == 0
    assert len(marked(api)) == 1
    subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", str(workspace / "example")], check=True,
                   capture_output=True)
    run = run_action(workspace, api=api, path="example")
    assert run.returncode == 0, run.log
    assert run.outputs == {"changed": "false", "commit": "", "affected-wecs": "[]", "frozen": "[]"}
    assert "0 WECs affected" in run.summary
    assert marked(api) == [] and [c["body"] for c in api.comments(PR)] == ["LGTM"]
    assert [c.method for c in api.writes()] == ["POST", "DELETE"]
    run_action(workspace, api=api, path="example")  # still empty: no comment to delete
    assert [c.method for c in api.writes()] == ["POST", "DELETE"]


def test_the_marked_comment_is_found_on_page_two(workspace: Path, api: FakeGitHub) -> None:
    bodies = [f"comment {i}" for i in range(130)]
    bodies[117] = gh.MARKER + "\nan old diff"
    ids = api.seed(PR, bodies, user={"login": "github-actions[bot]", "id": 41898282, "type": "Bot"})
    run = run_action(workspace, api=api, path="example")
    assert run.returncode == 0, run.log
    assert [(c.method, c.path) for c in api.writes()] == [("PATCH", f"/repos/{REPOSITORY}/issues/comments/{ids[117]}")]
    pages = [c for c in api.calls if c.method == "GET"]
    assert len(pages) == 2 and pages[1].path.startswith("/repositories/") and "page=2" in pages[1].query
    assert len(api.comments(PR)) == 130


def test_no_comment_outside_pull_requests_or_when_disabled(workspace: Path, api: FakeGitHub) -> None:
    run = run_action(workspace, api=api, path="example", event_name="push")
    assert run.returncode == 0 and run.outputs["changed"] == "true" and "WECs affected" in run.summary
    run = run_action(workspace, api=api, path="example", comment_on_pr="false")
    assert run.returncode == 0 and run.outputs["changed"] == "true"
    assert api.calls == []


def test_a_read_only_token_warns_instead_of_failing(workspace: Path, api: FakeGitHub) -> None:
    api.fail_next(403)  # what a pull request from a fork gets
    run = run_action(workspace, api=api, path="example")
    assert run.returncode == 0, run.log
    assert "::warning::" in run.log and run.outputs["changed"] == "true"


def test_other_api_failures_fail_the_step(workspace: Path, api: FakeGitHub) -> None:
    api.fail_next(500)
    run = run_action(workspace, api=api, path="example")
    assert run.returncode == 1 and "HTTP 500" in run.log


def test_a_wrong_token_is_rejected_and_not_printed(workspace: Path, api: FakeGitHub) -> None:
    api.token = "another-token"
    run = run_action(workspace, api=api, path="example")
    assert run.returncode == 1 and "HTTP 401" in run.log and "Bad credentials" in run.log
    assert api.calls and not any(c.authorized for c in api.calls)


def test_diff_errors_fail_the_step(workspace: Path, api: FakeGitHub) -> None:
    """A repo-wide error (RepoConfig) stops everything: no diff, no comment."""
    (workspace / "example" / "ksgitops.yaml").write_text("apiVersion: ksgitops.kubestellar.io/v1alpha1\n"
                                                         "kind: RepoConfig\nspec: {colour: blue}\n")
    run = run_action(workspace, api=api, path="example")
    assert run.returncode == 2, run.log
    assert api.calls == [] and "ksgitops diff failed (exit 2)" in run.log


BROKEN_WDS = "spaces/wmw-c/broken.yaml"


def test_diff_with_a_broken_space_comments_what_is_frozen_and_fails(workspace: Path, api: FakeGitHub) -> None:
    """An error confined to one space: the comment shows the healthy part's changes and lists the
    frozen space; the step fails (exit 2) after commenting, with the outputs set."""
    repo = workspace / "example"
    subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", str(repo)], check=True, capture_output=True)
    (repo / BROKEN_WDS).write_text("kind: [unclosed\n")
    change_source(repo, "This change is frozen.")
    page = repo / "spaces" / "wmw-s" / "httpd.yaml"
    page.write_text(page.read_text().replace("This is a special web site.", "A changed special web site.", 1))
    run = run_action(workspace, api=api, path="example")
    assert run.returncode == 2, run.log
    assert run.outputs["changed"] == "true" and run.outputs["affected-wecs"] == '["guilder"]'
    frozen = json.loads(run.outputs["frozen"])
    assert [(f["what"], f["space"]) for f in frozen] == [("space", "wmw-c")]
    [comment] = marked(api)
    assert "A changed special web site." in comment["body"] and "#### Frozen" in comment["body"]
    assert "This change is frozen." not in comment["body"]
    assert "`spaces/wmw-c`: the objects its placements (edge-placement-c) placed" in comment["body"]
    assert "frozen" in run.log and "::error::" in run.log and f"{BROKEN_WDS}:2: malformed YAML" in run.log


def test_reconcile_with_a_broken_space_commits_the_rest_and_fails(workspace: Path, api: FakeGitHub) -> None:
    """Action mode of the isolation rule: the healthy part is committed with the Ksgitops-Frozen
    trailer, the frozen part stays byte for byte, and the step fails with exit 2."""
    repo = workspace / "example"
    assert run_action(workspace, command="reconcile", path="example", commit="true").returncode == 0
    before = git(repo, "rev-parse", "HEAD")
    frozen_cm = git(repo, "rev-parse", "HEAD:spaces/imw1-mb-florin/objects/core/configmaps/commonstuff")
    (repo / BROKEN_WDS).write_text("kind: [unclosed\n")
    change_source(repo, "This change is frozen.")
    page = repo / "spaces" / "wmw-s" / "httpd.yaml"
    page.write_text(page.read_text().replace("library/httpd:2.4", "library/httpd:2.5", 1))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "break wmw-c, change wmw-s")
    run = run_action(workspace, api=api, command="reconcile", path="example", commit="true")
    assert run.returncode == 2, run.log
    head = git(repo, "rev-parse", "HEAD")
    assert head != before and run.outputs["commit"] == head and run.outputs["changed"] == "true"
    assert json.loads(run.outputs["frozen"])[0]["space"] == "wmw-c"
    message = git(repo, "log", "-1", "--format=%B")
    assert "Ksgitops-Frozen: space wmw-c\n" in message and "Ksgitops-Source:" in message
    assert "httpd:2.5" in git(repo, "show", "HEAD:spaces/imw1-mb-guilder/objects/apps/deployments/specialstuff/speciald.yaml")
    assert git(repo, "rev-parse", "HEAD:spaces/imw1-mb-florin/objects/core/configmaps/commonstuff") == frozen_cm
    assert "**frozen**" in run.summary and api.calls == []


def test_diff_against_a_ref(workspace: Path, api: FakeGitHub) -> None:
    repo = workspace / "example"
    subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", "--commit", str(repo)], check=True, capture_output=True)
    change_source(repo, "This is another web site.")
    run = run_action(workspace, api=api, path="example", against="HEAD", comment_on_pr="false")
    assert run.returncode == 0, run.log
    assert run.outputs["changed"] == "true" and run.outputs["affected-wecs"] == '["florin","guilder"]'


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


# --- ksgitops.io.github, directly -----------------------------------------------------------------

def test_long_diffs_are_cut_to_fit_a_comment(api: FakeGitHub) -> None:
    diff = "\n".join(["### ksgitops diff: 1 WEC affected", "", "<details><summary>w</summary>", "", "```diff",
                      *[f"+line {i} " + "x" * 80 for i in range(2000)], "```", "</details>", ""])
    body = gh.comment_body(diff)
    assert len(body) <= 65_536 and body.startswith(gh.MARKER)
    assert body.count("```") % 2 == 0 and body.count("<details>") == body.count("</details>")
    assert "too long for a comment" in body
    client = gh.GitHub(api.url, REPOSITORY, TOKEN)
    assert gh.sync_sticky_comment(client, PR, diff) == "created"
    assert api.comments(PR)[0]["body"] == body


def test_duplicate_marked_comments_are_collapsed(api: FakeGitHub) -> None:
    first, _second = api.seed(PR, [gh.MARKER + "\na", gh.MARKER + "\nb"])
    client = gh.GitHub(api.url, REPOSITORY, TOKEN)
    assert gh.sync_sticky_comment(client, PR, "new") == "updated"
    assert [(c["id"], c["body"]) for c in api.comments(PR)] == [(first, gh.MARKER + "\nnew")]


def test_a_quoted_marker_is_not_ours(api: FakeGitHub) -> None:
    api.seed(PR, [f"> {gh.MARKER}\n> quoting the bot"])
    client = gh.GitHub(api.url, REPOSITORY, TOKEN)
    assert gh.sync_sticky_comment(client, PR, "diff") == "created"
    assert len(api.comments(PR)) == 2


def test_pagination_links_may_not_send_the_token_elsewhere() -> None:
    client = gh.GitHub("https://api.github.com", REPOSITORY, TOKEN)
    assert client._next_page('<https://api.github.com/x?page=2>; rel="next"') == "https://api.github.com/x?page=2"
    with pytest.raises(gh.GitHubError, match="leaves"):
        client._next_page('<https://evil.example/x?page=2>; rel="next"')


def test_errors_never_contain_the_token() -> None:
    client = gh.GitHub(f"http://127.0.0.1:9/{TOKEN}", REPOSITORY, TOKEN)  # nothing listens on port 9
    with pytest.raises(gh.GitHubError) as error:
        list(client.comments(PR))
    assert TOKEN not in str(error.value) and "***" in str(error.value)


def test_pull_request_number_from_event_payloads(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    assert gh.pull_request_number(str(event), "pull_request") == 12
    assert gh.pull_request_number(str(event), "pull_request_target") == 12
    assert gh.pull_request_number(str(event), "push") is None
    assert gh.pull_request_number(str(tmp_path / "missing.json"), "pull_request") is None
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    assert gh.pull_request_number(str(event), None) is None
