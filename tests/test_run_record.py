"""The record of a bare reconcile (io/git/runrecord.py): made from the last record where a
mailbox's tree did not move, it is the record a full read of the new tree gives."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2

from conftest import copy_example_sources, git_init
from ksgitops.io.git import runrecord
from ksgitops.io.git.repo import TreeIndex
from ksgitops.io.git.cache import DiskCache


def test_a_record_taken_from_the_last_is_the_one_a_full_read_gives(tmp_path: Path, cli) -> None:
    src = git_init(copy_example_sources(tmp_path / "src"))
    bare = tmp_path / "fleet.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True)
    assert cli("reconcile", str(bare), "--commit").code == 0
    first = DiskCache.for_git_dir(str(bare)).record
    for command in (["fetch", "-q", str(bare), "main"], ["reset", "-q", "--hard", "FETCH_HEAD"]):
        subprocess.run(["git", "-C", str(src), *command], check=True)
    path = src / "spaces/imw1/florin.yaml"
    path.write_text(path.read_text().replace("loc-name: florin\n    env: prod\nspec", "loc-name: FL\n    env: prod\nspec"))
    subprocess.run(["git", "-C", str(src), "commit", "-qam", "a label"], check=True)
    subprocess.run(["git", "-C", str(src), "push", "-q", str(bare), "main"], check=True)
    assert cli("reconcile", str(bare), "--commit").code == 0
    second = DiskCache.for_git_dir(str(bare)).record
    moved = [mb for mb, tree in second.mailboxes.items() if first.mailboxes.get(mb) != tree]
    kept = [mb for mb in second.mailboxes if mb not in moved]
    assert moved and kept  # some mailboxes took the last record's entries, some were read
    repo = pygit2.Repository(str(bare))
    index = TreeIndex(repo, repo.references["refs/heads/main"].peel(pygit2.Commit).tree)
    assert second.fingerprint == runrecord.fingerprint(index, second.mailboxes)
