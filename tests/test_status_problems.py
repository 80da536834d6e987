"""Reconcile problems reach status: every reconcile mode writes `spaces/<space>/.ksgitops/problems.yaml`
for a space with problems (and removes it when the space has none); `status` reads it (work tree and
git) into STATUS.md, `-o json` and the CombinedStatus of the object concerned."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import git, git_init, write_tree
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from ksgitops.app import usecases as app, runtimes
from ksgitops.core.emit.problems import parse_problems, problem_files, problems_root
from ksgitops.core.load.schemas import validate_document
from ksgitops.core.serialize import load_yaml
from ksgitops.core.status.summary import summarize
from ksgitops.core.status.memory import MemorySource, problems_in, with_reports
from ksgitops.io.serve import Observer
from ksgitops.model import Origin, Problem

WDS = "wmw-s"
PROBLEMS = problems_root(WDS)
HTTPD = f"spaces/{WDS}/httpd.yaml"
SPECIAL_CM = "core/configmaps/specialstuff/httpd-htdocs"
OBJECT = "ConfigMap specialstuff/httpd-htdocs"
MISSING = "parameter 'region' is not defined"
LINE = 10  # `index.html: |`, the field that does not expand


def break_customization(repo: Path) -> None:
    """The special web page asks for a Location label guilder does not have: an error for
    (ConfigMap, guilder) only."""
    path = repo / HTTPD
    path.write_text(path.read_text().replace("%(loc-name)", "%(region)"))


def fix_customization(repo: Path) -> None:
    path = repo / HTTPD
    path.write_text(path.read_text().replace("%(region)", "%(loc-name)"))


def problems_doc(repo: Path) -> dict[str, Any]:
    return load_yaml((repo / PROBLEMS).read_bytes())  # type: ignore[no-any-return]


def test_reconcile_writes_the_wds_problems_file_and_removes_it_when_fixed(example: Path, cli) -> None:
    break_customization(example)
    result = cli("reconcile", str(example))
    assert result.code == 0, result  # per-(object, WEC) errors do not stop reconcile
    doc = problems_doc(example)
    assert validate_document("problems.json", doc, Origin(PROBLEMS), "SpaceProblems") == []
    assert (doc["metadata"], doc["state"], doc["errors"], doc["warnings"]) == ({"name": WDS}, "Reconciled", 1, 0)
    [entry] = doc["problems"]
    assert entry["file"] == HTTPD and entry["line"] == LINE and entry["severity"] == "error"
    assert (entry["object"], entry["wec"], entry["mailbox"]) == (OBJECT, "guilder", "imw1-mb-guilder")
    assert MISSING in entry["message"] and "not placed (no previous copy)" in entry["message"]
    assert not entry["message"].startswith(OBJECT)  # the object has its own field
    assert not (example / problems_root("wmw-c")).exists() and not (example / problems_root("imw1")).exists()
    fix_customization(example)
    assert cli("reconcile", str(example)).code == 0
    assert not (example / PROBLEMS).exists()


def test_problems_files_are_sorted_and_deterministic() -> None:
    found = [Problem(Origin("spaces/a/x.yaml", 9), "second", "warning"),
             Problem(Origin("spaces/a/x.yaml", 3), "Deployment.apps n/d: bad; kept", wec="inv-mb-w", obj="Deployment.apps n/d"),
             Problem(Origin("spaces/a/b.yaml", 7), "first", "warning"),
             Problem(Origin("spaces/b/y.yaml", 1), "elsewhere"),
             Problem(Origin("ksgitops.yaml"), "repo-wide", "warning")]
    files = problem_files(["a", "b", "c"], found, {"inv-mb-w": "w"})
    again = problem_files(["c", "b", "a"], list(reversed(found)), {"inv-mb-w": "w"})
    assert files == again and files[problems_root("c")] is None
    entries = parse_problems(problems_root("a"), files[problems_root("a")]).entries  # type: ignore[arg-type]
    assert [(e.severity, e.file, e.line, e.message) for e in entries] == [
        ("error", "spaces/a/x.yaml", 3, "bad; kept"), ("warning", "spaces/a/b.yaml", 7, "first"),
        ("warning", "spaces/a/x.yaml", 9, "second")]
    assert (entries[0].object, entries[0].wec, entries[0].mailbox) == ("Deployment.apps n/d", "w", "inv-mb-w")


@pytest.mark.parametrize("data", [b"not: [valid", b"kind: Other\n", b"kind: SpaceProblems\nproblems: {}\n"])
def test_an_unreadable_problems_file_is_one_warning(data: bytes) -> None:
    parsed = parse_problems(PROBLEMS, data)
    assert parsed.entries == [] and [p.severity for p in parsed.problems] == ["warning"]


def test_malformed_entries_are_skipped_with_a_warning() -> None:
    data = b"kind: SpaceProblems\nproblems:\n- {severity: error, file: f.yaml, line: 3, message: m}\n" \
           b"- {severity: fatal, file: f.yaml, message: m}\n- {severity: warning, message: m}\n"
    parsed = parse_problems(PROBLEMS, data)
    assert [(e.file, e.line, e.message) for e in parsed.entries] == [("f.yaml", 3, "m")]
    assert "2 malformed entries ignored" in parsed.problems[0].message


def test_status_lists_errors_counts_warnings_and_tells_the_object(example: Path, cli) -> None:
    break_customization(example)
    (example / "spaces" / "wmw-c" / "nowhere.yaml").write_text(
        "apiVersion: edge.kubestellar.io/v2alpha1\nkind: EdgePlacement\nmetadata: {name: nowhere}\n"
        "spec:\n  locationSelectors: [{matchLabels: {env: mars}}]\n  downsync: [{apiGroup: '', resources: [secrets]}]\n")
    assert cli("reconcile", str(example)).code == 0
    result = cli("status", str(example), "-o", "json")
    assert result.code == 0, result
    facts = json.loads(result.out)
    errors = [p for p in facts["reconcileProblems"] if p["severity"] == "error"]
    assert errors == [{"space": WDS, "severity": "error", "file": HTTPD, "line": LINE, "object": OBJECT, "wec": "guilder",
                       "mailbox": "imw1-mb-guilder", "message": errors[0]["message"]}]
    assert facts["spaces"] == {"wmw-c": {"state": "Reconciled", "errors": 0, "warnings": 2},
                               WDS: {"state": "Reconciled", "errors": 1, "warnings": 0}}
    text = (example / "STATUS.md").read_text()
    assert "Reconcile: 1 error, 2 warnings." in text
    assert "| wmw-c | Reconciled | 0 | 2 |" in text and f"| {WDS} | Reconciled | 1 | 0 |" in text
    row = next(line for line in text.splitlines() if line.startswith(f"| {WDS} | {HTTPD}:{LINE} |"))
    assert f"| {OBJECT} | guilder | " in row and MISSING in row
    assert "selects no WEC" not in text  # warnings are counted, not listed
    status = load_yaml((example / f"spaces/{WDS}/.ksgitops/status/{SPECIAL_CM}.yaml").read_bytes())
    assert status["problemCount"] == 1
    assert status["problems"][0]["source"] == "reconcile" and status["problems"][0]["wec"] == "guilder"
    assert status["problems"][0]["file"] == f"{HTTPD}:{LINE}" and MISSING in status["problems"][0]["message"]
    other = load_yaml((example / f"spaces/{WDS}/.ksgitops/status/apps/deployments/specialstuff/speciald.yaml").read_bytes())
    assert "problems" not in other

    fix_customization(example)
    assert cli("reconcile", str(example)).code == 0 and cli("status", str(example)).code == 0
    text = (example / "STATUS.md").read_text()
    assert "Reconcile: 0 errors, 2 warnings." in text and f"| {WDS} |" not in text.split("## Placements")[0]


def test_a_secret_customization_error_shows_no_secret_data(example: Path, cli) -> None:
    write_tree(example, {"spaces/wmw-c/secret.yaml": """
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: commonstuff
  annotations: {edge.kubestellar.io/expand-parameters: "true"}
stringData: {password: "hunter2-%(nosuchkey)"}
"""})
    path = example / "spaces" / "wmw-c" / "edge-placement-c.yaml"
    text = path.read_text()
    assert "configmaps" in text
    path.write_text(text.replace("configmaps", "configmaps, secrets"))
    assert cli("reconcile", str(example)).code == 0
    assert cli("status", str(example)).code == 0
    shown = (example / problems_root("wmw-c")).read_text() + (example / "STATUS.md").read_text()
    assert "Secret commonstuff/creds" in shown and "a parameter it references is not defined" in shown
    assert "hunter2" not in shown and "nosuchkey" not in shown  # what stands in %(...) is Secret data too


def test_status_over_git_reads_the_committed_problems_file(example_git: Path, cli) -> None:
    break_customization(example_git)
    git(example_git, "commit", "-qam", "ask for a region")
    result = cli("reconcile", str(example_git), "--commit")
    assert result.code == 0, result
    assert git(example_git, "show", f"HEAD:{PROBLEMS}").startswith("apiVersion: ksgitops.kubestellar.io/v1alpha1")
    (example_git / PROBLEMS).unlink()  # status --commit reads the commit, not the work tree
    assert cli("status", str(example_git), "--commit").code == 0
    text = git(example_git, "show", "HEAD:STATUS.md")
    assert f"| {WDS} | {HTTPD}:{LINE} | {OBJECT} | guilder |" in text
    fix_customization(example_git)
    git(example_git, "commit", "-qam", "back")
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert PROBLEMS not in git(example_git, "ls-tree", "-r", "--name-only", "HEAD")
    assert cli("status", str(example_git), "--commit").code == 0
    assert "No reconcile problems." in git(example_git, "show", "HEAD:STATUS.md")


def test_the_runtime_writes_problems_files_too(example: Path, git_daemon: GitDaemon, tmp_path: Path) -> None:  # noqa: F811
    break_customization(example)
    bare = git_daemon.bare("fleet.git", git_init(example))
    rt = runtimes.RemoteRuntime(git_daemon.url("fleet.git"), "main", tmp_path / "work", Observer(), retries=2)
    assert rt.cycle().action == "reconciled"
    assert MISSING in load_yaml(git(bare, "show", f"main:{PROBLEMS}").encode())["problems"][0]["message"]
    assert f"| {WDS} | {HTTPD}:{LINE} | {OBJECT} | guilder |" in git(bare, "show", "main:STATUS.md")


def test_diff_sees_a_problems_file_change(example: Path) -> None:
    app.reconcile_worktree(example)
    assert app.plan_diff(example, None)[1].changed is False
    break_customization(example)
    _result, diff = app.plan_diff(example, None)
    assert diff.changed is True and diff.wecs == []  # the mailbox keeps its copy: only the problems file moves


def test_memory_source_reads_problems_from_a_reconcile_result(example: Path) -> None:
    break_customization(example)
    result = app.compute(app.open_source(example, app.WORKTREE))
    out = summarize(result, MemorySource(with_reports(result.generated, {}), problems_in(result.generated)))
    assert out.status(WDS, SPECIAL_CM)["problemCount"] == 1
    assert "problems" not in summarize(result, MemorySource(with_reports(result.generated, {}))).status(WDS, SPECIAL_CM)


def test_findings_of_no_space_are_counted_under_the_repository(example: Path) -> None:
    """Status's own run finds them again (no problems file holds them)."""
    result = app.compute(app.open_source(example, app.WORKTREE))
    result.problems.append(Problem(Origin("spaceprovider git"), "space x is discovered twice", "warning"))
    out = summarize(result, MemorySource(with_reports(result.generated, {})))
    assert "| (repository) | - | 0 | 1 |" in out.markdown.decode()
    assert {"space": "", "severity": "warning", "file": "spaceprovider git",
            "message": "space x is discovered twice"} in out.facts()["reconcileProblems"]
