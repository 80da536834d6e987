"""`--version`, `validate` and `reconcile` on the bundled example: the summary line and its JSON, a
malformed file as `file:line:` with exit 2, the mailboxes and SinglePlacementSlices written and
customized, a second run that changes nothing, reported files kept, and a mailbox removed with its
SyncTarget. Most cases run in-process through the `cli` fixture.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

import ksgitops
from cli_run import (COMMON_CM, FLORIN, GUILDER, MAILBOXES, SPS_C, SPS_S, edit, files_of, find, reconcile,
                     remove_synctarget, render, run)
from conftest import run_cli_subprocess


def test_version(cli: Any) -> None:
    res = run(cli, "--version")
    assert "ksgitops" in res.out and ksgitops.__version__ in res.out, res


def test_version_real_entry_point() -> None:
    proc = run_cli_subprocess("--version")
    assert proc.returncode == 0, proc
    assert ksgitops.__version__ in proc.stdout
    assert "Traceback" not in proc.stderr


def test_validate_ok_prints_summary(cli: Any, example: Path) -> None:
    res = run(cli, "validate", str(example))
    assert res.out.strip().splitlines()[-1] == "valid: 2 WECs, 2 placements, 0 errors, 0 warnings", res
    assert res.err == ""
    assert not (example / FLORIN).exists(), "validate must not write anything"


def test_validate_json_shape(cli: Any, example: Path) -> None:
    data = json.loads(run(cli, "validate", str(example), "-o", "json").out)
    assert data == {"valid": True, "problems": [], "frozen": []}


def test_validate_invalid_yaml_exit_2_with_file_line(cli: Any, example: Path) -> None:
    (example / "spaces/wmw-c/broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n")
    res = run(cli, "validate", str(example), code=2)
    assert re.search(r"spaces/wmw-c/broken\.yaml:\d+: ", res.err), res


def test_validate_json_reports_fatal_errors(cli: Any, example: Path) -> None:
    (example / "spaces/wmw-c/broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n")
    data = json.loads(run(cli, "validate", str(example), "-o", "json", code=2).out)
    assert data["valid"] is False
    assert data["problems"] and data["problems"][0]["file"] == "spaces/wmw-c/broken.yaml"
    assert {"file", "line", "message", "severity"} <= set(data["problems"][0])


def test_reconcile_writes_mailboxes_and_sps(cli: Any, example: Path) -> None:
    res = reconcile(cli, example)
    assert res.out.startswith("2 WECs"), res
    for mailbox in MAILBOXES:
        box = example / mailbox
        for name in ("space.yaml", "syncerconfig.yaml", "kustomization.yaml"):
            assert (box / name).is_file(), (mailbox, name)
        for name in ("objects", "patches"):
            assert (box / name).is_dir() and any((box / name).rglob("*.*")), (mailbox, name)
        space = yaml.safe_load((box / "space.yaml").read_text())
        assert space["kind"] == "Space" and space["spec"]["Type"] == "managed"
        assert space["metadata"]["annotations"]["edge.kubestellar.io/sync-target-name"] == mailbox.rsplit("-", 1)[1]
        syncer = yaml.safe_load((box / "syncerconfig.yaml").read_text())
        assert syncer["kind"] == "SyncerConfig" and syncer["metadata"]["name"] == "the-one"
    for sps, wanted in ((SPS_C, ["florin", "guilder"]), (SPS_S, ["guilder"])):
        body = yaml.safe_load((example / sps).read_text())
        assert body["kind"] == "SinglePlacementSlice"
        assert [d["syncTargetName"] for d in body["destinations"]] == wanted
        assert {d["cluster"] for d in body["destinations"]} == {"imw1"}

    florin_files = files_of(example / FLORIN)
    guilder_files = files_of(example / GUILDER)
    assert not [f for f in florin_files if "specialstuff" in f], florin_files.keys()
    assert "objects/apps/deployments/specialstuff/speciald.yaml" in guilder_files
    assert "objects/core/configmaps/specialstuff/httpd-htdocs.yaml" in guilder_files
    assert "objects/core/configmaps/commonstuff/httpd-htdocs.yaml" in florin_files


def test_reconcile_florin_renders_customized_objects(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    florin = render(cli, "florin", example)
    cm = find(florin, "ConfigMap", "commonstuff", "httpd-htdocs")
    assert "Running in florin." in cm["data"]["index.html"]
    assert "%(loc-name)" not in cm["data"]["index.html"]
    rs = find(florin, "ReplicaSet", "commonstuff", "commond")
    assert rs["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "env is prod"
    assert not [o for o in florin if o["metadata"].get("namespace") == "specialstuff"
                or (o["kind"] == "Namespace" and o["metadata"]["name"] == "specialstuff")]
    guilder = render(cli, "guilder", example)
    assert "Running in guilder." in find(guilder, "ConfigMap", "commonstuff", "httpd-htdocs")["data"]["index.html"]
    assert "Running in guilder." in find(guilder, "ConfigMap", "specialstuff", "httpd-htdocs")["data"]["index.html"]
    find(guilder, "Deployment", "specialstuff", "speciald")


def test_second_reconcile_changes_nothing(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    before = files_of(example)
    assert any(k.startswith(FLORIN) for k in before)
    data = json.loads(run(cli, "reconcile", str(example), "-o", "json").out)
    assert data["changed"] == [] and data["wecs"] == 2 and data["problems"] == []
    assert files_of(example) == before


def test_reported_files_survive_reconcile(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    reported = example / FLORIN / "reported/core/configmaps/commonstuff/httpd-htdocs.yaml"
    upsynced = example / FLORIN / "upsynced/group1.test/sprockets/orbital/george.yaml"
    for path in (reported, upsynced):
        path.parent.mkdir(parents=True)
        path.write_text(f"report: {path.name}\n")
    # a source change forces the mailbox to be rewritten
    edit(example / COMMON_CM, "This is a common web site.", "This is the common web site.")
    res = run(cli, "reconcile", str(example), "-o", "json")
    assert FLORIN in json.loads(res.out)["changed"]
    assert "the common web site" in (example / FLORIN / "patches/core/configmaps/commonstuff/httpd-htdocs.json").read_text()
    assert reported.read_text() == "report: httpd-htdocs.yaml\n"
    assert upsynced.read_text() == "report: george.yaml\n"
    reconcile(cli, example)
    assert reported.is_file() and upsynced.is_file()


def test_removing_a_synctarget_removes_its_mailbox(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    (example / GUILDER / "reported").mkdir()
    (example / GUILDER / "reported/x.yaml").write_text("x: 1\n")
    remove_synctarget(example / "spaces/imw1/guilder.yaml")
    res = reconcile(cli, example)
    assert res.out.startswith("1 WEC, "), res
    assert not (example / GUILDER).exists()
    assert (example / FLORIN / "kustomization.yaml").is_file()
    sps = yaml.safe_load((example / SPS_C).read_text())
    assert [d["syncTargetName"] for d in sps["destinations"]] == ["florin"]
    run(cli, "render", "guilder", str(example), code=2)
