"""A `.ksgitops-journal` that ksgitops did not write: planted in the work tree, or committed to git
by a hostile pull request (a CI checkout then holds it). Recovery reads the roots it names and
removes or renames them; it must act only on roots ksgitops owns, inside the repository, and refuse
any other journal with nothing touched.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import copy_example_sources, run_cli_subprocess

JOURNAL = ".ksgitops-journal"
REASON = ("recovery trusts the journal's root paths: an absolute path, a '..' path, .git or a source "
          "space named there is removed (io/fs/worktree.py _recover)")


def plant(repo: Path, *roots: dict) -> None:
    (repo / JOURNAL).write_text(json.dumps({"format": "ksgitops-journal-1", "state": "started",
                                            "roots": list(roots)}))


def precious(folder: Path) -> Path:
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "file").write_text("not ksgitops' to delete\n")
    return folder


@pytest.mark.parametrize("command", ["validate", "reconcile"])
def test_a_journal_naming_a_folder_outside_the_repository_touches_nothing(tmp_path: Path, command: str) -> None:
    repo = copy_example_sources(tmp_path / "repo")
    outside, beside = precious(tmp_path / "victim"), precious(tmp_path / "beside")
    plant(repo, {"path": str(outside), "existed": False, "keep": []},
          {"path": "../beside", "existed": False, "keep": []})
    found = run_cli_subprocess(command, str(repo))
    assert (outside / "sub" / "file").exists() and (beside / "sub" / "file").exists()
    assert found.returncode == 3 and JOURNAL in found.stderr and "Traceback" not in found.stderr, found.stderr


@pytest.mark.parametrize("root", [".git", "spaces/wmw-c", "spaces"])
def test_a_journal_naming_what_ksgitops_does_not_own_touches_nothing(example_git: Path, root: str) -> None:
    before = sorted(str(p.relative_to(example_git)) for p in (example_git / root).rglob("*"))
    plant(example_git, {"path": root, "existed": False, "keep": []})
    found = run_cli_subprocess("validate", str(example_git))
    assert sorted(str(p.relative_to(example_git)) for p in (example_git / root).rglob("*")) == before
    assert found.returncode == 3 and JOURNAL in found.stderr, found.stderr



def test_a_stale_journal_never_removes_a_mailboxs_reports(example_git: Path) -> None:
    """A journal of another state of the repository (committed by mistake or on purpose, or copied
    with a work tree) that names a mailbox as new: the mailbox exists now, holding reports."""
    assert run_cli_subprocess("reconcile", str(example_git)).returncode == 0
    report = example_git / "spaces" / "imw1-mb-florin" / "reported" / "core" / "configmaps" / "commonstuff" / "x.yaml"
    report.parent.mkdir(parents=True)
    report.write_text("collected, not yet committed\n")
    plant(example_git, {"path": "spaces/imw1-mb-florin", "existed": False, "keep": []})
    run_cli_subprocess("validate", str(example_git))
    assert report.read_text() == "collected, not yet committed\n"


@pytest.mark.parametrize("field", ["keep", "reuse"])
@pytest.mark.parametrize("link_in", ["root", "trash"])
def test_a_journal_whose_carried_path_goes_through_a_link_moves_nothing(example_git: Path, tmp_path: Path,
                                                                         field: str, link_in: str) -> None:
    """Recovery moves kept and reused paths between a root and its old copy: a link on the way,
    in either, would carry a file out of the repository or an outside one in."""
    import os
    import shutil
    assert run_cli_subprocess("reconcile", str(example_git)).returncode == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not ksgitops' file\n")
    mailbox = example_git / "spaces" / "imw1-mb-florin"
    trash = example_git / "spaces" / ".imw1-mb-florin.ksgitops-trash"
    shutil.copytree(mailbox, trash)
    linked, real = (mailbox, trash) if link_in == "root" else (trash, mailbox)
    os.symlink(outside, linked / "objects" / "x")
    (real / "objects" / "x").mkdir()
    (real / "objects" / "x" / "mine.txt").write_text("in the repository\n")
    plant(example_git, {"path": "spaces/imw1-mb-florin", "existed": True, field: ["objects/x/secret.txt", "objects/x/mine.txt"]})
    (example_git / JOURNAL).write_text((example_git / JOURNAL).read_text().replace("ksgitops-journal-1", "ksgitops-journal-2"))
    found = run_cli_subprocess("validate", str(example_git))
    assert found.returncode == 3 and "symbolic link" in found.stderr, found.stderr
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (real / "objects" / "x" / "mine.txt").read_text() == "in the repository\n"


def test_a_journal_of_the_earlier_format_is_still_recovered(example_git: Path) -> None:
    """Format 1 (before reused folders) rolls back as it always did."""
    assert run_cli_subprocess("reconcile", str(example_git)).returncode == 0
    stage = example_git / "spaces" / ".imw1-mb-guilder.ksgitops-stage"
    stage.mkdir()
    (stage / "half.yaml").write_text("half written\n")
    plant(example_git, {"path": "spaces/imw1-mb-guilder", "existed": True, "keep": []})
    found = run_cli_subprocess("validate", str(example_git))
    assert found.returncode == 0, found.stderr
    assert not stage.exists() and not (example_git / JOURNAL).exists()
    assert (example_git / "spaces" / "imw1-mb-guilder" / "space.yaml").is_file()


def test_a_planted_journal_and_old_copy_never_take_a_mailboxs_kept_files(example_git: Path) -> None:
    """A journal `started` beside a planted `.NAME.ksgitops-trash` copy without the mailbox's
    reports: rolling back would remove the mailbox and rename the copy in. Refused, exit 3."""
    import shutil
    assert run_cli_subprocess("reconcile", str(example_git)).returncode == 0
    mailbox = example_git / "spaces" / "imw1-mb-florin"
    (mailbox / "upsynced").mkdir()
    (mailbox / "upsynced" / "u.yaml").write_text("precious\n")
    (mailbox / "NOTES.md").write_text("a person's note\n")
    trash = example_git / "spaces" / ".imw1-mb-florin.ksgitops-trash"
    shutil.copytree(mailbox, trash, ignore=shutil.ignore_patterns("upsynced", "NOTES.md", "reported"))
    plant(example_git, {"path": "spaces/imw1-mb-florin", "existed": True, "keep": []})
    found = run_cli_subprocess("validate", str(example_git))
    assert found.returncode == 3 and "does not carry back" in found.stderr, found.stderr
    assert (mailbox / "upsynced" / "u.yaml").read_text() == "precious\n"
    assert (mailbox / "NOTES.md").read_text() == "a person's note\n"
