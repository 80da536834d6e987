"""`render` and `explain` on the bundled example: every spelling of a WEC, YAML that equals the
JSON, `render` before any reconcile; why an object is placed on a WEC or not (text and JSON), and
one-line errors for an unknown WEC or object.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli_run import FLORIN, find, one_line_error, reconcile, render, run


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
