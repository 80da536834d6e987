"""`diff` on the bundled example: a dry run that exits 1 when a WEC would change, with a unified
diff per WEC (text, JSON, markdown); a change only the SyncerConfig carries, what goes away with a
mailbox whose SyncTarget went, the patch a customized object is rendered with, Secret values
redacted (also data that is no map), and `--against` a git ref.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_run import (COMMON_CM, FLORIN, GUILDER, MAILBOXES, SPECIAL_CM, edit, files_of, find, one_line_error,
                     reconcile, remove_synctarget, render, run)
from conftest import git
from ksgitops.model import counted


def test_diff_before_reconcile_reports_both_wecs(cli: Any, example: Path) -> None:
    res = run(cli, "diff", str(example), code=1)
    assert res.out.rstrip().splitlines()[-1] == "2 WECs affected"
    assert not (example / FLORIN).exists(), "diff is a dry run"


def test_diff_right_after_reconcile_is_empty(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    res = run(cli, "diff", str(example))
    assert res.out == "0 WECs affected\n"
    assert json.loads(run(cli, "diff", str(example), "-o", "json").out) == {
        "changed": False, "affectedWecs": [], "wecs": {}, "problems": [], "frozen": [], "generatedOnly": []}


def test_diff_after_editing_a_common_configmap(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    before = files_of(example)
    edit(example / COMMON_CM, "This is a common web site.", "This is THE common web site.")
    res = run(cli, "diff", str(example), code=1)
    lines = res.out.splitlines()
    assert lines[-1] == "2 WECs affected"
    for mailbox in MAILBOXES:
        assert any(line.startswith(f"--- a/{mailbox}/") for line in lines), mailbox
        assert any(line.startswith(f"+++ b/{mailbox}/") for line in lines), mailbox
    assert any(line.startswith("@@ ") for line in lines)
    assert any(line.startswith("-") and "This is a common web site." in line for line in lines)
    assert any(line.startswith("+") and "This is THE common web site." in line for line in lines)
    assert any(line.startswith(" ") and "Running in florin." in line for line in lines)  # context
    assert files_of(example) == {**before, COMMON_CM: (example / COMMON_CM).read_bytes()}, "diff wrote files"


def test_diff_shows_a_change_only_the_syncer_config_carries(cli: Any, example: Path) -> None:
    """An upsync set lands in the mailbox's SyncerConfig only: the WEC's syncer changes what it
    brings back, so the WEC is affected and the diff shows that file."""
    reconcile(cli, example)
    edit(example / "spaces/wmw-s/edge-placement-s.yaml", 'resources: ["widgets"]', 'resources: ["widgets", "gadgets"]')
    res = run(cli, "diff", str(example), code=1)
    assert res.out.splitlines()[-1] == "1 WEC affected"
    assert f"--- a/{GUILDER}/syncerconfig.yaml\tSyncerConfig.edge.kubestellar.io " in res.out, res.out
    assert any(line.startswith("+") and "gadgets" in line for line in res.out.splitlines())
    data = json.loads(run(cli, "diff", str(example), "-o", "json", code=1).out)
    assert data["affectedWecs"] == ["guilder"]


def test_diff_after_editing_a_special_configmap_names_one_wec(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    edit(example / SPECIAL_CM, "This is a special web site.", "This is a very special web site.")
    res = run(cli, "diff", str(example), code=1)
    assert res.out.splitlines()[-1] == "1 WEC affected"
    assert f"--- a/{GUILDER}/" in res.out and FLORIN not in res.out

    data = json.loads(run(cli, "diff", str(example), "-o", "json", code=1).out)
    assert set(data) == {"changed", "affectedWecs", "wecs", "problems", "frozen", "generatedOnly"}
    assert data["changed"] is True
    assert data["affectedWecs"] == ["guilder"]
    assert set(data["wecs"]) == {"guilder"}
    entry = data["wecs"]["guilder"]
    assert entry["mailbox"] == "imw1-mb-guilder"
    assert "+++ b/" in entry["diff"] and "very special" in entry["diff"]

    md = run(cli, "diff", str(example), "-o", "markdown", code=1).out
    assert md.splitlines()[0].startswith("#") and "1 WEC affected" in md.splitlines()[0]
    assert "```diff" in md and "guilder" in md and "imw1-mb-guilder" in md
    assert "very special" in md and "florin" not in md


def test_diff_names_a_wec_whose_synctarget_was_removed(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    remove_synctarget(example / "spaces/imw1/guilder.yaml")
    data = json.loads(run(cli, "diff", str(example), "-o", "json", code=1).out)
    assert data["affectedWecs"] == ["guilder"]
    assert data["wecs"]["guilder"]["mailbox"] == "imw1-mb-guilder"
    assert f"--- a/{GUILDER}/" in data["wecs"]["guilder"]["diff"]
    assert (example / GUILDER).is_dir(), "diff is a dry run"
    # what goes with the mailbox that reconcile did not write is named before it goes
    (example / GUILDER / "NOTES.md").write_text("a person's notes\n")
    (example / GUILDER / "space.yaml.orig").write_text("a merge tool's\n")
    gone = json.loads(run(cli, "diff", str(example), "-o", "json", code=1).out)["wecs"]["guilder"]["goesAway"]
    reports = sorted(p.relative_to(example / GUILDER).as_posix() for p in (example / GUILDER / "reported").rglob("*")
                     if p.is_file())
    assert gone == {"notWritten": sorted(["NOTES.md", "space.yaml.orig", *reports])}
    text = run(cli, "diff", str(example), code=1).out
    assert f"{GUILDER}: the mailbox goes away with its SyncTarget, and with it {counted(2 + len(reports), 'file')} reconcile" in text
    assert "NOTES.md" in text
    assert "goesAway" not in json.dumps(json.loads(run(cli, "diff", str(example), "-o", "json", code=1).out)["wecs"].get(
        "florin", {}))


def test_diff_names_the_patch_a_customized_object_is_rendered_with(cli: Any, example: Path) -> None:
    """Its base copy may not change at all: the header says where the customization lives."""
    reconcile(cli, example)
    edit(example / "spaces/wmw-c/httpd.yaml", "env is %(env)", "environment is %(env)")
    out = run(cli, "diff", str(example), code=1).out
    rel = "apps/replicasets/commonstuff/commond"
    assert f"--- a/spaces/imw1-mb-florin/objects/{rel}.yaml\tReplicaSet.apps commonstuff/commond " \
           f"(rendered with patches/{rel}.json)\n" in out, out


def test_diff_redacts_secret_values(cli: Any, example: Path) -> None:
    secret = example / "spaces/wmw-c/secret.yaml"
    secret.write_text("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: commonstuff\n"
                      "stringData:\n  password: hunter2-old\n")
    edit(example / "spaces/wmw-c/edge-placement-c.yaml", "resources: [configmaps]", "resources: [configmaps, secrets]")
    reconcile(cli, example)
    secret.write_text(secret.read_text().replace("hunter2-old", "hunter2-new"))
    res = run(cli, "diff", str(example), code=1)
    assert "creds" in res.out and "2 WECs affected" in res.out
    assert "hunter2" not in res.out + res.err
    data = json.loads(run(cli, "diff", str(example), "-o", "json", code=1).out)
    assert data["affectedWecs"] == ["florin", "guilder"]
    assert "hunter2" not in json.dumps(data)
    # render is exempt: it prints what the WEC receives
    secret_obj = find(render(cli, "florin", example), "Secret", "commonstuff", "creds")
    assert secret_obj["stringData"] == {"password": "hunter2-new"}


@pytest.mark.parametrize("data", ["stringData: [hunter2-password]", "stringData: hunter2-password",
                                  "data: [aHVudGVyMi1wYXNzd29yZA==]"])
def test_diff_redacts_secret_data_that_is_no_map(cli: Any, example: Path, data: str) -> None:
    """Not what kubectl takes (a warning says so), but Secret data all the same."""
    (example / "spaces/wmw-c/secret.yaml").write_text(
        f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s, namespace: commonstuff}}\n{data}\n")
    edit(example / "spaces/wmw-c/edge-placement-c.yaml", "resources: [configmaps]", "resources: [configmaps, secrets]")
    res = run(cli, "diff", str(example), code=1)
    assert "Secret commonstuff/s" in res.out
    assert "hunter2" not in res.out + res.err and "aHVudGVy" not in res.out + res.err


def test_diff_against_ref_in_git_repo(cli: Any, example_git: Path) -> None:
    source = git(example_git, "rev-parse", "HEAD")
    res = run(cli, "reconcile", "--commit", str(example_git))
    assert "committed" in res.out
    assert git(example_git, "rev-parse", "HEAD^") == source
    assert f"Ksgitops-Source: {source}" in git(example_git, "log", "-1", "--format=%B")
    assert git(example_git, "status", "--porcelain") == ""

    res = run(cli, "diff", "--against", "HEAD", str(example_git))
    assert res.out.splitlines()[-1] == "0 WECs affected"
    # the source commit holds no generated files: both WECs would change against it
    res = run(cli, "diff", "--against", "HEAD~1", str(example_git), code=1)
    assert res.out.splitlines()[-1] == "2 WECs affected"

    edit(example_git / SPECIAL_CM, "This is a special web site.", "This is a changed special web site.")
    res = run(cli, "diff", "--against", "HEAD", str(example_git), code=1)
    assert res.out.splitlines()[-1] == "1 WEC affected"
    assert "changed special web site" in res.out and f"a/{GUILDER}/" in res.out
    data = json.loads(run(cli, "diff", "--against", "HEAD", str(example_git), "-o", "json", code=1).out)
    assert data["affectedWecs"] == ["guilder"]


def test_diff_against_unknown_ref_is_one_line_error(cli: Any, example_git: Path) -> None:
    res = cli("diff", "--against", "no-such-ref", str(example_git))
    assert res.code >= 2, res
    assert "no-such-ref" in one_line_error(res.err)
