"""The git edge (pygit2): read a commit as a Snapshot, build new trees in memory, commit.

Trees are built bottom-up with TreeBuilder, reusing every unchanged subtree by id; blobs are
hashed first and written only when the object database lacks them. The branch moves only after
the whole commit exists on disk (the pack and its index fsynced, the commit object and the ref
written by libgit2 with fsync on), and only if it still points where it did (else GitError, exit
3). In a checkout the work tree follows after the branch moved (checkout.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from msgspec import Struct

from ..pygit import pygit2

from ...core.load.snapshot import MAX_FILE_BYTES, SOURCE_SUFFIXES, SourceFile, is_source_path
from ...core.status.gitobjects import BLOB_MODE, TREE_MODE
from ...core.tree import KEEP, OTHERS, REUSE, FileTree, Generated, Subtree
from ...model import KsgitopsError
from ..fs.durable import common_dir
from .branch import unborn_branch
from .pack import KINDS, index_ids, object_id, tree_content, write_pack

PROBE_FROM, PROBE = 4096, 64  # TreeWriter.flush: from how many new objects it probes, with how many


def tree_at(repo: pygit2.Repository, oid: Any) -> pygit2.Tree:
    """The tree object `oid` (typed: pygit2 returns a plain Object)."""
    return cast(pygit2.Tree, repo[oid])


def blob_data(repo: pygit2.Repository, oid: Any) -> bytes:
    return cast(pygit2.Blob, repo[oid]).data


def source_data(repo: pygit2.Repository, oid: Any) -> bytes:
    """A source blob's bytes. One over the parse limit is never inflated (a few compressed kilobytes
    can stand for gigabytes): it reads as that many zero bytes plus one, all the parser needs to
    refuse it."""
    _, size = repo.odb.read_header(oid)
    return bytes(MAX_FILE_BYTES + 1) if size > MAX_FILE_BYTES else blob_data(repo, oid)


def objects_dir(repo: pygit2.Repository) -> Path:
    """The object database's folder: in the common git directory (a linked work tree's own names it)."""
    return common_dir(repo.path) / "objects"


def consolidate_packs(repo: pygit2.Repository, most: int = 16) -> int:
    """Keep a long-running clone fast: every commit adds a pack (and a loose commit), and lookups
    slow down with their number. When there are more than `most` packs, every pack but the largest
    and every loose object are rewritten as one pack (no deltas: quick), then removed. Returns the
    objects moved. Unreachable objects are kept (nothing is pruned)."""
    folder = objects_dir(repo)
    packs = sorted((folder / "pack").glob("pack-*.idx"), key=lambda p: p.with_suffix(".pack").stat().st_size)
    if len(packs) <= most:
        return 0
    loose = [f for d in folder.iterdir() if len(d.name) == 2 and d.is_dir() for f in d.iterdir()]
    ids = {raw for idx in packs[:-1] for raw in index_ids(idx)}
    ids.update(bytes.fromhex(f.parent.name + f.name) for f in loose if len(f.name) == 38)
    objects = {}
    for raw in ids:
        kind, data = repo.odb.read(pygit2.Oid(raw=raw))
        objects[raw] = (KINDS[int(kind)], bytes(data))
    written = write_pack(folder, objects)
    for idx in packs[:-1]:
        if written is None or idx.with_suffix(".pack") != written:
            for suffix in (".idx", ".rev", ".pack"):  # the index first: no reader sees a pack without it
                idx.with_suffix(suffix).unlink(missing_ok=True)
    for f in loose:
        if len(f.name) == 38:
            f.unlink(missing_ok=True)
    return len(objects)


def git_dir_at(path: Path) -> tuple[bool, str] | None:
    """(bare, work tree) when `path` itself is a git directory (not a work tree), else None."""
    if not (path / "HEAD").is_file() or not (path / "objects").is_dir():
        return None
    try:
        repo = pygit2.Repository(str(path))
    except pygit2.GitError:
        return None
    if Path(repo.path).resolve() != path.resolve():
        return None
    return repo.is_bare, str(repo.workdir or "")


def open_repo(path: Path) -> pygit2.Repository:
    found = pygit2.discover_repository(str(path))
    if found is None:
        raise KsgitopsError(f"{path}: not a git repository, and this command reads commits (`git init`, then "
                            "commit the sources; `ksgitops init` does both for a new repository)")
    # Opened from `path`, not from the git directory found: a `.git` file (`git init
    # --separate-git-dir`) names a git directory whose config has no core.worktree, and libgit2
    # opening that directory alone takes its parent folder for the work tree.
    return pygit2.Repository(str(path))


def resolve_commit(repo: pygit2.Repository, ref: str) -> pygit2.Commit:
    try:
        obj = repo.revparse_single(ref)
        return obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError) as e:
        if (unborn := unborn_branch(repo, ref)) is not None:
            raise KsgitopsError(unborn) from None
        raise KsgitopsError(f"{ref}: not a commit in {repo.path} ({e})") from e


class TreeIndex:
    """Path lookups in a tree through cached folder listings (pygit2's `tree[path]` rescans
    each folder on every call: slow in `spaces/`, which holds a folder per WEC)."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree) -> None:
        self.repo = repo
        self._dirs: dict[str, dict[str, Any] | None] = {"": {str(e.name): e for e in tree}}

    def get(self, path: str) -> Any:
        parent, _, name = path.rpartition("/")
        listing = self._dir(parent)
        return listing.get(name) if listing is not None else None

    def entry_id(self, path: str) -> str:
        """The id of the entry at `path` as text, '' when absent."""
        entry = self.get(path)
        return str(entry.id) if entry is not None else ""

    def listing(self, path: str) -> list[Any]:
        """The entries of the folder at `path` ("" the root), in tree order; [] when none."""
        return list((self._dir(path) or {}).values())

    def _dir(self, path: str) -> dict[str, Any] | None:
        if path not in self._dirs:
            entry = self.get(path)
            is_tree = entry is not None and entry.type == pygit2.GIT_OBJECT_TREE
            self._dirs[path] = {str(e.name): e for e in tree_at(self.repo, entry.id)} if is_tree else None
        return self._dirs[path]


class TreeSnapshot:
    """A Snapshot over a git tree; content keys are blob ids (the parse cache's key)."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree) -> None:
        self.repo = repo
        self.tree = tree
        self.index = TreeIndex(repo, tree)

    def _entry(self, path: str) -> Any:
        return self.index.get(path)

    def list_spaces(self) -> list[str]:
        return sorted(name for name, mode in self._spaces() if mode == pygit2.GIT_FILEMODE_TREE)

    def stray_files(self) -> list[str]:
        return sorted(f"spaces/{name}" for name, mode in self._spaces()
                      if mode in (BLOB_MODE, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE) and name.endswith(SOURCE_SUFFIXES))

    def _spaces(self) -> list[tuple[str, int]]:  # (name, mode) of each entry directly in spaces/ but hidden ones
        spaces = self._entry("spaces")
        if spaces is None or spaces.type != pygit2.GIT_OBJECT_TREE:
            return []
        return [(str(e.name), e.filemode) for e in tree_at(self.repo, spaces.id) if not str(e.name).startswith(".")]

    def space_files(self, space: str) -> list[SourceFile]:
        entry = self._entry(f"spaces/{space}")
        if entry is None or entry.type != pygit2.GIT_OBJECT_TREE:
            return []
        return list(self._walk(tree_at(self.repo, entry.id), f"spaces/{space}/", ""))

    def _walk(self, tree: pygit2.Tree, prefix: str, rel: str):  # type: ignore[no-untyped-def]
        for entry in tree:
            if entry.type == pygit2.GIT_OBJECT_TREE:
                yield from self._walk(tree_at(self.repo, entry.id), prefix, f"{rel}{entry.name}/")
            elif entry.filemode in (BLOB_MODE, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE) and \
                    is_source_path(f"{rel}{entry.name}"):
                yield self._source(f"{prefix}{rel}{entry.name}", entry.id)

    def _source(self, path: str, oid: pygit2.Oid) -> SourceFile:
        repo = self.repo
        return SourceFile(path, str(oid), lambda: source_data(repo, oid))

    def folder_key(self, path: str) -> str | None:
        """The tree id of the folder at `path` (None when it is not a folder)."""
        entry = self._entry(path)
        return str(entry.id) if entry is not None and entry.type == pygit2.GIT_OBJECT_TREE else None

    def file(self, path: str) -> SourceFile | None:
        entry = self._entry(path)
        if entry is None or entry.filemode not in (BLOB_MODE, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE):
            return None
        return self._source(path, entry.id)

    def read(self, path: str) -> bytes | None:
        source = self.file(path)
        return source.read() if source else None

    def read_tree(self, path: str) -> FileTree | None:
        """The files below `path` as a nested tree (None when there is no such folder)."""
        entry = self._entry(path)
        if entry is None or entry.type != pygit2.GIT_OBJECT_TREE:
            return None
        return read_tree(self.repo, entry.id)



def read_tree(repo: pygit2.Repository, oid: Any) -> FileTree:
    """The files of tree `oid` as a nested tree."""
    return _read(repo, tree_at(repo, oid))


def _read(repo: pygit2.Repository, tree: pygit2.Tree) -> FileTree:
    out: FileTree = {}
    for entry in tree:
        if entry.type == pygit2.GIT_OBJECT_TREE:
            out[str(entry.name)] = _read(repo, tree_at(repo, entry.id))
        elif entry.type == pygit2.GIT_OBJECT_BLOB:
            out[str(entry.name)] = blob_data(repo, entry.id)
    return out


class TreeWriter:
    """Writes Generated into a new tree on top of `base`, sharing equal subtrees and blobs.

    Objects are hashed in memory and the new ones written as a single pack at the end (see
    pack.py): loose objects would cost a file each."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._new: dict[bytes, tuple[bytes, bytes]] = {}
        self._blobs: dict[bytes, bytes] = {}
        # keyed by id(): each entry holds its tree, so no id is reused by a later dict while cached
        self._trees: dict[tuple[int, Any], tuple[FileTree, bytes | None]] = {}

    def apply(self, base: pygit2.Tree | None, generated: Generated, flush: bool = True) -> pygit2.Oid:
        """The new tree's id; without `flush`, its objects are written by a later `flush()` (one
        pack for many trees)."""
        changes = {root: tree for root, tree in generated.items() if tree is not REUSE}
        raw = self._update(base, _nest(changes))
        if raw is None:
            raw = self._store(b"tree", b"")
        if flush:
            self.flush()
        return pygit2.Oid(raw=raw)

    def flush(self) -> None:
        """Write every object made so far that the repository does not have yet. Asking costs
        ~10 us per missing object (libgit2 rescans the pack folder on each miss): a large batch
        whose probe finds none of its first objects (by id: a random sample) is written whole,
        where a few duplicates would cost space in the pack, never correctness."""
        odb = self.repo.odb
        new = self._new
        if len(new) >= PROBE_FROM and not any(pygit2.Oid(raw=raw) in odb for raw in sorted(new)[:PROBE]):
            missing = new
        else:
            missing = {raw: obj for raw, obj in new.items() if pygit2.Oid(raw=raw) not in odb}
        write_pack(objects_dir(self.repo), missing)
        self._new = {}

    def _store(self, kind: bytes, content: bytes) -> bytes:
        raw = object_id(kind, content)
        self._new.setdefault(raw, (kind, content))
        return raw

    def _update(self, old: pygit2.Tree | None, changes: dict[str, Any]) -> bytes | None:
        """Apply nested `changes` ({name: subchanges | _Set}) to `old`; None for an empty tree."""
        entries: dict[str, tuple[int, bytes]] = {str(e.name): (int(e.filemode), e.id.raw) for e in old} \
            if old is not None else {}
        for name, change in changes.items():
            old_entry = old[name] if old is not None and name in old else None
            old_tree = tree_at(self.repo, old_entry.id) if old_entry is not None and \
                old_entry.type == pygit2.GIT_OBJECT_TREE else None
            if isinstance(change, _Set) and isinstance(change.tree, bytes):  # a file root (STATUS.md)
                entries[name] = (BLOB_MODE, self._blob(change.tree))
                continue
            if isinstance(change, _Set) and isinstance(change.tree, Subtree):  # an existing tree, linked in
                entries[name] = (TREE_MODE, bytes.fromhex(change.tree.id))
                continue
            if isinstance(change, _Set):
                raw = self._tree(change.tree, old_tree) if isinstance(change.tree, dict) else None
            else:
                raw = self._update(old_tree, change)
            if raw is None:
                entries.pop(name, None)
            else:
                entries[name] = (TREE_MODE, raw)
        return self._tree_object(entries)

    def _tree_object(self, entries: dict[str, tuple[int, bytes]]) -> bytes | None:
        if not entries:
            return None
        return self._store(b"tree", tree_content((n, m, r) for n, (m, r) in entries.items()))

    def _tree(self, tree: FileTree, old: pygit2.Tree | None) -> bytes | None:
        key = (id(tree), old.id if old is not None and _has_keep(tree) else None)
        if key in self._trees:
            return self._trees[key][1]
        entries: dict[str, tuple[int, bytes]] = {}
        for name, value in tree.items():
            if value is KEEP and name == OTHERS:  # every old entry the tree does not name stays
                entries.update({str(e.name): (e.filemode, e.id.raw) for e in old or () if str(e.name) not in tree})
            elif value is KEEP:
                if old is not None and name in old:
                    entry = old[name]
                    entries[name] = (entry.filemode, entry.id.raw)
            elif isinstance(value, dict):
                sub_old = old[name] if old is not None and name in old else None
                sub = self._tree(value, tree_at(self.repo, sub_old.id) if sub_old is not None
                                 and sub_old.type == pygit2.GIT_OBJECT_TREE else None)
                if sub is not None:
                    entries[name] = (TREE_MODE, sub)
            else:
                entries[name] = (BLOB_MODE, self._blob(value))  # type: ignore[arg-type]
        raw = self._tree_object(entries)
        self._trees[key] = (tree, raw)
        return raw

    def _blob(self, data: bytes) -> bytes:
        raw = self._blobs.get(data)
        if raw is None:
            raw = self._blobs[data] = self._store(b"blob", data)
        return raw


class _Set(Struct):
    tree: FileTree | bytes | Subtree | None


def _nest(changes: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for root, tree in changes.items():
        *dirs, leaf = root.split("/")
        node = nested
        for part in dirs:
            node = node.setdefault(part, {})
        node[leaf] = _Set(tree)
    return nested


def _has_keep(tree: FileTree) -> bool:
    return any(v is KEEP or (isinstance(v, dict) and _has_keep(v)) for v in tree.values())


def blobs(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = ""):  # type: ignore[no-untyped-def]
    """(path, id, mode) of every file below `tree` (reads trees, never blobs)."""
    for entry in tree:
        if entry.type == pygit2.GIT_OBJECT_TREE:
            yield from blobs(repo, tree_at(repo, entry.id), f"{prefix}{entry.name}/")
        else:
            yield f"{prefix}{entry.name}", entry.id, entry.filemode


def blob_keys(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = ""):  # type: ignore[no-untyped-def]
    """(path, id as text) of every file below `tree`: blobs without modes, for the 166k reports of
    a fleet (an entry's type and mode are enums, built per access: 2.5x the walk). A submodule's
    entry (a commit) is no file: a checkout holds a folder there, or nothing."""
    for entry in tree:
        kind = entry.type_str
        if kind == "tree":  # the entry is the tree: walking it is a third cheaper than looking it up
            yield from blob_keys(repo, cast(pygit2.Tree, entry), f"{prefix}{entry.name}/")
        elif kind == "blob":
            yield f"{prefix}{entry.name}", str(entry.id)


def changed_roots(old: TreeIndex, new: TreeIndex, roots: list[str]) -> list[str]:
    """The owned roots whose tree differs between two trees (cheap: compares ids)."""
    return [root for root in roots if old.entry_id(root) != new.entry_id(root)]


def uncommitted_sources(repo: pygit2.Repository, committed: TreeSnapshot, mailboxes: set[str]) -> list[str]:
    """Source files whose work-tree content differs from the commit (they are not used with
    --commit). Reads only source spaces and ksgitops.yaml: never the (large) mailboxes."""
    if repo.is_bare or repo.workdir is None:
        return []
    from ..fs.tree import WorkTreeSnapshot  # the work tree's room: a bare repository's run never enters it
    worktree = WorkTreeSnapshot(Path(repo.workdir))
    dirty: set[str] = set()
    snapshots: tuple[tuple[Any, Any], ...] = ((worktree, committed), (committed, worktree))
    for snapshot, other in snapshots:
        for space in snapshot.list_spaces():
            if space in mailboxes:
                continue
            ours = {f.path: f for f in snapshot.space_files(space)}
            theirs = {f.path: f for f in other.space_files(space)}
            dirty.update(p for p, f in ours.items() if p not in theirs or f.key != theirs[p].key)
    config = [snap.file("ksgitops.yaml") for snap in (worktree, committed)]
    if (config[0] is None) != (config[1] is None) or \
            (config[0] is not None and config[1] is not None and config[0].key != config[1].key):
        dirty.add("ksgitops.yaml")
    # raw bytes differ, but git may see no change: a file git checked out with CRLF (core.autocrlf,
    # an eol attribute) hashes otherwise than its blob; git's own filters decide
    return sorted(p for p in dirty if _git_sees_a_change(repo, p))


def _git_sees_a_change(repo: pygit2.Repository, path: str) -> bool:
    try:
        return repo.status_file(path) not in (pygit2.GIT_STATUS_CURRENT, pygit2.GIT_STATUS_IGNORED)
    except (KeyError, ValueError, pygit2.GitError):
        return True
