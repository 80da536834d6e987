"""Finding things and reading results: suggestions for mistyped names, `ksgitops wecs`, `explain`'s
why-not per placement, diff headers, colour and the pager on a terminal, KUBECTL_EXTERNAL_DIFF.

Terminal behaviour runs the real entry point with stdout on a pseudo-terminal.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import run_cli_on_a_terminal, run_cli_subprocess

SPECIAL_CM = "spaces/wmw-s/httpd.yaml"
HEADER = ("--- a/spaces/imw1-mb-guilder/objects/core/configmaps/specialstuff/httpd-htdocs.yaml\t"
          "ConfigMap specialstuff/httpd-htdocs (rendered with patches/core/configmaps/specialstuff/httpd-htdocs.json)")


def edit_special(example: Path) -> None:
    path = example / SPECIAL_CM
    path.write_text(path.read_text().replace("This is a special web site.", "This is a very special web site."))


def reconciled_and_edited(cli: Any, example: Path) -> Path:
    assert cli("reconcile", str(example)).code == 0
    edit_special(example)
    return example


# --- did you mean --------------------------------------------------------------------------------

def test_suggestions_for_a_mistyped_wec_space_and_object(cli: Any, example: Path) -> None:
    res = cli("render", "florn", str(example))
    assert res.code == 2 and "no WEC named 'florn' (did you mean florin or imw1/florin?)" in res.err, res
    res = cli("render", "imw2/florin", str(example))
    assert res.code == 2 and "no inventory space 'imw2' holds a SyncTarget (did you mean imw1?)" in res.err, res
    res = cli("explain", "guilder", "ConfigMap/specialstuff/httpd-htdoc", str(example))
    assert res.code == 2 and "matches 'ConfigMap/specialstuff/httpd-htdoc' (did you mean ConfigMap/specialstuff/httpd-htdocs or" in res.err, res
    res = cli("explain", "guilder", "httpd-htdocs", str(example))
    assert res.code == 2 and "write Kind[.group]/[namespace/]name" in res.err, res
    res = cli("render", "zzzzzz", str(example))
    assert res.code == 2 and "did you mean" not in res.err and "ksgitops wecs" in res.err, res


# --- ksgitops wecs ---------------------------------------------------------------------------------

def test_wecs_lists_labels_mailbox_and_placements(cli: Any, example: Path) -> None:
    rows = json.loads(cli("wecs", str(example), "-o", "json").out)["wecs"]
    assert [(r["wec"], r["mailbox"], r["placements"]) for r in rows] == [
        ("florin", "imw1-mb-florin", 1), ("guilder", "imw1-mb-guilder", 2)]
    assert rows[0]["labels"] == {"env": "prod", "id": "florin", "loc-name": "florin"}
    assert rows[1]["locations"] == ["guilder"] and rows[1]["inventorySpace"] == "imw1"
    text = cli("wecs", str(example)).out.splitlines()
    assert text[0].split() == ["WEC", "SPACE", "MAILBOX", "PLACEMENTS", "LABELS"]
    assert text[1].split()[:4] == ["florin", "imw1", "imw1-mb-florin", "1"]
    assert "env=prod" in text[1]
    assert not any(r["frozen"] for r in rows)


def test_wecs_marks_the_wecs_an_inventory_error_freezes(cli: Any, example: Path) -> None:
    (example / "spaces/imw1/broken.yaml").write_text("kind: [\n")
    res = cli("wecs", str(example), "-o", "json")
    assert res.code == 2, res
    assert [(r["wec"], r["frozen"]) for r in json.loads(res.out)["wecs"]] == [("florin", True), ("guilder", True)]
    text = cli("wecs", str(example)).out.splitlines()
    assert text[1].split()[:4] == ["florin", "imw1", "imw1-mb-florin", "(frozen)"]


# --- explain: why not ------------------------------------------------------------------------------

def test_explain_says_which_location_selector_fails(cli: Any, example: Path) -> None:
    data = json.loads(cli("explain", "florin", "Deployment/specialstuff/speciald", str(example), "-o", "json").out)
    [verdict] = data["matches"][0]["placements"]
    assert verdict["verdict"].startswith("selects it, but does not reach this WEC")
    assert verdict["reach"] == ["spec.locationSelectors[0] does not select Location imw1/florin: matchLabels "
                                "wants extended=si and there is no label extended"]
    assert any(c.endswith(": matches") for c in verdict["clauses"])
    on_guilder = json.loads(cli("explain", "guilder", "Deployment/specialstuff/speciald", str(example), "-o", "json").out)
    [verdict] = on_guilder["matches"][0]["placements"]
    assert verdict["verdict"] == "places it on this WEC"
    assert verdict["reach"] == ["spec.locationSelectors[0] selects Location imw1/guilder"]
    text = cli("explain", "florin", "Deployment/specialstuff/speciald", str(example)).out
    assert "there is no label extended" in text and "does not reach this WEC" in text


def test_explain_why_not_when_no_location_selects_the_wec(cli: Any, example: Path) -> None:
    path = example / "spaces/imw1/florin.yaml"
    path.write_text(path.read_text().replace("matchLabels: {id: florin}", "matchLabels: {id: somewhere-else}"))
    data = json.loads(cli("explain", "florin", "ConfigMap/commonstuff/httpd-htdocs", str(example), "-o", "json").out)
    [verdict] = data["matches"][0]["placements"]
    assert verdict["reachesWec"] is False
    [line] = verdict["reach"]
    assert line.startswith("no Location in space imw1 selects SyncTarget florin (its labels: env=prod, id=florin")


def test_explain_names_the_failing_clause_criterion(cli: Any, example: Path) -> None:
    data = json.loads(cli("explain", "guilder", "ReplicaSet/commonstuff/commond", str(example), "-o", "json").out)
    [verdict] = data["matches"][0]["placements"]
    assert verdict["clauses"][0].startswith("spec.downsync[0]: does not match: apiGroup")


# --- diff headers, colour, pager -------------------------------------------------------------------

def test_diff_headers_name_the_object(cli: Any, example: Path) -> None:
    out = cli("diff", str(reconciled_and_edited(cli, example))).out
    assert HEADER in out.splitlines(), out
    assert "+++ b/spaces/imw1-mb-guilder/objects/core/configmaps/specialstuff/httpd-htdocs.yaml\t" in out


def on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    return run_cli_on_a_terminal(*args, stream="stdout", env=env)


def test_diff_colours_a_terminal_only_and_honours_no_color(cli: Any, example: Path) -> None:
    repo = str(reconciled_and_edited(cli, example))
    plain = {"KSGITOPS_PAGER": "cat"}
    code, out = on_a_terminal(["diff", repo], plain)
    assert code == 1 and "\x1b[32m+" in out and "\x1b[31m-" in out, out
    for env, args in (({"NO_COLOR": "1"}, []), ({}, ["--no-color"])):
        code, out = on_a_terminal(["diff", repo, *args], {**plain, **env})
        assert code == 1 and "\x1b[" not in out and "very special" in out, (env, args, out)
    piped = run_cli_subprocess("diff", repo)
    assert "\x1b[" not in piped.stdout and "very special" in piped.stdout


def test_diff_pages_on_a_terminal(cli: Any, example: Path) -> None:
    repo = str(reconciled_and_edited(cli, example))
    pager = "sed s/^/PAGED:/"
    code, out = on_a_terminal(["diff", repo, "--no-color"], {"PAGER": pager})
    assert code == 1 and "PAGED:1 WEC affected" in out, out
    code, out = on_a_terminal(["diff", repo, "--no-color"], {"PAGER": pager, "KSGITOPS_PAGER": "cat"})
    assert "PAGED:" not in out and "1 WEC affected" in out
    proc = subprocess.run([sys.executable, "-m", "ksgitops", "diff", repo], capture_output=True, text=True,
                          env={**os.environ, "PAGER": pager})
    assert "PAGED:" not in proc.stdout and proc.stdout.endswith("1 WEC affected\n")


# --- KUBECTL_EXTERNAL_DIFF -------------------------------------------------------------------------

def external(repo: Path, value: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ksgitops", "diff", str(repo)], capture_output=True, text=True,
                          env={**os.environ, "KUBECTL_EXTERNAL_DIFF": value})


def test_external_diff_gets_live_and_merged_folders_as_kubectl_writes_them(cli: Any, example: Path) -> None:
    repo = reconciled_and_edited(cli, example)
    name = "imw1-mb-guilder.v1.ConfigMap.specialstuff.httpd-htdocs"
    listed = external(repo, "ls")
    assert listed.returncode == 1, listed
    live, merged = [line.rstrip(":") for line in listed.stdout.splitlines() if line.endswith(":")]
    assert Path(live).name.startswith("LIVE-") and Path(merged).name.startswith("MERGED-")
    assert listed.stdout.count(name) == 2 and listed.stdout.splitlines()[-1] == "1 WEC affected"
    assert not Path(live).exists() and not Path(merged).exists(), "the folders are removed afterwards"
    diffed = external(repo, "diff -u -N")
    assert diffed.returncode == 1 and "+        This is a very special web site." in diffed.stdout, diffed.stdout


def test_external_diff_arguments_and_failures_as_in_kubectl(cli: Any, example: Path, tmp_path: Path) -> None:
    repo = reconciled_and_edited(cli, example)
    dropped = external(repo, "diff -u ;touch")
    assert dropped.returncode == 1 and "argument ';touch' ignored" in dropped.stderr, dropped
    failing = tmp_path / "failing-diff"
    failing.write_text("#!/bin/sh\nexit 3\n")
    failing.chmod(failing.stat().st_mode | stat.S_IEXEC)
    res = external(repo, str(failing))
    assert res.returncode == 3 and "the diff program exited 3" in res.stderr, res
    missing = external(repo, "no-such-diff-program")
    assert missing.returncode == 2 and "cannot run 'no-such-diff-program'" in missing.stderr, missing


def test_external_diff_never_shows_secret_values(cli: Any, example: Path) -> None:
    secret = example / "spaces/wmw-c/secret.yaml"
    secret.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: commonstuff}\n"
                      "stringData: {password: hunter2-old}\n")
    placement = example / "spaces/wmw-c/edge-placement-c.yaml"
    placement.write_text(placement.read_text().replace("resources: [configmaps]", "resources: [configmaps, secrets]"))
    assert cli("reconcile", str(example)).code == 0
    secret.write_text(secret.read_text().replace("hunter2-old", "hunter2-new"))
    res = external(example, "diff -u -N")
    assert res.returncode == 1 and "creds" in res.stdout and "hunter2" not in res.stdout + res.stderr, res


def test_explain_of_an_unplaced_namespace_says_an_implied_one_is_delivered(cli: Any, example: Path) -> None:
    data = json.loads(cli("explain", "florin", "Namespace/commonstuff", str(example), "-o", "json").out)
    [match] = data["matches"]
    assert match["placed"] is False
    assert match["implied"].startswith("the mailbox holds a Namespace of this name all the same")
    assert match["mailboxEntry"]["path"] == "objects/core/namespaces/_cluster/commonstuff.yaml"
    assert match["mailboxEntry"]["implied"] == "namespace of placed objects"
