"""A persistent, local-only cache in the git directory: parse results by blob id, per-object
checks, and the input digest + tree id of each mailbox committed without problems
(`cache.pickle` and its shards `cache-NN.pickle`, read only when a run needs them), the record of
the last reconcile of a commit (`reconciled.pickle`, small: see runrecord.py) and of the last
status run's placements (`placed.pickle`, app/status.py).

It is an optimisation only: a missing, stale or corrupt file means a full reconcile. Entries not
used by a run are dropped when their shard is next written, so the files track the repo's current
content. The entries are split into SHARDS files by what they belong to (a file's blob id, a memo's kind), so
that a run which changed a few files rewrites the few shards holding them, not the whole cache;
`cache.pickle` names the generation the shards belong to (a shard of another one is never read),
and is written after them.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
import stat
import zlib
from pathlib import Path
from typing import Any, Iterator, MutableMapping

from ... import __version__
from ...core.load.schemas import schema_dir, schema_names
from ..fs.afterwards import LOCK_FILE, answering, settled
from ..fs.paths import STATE_DIR, check_path, open_plain, write_state

def code_fingerprint() -> str:
    """A digest of ksgitops' own source and schema files: a cache or memo pickled by other code
    (whose classes may have other fields), or holding findings of other schemas, is never loaded.
    Each file counts by its stat, not its bytes (reading them all cost ~8 ms of every start-up): the
    file system and inode (two installs sharing a repository never share a fingerprint), size and
    modification time, and the inode's change time, which no copy (`cp -p`, tar, a Nix store's
    mtime of 1) sets back. Once per process."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        root = str(Path(__file__).resolve().parents[2])
        digest = hashlib.blake2b(digest_size=12)
        sources = []
        for folder, folders, names in os.walk(root):
            folders[:] = [f for f in folders if f != "__pycache__"]
            sources += [os.path.join(folder, name) for name in names if name.endswith(".py")]
        for path in sorted(sources):
            digest.update(f"{path[len(root):]}\0".encode() + _stamp_of(path))
        schemas = schema_dir()
        for name in schema_names():
            digest.update(f"schema/{name}\0".encode() + _stamp_of(schemas.joinpath(name)))
        _FINGERPRINT = f"{__version__}-{digest.hexdigest()}"
    return _FINGERPRINT


def _stamp_of(path: Any) -> bytes:
    """A file's stat as `code_fingerprint` counts it (its bytes when it is no file of the file system)."""
    try:
        st = os.stat(path)
    except TypeError:  # a resource inside an archive
        return bytes(path.read_bytes())
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}\0".encode()


_FINGERPRINT: str | None = None
FORMAT = "ksgitops-cache-2"
SHARDS = 16
RECORD_FILE = "reconciled.pickle"
PLACED_FILE = "placed.pickle"


_ABSENT = object()


class TouchedDict(MutableMapping[Any, Any]):
    """A dict that remembers which keys this run read or wrote."""

    def __init__(self, data: dict[Any, Any] | None = None) -> None:
        self._data = data or {}
        self.touched: set[Any] = set()
        self.replaced: set[Any] = set()  # keys given another value (most are content keys: set once)

    def __getitem__(self, key: Any) -> Any:
        value = self._data[key]
        self.touched.add(key)
        return value

    def get(self, key: Any, default: Any = None) -> Any:  # Mapping's goes through a KeyError on a miss
        value = self._data.get(key, _ABSENT)
        if value is _ABSENT:
            return default
        self.touched.add(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        if key in self._data and self._data[key] != value:
            self.replaced.add(key)
        self._data[key] = value
        self.touched.add(key)

    def __delitem__(self, key: Any) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def used(self) -> dict[Any, Any]:
        return {k: v for k, v in self._data.items() if k in self.touched}


class DiskCache:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._content: TouchedDict | None = None
        self._mailboxes: dict[str, tuple[str, str]] = {}
        self._loaded_keys: frozenset[Any] = frozenset()
        self._loaded_mailboxes: dict[str, tuple[str, str]] = {}
        self._records: dict[str, Any] = {}  # file name -> the record read or kept (None: none)
        self._generation = ""  # of the shards read or written ("": none, the next save writes every shard)
        self._shard_keys: list[frozenset[Any]] = [frozenset()] * SHARDS  # what each shard held, as read
        self._stale: set[int] = set()  # shards holding entries a long-running caller dropped

    @property
    def content(self) -> TouchedDict:
        """Parse results and memos by content; read from disk on first use (a run proven
        unchanged by its record never reads them)."""
        if self._content is None:
            if self.path is not None:
                settled(self.path.parent)
            data = _read(self.path) if self.path is not None else {}
            self._generation = str(data.get("generation") or "")
            merged: dict[Any, Any] = {}
            if self._generation and self.path is not None:
                for i in range(SHARDS):
                    shard = _read(self.path.with_name(shard_name(i)))
                    if shard.get("generation") == self._generation:
                        merged.update(shard["content"])
                        self._shard_keys[i] = frozenset(shard["content"])
            self._content = TouchedDict(merged)
            self._mailboxes = data.get("mailboxes", {}) if self._generation else {}
            self._loaded_keys = frozenset(self._content)
            self._loaded_mailboxes = dict(self._mailboxes)
        return self._content

    @content.setter
    def content(self, value: TouchedDict) -> None:
        self._content = value

    @property
    def mailboxes(self) -> dict[str, tuple[str, str]]:
        self.content  # noqa: B018 - loads them
        return self._mailboxes

    @mailboxes.setter
    def mailboxes(self, value: dict[str, tuple[str, str]]) -> None:
        self.content  # noqa: B018 - a later read must not load over them
        self._mailboxes = value

    @property
    def record(self) -> Any:
        """The last reconcile's RunRecord (runrecord.py), or None."""
        return self._recorded(RECORD_FILE)

    def save_record(self, record: Any) -> None:
        self._keep(RECORD_FILE, record)

    @property
    def placed(self) -> Any:
        """The record of the last status run's placements over a commit (app/status.py), or None."""
        return self._recorded(PLACED_FILE)

    def save_placed(self, record: Any) -> None:
        self._keep(PLACED_FILE, record)

    def _recorded(self, name: str) -> Any:
        if name not in self._records:
            if self.path is not None:
                settled(self.path.parent)
            self._records[name] = _read(self.path.with_name(name)).get("record") if self.path is not None else None
        return self._records[name]

    def _keep(self, name: str, record: Any) -> None:
        """Keep `record` as file `name` (only written when it differs from the one read)."""
        if record != self._recorded(name):
            self._records[name] = record
            if self.path is not None:
                _write(self.path.with_name(name), {"format": f"{FORMAT}-{code_fingerprint()}", "record": record})

    @property
    def state(self) -> Path | None:
        """The state folder its files are in (None: a cache kept in memory only)."""
        return self.path.parent if self.path is not None else None

    @classmethod
    def for_git_dir(cls, git_dir: str) -> "DiskCache":
        """The repository's cache (a link on the way is a LinkError: never read or written through)."""
        for name in ("cache.pickle", *(shard_name(i) for i in range(SHARDS)), RECORD_FILE, PLACED_FILE, LOCK_FILE):
            check_path(Path(git_dir), f"{STATE_DIR}/{name}", shown=str(git_dir).rstrip("/"))
        return cls(Path(git_dir) / STATE_DIR / "cache.pickle")

    def next_run(self) -> None:
        """For a long-running process: keep only what the last run used, and start counting anew."""
        content = self.content
        self._stale.update(i for i, keys in enumerate(self._shard_keys) if _mostly_unused(keys, content.touched))
        self._shard_keys = [keys & content.touched for keys in self._shard_keys]
        self.content = TouchedDict(content.used())
        self._loaded_keys = frozenset(self.content)
        self._loaded_mailboxes = dict(self.mailboxes)

    def save_content(self) -> None:
        """Save after a run that did not commit: the mailbox entries stay as they were (a run
        that never read them has nothing to save)."""
        if self._content is not None:
            self.save(self.mailboxes)

    def save(self, mailboxes: dict[str, tuple[str, str]]) -> None:
        """Write the entries this run used (only where something changed: a no-op run writes
        nothing, a run that read a few new files rewrites the shards holding them)."""
        content = self.content
        new = (content.touched - self._loaded_keys) | content.replaced
        self.mailboxes = mailboxes
        if self.path is None:
            return
        whole = not self._generation
        if whole and not new and not mailboxes:
            return  # nothing to keep
        dirty = set(range(SHARDS)) if whole else self._stale | \
            {i for i, keys in enumerate(self._shard_keys) if _mostly_unused(keys, content.touched)}
        by_shard: dict[int, list[Any]] = {}
        for key in new:
            by_shard.setdefault(shard_of(key), []).append(key)
        dirty.update(by_shard)
        if not dirty and mailboxes == self._loaded_mailboxes:
            return
        generation = os.urandom(8).hex() if whole else self._generation
        header = {"format": f"{FORMAT}-{code_fingerprint()}", "generation": generation}
        data = content._data
        for i in sorted(dirty):
            keys = (self._shard_keys[i] & content.touched) | frozenset(by_shard.get(i, ()))
            if not _write(self.path.with_name(shard_name(i)), {**header, "content": {k: data[k] for k in keys}}):
                return  # the index still names the shards' old generation: they are read as before
            self._shard_keys[i] = keys
        if whole or mailboxes != self._loaded_mailboxes:
            if not _write(self.path, {**header, "mailboxes": mailboxes}):
                return
        self._generation, self._stale = generation, set()
        self._loaded_keys = self._loaded_keys | new
        self._loaded_mailboxes = dict(mailboxes)


def _mostly_unused(keys: frozenset[Any], touched: set[Any]) -> bool:
    """A shard is rewritten without its unused entries once they are most of it (or when new
    entries go into it): a run that reused most mailboxes leaves their memos in place for the
    next full run, and the files stay within twice what the repository's content needs."""
    return len(keys - touched) * 2 > len(keys)


def shard_name(i: int) -> str:
    return f"cache-{i:02d}.pickle"


def shard_of(key: Any) -> int:
    """The shard of an entry: by the blob id or name it belongs to (a file's parse and its
    checks share one), else by the kind of memo; the same on every machine and run."""
    anchor = key
    if isinstance(key, tuple) and key:
        anchor = key[1] if len(key) > 1 and isinstance(key[1], str) else key[0]
    return zlib.crc32(repr(anchor).encode("ascii", "backslashreplace")) % SHARDS


def _write(path: Path, data: dict[str, Any]) -> bool:
    """False when it could not be written (a cache that cannot be written only costs time next run)."""
    try:
        write_state(path, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        return False
    return True


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC paused while pickles of our own are loaded: unpickling creates many objects
    and no garbage, and the collections it would trigger took about half the time of a 1 MiB cache.
    In a command that ends the program once answered (afterwards.answering), what exists when
    the pause ends is frozen: it lives until the end, and the first collection after the pause
    would otherwise look at all of it (~16 ms of a one-report `status --commit` at 1,000 WECs)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if answering():
                gc.freeze()
            gc.enable()


def unpickle(path: Path | str) -> Any:
    """A pickle of our own, read with the cyclic GC paused; in a monitor's worker, taken from what
    the monitor read (`warm`) when the file's bytes are the same (a fork's copy: the caller may
    change it)."""
    data = _plain_file_bytes(os.fspath(path))
    held = _warm.get(held_key(path)) if _warm else None
    if held is not None and held[1] == hashlib.blake2b(data, digest_size=16).digest():
        return held[2]
    with gc_paused():
        return pickle.loads(data)  # noqa: S301 - our own file inside .git, never from a remote


_warm: dict[str, tuple[tuple[int, ...], bytes, Any]] = {}  # held_key: (its stat stamp, digest, what it holds)


def held_key(path: Path | str) -> str:
    """How the monitor and its workers name a file they share: its resolved path (a command run
    as `reconcile .` inside a bare repository names its state folder relative to its working folder)."""
    return os.path.realpath(path)


def warm(folder: Path | str) -> bool:
    """Read the pickles of `folder` that changed since last asked, for the workers a monitor forks
    next (they check the bytes: a stamp only says when to read again). True when any was read."""
    read = False
    folder = held_key(folder)
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".pickle"))
    except OSError:
        return False
    for name in names:
        path = os.path.join(folder, name)
        try:
            before = _stamp(path)
            if before is None or (path in _warm and _warm[path][0] == before):
                continue
            data = _plain_file_bytes(path)
            with gc_paused():
                value = pickle.loads(data)  # noqa: S301 - our own file inside .git, never from a remote
        except Exception:  # noqa: BLE001 - an unreadable file is just not held
            _warm.pop(path, None)
            continue
        _warm[path] = (before, hashlib.blake2b(data, digest_size=16).digest(), value)
        read = True
    for path in [p for p in _warm if os.path.dirname(p) == os.fspath(folder) and os.path.basename(p) not in names]:
        del _warm[path]
    return read


def _stamp(path: str) -> tuple[int, ...] | None:
    """A plain file's stamp (None: gone, or anything else, which the monitor never opens)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) if stat.S_ISREG(st.st_mode) else None


def _plain_file_bytes(path: str) -> bytes:
    """The bytes of a plain file, never through a link nor waiting on a FIFO (the monitor reads
    the state folder unasked: nothing there may make it hang)."""
    with open(open_plain(path), "rb") as f:
        return f.read()


def _read(path: Path | None) -> dict[str, Any]:
    try:
        data = unpickle(path) if path is not None else {}
    except Exception:  # noqa: BLE001 - any unreadable cache is just absent
        return {}
    return data if isinstance(data, dict) and data.get("format") == f"{FORMAT}-{code_fingerprint()}" else {}
