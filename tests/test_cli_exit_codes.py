"""Exit codes and one-line errors of the command line: a missing repository, `reconcile --source`
with a ref (written to the work tree, nothing committed) or an unknown one; the real entry point
in a child process (exit 2 for bad input, 1 for a diff with changes, never a traceback); stdout
full (exit 3, one line) or closed.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cli_run import FLORIN, GUILDER, one_line_error, run
from conftest import git, run_cli_subprocess


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
