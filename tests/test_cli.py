"""The command line on the bundled example: outputs, generated files, exit codes.

Most cases run in-process through the `cli` fixture; a few run the real entry point in a child
process (`run_cli_subprocess`) to check exit codes and that no traceback ever reaches stderr.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import ksgitops
from conftest import git, run_cli_subprocess
from ksgitops.model import counted

FLORIN = "spaces/imw1-mb-florin"
GUILDER = "spaces/imw1-mb-guilder"
MAILBOXES = (FLORIN, GUILDER)
SPS_C = "spaces/wmw-c/.ksgitops/singleplacementslices/edge-placement-c.yaml"
SPS_S = "spaces/wmw-s/.ksgitops/singleplacementslices/edge-placement-s.yaml"
COMMON_CM = "spaces/wmw-c/httpd.yaml"
SPECIAL_CM = "spaces/wmw-s/httpd.yaml"


# ------------------------------------------------------------------------------------------ helpers

def run(cli: Any, *args: str, code: int = 0) -> Any:
    """Run the CLI in-process, check the exit code and that stderr holds no traceback."""
    res = cli(*args)
    assert res.code == code, res
    assert "Traceback" not in res.err and "Traceback" not in res.out, res
    return res


def one_line_error(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected a one-line error, got: {text!r}"
    assert "Traceback" not in text
    return lines[0]


def reconcile(cli: Any, repo: Path) -> Any:
    return run(cli, "reconcile", str(repo))


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def render(cli: Any, wec: str, repo: Path) -> list[dict[str, Any]]:
    """The objects of `render -o json`, a v1 List."""
    doc = json.loads(run(cli, "render", wec, str(repo), "-o", "json").out)
    assert (doc["apiVersion"], doc["kind"]) == ("v1", "List"), doc
    return doc["items"]


def find(objects: list[dict[str, Any]], kind: str, namespace: str, name: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and o["metadata"].get("namespace") == namespace
             and o["metadata"]["name"] == name]
    assert len(found) == 1, (kind, namespace, name, [(o["kind"], o["metadata"]) for o in objects])
    return found[0]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def remove_synctarget(path: Path) -> None:
    """Drop the SyncTarget document of an inventory file, keep the rest (the Location)."""
    docs = [d for d in path.read_text().split("\n---\n") if "kind: SyncTarget" not in d]
    assert docs, path
    path.write_text("\n---\n".join(docs))


# ------------------------------------------------------------------------------------------ --version

def test_version(cli: Any) -> None:
    res = run(cli, "--version")
    assert "ksgitops" in res.out and ksgitops.__version__ in res.out, res


def test_version_real_entry_point() -> None:
    proc = run_cli_subprocess("--version")
    assert proc.returncode == 0, proc
    assert ksgitops.__version__ in proc.stdout
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------------------ validate

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


# ----------------------------------------------------------------------------------------- reconcile

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


# ---------------------------------------------------------------------------------------------- diff

def test_diff_before_reconcile_reports_both_wecs(cli: Any, example: Path) -> None:
    res = run(cli, "diff", str(example), code=1)
    assert res.out.rstrip().splitlines()[-1] == "2 WECs affected"
    assert not (example / FLORIN).exists(), "diff is a dry run"


def test_diff_right_after_reconcile_is_empty(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    res = run(cli, "diff", str(example))
    assert res.out == "0 WECs affected\n"
    assert json.loads(run(cli, "diff", str(example), "-o", "json").out) == {
        "changed": False, "affectedWecs": [], "wecs": {}, "problems": [], "frozen": []}


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
    assert set(data) == {"changed", "affectedWecs", "wecs", "problems", "frozen"}
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


# -------------------------------------------------------------------------------------------- render

def test_render_accepts_every_wec_spelling(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    outputs = [run(cli, "render", wec, str(example), "-o", "json").out
               for wec in ("florin", "imw1/florin", "imw1-mb-florin")]
    assert outputs[0] == outputs[1] == outputs[2]
    objects = json.loads(outputs[0])["items"]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == [
        ("ConfigMap", "httpd-htdocs"), ("Namespace", "commonstuff"), ("ReplicaSet", "commond")]
    assert render(cli, "guilder", example) != objects


def test_render_yaml_is_multi_document_and_equals_json(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    text = run(cli, "render", "guilder", str(example), "-o", "yaml").out
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    assert len(docs) == 6, docs
    assert text.count("\n---\n") == 5
    assert docs == render(cli, "guilder", example)
    # yaml is the default output
    assert run(cli, "render", "guilder", str(example)).out == text


def test_render_works_before_reconcile(cli: Any, example: Path) -> None:
    """render computes from the sources; it needs no generated files."""
    objects = render(cli, "florin", example)
    assert "Running in florin." in find(objects, "ConfigMap", "commonstuff", "httpd-htdocs")["data"]["index.html"]
    assert not (example / FLORIN).exists()


def test_render_unknown_wec_exit_2_one_line(cli: Any, example: Path) -> None:
    res = run(cli, "render", "zloty", str(example), code=2)
    assert "zloty" in one_line_error(res.err)
    assert res.out == ""


# ------------------------------------------------------------------------------------------- explain

def test_explain_wec_text_and_json(cli: Any, example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(example)
    text = run(cli, "explain", "florin", ".").out
    for needle in ("edge-placement-c", "downsync[1]", "example-customizer", "env: prod", "imw1-mb-florin"):
        assert needle in text, (needle, text)
    assert "edge-placement-s" not in text and "specialstuff" not in text

    data = json.loads(run(cli, "explain", "florin", ".", "-o", "json").out)
    assert data["wec"] == "florin" and data["mailbox"] == "imw1-mb-florin"
    assert [p["name"] for p in data["placements"]] == ["edge-placement-c"]
    rs = next(o for o in data["objects"] if o["object"].startswith("ReplicaSet"))
    assert rs["placedBy"] == ["wmw-c/edge-placement-c downsync[1]"]
    assert rs["customizer"] == "example-customizer"
    assert rs["parameters"] == {"env": "prod"}
    cm = next(o for o in data["objects"] if o["object"].startswith("ConfigMap"))
    assert cm["placedBy"] == ["wmw-c/edge-placement-c downsync[0]"]
    assert cm["parameters"] == {"loc-name": "florin"}
    # the default REPO is the current directory
    assert json.loads(run(cli, "explain", "florin", "-o", "json").out) == data


def test_explain_wec_with_repo_path(cli: Any, example: Path) -> None:
    data = json.loads(run(cli, "explain", "florin", str(example), "-o", "json").out)
    assert data["mailbox"] == "imw1-mb-florin"


def test_explain_placed_object(cli: Any, example: Path) -> None:
    spec = "ReplicaSet/commonstuff/commond"
    text = run(cli, "explain", "guilder", spec, str(example)).out
    for needle in ("edge-placement-c", "downsync[1]", "example-customizer", "env: prod"):
        assert needle in text, (needle, text)

    data = json.loads(run(cli, "explain", "guilder", spec, str(example), "-o", "json").out)
    assert data["wec"] == "guilder" and data["mailbox"] == "imw1-mb-guilder"
    [match] = data["matches"]
    assert match["placed"] is True and match["space"] == "wmw-c"
    [verdict] = match["placements"]
    assert verdict["placement"] == "edge-placement-c" and verdict["reachesWec"] is True
    assert any(c.startswith("spec.downsync[1]") and "matches" in c and "not" not in c for c in verdict["clauses"])
    assert any(c.startswith("spec.downsync[0]") and "does not match" in c for c in verdict["clauses"])
    entry = match["mailboxEntry"]
    assert entry["customizer"] == "example-customizer"
    assert entry["parameters"] == {"env": "prod"}
    assert entry["placedBy"] == ["wmw-c/edge-placement-c downsync[1]"]
    assert entry["patch"] == "patches/apps/replicasets/commonstuff/commond.json"


def test_explain_object_not_placed_says_why(cli: Any, example: Path) -> None:
    spec = "Deployment/specialstuff/speciald"
    data = json.loads(run(cli, "explain", "florin", spec, str(example), "-o", "json").out)
    [match] = data["matches"]
    assert match["placed"] is False and "mailboxEntry" not in match
    [verdict] = match["placements"]
    assert verdict["placement"] == "edge-placement-s"
    assert verdict["reachesWec"] is False
    text = run(cli, "explain", "florin", spec, str(example)).out
    assert "edge-placement-s" in text and "placed: no" in text
    assert re.search(r"reachesWec: no", text), text
    # the same object on guilder is placed
    guilder = json.loads(run(cli, "explain", "guilder", spec, str(example), "-o", "json").out)
    assert guilder["matches"][0]["placed"] is True


def test_explain_unknown_object_and_wec(cli: Any, example: Path) -> None:
    res = run(cli, "explain", "florin", "ConfigMap/nowhere/nothing", str(example), code=2)
    assert "ConfigMap/nowhere/nothing" in one_line_error(res.err)
    res = run(cli, "explain", "zloty", "ConfigMap/commonstuff/httpd-htdocs", str(example), code=2)
    assert "zloty" in one_line_error(res.err)


# ---------------------------------------------------------------------------------------- exit codes

@pytest.mark.parametrize("args", [
    ("validate",), ("reconcile",), ("diff",), ("render", "florin"),
    ("explain", "florin", "ConfigMap/commonstuff/httpd-htdocs"),
])
def test_missing_repo_dir_exit_2_one_line(cli: Any, tmp_path: Path, args: tuple[str, ...]) -> None:
    missing = tmp_path / "no-such-repo"
    res = run(cli, *args, str(missing), code=2)
    line = one_line_error(res.err)
    assert str(missing) in line, line
    assert not missing.exists()


def test_reconcile_source_ref_without_commit_writes_the_commits_output(cli: Any, example_git: Path) -> None:
    """--source REF reads the commit (not the edited work tree) and writes into the work tree."""
    page = example_git / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("common web site", "uncommitted web site"))
    run(cli, "reconcile", "--source", "HEAD", str(example_git), code=0)
    written = (example_git / FLORIN / "objects/core/configmaps/commonstuff/httpd-htdocs.yaml").read_text()
    assert "common web site" in written and "uncommitted" not in written
    assert git(example_git, "rev-list", "--count", "HEAD") == "1"  # nothing committed


def test_reconcile_unknown_source_ref_is_one_line_error(cli: Any, example_git: Path) -> None:
    res = run(cli, "reconcile", "--source", "no-such-ref", str(example_git), code=2)
    one_line_error(res.err)
    assert not (example_git / FLORIN).exists()


def test_real_entry_point_missing_repo(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    proc = run_cli_subprocess("validate", str(missing))
    assert proc.returncode == 2, proc
    assert str(missing) in one_line_error(proc.stderr)


def test_real_entry_point_render_unknown_wec_and_invalid_repo(example: Path) -> None:
    proc = run_cli_subprocess("render", "zloty", str(example))
    assert proc.returncode == 2, proc
    assert "zloty" in one_line_error(proc.stderr)
    assert proc.stdout == ""

    (example / "spaces/wmw-s/broken.yaml").write_text("kind: [unclosed\n")
    proc = run_cli_subprocess("reconcile", str(example))
    assert proc.returncode == 2, proc
    assert "Traceback" not in proc.stderr
    assert re.search(r"spaces/wmw-s/broken\.yaml:\d+: ", proc.stderr), proc.stderr
    assert "spaces/wmw-s: frozen: it contributes nothing" in proc.stderr
    assert (example / FLORIN).exists(), "the healthy part is written: only the broken space is frozen"
    assert not list((example / GUILDER).rglob("*specialstuff*")), "a space never valid contributes nothing"


def test_real_entry_point_diff_exit_codes(example: Path) -> None:
    proc = run_cli_subprocess("diff", str(example))
    assert proc.returncode == 1, proc
    assert proc.stdout.splitlines()[-1] == "2 WECs affected"
    proc = run_cli_subprocess("reconcile", cwd=example)  # REPO defaults to the current directory
    assert proc.returncode == 0, proc
    assert (example / FLORIN / "kustomization.yaml").is_file()
    proc = run_cli_subprocess("diff", cwd=example)
    assert proc.returncode == 0, proc
    assert proc.stdout == "0 WECs affected\n"
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("output", ["text", "json"])
def test_stdout_on_a_full_disk_is_one_line_and_exit_3(example: Path, output: str) -> None:
    """Nothing can be written to stdout: one line on stderr, exit 3 (not a traceback, nor the
    interpreter's 120 when it tries again at exit)."""
    import subprocess
    import sys
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "ksgitops", "wecs", str(example), "-o", output], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "No space left on device" in done.stderr


def test_a_command_started_with_stdout_closed_ends_without_a_traceback(example: Path) -> None:
    import os
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "ksgitops", "wecs", str(example)], stderr=subprocess.PIPE,
                          text=True, timeout=120, preexec_fn=lambda: os.close(1))
    assert "Traceback" not in done.stderr and done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "ksgitops", "diff", str(example)], stderr=subprocess.PIPE,
                          text=True, timeout=120, preexec_fn=lambda: os.close(1))  # its pager asks stdout first
    assert "error" not in done.stderr and done.returncode == 1, done.stderr
    for command in (["reconcile"], ["status"]):  # commands that keep memos once they have answered
        done = subprocess.run([sys.executable, "-m", "ksgitops", *command, str(example)], stderr=subprocess.PIPE,
                              text=True, timeout=120, preexec_fn=lambda: os.close(1))
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr and done.returncode == 0, \
            (command, done.stderr)
