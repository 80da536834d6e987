"""Reading many blobs, from the packs first: a repository's object database asks its loose
objects first, a failing access(2) per object that costs a quarter of reading a small packed
blob, and status reads a fleet's 166k packed reports. Whatever the packs do not hold (a loose
object, an alternate's) is read the ordinary way: an object's bytes are the same wherever it is."""
from __future__ import annotations

import os

from ..fs.durable import common_dir
from ..pygit import pygit2


class PackedFirst:
    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._packs = pygit2.Odb()
        self._packs.add_backend(pygit2.OdbBackendPack(os.path.join(common_dir(repo.path), "objects")), 1)

    def blob(self, key: str) -> bytes:
        """The bytes of blob `key`; KeyError when the repository holds no such blob."""
        try:
            kind, data = self._packs.read(key)
        except KeyError:
            kind, data = self.repo.odb.read(key)
        if kind != pygit2.GIT_OBJECT_BLOB:
            raise KeyError(f"{key} is not a blob")
        return bytes(data)
