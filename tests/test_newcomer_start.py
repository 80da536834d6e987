"""What a newcomer meets at the very start: right after `git init`, the message for a folder
without spaces/ says `ksgitops init .`; `status` before any reconcile says why nothing is counted."""
from __future__ import annotations

from pathlib import Path

from conftest import git, run_cli_subprocess
from test_newcomer import one_line


def test_at_the_top_of_a_fresh_git_repository_the_message_says_init_dot(tmp_path: Path) -> None:
    """Right after `git init` the way to start is `ksgitops init .`; below the top, or outside any
    repository, the message names a new folder instead."""
    git(tmp_path, "init", "-q")
    (tmp_path / "sub").mkdir()
    proc = run_cli_subprocess("validate", cwd=tmp_path)
    assert proc.returncode == 2 and "to start one here, run `ksgitops init .`" in one_line(proc.stderr), proc
    below = run_cli_subprocess("validate", cwd=tmp_path / "sub")
    assert below.returncode == 2 and "init ." not in below.stderr and "ksgitops init DIR" in below.stderr, below
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git", "sub"]


def test_status_before_any_reconcile_says_the_mailboxes_are_not_written_yet(example: Path) -> None:
    """It said `4 objects on 2 WECs: 0/0 healthy` and nothing more."""
    before = run_cli_subprocess("status", str(example))
    assert before.returncode == 0 and "0/0 healthy" in before.stdout, before
    assert "no mailbox holds them yet: `ksgitops reconcile` writes the mailboxes" in before.stdout, before
    assert run_cli_subprocess("reconcile", str(example)).returncode == 0
    after = run_cli_subprocess("status", str(example))
    assert after.returncode == 0 and "Missing" in after.stdout and "no mailbox holds" not in after.stdout, after
