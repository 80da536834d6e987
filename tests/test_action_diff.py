"""The GitHub Action's diff (`action.yml`, run by tests/action_runner.py): the job summary, the
outputs and the one sticky pull-request comment (created, edited in place, deleted, found on a
later page, a read-only or wrong token, broken spaces, a diff against a ref); and
ksgitops.io.github directly (long diffs cut, duplicates collapsed, quoted markers, pagination links,
the token kept out of errors, pull-request numbers from event payloads)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from github_api import FakeGitHub

from ksgitops.io import github as gh
from action_runner import PR, REPOSITORY, TOKEN, change_source, marked, run_action
from action_runner import api, workspace  # noqa: F401 - the fixtures


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
