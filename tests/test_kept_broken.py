"""Broken files reconcile keeps as they stand (core/emit/kept.py, core/place/isolation.py).

A frozen WDS's objects and a previous copy kept on a per-(object, WEC) error are kept byte for byte
from the mailbox; a frozen WDS's placement records say what to keep. When such a file does not
read (a merge's conflict markers, a hand edit, binary bytes), it is still kept and listed in the
mailbox's kustomization.yaml (dropping it would have `kubectl apply -k --prune` and `ksgitops sync`
prune the object from the WEC), with a located warning that never quotes it. `render` and `sync`
refuse such a mailbox; `diff` shows nothing to prune. And a mailbox whose kustomization.yaml does
not read counts as an affected WEC in `diff`.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from isolation_cases import SPECIALD, base_repo, worktree_files
from ksgitops.app.agent.desired import desired_objects
from ksgitops.core.emit.readback import Unreadable
from ksgitops.io.fs.tree import WorkTreeSnapshot

SECRET_VALUE = "hunter2-kept-s3cr3t"
GUILDER = "spaces/imw1-mb-guilder"
BREAKS = {
    "merge-conflict": (lambda data: b"<<<<<<< HEAD\n" + data + b"=======\n" + data + b">>>>>>> theirs\n", 1),
    "invalid-yaml": (lambda data: data + b"broken: a: b\n", 0),  # 0: the line after the file's last
    "binary": (lambda data: b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + data, 1),
}
KEPT = {"deployment": f"{GUILDER}/objects/{SPECIALD}.yaml",
        "secret": f"{GUILDER}/objects/core/secrets/specialstuff/topsecret.yaml"}


@pytest.fixture
def repo(tmp_path: Path, cli: Any) -> Path:
    """The isolation base (example + imw2/zloty) with a Secret wmw-s places, reconciled."""
    repo = base_repo(tmp_path / "repo")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "topsecret", "namespace": "specialstuff"},
              "stringData": {"password": SECRET_VALUE}}
    (repo / "spaces/wmw-s/secret.yaml").write_text(yaml.safe_dump(secret))
    placement = repo / "spaces/wmw-s/edge-placement-s.yaml"
    placement.write_text(placement.read_text().replace("resources: [configmaps]", "resources: [configmaps, secrets]"))
    assert cli("reconcile", str(repo)).code == 0
    assert SECRET_VALUE.encode() in (repo / KEPT["secret"]).read_bytes()
    return repo


def break_file(repo: Path, rel: str, how: str) -> tuple[bytes, int]:
    """Break `rel` `how`; returns the broken bytes and the line a warning names."""
    good = (repo / rel).read_bytes()
    change, line = BREAKS[how]
    (repo / rel).write_bytes(change(good))
    return change(good), line or good.count(b"\n") + 1


def assert_quiet(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and "hunter2" not in text and "broken: a" not in text, text


@pytest.mark.parametrize("how", BREAKS)
@pytest.mark.parametrize("kind", KEPT)
def test_a_frozen_spaces_base_copy_that_does_not_read_is_kept_and_listed(repo: Path, cli: Any, kind: str,
                                                                         how: str) -> None:
    """It was dropped from the kept mailbox: the object left the overlay and a prune removed it."""
    rel = KEPT[kind]
    broken, line = break_file(repo, rel, how)
    (repo / "spaces/wmw-s/broken.yaml").write_text("kind: [unclosed\n")  # wmw-s is frozen
    diff = cli("diff", str(repo))
    assert diff.code == 2 and "0 WECs affected" in diff.out and "speciald" not in diff.out, diff
    result = cli("reconcile", str(repo))
    assert result.code == 2, result
    assert_quiet(result.out, result.err, diff.out, diff.err)
    assert (repo / rel).read_bytes() == broken, "kept byte for byte"
    object_path = rel[len(GUILDER) + 1:]
    kustomization = yaml.safe_load((repo / GUILDER / "kustomization.yaml").read_text())
    assert object_path in kustomization["resources"]
    name = rel.rsplit("/", 1)[1][: -len(".yaml")]
    syncer = yaml.safe_load((repo / GUILDER / "syncerconfig.yaml").read_text())["spec"]["namespacedObjects"]
    assert [(o["apiVersion"], o["resource"]) for o in syncer if name in o["objectsByNamespace"][0]["names"]] == \
        [("v1", object_path.split("/")[2])]
    [warning] = [ln for ln in result.err.splitlines() if ln.startswith(f"{rel}:{line}: warning: ")]
    assert "kept as it stands (space wmw-s is frozen), so `kubectl apply -k` and `ksgitops sync` refuse this " \
           "mailbox; reconcile writes it anew once the space's errors are fixed" in warning
    render = cli("render", "guilder", str(repo))
    assert render.code == 2 and f"{rel}:{line}: " in render.err, render
    with pytest.raises(Unreadable) as caught:  # what `ksgitops sync` renders: it applies and prunes nothing
        desired_objects(WorkTreeSnapshot(repo).read_tree(GUILDER))  # type: ignore[arg-type]
    assert caught.value.path == object_path
    if shutil.which("kubectl"):
        found = subprocess.run(["kubectl", "kustomize", str(repo / GUILDER)], capture_output=True, text=True)
        assert found.returncode != 0, "kustomize refuses the mailbox rather than leaving the object out"
    before = worktree_files(repo)
    assert cli("reconcile", str(repo)).code == 2 and worktree_files(repo) == before
    (repo / "spaces/wmw-s/broken.yaml").unlink()
    assert cli("reconcile", str(repo)).code == 0
    assert b"kind:" in (repo / rel).read_bytes() and (repo / rel).read_bytes() != broken, "written anew"


def test_a_frozen_spaces_patch_that_does_not_read_gets_a_located_warning(repo: Path, cli: Any) -> None:
    rel = f"{GUILDER}/patches/apps/replicasets/commonstuff/commond.json"
    broken, _ = break_file(repo, rel, "merge-conflict")
    (repo / "spaces/wmw-c/broken.yaml").write_text("kind: [unclosed\n")
    result = cli("reconcile", str(repo))
    assert result.code == 2 and (repo / rel).read_bytes() == broken
    assert_quiet(result.out, result.err)
    [warning] = [ln for ln in result.err.splitlines() if ln.startswith(f"{rel}:1: warning: ")]
    assert "conflict markers" in warning and "(space wmw-c is frozen)" in warning, warning


def test_a_previous_copy_kept_on_an_error_that_does_not_read_gets_a_located_warning(repo: Path, cli: Any) -> None:
    """A per-(object, WEC) error keeps the previous copy: a base copy or a patch that does not read
    is kept as it stands, with a warning at its line."""
    source = repo / "spaces/wmw-c/httpd.yaml"
    source.write_text(source.read_text().replace("Running in %(loc-name)", "Running in %(nothere)"))
    florin_patch = "spaces/imw1-mb-florin/patches/core/configmaps/commonstuff/httpd-htdocs.json"
    guilder_base = f"{GUILDER}/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"
    patch, _ = break_file(repo, florin_patch, "merge-conflict")
    base, line = break_file(repo, guilder_base, "invalid-yaml")
    result = cli("reconcile", str(repo))
    assert result.code == 0, result
    assert_quiet(result.out, result.err)
    assert (repo / florin_patch).read_bytes() == patch and (repo / guilder_base).read_bytes() == base
    for where, what in ((f"{florin_patch}:1", "conflict markers"), (f"{guilder_base}:{line}", "malformed YAML")):
        [warning] = [ln for ln in result.err.splitlines() if ln.startswith(f"{where}: warning: ")]
        assert what in warning and "kept as it stands (the object has an error on this WEC)" in warning, warning
        assert "reconcile writes it anew once that error is fixed" in warning
    # a mailbox has no problems file: its warnings go to its WEC's inventory space's, for status
    listed = yaml.safe_load((repo / "spaces/imw1/.ksgitops/problems.yaml").read_text())
    assert [(p["file"], p["wec"], p["severity"]) for p in listed["problems"]] == [
        (florin_patch, "florin", "warning"), (guilder_base, "guilder", "warning")]
    assert listed["state"] == "Reconciled"


@pytest.mark.parametrize("how", BREAKS)
def test_a_placement_record_that_does_not_read_is_named_not_taken_for_an_older_ksgitops(repo: Path, cli: Any,
                                                                                        how: str) -> None:
    record = "spaces/wmw-c/.ksgitops/placements/edge-placement-c.yaml"
    _, line = break_file(repo, record, how)
    before = worktree_files(repo)
    (repo / "spaces/wmw-c/broken.yaml").write_text("kind: [unclosed\n")
    result = cli("reconcile", str(repo))
    assert result.code == 2, result
    assert "older ksgitops" not in result.out + result.err
    [warning] = [ln for ln in result.err.splitlines() if ln.startswith(f"{record}:{line}: warning: ")]
    assert "placement record does not read" in warning and "reconcile writes it anew" in warning, warning
    assert f"spaces/wmw-c: frozen: 3 mailboxes its SinglePlacementSlices reach are kept whole: {record} does not " \
           "read; reconcile writes it anew once the space's errors are fixed" in result.err
    after = worktree_files(repo)
    assert {k: v for k, v in after.items() if "-mb-" in k} == {k: v for k, v in before.items() if "-mb-" in k}
    problems = yaml.safe_load((repo / "spaces/wmw-c/.ksgitops/problems.yaml").read_text())
    assert any(p["file"] == record and p["severity"] == "warning" for p in problems["problems"])
    status = cli("status", str(repo))
    assert status.code == 2 and "older ksgitops" not in (repo / "STATUS.md").read_text()
    assert f"{record} does not read" in (repo / "STATUS.md").read_text()


def test_a_slice_that_does_not_read_keeps_every_mailbox_whole(repo: Path, cli: Any) -> None:
    """It reached no WEC: the frozen space's objects left every mailbox, and a prune removed them."""
    sps = "spaces/wmw-s/.ksgitops/singleplacementslices/edge-placement-s.yaml"
    _, line = break_file(repo, sps, "merge-conflict")
    before = worktree_files(repo)
    (repo / "spaces/wmw-s/broken.yaml").write_text("kind: [unclosed\n")
    diff = cli("diff", str(repo))
    assert diff.code == 2 and "0 WECs affected" in diff.out, diff
    result = cli("reconcile", str(repo))
    assert result.code == 2, result
    [warning] = [ln for ln in result.err.splitlines() if ln.startswith(f"{sps}:{line}: warning: ")]
    assert "SinglePlacementSlice does not read" in warning and "every mailbox is kept whole" in warning, warning
    after = worktree_files(repo)
    assert {k: v for k, v in after.items() if "-mb-" in k} == {k: v for k, v in before.items() if "-mb-" in k}


@pytest.mark.parametrize("how", BREAKS)
def test_diff_counts_a_wec_whose_kustomization_does_not_read(repo: Path, cli: Any, how: str) -> None:
    """It exited 1 with "0 WECs affected": `kubectl apply -k` refuses that mailbox until reconcile
    writes its kustomization.yaml anew, so the WEC is affected."""
    rel = f"{GUILDER}/kustomization.yaml"
    _, line = break_file(repo, rel, how)
    result = cli("diff", str(repo))
    assert result.code == 1, result
    assert f"-unreadable: '{rel}:{line}: " in result.out and result.out.endswith("1 WEC affected\n"), result.out
    assert f"+++ b/{rel}" in result.out and "+- objects/core/secrets/specialstuff/topsecret.yaml" in result.out
    as_json = json.loads(cli("diff", str(repo), "-o", "json").out)
    assert as_json["changed"] and as_json["affectedWecs"] == ["guilder"]
    assert "1 WEC affected" in cli("diff", str(repo), "-o", "markdown").out


def test_diff_shows_a_hand_edited_kustomization_and_never_what_a_person_added(repo: Path, cli: Any) -> None:
    rel = repo / GUILDER / "kustomization.yaml"
    doc = yaml.safe_load(rel.read_text())
    doc["resources"].remove(f"objects/{SPECIALD}.yaml")
    doc["secretGenerator"] = [{"name": "x", "literals": [f"password={SECRET_VALUE}"]}]
    rel.write_text(yaml.safe_dump(doc))
    result = cli("diff", str(repo))
    assert result.code == 1 and "1 WEC affected" in result.out, result
    assert f"+- objects/{SPECIALD}.yaml" in result.out and "-secretGenerator: <not shown>" in result.out
    assert_quiet(result.out)


def test_diff_of_a_source_change_shows_objects_not_the_kustomization(repo: Path, cli: Any) -> None:
    (repo / "spaces/wmw-s/secret.yaml").unlink()
    result = cli("diff", str(repo))
    assert result.code == 1 and "topsecret" in result.out and "kustomization.yaml" not in result.out, result.out
