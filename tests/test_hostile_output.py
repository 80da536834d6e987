"""What the commands print, when names and values are hostile: names of RBAC kinds and custom
resources (SyncTargets included) may hold any character but '/' and '%' — escape sequences a
terminal obeys, newlines, bidirectional overrides — and a diff lands in a pull request's comment.
"""
from __future__ import annotations

import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import yaml
from markdown_it import MarkdownIt

from conftest import copy_example_sources, write_tree
from ksgitops.core.readout.diff import DiffResult, WecDiff, markdown

EVIL = "evil\x1b]0;PWNED\x07\u202ex"
PLACE_ROLES = {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement", "metadata": {"name": "roles"},
               "spec": {"locationSelectors": [{"matchLabels": {"env": "prod"}}],
                        "downsync": [{"apiGroup": "rbac.authorization.k8s.io", "resources": ["clusterroles"]}]}}


def role(name: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": []}


def repo_with_roles(tmp_path: Path, *names: str) -> Path:
    repo = copy_example_sources(tmp_path / "repo")
    return write_tree(repo, {"spaces/wmw-c/roles.yaml": yaml.safe_dump_all([*map(role, names), PLACE_ROLES])})


def ksgitops(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ksgitops", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def no_control_characters(text: str) -> None:
    """No C0 or C1 control character but newline and tab (YAML bodies escape them; a bidirectional
    override inside a YAML string stays, as the YAML dumper writes it: only one-line names are
    escaped whole)."""
    bad = {c for c in text if unicodedata.category(c) == "Cc" and c not in "\n\t"}
    assert not bad, f"printed {sorted(bad)!r}"


def test_names_never_reach_the_terminal_as_control_characters(tmp_path: Path) -> None:
    repo = repo_with_roles(tmp_path, EVIL, "two\nlines")
    st = repo / "spaces" / "imw1" / "florin.yaml"
    docs = list(yaml.safe_load_all(st.read_text()))
    docs[0]["metadata"]["name"] = EVIL  # a SyncTarget's name is a path segment too
    st.write_text(yaml.safe_dump_all(docs))
    for args in (["diff", str(repo)], ["explain", f"imw1/{EVIL}", str(repo)], ["wecs", str(repo)],
                 ["validate", str(repo)]):
        found = ksgitops(*args)
        assert found.returncode in (0, 1), (args, found.stderr)
        no_control_characters(found.stdout + found.stderr)
    diff = ksgitops("diff", str(repo)).stdout
    headers = [line for line in diff.splitlines() if line.startswith(("--- a/", "+++ b/"))]
    assert any("evil\\x1b]0;PWNED\\x07\\u202ex" in line for line in headers)
    assert any(line.endswith("two\\nlines") for line in headers)  # the header stays one line


def test_a_diff_in_the_pull_request_comment_cannot_close_its_code_block() -> None:
    """A line of three spaces and backticks (a context line of a top-level YAML block scalar)
    would end a ``` block in CommonMark, and what follows would be the comment's own text."""
    body = " kind: Note\n-text: |\n+text: |\n   ```\n # Approved by the security team\n   ```\n"
    page = markdown(DiffResult(True, [WecDiff("<b>florin</b>", "imw1-mb-florin", body)]))
    tokens = MarkdownIt("commonmark").parse(page)
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content == body
    assert not [t for t in tokens if t.type == "heading_open"][1:]  # the one title, nothing from the diff
    assert "<b>florin</b>" not in page and "&lt;b&gt;florin&lt;/b&gt;" in page


def test_the_external_diff_gets_short_distinct_files_for_any_names(tmp_path: Path) -> None:
    """Files named after raw names: a 300-character name failed ('File name too long', exit 3),
    and names differing only in case would share a file on a case-insensitive file system."""
    repo = repo_with_roles(tmp_path, "r" * 300, "Admin", "admin")
    found = ksgitops("diff", str(repo), env={"KUBECTL_EXTERNAL_DIFF": "ls -1"})
    assert found.returncode == 1 and found.stderr == "", found.stderr  # changes, and ls listed both folders
    listed = [line for line in found.stdout.splitlines() if line.startswith("imw1-mb-florin.rbac")]
    assert len(listed) == 3 and all(len(name.encode()) < 255 for name in listed), listed
    assert len({name.lower() for name in listed}) == 3, listed
