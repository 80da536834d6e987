"""io/git/blobread.PackedFirst reads an object wherever the repository keeps it (a pack, a loose
file, an alternate's store, a pack written after it started) and refuses what is no blob; and
blob_keys, which walks the trees status lists, names every file below a tree with its id."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest

from conftest import git
from ksgitops.io.git.blobread import PackedFirst
from ksgitops.io.git.repo import blob_keys, tree_at


def _repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "--bare")
    return path


def _blob(path: Path, data: bytes) -> str:
    (path.parent / "blob.tmp").write_bytes(data)
    return git(path, "hash-object", "-w", str(path.parent / "blob.tmp"))


def _pack(path: Path, oid: str) -> None:
    """`oid`, a loose object, moved into a pack of its own."""
    subprocess.run(["git", "-C", str(path), "pack-objects", "-q", "objects/pack/pack"], input=oid + "\n",
                   check=True, capture_output=True, text=True)
    os.remove(path / "objects" / oid[:2] / oid[2:])


def test_packed_loose_and_later_packed_objects_are_read(tmp_path: Path) -> None:
    path = _repo(tmp_path / "r.git")
    packed = _blob(path, b"packed\n")
    _pack(path, packed)
    reader = PackedFirst(pygit2.Repository(str(path)))
    loose = _blob(path, b"loose\n")
    later = _blob(path, b"packed later\n")
    _pack(path, later)
    assert reader.blob(packed) == b"packed\n"
    assert reader.blob(loose) == b"loose\n"
    assert reader.blob(later) == b"packed later\n"
    with pytest.raises(KeyError):
        reader.blob("0" * 40)


def test_a_repository_without_packs_is_read(tmp_path: Path) -> None:
    path = _repo(tmp_path / "r.git")
    os.rmdir(path / "objects" / "pack")
    oid = _blob(path, b"loose\n")
    assert PackedFirst(pygit2.Repository(str(path))).blob(oid) == b"loose\n"


def test_an_alternates_objects_are_read(tmp_path: Path) -> None:
    other = _repo(tmp_path / "other.git")
    oid = _blob(other, b"theirs\n")
    path = _repo(tmp_path / "r.git")
    (path / "objects" / "info" / "alternates").write_text(str(other / "objects") + "\n")
    assert PackedFirst(pygit2.Repository(str(path))).blob(oid) == b"theirs\n"


def test_a_tree_is_no_blob(tmp_path: Path) -> None:
    path = _repo(tmp_path / "r.git")
    repo = pygit2.Repository(str(path))
    tree = str(repo.TreeBuilder().write())
    with pytest.raises(KeyError):
        PackedFirst(repo).blob(tree)


def test_blob_keys_names_every_file_below_a_tree(tmp_path: Path) -> None:
    repo = pygit2.Repository(str(_repo(tmp_path / "r.git")))
    ids = {name: repo.create_blob(name.encode()) for name in ("a", "b/c", "b/d/e", "f")}
    inner = repo.TreeBuilder()
    inner.insert("e", ids["b/d/e"], pygit2.GIT_FILEMODE_BLOB)
    middle = repo.TreeBuilder()
    middle.insert("c", ids["b/c"], pygit2.GIT_FILEMODE_BLOB)
    middle.insert("d", inner.write(), pygit2.GIT_FILEMODE_TREE)
    top = repo.TreeBuilder()
    top.insert("a", ids["a"], pygit2.GIT_FILEMODE_BLOB)
    top.insert("b", middle.write(), pygit2.GIT_FILEMODE_TREE)
    top.insert("f", ids["f"], pygit2.GIT_FILEMODE_BLOB_EXECUTABLE)
    top.insert("sub", pygit2.Oid(hex="1" * 40), pygit2.GIT_FILEMODE_COMMIT)  # a submodule: no file
    found = list(blob_keys(repo, tree_at(repo, top.write())))
    assert found == [(name, str(oid)) for name, oid in sorted(ids.items())]
