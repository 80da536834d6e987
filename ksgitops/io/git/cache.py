"""A persistent, local-only cache in the git directory: parse results by blob id, per-object
checks, and the input digest + tree id of each mailbox committed without problems
(`cache.pickle`, read only when a run needs it), the record of the last reconcile of a commit
(`reconciled.pickle`, small: see runrecord.py) and of the last status run's placements
(`placed.pickle`, app/status.py).

It is an optimisation only: a missing, stale or corrupt file means a full reconcile. Entries not
used by a run are dropped when it saves, so the file tracks the repo's current content.
"""
from __future__ import annotations

import gc
import hashlib
import pickle
from pathlib import Path
from typing import Any, Iterator, MutableMapping

from ... import __version__
from ...core.load.schemas import schema_dir, schema_names
from ..fs.paths import STATE_DIR, check_path, write_file

def code_fingerprint() -> str:
    """A digest of ksgitops' own source and schema files: a cache or memo pickled by other code
    (whose classes may have other fields), or holding findings of other schemas, is never loaded.
    Costs a read of the package's files, once per process."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        root = Path(__file__).resolve().parents[2]
        digest = hashlib.blake2b(digest_size=12)
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{path.relative_to(root)}\0".encode())
            digest.update(path.read_bytes())
        schemas = schema_dir()
        for name in schema_names():
            digest.update(f"schema/{name}\0".encode())
            digest.update(schemas.joinpath(name).read_bytes())
        _FINGERPRINT = f"{__version__}-{digest.hexdigest()}"
    return _FINGERPRINT


_FINGERPRINT: str | None = None
FORMAT = "ksgitops-cache-2"
RECORD_FILE = "reconciled.pickle"
PLACED_FILE = "placed.pickle"


class TouchedDict(MutableMapping[Any, Any]):
    """A dict that remembers which keys this run read or wrote."""

    def __init__(self, data: dict[Any, Any] | None = None) -> None:
        self._data = data or {}
        self.touched: set[Any] = set()

    def __getitem__(self, key: Any) -> Any:
        value = self._data[key]
        self.touched.add(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
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

    @property
    def content(self) -> TouchedDict:
        """Parse results and memos by content; read from disk on first use (a run proven
        unchanged by its record never reads them)."""
        if self._content is None:
            data = _read(self.path) if self.path is not None else {}
            self._content = TouchedDict(data.get("content", {}))
            self._mailboxes = data.get("mailboxes", {})
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
            self._records[name] = _read(self.path.with_name(name)).get("record") if self.path is not None else None
        return self._records[name]

    def _keep(self, name: str, record: Any) -> None:
        """Keep `record` as file `name` (only written when it differs from the one read)."""
        if record != self._recorded(name):
            self._records[name] = record
            if self.path is not None:
                _write(self.path.with_name(name), {"format": f"{FORMAT}-{code_fingerprint()}", "record": record})

    @classmethod
    def for_git_dir(cls, git_dir: str) -> "DiskCache":
        """The repository's cache (a link on the way is a LinkError: never read or written through)."""
        for name in ("cache.pickle", RECORD_FILE, PLACED_FILE):
            check_path(Path(git_dir), f"{STATE_DIR}/{name}", shown=str(git_dir).rstrip("/"))
        return cls(Path(git_dir) / STATE_DIR / "cache.pickle")

    def next_run(self) -> None:
        """For a long-running process: keep only what the last run used, and start counting anew."""
        self.content = TouchedDict(self.content.used())
        self._loaded_keys = frozenset(self.content)
        self._loaded_mailboxes = dict(self.mailboxes)

    def save_content(self) -> None:
        """Save after a run that did not commit: the mailbox entries stay as they were (a run
        that never read them has nothing to save)."""
        if self._content is not None:
            self.save(self.mailboxes)

    def save(self, mailboxes: dict[str, tuple[str, str]]) -> None:
        """Write the entries this run used (only when something is new: a no-op run writes nothing)."""
        news = mailboxes != self._loaded_mailboxes or bool(self.content.touched - self._loaded_keys)
        self.mailboxes = mailboxes
        if self.path is None or not news:
            return
        _write(self.path, {"format": f"{FORMAT}-{code_fingerprint()}", "content": self.content.used(),
                           "mailboxes": mailboxes})


def _write(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass  # a cache that cannot be written only costs time next run


def unpickle(path: Path) -> Any:
    """A pickle of our own, read with the cyclic GC paused: unpickling creates many objects and no
    garbage, and the collections it would trigger took about half the time of a 1 MiB cache."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        with open(path, "rb") as f:
            return pickle.load(f)  # noqa: S301 - our own file inside .git, never from a remote
    finally:
        if enabled:
            gc.enable()


def _read(path: Path | None) -> dict[str, Any]:
    try:
        data = unpickle(path) if path is not None else {}
    except Exception:  # noqa: BLE001 - any unreadable cache is just absent
        return {}
    return data if isinstance(data, dict) and data.get("format") == f"{FORMAT}-{code_fingerprint()}" else {}
