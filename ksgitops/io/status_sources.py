"""StatusSources (core/status_source.py) over a git tree and over a work tree, and the status memo on disk.

Over git, a mailbox's key is the ids of its objects/, patches/ and reported/ subtrees and of its
kustomization.yaml and syncerconfig.yaml: an unchanged mailbox costs five lookups, content keys
are blob ids, and the mailbox revision is computed from the same ids. Over a work tree every file
is read and hashed (git blob ids too, so the revision is the one git would give), which is what a
folder allows.
"""
from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pygit2

from ..core.gitobjects import files_tree_id
from ..core.problems import problems_root
from ..core.status import StatusMemo
from ..core.status_source import MailboxListing
from ..core.tree import put
from ..core.syncreport import REVISION_FILES, REVISION_FOLDERS, revision_of
from .cache import code_fingerprint
from .fs import check_path, walk_files, write_file
from .git import TreeIndex, blobs, tree_at

PARTS = ("objects", "patches", "reported")


class GitStatusSource:
    def __init__(self, repo: pygit2.Repository, index: TreeIndex) -> None:
        self.repo = repo
        self.index = index

    def mailbox_key(self, mailbox: str) -> str:
        names = PARTS + REVISION_FILES
        return "git:" + ":".join(self.index.entry_id(f"spaces/{mailbox}/{name}") for name in names)

    def revision(self, mailbox: str) -> str:
        return revision_of({name: self.index.entry_id(f"spaces/{mailbox}/{name}")
                            for name in REVISION_FILES + REVISION_FOLDERS})

    def problems_file(self, space: str) -> str:
        return self.index.entry_id(problems_root(space))

    def listing(self, mailbox: str) -> MailboxListing:
        listing = MailboxListing()
        for part in PARTS:
            entry = self.index.get(f"spaces/{mailbox}/{part}")
            if entry is None or entry.type != pygit2.GIT_OBJECT_TREE:
                continue
            for rel, oid, _mode in blobs(self.repo, tree_at(self.repo, entry.id)):
                key = str(oid)
                if part == "reported":
                    listing.reports[rel] = (f"spaces/{mailbox}/reported/{rel}", key)
                else:
                    (listing.objects if part == "objects" else listing.patches)[rel.rsplit(".", 1)[0]] = key
        return listing

    def blob(self, key: str) -> bytes:
        kind, data = self.repo.odb.read(key)  # a third cheaper than repo[key].data (166k reports)
        if kind != pygit2.GIT_OBJECT_BLOB:
            raise KeyError(f"{key} is not a blob")
        return bytes(data)


class WorkTreeStatusSource:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._listings: dict[str, MailboxListing] = {}
        self._revisions: dict[str, str] = {}
        self._blobs: dict[str, bytes] = {}

    def mailbox_key(self, mailbox: str) -> str:
        listing = self.listing(mailbox)
        return "worktree:" + repr((sorted(listing.objects.items()), sorted(listing.patches.items()),
                                   sorted(listing.reports.items()), self._revisions[mailbox]))

    def listing(self, mailbox: str) -> MailboxListing:
        found = self._listings.get(mailbox)
        if found is not None:
            return found
        listing = MailboxListing()
        ids: dict[str, str] = {}
        for part in PARTS:
            base = self.root / "spaces" / mailbox / part
            tree: dict[str, Any] = {}
            for rel in walk_files(self.root, f"spaces/{mailbox}/{part}"):
                key = self._read(base / rel)
                if part == "reported":
                    listing.reports[rel] = (f"spaces/{mailbox}/reported/{rel}", key)
                    continue
                (listing.objects if part == "objects" else listing.patches)[rel.rsplit(".", 1)[0]] = key
                put(tree, rel, key)  # type: ignore[arg-type]
            ids[part] = files_tree_id(tree)
        for name in REVISION_FILES:
            path = self.root / "spaces" / mailbox / name
            ids[name] = self._read(path) if path.is_file() and not path.is_symlink() else ""
        self._listings[mailbox] = listing
        self._revisions[mailbox] = revision_of(ids)
        return listing

    def _read(self, path: Path) -> str:
        data = path.read_bytes()
        key = str(pygit2.hash(data))
        self._blobs[key] = data
        return key

    def blob(self, key: str) -> bytes:
        return self._blobs[key]

    def revision(self, mailbox: str) -> str:
        self.listing(mailbox)
        return self._revisions[mailbox]

    def problems_file(self, space: str) -> str:
        path = self.root / problems_root(space)
        return self._read(path) if path.is_file() and not path.is_symlink() else ""


def load_memo(path: Path | None) -> StatusMemo:
    """The memo an earlier run saved; a missing, stale or unreadable file is an empty memo."""
    if path is None:
        return StatusMemo()
    try:
        with open(path, "rb") as f:
            data = pickle.load(f)  # noqa: S301 - our own file inside .git, never from a remote
    except Exception:  # noqa: BLE001 - any unreadable memo only costs time
        return StatusMemo()
    fresh = isinstance(data, dict) and data.get("format") == code_fingerprint()
    memo = data.get("memo") if fresh else None
    return memo if isinstance(memo, StatusMemo) and memo.format == StatusMemo().format else StatusMemo()


def save_memo(path: Path | None, memo: StatusMemo) -> None:
    if path is None or not memo.changed:
        return
    memo.changed = False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, pickle.dumps({"format": code_fingerprint(), "memo": memo}, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass  # a memo that cannot be written only costs time next run


def memo_path(git_dir: str | None, kind: str) -> Path | None:
    """Where the memo lives (a link on the way is a LinkError: it is never read or written through)."""
    if not git_dir:
        return None
    check_path(Path(git_dir), f"ksgitops/status-{kind}.pickle", shown=git_dir.rstrip("/"))
    return Path(git_dir) / "ksgitops" / f"status-{kind}.pickle"
