"""StatusSources (core/status/source.py) over a git tree and over a work tree, and the status memo on disk.

Over git, a mailbox's key is its tree id: an unchanged mailbox costs one lookup, content keys
are blob ids, and the mailbox revision is computed from the ids of its parts. Over a work tree every file
is read and hashed (git blob ids too, so the revision is the one git would give), which is what a
folder allows.
"""
from __future__ import annotations

import os
import pickle
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes

from msgspec import Struct

from .pygit import pygit2

from ..core.status.gitobjects import blob_id, files_tree_id
from ..core.emit.problems import problems_root
from ..core.status.memo import MailboxMemo, ObjectMemo, StatusMemo, detail_name, rows_name
from ..core.status.source import MailboxListing
from ..core.tree import put
from ..core.status.syncreport import REVISION_FILES, REVISION_FOLDERS, revision_of
from .git.cache import code_fingerprint, gc_paused, held_key
from .fs.tree import walk_files
from .fs.afterwards import later, settled
from .fs.folderstate import shared
from .fs.eol import AsGitReads
from .fs.paths import STATE_DIR, check_path, private_file, private_folder
from .git.blobread import PackedFirst
from .git.repo import TreeIndex, blob_keys, tree_at

PARTS = ("objects", "patches", "reported")


class GitStatusSource:
    def __init__(self, repo: pygit2.Repository, index: TreeIndex) -> None:
        self.repo = repo
        self.index = index
        self._blobs = PackedFirst(repo)
        self._folders: dict[pygit2.Oid, dict[str, str]] = {}

    def mailbox_key(self, mailbox: str) -> str:
        """The mailbox's tree id: one lookup in `spaces/`, where the ids of its parts would read
        every mailbox's tree (a change anywhere in it, upsynced objects too, only costs a recompute)."""
        return "git:" + self.index.entry_id(f"spaces/{mailbox}")

    def revision(self, mailbox: str) -> str:
        return revision_of({name: self.index.entry_id(f"spaces/{mailbox}/{name}")
                            for name in REVISION_FILES + REVISION_FOLDERS})

    def problems_file(self, space: str) -> str:
        return self.index.entry_id(problems_root(space))

    def listing(self, mailbox: str) -> MailboxListing:
        """The mailbox's files; its `objects` and `patches` are shared with every mailbox holding
        the same folder (read only)."""
        listing = MailboxListing()
        for part in PARTS:
            entry = self.index.get(f"spaces/{mailbox}/{part}")
            if entry is None or entry.type != pygit2.GIT_OBJECT_TREE:
                continue
            if part == "reported":
                for rel, key in blob_keys(self.repo, tree_at(self.repo, entry.id)):
                    listing.reports[rel] = (f"spaces/{mailbox}/reported/{rel}", key)
            elif part == "objects":
                listing.objects = self._sent(entry.id)
            else:
                listing.patches = self._sent(entry.id)
        return listing

    def _sent(self, tree: pygit2.Oid) -> dict[str, str]:
        """rel -> key of the files below an objects/ or patches/ folder, read once per tree id: a
        fleet's mailboxes hold the same uncustomized objects (1,000 mailboxes, 9 objects/ trees)."""
        found = self._folders.get(tree)
        if found is None:
            found = self._folders[tree] = {rel.rsplit(".", 1)[0]: key
                                           for rel, key in blob_keys(self.repo, tree_at(self.repo, tree))}
        return found

    def blob(self, key: str) -> bytes:
        return self._blobs.blob(key)


class WorkTreeStatusSource:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._listings: dict[str, MailboxListing] = {}
        self._revisions: dict[str, str] = {}
        self._blobs: dict[str, bytes] = {}
        self._as_git_reads = AsGitReads(self.root)

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
        data = self._as_git_reads(str(path), path.read_bytes())  # the ids a commit of them holds
        key = blob_id(data)
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
    """The memo an earlier run saved; a missing, stale or unreadable one is an empty memo. Only its
    small part is read now (keys, summaries, CombinedStatus files, one entry per mailbox and per
    object): the rows of a mailbox or an object are fetched when they changed, inside the same read
    transaction, so what is read is one consistent memo even beside another process saving one.
    In a monitor's worker the small part is the monitor's (`warm_memos`) when the index read is
    the very one the monitor read (each save writes a new generation into it)."""
    if path is not None:
        settled(Path(shared(path.parent)))  # a run that answered may still be writing its memo
    store = _MemoStore.open(path) if path is not None else None
    if store is None or path is None:
        return StatusMemo()
    memo = StatusMemo()
    try:
        data = store.index = store.get(_INDEX)
        held = _warm.get(held_key(path)) if data is not None and _warm else None
        if held is not None and held.index == data:
            memo.problems, memo.mailboxes, memo.objects = dict(held.problems), dict(held.mailboxes), dict(held.objects)
            store.loaded = dict(held.loaded)
        else:
            _read_small(store, data, memo)
    except Exception:  # noqa: BLE001 - any unreadable memo only costs time
        memo, store.loaded = StatusMemo(), {}
    memo.fetch = store.get
    _STORES[id(memo)] = store
    return memo


def _read_small(store: "_MemoStore", data: bytes | None, memo: StatusMemo) -> None:
    """The memo's small part into `memo` (and what was read into `store.loaded`), given the index
    entry's bytes; an entry lost or left over raises ValueError."""
    with gc_paused():  # as cache.unpickle: many objects and no garbage
        index: Any = pickle.loads(data) if data is not None else None  # noqa: S301 - our own file inside .git
        fresh = isinstance(index, dict) and index.get("format") == code_fingerprint()
        if not fresh or index.get("memo") != memo.format:
            return
        memo.problems = index["problems"]
        for name, value in store.named(_SUMMARY):
            key, summary, problems = pickle.loads(value)  # noqa: S301
            kept = MailboxMemo(key, summary, problems, None)
            memo.mailboxes[name[len(_SUMMARY):]] = store.loaded[name] = kept
        for name, value in store.named(_OBJECT):
            key, context, status, costs, skipped = pickle.loads(value)  # noqa: S301
            memo.objects[key] = store.loaded[name] = ObjectMemo(context, status, None, costs, skipped)
        if set(store.loaded) != set(index["names"]):  # an entry lost or left over: start anew
            raise ValueError("the memo's entries are not those it saved")


class _Held(Struct, frozen=True):
    """A memo's small part as a monitor read it, for its workers: the index entry's bytes say
    whether a worker's read is the same."""

    index: bytes
    problems: dict[str, Any]
    mailboxes: dict[str, MailboxMemo]
    objects: dict[tuple[str, str], ObjectMemo]
    loaded: dict[str, Any]


_warm: dict[str, _Held] = {}  # memo path: its small part, read by a monitor (`warm_memos`)


def warm_memos(state: str) -> bool:
    """Read the small part of the status memos in the state folder `state` whose index changed
    since last asked, for the workers a monitor forks next. True when any was read."""
    read = False
    for kind in MEMO_KINDS:
        path = os.path.join(held_key(state), memo_name(kind))
        held = _warm.get(path)
        try:
            if not os.path.isfile(path) or os.path.islink(path):
                raise FileNotFoundError(path)
            conn = sqlite3.connect(f"file:{quote_from_bytes(os.fsencode(path))}?mode=ro", uri=True, isolation_level=None, timeout=1)
        except (OSError, sqlite3.Error):
            _warm.pop(path, None)
            continue
        store = _MemoStore(conn)
        try:
            conn.execute("BEGIN")
            data = store.get(_INDEX)
            if data is None or (held is not None and held.index == data):
                continue
            memo = StatusMemo()
            _read_small(store, data, memo)
            _warm[path] = _Held(data, memo.problems, memo.mailboxes, memo.objects, store.loaded)
            read = True
        except Exception:  # noqa: BLE001 - an unreadable memo is just not held
            _warm.pop(path, None)
        finally:
            store.close()
    return read


def save_memo(path: Path | None, memo: StatusMemo) -> None:
    """Write what changed: the small part, and the rows of the mailboxes and objects recomputed.
    A command run as the program writes it once it has answered (afterwards.py), in a store of
    its own: a connection never crosses a fork. Nothing is written when another run saved a memo
    since this one was read (its read is newer, or as new)."""
    store = _STORES.pop(id(memo), None)
    loaded, index = (store.loaded, store.index) if store is not None else ({}, _UNREAD)
    if store is not None:
        store.close()
    if path is None or not memo.changed:
        return
    memo.changed = False
    later(Path(shared(path.parent)), lambda: _write_memo(path, memo, loaded, index))


def release_memo(memo: StatusMemo) -> None:
    """End the read of a loaded memo that was not saved (a run that failed): an open read would
    hold back the commit of a memo another run keeps."""
    store = _STORES.pop(id(memo), None)
    if store is not None:
        store.close()


def _write_memo(path: Path, memo: StatusMemo, loaded: dict[str, Any], index: bytes | None | object) -> None:
    if not path.parent.is_dir():
        return  # the state folder went (the repository was removed once the command answered)
    store = _MemoStore.open(path, write=True)
    if store is None:
        return
    try:
        if index is _UNREAD or store.get(_INDEX) == index:
            store.loaded = loaded
            store.save(memo)
    except (OSError, sqlite3.Error):
        pass  # a memo that cannot be written only costs time next run
    finally:
        store.close()


_INDEX = "index"
_SUMMARY = "s:"  # + mailbox: its key, summary and problems
_OBJECT = "o:"  # + object: its context key and CombinedStatus file
_STORES: dict[int, "_MemoStore"] = {}  # a loaded memo's open read transaction, until it is saved
_UNREAD = object()  # save_memo: no store was read (nothing to compare with)


def _object_name(key: tuple[str, str]) -> str:
    return f"{_OBJECT}{key[0]}:{key[1]}"


BUSY_TIMEOUT = 10.0  # seconds a store waits for another process's lock on the memo
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED


def _busy(error: Exception) -> bool:
    """The memo is locked by another process (a reader waited out a commit, a writer a read)."""
    return isinstance(error, sqlite3.OperationalError) and \
        (getattr(error, "sqlite_errorcode", None) in _BUSY_CODES or "locked" in str(error))


class _MemoStore:
    """A SQLite table of pickles: the index, one entry per mailbox (its summary) and per object
    (its CombinedStatus), and the rows of each. A status run reads the small entries and the rows
    of what changed, and writes only the entries it made anew: one changed report rewrites a
    mailbox's and an object's entries, not the summary of the fleet."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.loaded: dict[str, Any] = {}  # entry name -> the MailboxMemo or ObjectMemo read from it
        self.index: bytes | None = None  # the index entry read (load_memo)

    @classmethod
    def open(cls, path: Path, write: bool = False) -> "_MemoStore | None":
        """The store in a transaction: a read snapshot, or (`write`) the database's write lock."""
        try:
            private_folder(path.parent)
            private_file(str(path))
            conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS memo (name TEXT PRIMARY KEY, value BLOB NOT NULL)")
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            conn.execute("SELECT 1 FROM memo LIMIT 1").fetchall()  # the read snapshot starts here
            return cls(conn)
        except (OSError, sqlite3.Error) as e:
            if _busy(e) or (write and isinstance(e, sqlite3.OperationalError)):
                return None  # locked past the timeout: another process's, which stays
            for damaged in (path, path.with_name(path.name + "-journal")):  # a journal left is not the new file's
                try:
                    damaged.unlink(missing_ok=True)  # unreadable (not a database, corrupt): start anew
                except OSError:
                    pass
            return None

    def named(self, prefix: str) -> list[tuple[str, bytes]]:
        """Every entry whose name starts with `prefix` (one letter and a colon)."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        return self.conn.execute("SELECT name, value FROM memo WHERE name >= ? AND name < ?", (prefix, end)).fetchall()

    def get(self, name: str) -> bytes | None:
        try:
            row = self.conn.execute("SELECT value FROM memo WHERE name = ?", (name,)).fetchone()
        except sqlite3.Error:
            return None
        return bytes(row[0]) if row is not None else None

    def save(self, memo: StatusMemo) -> None:
        loaded = self.loaded
        writes: list[tuple[str, bytes]] = []
        wanted = {_INDEX}
        for mb, m in memo.mailboxes.items():
            name = _SUMMARY + mb
            wanted.update((name, detail_name(mb)))
            if loaded.get(name) is not m:  # made this run (a loaded entry is never changed in place)
                writes.append((name, pickle.dumps((m.key, m.summary, m.problems), protocol=pickle.HIGHEST_PROTOCOL)))
            if m.detail is not None:
                writes.append((detail_name(mb), m.detail))
        for key, o in memo.objects.items():
            name = _object_name(key)
            wanted.update((name, rows_name(key)))
            if loaded.get(name) is not o:
                writes.append((name, pickle.dumps((key, o.context, o.status, o.costs, o.skipped),
                                                   protocol=pickle.HIGHEST_PROTOCOL)))
            if o.rows is not None:
                writes.append((rows_name(key), o.rows))
        names = sorted(n for n in wanted if n.startswith((_SUMMARY, _OBJECT)))
        writes.append((_INDEX, pickle.dumps({"format": code_fingerprint(), "memo": memo.format, "names": names,
                                             "problems": memo.problems, "generation": os.urandom(16)},
                                            protocol=pickle.HIGHEST_PROTOCOL)))
        held = {name for (name,) in self.conn.execute("SELECT name FROM memo")}
        try:
            self.conn.executemany("DELETE FROM memo WHERE name = ?", [(n,) for n in held - wanted])
            self.conn.executemany("INSERT OR REPLACE INTO memo VALUES (?, ?)", writes)
            self.conn.execute("COMMIT")
        except sqlite3.Error:
            self.conn.execute("ROLLBACK")

    def close(self) -> None:
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            self.conn.close()
        except sqlite3.Error:
            pass


def memo_path(git_dir: str | None, kind: str, place: str = STATE_DIR) -> Path | None:
    """Where the memo lives: in the state folder `place` of `git_dir` (a work tree's: its folder's
    own, io/fs/folderstate.py). A link on the way is a LinkError: it is never read or written through."""
    if not git_dir:
        return None
    for suffix in ("", "-journal"):
        check_path(Path(git_dir), f"{place}/{memo_name(kind)}{suffix}", shown=git_dir.rstrip("/"))
    return Path(git_dir) / place / memo_name(kind)


MEMO_KINDS = ("git", "worktree")  # over a commit's tree, over a work tree


def memo_name(kind: str) -> str:
    """The file of the status memo of `kind`, in the state folder."""
    return f"status-{kind}.sqlite"
