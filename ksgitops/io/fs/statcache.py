"""What the last run saw in the work tree, so that the next one proves "unchanged" by lstat alone.

Like git's index, a record pairs what a path's lstat showed with what its content was then:

- a source file: its stamp and git blob id (its content is neither read nor hashed while the stamp
  holds); a source folder: its stamp and listing (not listed again while the stamp holds);
- a generated root: the input digest of the mailbox it holds (when it was built without problems),
  a digest of its content, the paths it owns (`shape`: files, folders, names that must be absent)
  and a digest of their stamps. A root whose stamps all hold is byte for byte what the digest says.

A stamp is (inode, size, mtime, ctime, mode) of a file or folder, but (inode, size, mtime, 0, mode)
of a root's own folder (a folder's mtime moves when an entry is added, removed or renamed in it,
and can be set back; its ctime moves then too and cannot be set back, but it also moves when the
folder is renamed, which the writer does to a whole root), and zeros for a path that does not exist.

Racy stamps. Timestamps have a granularity (a clock tick, up to seconds on some file systems): a
change in the same tick as the observation could leave the stamp as it was. So an observation is
kept only when its newest timestamp is older than `clock()`, a time read from the file system
itself (a probe file's mtime, set to "now") before the content was read or the files were
written; a later change then gets a newer timestamp. A racy path is just not recorded (read again
next time). The probe is in the git directory: a record needs it on the work tree's file system.

Caches are only caches: a missing, stale, foreign (other code, other folder) or corrupt record
means reading and comparing, with the same bytes out.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import stat
import sys
import time
from array import array
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from msgspec import Struct, field

from ..git.cache import code_fingerprint, unpickle
from .forked import in_child as _in_child, may_fork as _may_fork
from .afterwards import settled
from .folderstate import make_own, place_of, shared
from .paths import STATE_DIR, check_path, open_plain, private_folder, write_state
from .shapes import Shape, content_digest, shape_of

FORMAT = "ksgitops-worktree-1"
ABSENT = (0, 0, 0, 0, 0)
Stamp = tuple[int, int, int, int, int]
Observed = list[tuple[str, Stamp]]  # (path in a root, stamp), as the writer saw them
THREADS = 2  # threads that write a batch of roots (os.open and os.write release the GIL)
FORK_FROM = 50_000  # paths to check from which a forked child checks half of them


_FORMAT, _DIR = stat.S_IFMT(0o177777), stat.S_IFDIR


def stamp_of(st: os.stat_result) -> Stamp:
    if stat.S_ISDIR(st.st_mode):
        return (st.st_ino, st.st_size, st.st_mtime_ns, 0, st.st_mode)
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def lstamp(path: str) -> Stamp:
    try:
        return stamp_of(os.lstat(path))
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT


def full_stamp(path: str) -> Stamp:
    """lstamp with a folder's ctime too: for what ksgitops reads but never renames (a source
    folder's mtime can be set back; its ctime cannot)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def newest(stamp: Stamp) -> int:
    return max(stamp[2], stamp[3])


def stamps_digest(stamps: Iterable[Stamp]) -> bytes:
    return _digest([n for s in stamps for n in s])


def observe(base: str, shape: Shape) -> tuple[bytes, int, bool]:
    """(digest of the stamps of `shape` below `base`, newest timestamp among them, whether a file
    has another name): the hot loop of a no-op run, one lstat per path (a file's in-place edit moves
    only its own stamp; an entry added to or removed from a folder moves the folder's mtime)."""
    flat: list[int] = []
    add = flat.extend
    lstat = os.lstat
    linked = False
    for rel in shape:
        try:
            st = lstat(f"{base}/{rel}" if rel else base)
        except (FileNotFoundError, NotADirectoryError):
            add(ABSENT)
            continue
        mode = st.st_mode
        add((st.st_ino, st.st_size, st.st_mtime_ns, 0 if not rel and mode & _FORMAT == _DIR else st.st_ctime_ns, mode))
        if st.st_nlink > 1 and mode & _FORMAT != _DIR:
            linked = True
    return _digest(flat), max(flat[2::5] + flat[3::5], default=0), linked  # times taken at C speed


def _digest(flat: list[int]) -> bytes:
    try:
        packed = array("q", flat).tobytes()
    except OverflowError:  # an inode number beyond 2**63: exact, only slower
        packed = repr(flat).encode()
    return hashlib.blake2b(packed, digest_size=16).digest()


def holding(base: str, records: list[tuple[str, RootRecord]]) -> list[bool]:
    """Whether each recorded root (path, record) below `base` still holds. A large check runs
    half in a forked child: lstat is one system call per path, and two threads would lose to the
    GIL what they overlap."""
    def check(part: list[tuple[str, RootRecord]]) -> list[bool]:
        return [observe(f"{base}/{root}", rec.shape)[0] == rec.stamps for root, rec in part]
    if sum(len(rec.shape) for _, rec in records) < FORK_FROM or not _may_fork():
        return check(records)
    half = len(records) // 2
    theirs = _in_child(lambda: bytes(check(records[half:])), len(records) - half)
    try:
        mine = check(records[:half])
    except BaseException:
        theirs.kill()  # this process is leaving: its child's half is not wanted
        raise
    finally:
        found = theirs()  # the child is waited for, whatever happens here
    return mine + ([bool(b) for b in found] if found is not None else check(records[half:]))


class RootRecord(NamedTuple):
    input: str | None  # the mailbox's input digest, when it was built without problems
    content: bytes  # content_digest of the tree as written
    shape: Shape
    stamps: bytes  # stamps_digest of the shape's stamps


class SourceStat(NamedTuple):
    stamp: Stamp
    key: str  # git blob id of a file; for a folder, unused
    listing: tuple[tuple[str, bool], ...] = ()  # a folder's (name, is folder), links and others left out


class WorkTreeRecord(Struct):
    """The record of one work tree, loaded from and saved to `path` (None: nothing is kept)."""

    path: Path | None
    identity: tuple[str, int, int] = ("", 0, 0)
    place: str = STATE_DIR  # the folder's own state folder in the git directory (folderstate.py)
    sources: dict[str, SourceStat] = field(default_factory=dict)
    roots: dict[str, RootRecord] = field(default_factory=dict)
    intact: dict[str, bool] = field(default_factory=dict)  # root -> its stamps hold (checked this run)
    run: Any = None  # proof.ProvenRun of the last reconcile that wrote, if it left one
    token: str | None = None  # the monitor's token the record is as of (feed.py)
    changes: Any = None  # feed.Changes since `token` (None: unknown, every stamp is looked at)
    run_proven: bool = False  # `run` was proven (or made) this run
    linked: set[str] = field(default_factory=set)  # roots holding a file with another name: always looked at
    _fresh: str | None = None  # the monitor's token given this run, before anything was looked at
    _noted: set[str] = field(default_factory=set)  # roots recorded anew this run
    _clock: int | None = None
    _dirty: bool = False
    _digests: dict[int, bytes] = field(default_factory=dict)  # content digests by object, this run
    _shapes: dict[int, Shape] = field(default_factory=dict)

    @classmethod
    def load(cls, work_tree: Path, git_dir: str | None) -> "WorkTreeRecord":
        """The record of `work_tree` in its own state folder in `git_dir` (folderstate.py); empty
        when there is none, it is unreadable, or it was made by other code or for another folder."""
        if git_dir is None:
            return cls(None)
        path = Path(git_dir) / (place := place_of(work_tree)) / "worktree.pickle"
        check_path(Path(git_dir), f"{place}/worktree.pickle", shown=str(git_dir).rstrip("/"))
        try:
            top, cache_dir = os.stat(work_tree), os.stat(Path(git_dir))
        except OSError:
            return cls(None)
        if top.st_dev != cache_dir.st_dev:
            return cls(None)  # the probe would read another file system's clock
        identity = (os.path.realpath(work_tree), top.st_dev, top.st_ino)
        record = cls(path, identity, place)
        settled(Path(git_dir) / STATE_DIR)  # the last command may still be keeping it (afterwards.py)
        try:
            data = unpickle(path)
            if data.get("format") == f"{FORMAT}-{code_fingerprint()}-{sys.version}" and data["identity"] == identity:
                record.sources, record.roots, record.run = data["sources"], data["roots"], data["run"]
                record.token, record.linked = data.get("token"), set(data.get("linked", ()))
        except Exception:  # noqa: BLE001 - any unreadable record is just absent
            pass
        return record

    @property
    def state(self) -> Path | None:
        """The repository's state folder, whose memos lock guards the record (None: nothing is kept)."""
        return Path(shared(self.path.parent)) if self.path is not None else None

    def follow(self, git_dir: str) -> None:
        """Ask the work tree's monitor what changed since the record's token, before anything is looked at."""
        from .feed import ask  # a socket's round trip; nothing to load beyond it
        answer = ask(git_dir, self.token, self.identity, place=self.place) if self.enabled else None
        if answer is not None:
            self._fresh = answer.token
            self.changes = answer.changes if self.token is not None else None

    def save(self) -> None:
        """Write the record when this run changed it (atomically; a lost one costs only time)."""
        if self.path is None:
            return
        if self._fresh is not None and self._fresh != self.token:
            self._advance()
        elif self._dirty and self._fresh is None:
            self.token = None  # recorded without a monitor: no token vouches for it
        if not self._dirty:
            return
        shapes: dict[Shape, Shape] = {}
        roots = {r: rec._replace(shape=shapes.setdefault(rec.shape, rec.shape)) for r, rec in self.roots.items()}
        data = {"format": f"{FORMAT}-{code_fingerprint()}-{sys.version}", "identity": self.identity,
                "sources": self.sources, "roots": roots, "run": self.run, "token": self.token,
                "linked": sorted(self.linked)}
        try:
            make_own(str(self.path.parent), self.identity[0])
            write_state(self.path, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
            self._dirty = False
        except OSError:
            pass

    def _advance(self) -> None:
        """As of this run's token: what may have changed and was not seen to hold (or recorded anew) goes."""
        changes = self.changes
        for root in list(self.roots):
            if root in self._noted or self.intact.get(root, False):
                continue
            if root in self.intact or changes is None or changes.tree_may_differ(root):
                del self.roots[root]
        if self.run is not None and not self.run_proven:
            self.run = None
        self.token, self._dirty = self._fresh, True

    def as_of_this_run(self) -> bool:
        """Saved as of the token the monitor gave this run before anything was looked at."""
        return self._fresh is not None and self.token == self._fresh and not self._dirty

    @property
    def enabled(self) -> bool:
        return self.path is not None

    @property
    def work_tree(self) -> Path:
        return Path(self.identity[0])

    def clock(self) -> int:
        """The file system's "now", taken once per run before anything it vouches for is read."""
        if self._clock is None:
            self._clock = self.now()
        return self._clock

    def now(self) -> int:
        """The file system's time now: the mtime of a probe file in the state folder, set to now
        (opened without following a link: a planted one means nothing is recorded)."""
        assert self.state is not None
        try:
            private_folder(self.state)
            fd = open_plain(str(self.state / "clock"), create=True)
            try:
                os.utime(fd)
                return os.fstat(fd).st_mtime_ns
            finally:
                os.close(fd)
        except OSError:
            return -1  # nothing counts as settled: nothing is recorded

    def tick(self, wait: float = 0.1) -> int:
        """now(), once the file system's clock has moved past the moment of the call (-1: it did
        not within `wait` seconds): whatever was written before has an older timestamp."""
        started, deadline = self.now(), time.monotonic() + wait
        while started >= 0 and time.monotonic() < deadline:
            time.sleep(0.001)
            since = self.now()
            if since > started:
                return since
        return -1

    # --- sources ---------------------------------------------------------------------------------

    def source(self, path: str, stamp: Stamp) -> SourceStat | None:
        found = self.sources.get(path)
        return found if found is not None and found.stamp == stamp else None

    def note_source(self, path: str, entry: SourceStat) -> None:
        """Keep what was read after `clock()`, unless its stamp is racy."""
        if self.enabled and newest(entry.stamp) < self.clock() and self.sources.get(path) != entry:
            self.sources[path] = entry
            self._dirty = True

    def forget_sources(self, seen: set[str]) -> None:
        """Drop the sources this run did not see (deleted files, folders no longer walked)."""
        self._dirty = _prune(self.sources, seen) or self._dirty

    # --- generated roots -------------------------------------------------------------------------

    def check(self, work_tree: Path, roots: Iterable[str] | None = None) -> None:
        """Observe the recorded roots (`roots`: only these) and note which still hold."""
        wanted = [r for r in (self.roots if roots is None else roots) if r in self.roots and r not in self.intact]
        if self.changes is not None:  # what the monitor saw no change in holds as recorded (a hard
            # link's other name is changed unseen: such a root is always looked at)
            def may_differ(root: str) -> bool:
                return root in self.linked or self.changes.tree_may_differ(root)
            self.intact.update((r, True) for r in wanted if not may_differ(r))
            wanted = [r for r in wanted if may_differ(r)]
        self.intact.update(zip(wanted, holding(str(work_tree), [(r, self.roots[r]) for r in wanted])))

    @property
    def followed(self) -> bool:
        """A monitor answered this run (its answer may still have been "unknown")."""
        return self._fresh is not None

    def may_differ(self, path: str) -> bool:
        """Whether the stamp of `path` may have moved since the record (always, without a monitor)."""
        return self.changes is None or self.changes.stamp_may_differ(path)

    def reusable(self, root: str, digest: str) -> bool:
        """The root holds a mailbox built from the same inputs and is as that run left it
        (`check` first)."""
        rec = self.roots.get(root)
        return rec is not None and rec.input == digest and self.intact.get(root, False)

    def unchanged(self, root: str, tree: Any) -> bool:
        """The root on disk holds exactly `tree`, proven by the recorded digest and stamps."""
        rec = self.roots.get(root)
        if rec is None or rec.content != content_digest(tree, self._digests):
            return False
        if root not in self.intact:
            self.check(self.work_tree, [root])
        return self.intact.get(root, False)

    def verified(self, root: str, tree: Any, since: int | None = None) -> None:
        """The writer found the root equal to `tree` (after `clock()`, or the `since` it took from
        `now()` before comparing): record what it saw."""
        shape = shape_of(tree, self._shapes)
        stamps, latest, linked = observe(f"{self.work_tree}/{root}", shape)
        settled = latest < (self.clock() if since is None else since)
        self.note_root(root, RootRecord(None, content_digest(tree, self._digests), shape, stamps) if settled else None)
        self._link(root, linked)

    def written(self, root: str, tree: Any, seen: Observed | None, swapped_at: int) -> None:
        """The writer wrote `tree` at `root` and saw `seen` (None: the root went, a file root, whose
        stamp changes as it is renamed in, or a root folders of the old one were moved into), after
        taking `swapped_at` from `now()`."""
        if tree is not None and seen is None:
            self.note_root(root, None)
            return
        seen = seen if seen is not None else [("", ABSENT)]
        stamps = [s for _, s in seen]
        settled = max(newest(s) for s in stamps) < swapped_at
        rec = RootRecord(None, content_digest(tree, self._digests), tuple(p for p, _ in seen), stamps_digest(stamps))
        self.note_root(root, rec if settled else None)
        self._link(root, False)  # files of its own, just written

    def _link(self, root: str, linked: bool) -> None:
        if linked != (root in self.linked):
            (self.linked.add if linked else self.linked.discard)(root)
            self._dirty = True

    def note_root(self, root: str, rec: RootRecord | None) -> None:
        self._noted.add(root)
        if rec is None:
            self._dirty = self.roots.pop(root, None) is not None or self._dirty
        elif self.roots.get(root) != rec:
            self.roots[root] = rec
            self._dirty = True
        self.intact.pop(root, None)

    def set_inputs(self, inputs: dict[str, str | None]) -> None:
        """The input digest of each mailbox root this run built (None: it had problems)."""
        for root, digest in inputs.items():
            rec = self.roots.get(root)
            if rec is not None and rec.input != digest:
                self.roots[root] = rec._replace(input=digest)
                self._dirty = True

    def keep_run(self, run: Any) -> None:
        self._dirty = self._dirty or run is not None or self.run is not None
        self.run, self.run_proven = run, True

    def forget_roots(self, kept: set[str]) -> None:
        self._dirty = _prune(self.roots, kept) or self._dirty


def _prune(entries: dict[str, Any], kept: set[str]) -> bool:
    """Drop every entry not in `kept`; True when one went."""
    gone = set(entries) - kept
    for key in gone:
        del entries[key]
    return bool(gone)
