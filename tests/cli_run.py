"""What the command-line tests (tests/test_cli_*.py, tests/test_init.py) share: the bundled
example's mailboxes and sources, the CLI run in-process with its exit code checked and no
traceback, a one-line error, the objects of `render -o json`, and small edits of a work tree."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FLORIN = "spaces/imw1-mb-florin"
GUILDER = "spaces/imw1-mb-guilder"
MAILBOXES = (FLORIN, GUILDER)
SPS_C = "spaces/wmw-c/.ksgitops/singleplacementslices/edge-placement-c.yaml"
SPS_S = "spaces/wmw-s/.ksgitops/singleplacementslices/edge-placement-s.yaml"
COMMON_CM = "spaces/wmw-c/httpd.yaml"
SPECIAL_CM = "spaces/wmw-s/httpd.yaml"


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
