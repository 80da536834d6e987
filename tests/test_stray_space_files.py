"""A newcomer's YAML put straight into spaces/ (`spaces/wecs.yaml`) was read by nothing, and
`validate` said `valid: 0 WECs` without a word about it. It is a located warning now, in every
mode: the work tree (also when the last run is proven and nothing else changed), and a commit."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import git

STRAY = "apiVersion: edge.kubestellar.io/v2alpha1\nkind: SyncTarget\nmetadata: {name: lost}\n"


def _said(out: str, err: str, path: str) -> bool:
    return f"{path}: warning: a file directly in spaces/ is read by nothing" in out + err


def test_a_yaml_file_directly_in_spaces_is_a_located_warning(cli: Any, example: Path) -> None:
    (example / "spaces/wecs.yaml").write_text(STRAY)
    result = cli("validate", str(example))
    assert result.code == 0, result
    assert _said(result.out, result.err, "spaces/wecs.yaml"), result
    assert "move it into one (spaces/wecs/, or a space that exists)" in result.out + result.err
    assert "1 warning" in result.out


def test_a_file_put_there_after_a_proven_run_is_seen_and_its_warning_goes_with_it(cli: Any, example: Path) -> None:
    first = cli("reconcile", str(example))
    assert first.code == 0 and "directly in spaces/" not in first.out + first.err, first
    again = cli("reconcile", str(example))  # a run the record proves: nothing is computed
    assert again.code == 0 and "directly in spaces/" not in again.out + again.err, again
    (example / "spaces/Lost_File.json").write_text('{"kind": "ConfigMap"}')
    seen = cli("reconcile", str(example))
    assert seen.code == 0 and _said(seen.out, seen.err, "spaces/Lost_File.json"), seen
    assert "(spaces/<space>/, or a space that exists)" in seen.out + seen.err  # no folder of that name could be
    proven = cli("reconcile", str(example))
    assert _said(proven.out, proven.err, "spaces/Lost_File.json"), proven  # the record keeps the finding
    (example / "spaces/Lost_File.json").unlink()
    gone = cli("reconcile", str(example))
    assert gone.code == 0 and "directly in spaces/" not in gone.out + gone.err, gone


def test_other_files_and_links_directly_in_spaces_are_not_named(cli: Any, example: Path) -> None:
    (example / "spaces/README.md").write_text("notes\n")
    (example / "spaces/kustomization.yaml").write_text("resources: []\n")  # kustomize's, there on purpose
    (example / "spaces/.hidden.yaml").write_text(STRAY)
    result = cli("validate", str(example))
    assert result.code == 0 and "directly in spaces/" not in result.out + result.err, result


def test_a_commit_s_stray_file_is_named_by_reconcile_commit(cli: Any, example: Path) -> None:
    (example / "spaces/wecs.yml").write_text(STRAY)
    git(example, "init", "-q", "-b", "main")
    git(example, "add", "-A")
    git(example, "commit", "-q", "-m", "sources")
    result = cli("reconcile", str(example), "--commit")
    assert result.code == 0 and _said(result.out, result.err, "spaces/wecs.yml"), result
