"""The pack writer: ids as git computes them, packs that git verifies and libgit2 reads."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from ksgitops.io.pack import TREE_MODE, object_id, tree_content, write_pack


@pytest.mark.parametrize("data", [b"", b"x", b"hello\n" * 1000, bytes(range(256)) * 100])
def test_blob_ids_match_git(data: bytes) -> None:
    assert object_id(b"blob", data) == pygit2.hash(data).raw


def test_pack_is_verified_by_git_and_read_by_libgit2(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    blobs = {object_id(b"blob", d): (b"blob", d) for d in (b"a\n", b"b" * 70_000, b"")}
    a, big, empty = list(blobs)
    sub = tree_content([("big.yaml", 0o100644, big)])
    sub_id = object_id(b"tree", sub)
    # `x` sorts after `x.yaml` only because a folder compares as `x/`
    root = tree_content([("x", TREE_MODE, sub_id), ("x.yaml", 0o100644, a), ("e", 0o100644, empty)])
    objects = {**blobs, sub_id: (b"tree", sub), object_id(b"tree", root): (b"tree", root)}
    pack = write_pack(Path(repo.path) / "objects", objects)
    assert pack is not None
    subprocess.run(["git", "verify-pack", "-v", str(pack.with_suffix(".idx"))], check=True, capture_output=True)
    tree = repo[pygit2.Oid(raw=object_id(b"tree", root))]
    assert [e.name for e in tree] == ["e", "x.yaml", "x"]
    assert tree["x"].type == pygit2.GIT_OBJECT_TREE
    assert repo[repo[tree["x"].id]["big.yaml"].id].data == b"b" * 70_000
    subprocess.run(["git", "-C", repo.path, "fsck", "--strict"], check=True, capture_output=True)


def test_nothing_to_write_writes_nothing(tmp_path: Path) -> None:
    assert write_pack(tmp_path, {}) is None
    assert not (tmp_path / "pack").exists()
