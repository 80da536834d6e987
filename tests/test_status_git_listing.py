"""GitStatusSource.listing over a commit's tree: each mailbox's objects, patches and reports by
blob id, as a walk of its folders names them; mailboxes holding the same objects/ folder share
one reading of it."""
from __future__ import annotations

from pathlib import Path

import pygit2

from conftest import git
from ksgitops.io.git.repo import TreeIndex
from ksgitops.io.status_sources import GitStatusSource


def _tree(repo: pygit2.Repository, files: dict[str, bytes]) -> pygit2.Oid:
    nested: dict = {}
    for path, data in files.items():
        *folders, name = path.split("/")
        node = nested
        for folder in folders:
            node = node.setdefault(folder, {})
        node[name] = data

    def write(node: dict) -> pygit2.Oid:
        builder = repo.TreeBuilder()
        for name, value in sorted(node.items()):
            if isinstance(value, dict):
                builder.insert(name, write(value), pygit2.GIT_FILEMODE_TREE)
            else:
                builder.insert(name, repo.create_blob(value), pygit2.GIT_FILEMODE_BLOB)
        return builder.write()
    return write(nested)


def test_listings_name_every_file_and_share_a_same_objects_folder(tmp_path: Path) -> None:
    path = tmp_path / "r.git"
    path.mkdir()
    git(path, "init", "-q", "--bare")
    repo = pygit2.Repository(str(path))
    objects = {"objects/core/configmaps/ns/a.yaml": b"a\n", "objects/apps/deployments/ns/d.yaml": b"d\n"}
    files = {**{f"spaces/mb1/{k}": v for k, v in objects.items()}, **{f"spaces/mb2/{k}": v for k, v in objects.items()},
             "spaces/mb2/patches/apps/deployments/ns/d.json": b"[]\n",
             "spaces/mb1/reported/core/configmaps/ns/a.json": b"{}\n", "spaces/mb3/space.yaml": b"x\n"}
    source = GitStatusSource(repo, TreeIndex(repo, repo[_tree(repo, files)]))
    first, second, third = source.listing("mb1"), source.listing("mb2"), source.listing("mb3")
    key = lambda data: str(pygit2.hash(data))  # noqa: E731
    assert first.objects == second.objects == {"core/configmaps/ns/a": key(b"a\n"), "apps/deployments/ns/d": key(b"d\n")}
    assert first.objects is second.objects
    assert first.patches == {} and second.patches == {"apps/deployments/ns/d": key(b"[]\n")}
    assert first.reports == {"core/configmaps/ns/a.json": ("spaces/mb1/reported/core/configmaps/ns/a.json", key(b"{}\n"))}
    assert second.reports == {} and (third.objects, third.patches, third.reports) == ({}, {}, {})
    assert source.blob(first.objects["apps/deployments/ns/d"]) == b"d\n"
