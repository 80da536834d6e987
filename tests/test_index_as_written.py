"""A change made file by file in a checkout: git reads the files written itself (their index
entries then carry stat data, as after git's own checkout) only when what it enters is what was
written; what it entered is checked, and anything else goes in as the commit has it."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import git
from ksgitops.io.git import checkout, indexupdate

TARGET = "spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"


def _quiet(repo: Path, *args: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), *args]).returncode == 0


def _edit_page(repo: Path, new: str = "edited web site") -> None:
    page = repo / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("common web site", new))
    git(repo, "commit", "-qam", "edit")


def _index_equals_head(repo: Path) -> bool:
    return _quiet(repo, "diff-index", "--cached", "--quiet", "HEAD")


def test_files_git_would_convert_go_into_the_index_as_committed(example_git: Path, cli) -> None:
    """git reads the files it enters only when nothing converts them: under a clean filter (here
    one that adds a comment to a mailbox's objects) it would have staged the filtered bytes, not
    the commit's."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    (example_git / ".gitattributes").write_text("spaces/*-mb-*/objects/** filter=mark\n")
    git(example_git, "config", "filter.mark.clean", "sed -e '$a# cleaned'")
    git(example_git, "add", ".gitattributes")
    _edit_page(example_git)
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert _index_equals_head(example_git), git(example_git, "status", "--short")


@pytest.mark.parametrize("kept", ["assume-unchanged", "a stat git takes for unchanged"])
def test_an_entry_git_keeps_as_it_was_is_made_anyway(example_git: Path, cli, kept: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """git, reading a file it is given, keeps the entry as it was when it takes the file for
    unchanged: an entry marked assume-unchanged, or (`core.checkStat=minimal`: mtime seconds and
    size) a file written anew at the same size within the second of the old one. The index then
    staged the old content back; what git wrote is checked, and libgit2 makes the changes."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    target = TARGET
    if kept == "assume-unchanged":
        git(example_git, "update-index", "--assume-unchanged", target)
    else:
        git(example_git, "config", "core.checkStat", "minimal")
        earlier = (example_git / target).stat().st_mtime_ns - 10 * 10**9  # not racily clean: older than the index
        os.utime(example_git / target, ns=(earlier, earlier))
        git(example_git, "update-index", "-q", "--refresh")  # the old file's stat in its entry
        old, real = (example_git / target).stat(), checkout.write_file

        def in_the_same_second(path: Path, data: bytes, observe: bool = False):
            placed = real(path, data, observe)
            if str(path).endswith(target):
                os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
                return os.lstat(path) if observe else None
            return placed
        monkeypatch.setattr(checkout, "write_file", in_the_same_second)
    _edit_page(example_git, "common web page")  # the same size
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert git(example_git, "rev-parse", f":{target}") == git(example_git, "rev-parse", f"HEAD:{target}")
    assert _index_equals_head(example_git), git(example_git, "status", "--short")


def test_a_mode_git_keeps_from_the_old_entry_is_made_as_committed(example_git: Path, cli) -> None:
    """Under `core.fileMode=false` git keeps the old entry's mode for a file it reads: a
    generated file committed executable stayed 100755 in the index after the commit made it
    100644 (a staged mode change the user's next commit would take)."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    git(example_git, "config", "core.fileMode", "false")
    git(example_git, "update-index", "--chmod=+x", TARGET)
    git(example_git, "commit", "-qm", "an executable bit on a generated file")
    _edit_page(example_git)
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert git(example_git, "ls-files", "-s", TARGET).split()[0] == "100644"
    assert _index_equals_head(example_git), git(example_git, "status", "--short")


def test_a_file_changed_while_git_reads_is_not_taken_for_clean(example_git: Path, cli,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A write in place (the same size) after the look and before git reads: git enters that
    content, the check finds another id, libgit2 makes the changes, and gave the entry the stat
    of the file as written: git then took the changed file for clean."""
    import time
    assert cli("reconcile", str(example_git), "--commit").code == 0
    _edit_page(example_git)
    look, check = indexupdate._read_as_written, indexupdate._entered

    def and_then_someone_writes(*args):
        found = look(*args)
        with open(example_git / TARGET, "r+b") as f:
            f.write(b"X" * 8)
        return found

    def in_a_later_second(*args):
        time.sleep(1.1)  # the index written a second after the file: git's racy check cannot catch it
        return check(*args)
    monkeypatch.setattr(indexupdate, "_read_as_written", and_then_someone_writes)
    monkeypatch.setattr(indexupdate, "_entered", in_a_later_second)
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert (example_git / TARGET).read_bytes().startswith(b"XXXXXXXX")
    assert not _quiet(example_git, "diff-files", "--quiet", "--", TARGET), "git takes the changed file for clean"
    assert _index_equals_head(example_git), git(example_git, "status", "--short")


def test_a_file_removed_then_made_again_stays_out_of_the_index(example_git: Path, cli,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A removal went in as `--remove` of a missing file: one made again before git looked was
    added to the index, a change the commit does not have."""
    extra = example_git / "spaces/wmw-c/extra.yaml"
    extra.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: commonstuff\n"
                     "data:\n  a: b\n")
    git(example_git, "add", "-A")
    git(example_git, "commit", "-qm", "extra")
    assert cli("reconcile", str(example_git), "--commit").code == 0
    gone = "spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/extra.yaml"
    assert (example_git / gone).exists()
    extra.unlink()
    git(example_git, "commit", "-qam", "no extra")
    look = indexupdate._read_as_written

    def and_then_someone_makes_it(*args):
        found = look(*args)
        (example_git / gone).write_text("made again\n")
        return found
    monkeypatch.setattr(indexupdate, "_read_as_written", and_then_someone_makes_it)
    assert cli("reconcile", str(example_git), "--commit").code == 0
    assert git(example_git, "ls-files", gone) == ""
    assert _index_equals_head(example_git), git(example_git, "status", "--short")


def test_the_entries_of_a_small_commit_carry_stat_data(example_git: Path, cli) -> None:
    """git read the files: each entry written holds the file's inode and size (no libgit2 step)."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    _edit_page(example_git)
    calls: list[bool] = []
    check = indexupdate._entered
    indexupdate_entered = lambda *a: calls.append(check(*a)) or calls[-1]  # noqa: E731
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(indexupdate, "_entered", indexupdate_entered)
        assert cli("reconcile", str(example_git), "--commit").code == 0
    assert calls == [True]
    debug = git(example_git, "ls-files", "--debug", "--", TARGET)
    inode = int(debug.split("ino: ")[1].split()[0])
    assert inode == os.lstat(example_git / TARGET).st_ino


