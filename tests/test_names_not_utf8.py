"""A file or folder name that is not UTF-8 (bytes the file system and git allow, that YAML,
Kubernetes and a problems file cannot spell) is an error of its space: the space freezes, the
rest of the fleet is reconciled, every command answers with the name shown as `\\xNN` and no
command fails with an internal error. In a commit, the name goes back into the tree as its bytes."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import git, git_init, run_cli_subprocess

BAD_FOLDER = b"spaces/wmw-c/team-\xff"


def _bad(repo: Path, relative: bytes) -> Path:
    return Path(os.fsdecode(os.fsencode(repo) + b"/" + relative))


def _tree(repo: Path, treeish: str = "HEAD") -> bytes:
    return subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", "--name-only", treeish],
                          check=True, capture_output=True).stdout


def test_a_name_that_is_not_utf8_freezes_its_space_and_every_command_says_so(example_git: Path) -> None:
    assert run_cli_subprocess("reconcile", cwd=example_git).returncode == 0
    before = {p: p.read_bytes() for p in (example_git / "spaces").rglob("*") if p.is_file() and "-mb-" in str(p)}
    folder = _bad(example_git, BAD_FOLDER)
    folder.mkdir()
    shutil.copy(example_git / "spaces/wmw-c/httpd.yaml", folder / "httpd.yaml")
    _bad(example_git, b"spaces/wmw-s/f\xfa.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    for args in (["reconcile"], ["diff"], ["validate"], ["status"], ["explain", "florin"], ["render", "florin"]):
        done = run_cli_subprocess(*args, cwd=example_git)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
        if args[0] in ("diff", "validate"):
            assert "spaces/wmw-c/team-\\xff: this name is not UTF-8" in done.stderr, args
            assert "spaces/wmw-s/f\\xfa.yaml: this name is not UTF-8" in done.stderr, args
    problems = (example_git / "spaces/wmw-c/.ksgitops/problems.yaml").read_text()
    assert "file: spaces/wmw-c/team-\\xff\n" in problems and "state: Frozen" in problems
    after = {p: p.read_bytes() for p in (example_git / "spaces").rglob("*") if p.is_file() and "-mb-" in str(p)}
    assert after == before  # both WDSes frozen: every mailbox kept as it was

    shutil.rmtree(folder)
    _bad(example_git, b"spaces/wmw-s/f\xfa.yaml").unlink()
    assert run_cli_subprocess("reconcile", cwd=example_git).returncode == 0
    assert not (example_git / "spaces/wmw-c/.ksgitops/problems.yaml").exists()


def test_a_space_whose_name_is_not_utf8_is_named_and_the_rest_is_reconciled(example: Path) -> None:
    bad = _bad(example, b"spaces/team-\xfe")
    shutil.copytree(example / "spaces/wmw-c", bad)
    done = run_cli_subprocess("reconcile", cwd=git_init(example))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "spaces/team-\\xfe: space name is not UTF-8" in done.stderr
    assert (example / "spaces/imw1-mb-florin/kustomization.yaml").is_file()


def test_a_commit_holding_such_a_name_is_reconciled_and_keeps_its_bytes(example: Path, tmp_path: Path) -> None:
    folder = _bad(example, BAD_FOLDER)
    folder.mkdir(parents=True)
    shutil.copy(example / "spaces/wmw-c/httpd.yaml", folder / "httpd.yaml")
    source = git_init(example)
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(bare))
    first = run_cli_subprocess("reconcile", str(bare), "--commit", cwd=tmp_path)
    assert first.returncode == 2 and "Traceback" not in first.stderr, first.stderr
    assert "spaces/wmw-c/team-\\xff: this name is not UTF-8" in first.stderr
    assert BAD_FOLDER + b"/httpd.yaml\0" in _tree(bare)
    assert git(bare, "rev-parse", "HEAD") != git(source, "rev-parse", "HEAD")  # wmw-s was reconciled
    again = run_cli_subprocess("reconcile", str(bare), "--commit", cwd=tmp_path)
    assert again.returncode == 2 and "internal error" not in again.stderr
    status = run_cli_subprocess("status", str(bare), "--commit", cwd=tmp_path)
    assert status.returncode in (0, 2) and "internal error" not in status.stderr, status.stderr
    assert BAD_FOLDER + b"/httpd.yaml\0" in _tree(bare)


def test_a_byte_that_is_not_utf8_is_shown_as_that_byte_wherever_a_name_is_printed() -> None:
    from ksgitops.names import not_utf8, printable
    name = os.fsdecode(b"spaces/imw1-mb-x/reported/core/configmaps/ns/c\xfe.yaml")
    assert printable(name) == "spaces/imw1-mb-x/reported/core/configmaps/ns/c\\xfe.yaml"
    assert not_utf8(name) == "spaces/imw1-mb-x/reported/core/configmaps/ns/c\\xfe.yaml"
    assert printable("a\x1b[31mb\u202e") == "a\\x1b[31mb\\u202e"  # escapes a terminal would obey, as before
