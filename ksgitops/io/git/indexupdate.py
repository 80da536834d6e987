"""A checkout's index changes, collected, then made in one go.

A one-mailbox change touches a few hundred index entries, but the whole index is read and written
to make them: at a fleet's 200,000 entries (31 MB) libgit2 takes 0.6–1.4 s to read it and ~0.4 s
to write it, `git update-index` ~0.33 s for both. So when a `git` program is on PATH the changes go
through it (one process; the index written under its lock, fsynced with `core.fsync=index`, as
libgit2 reads it, none of the repository's hooks or fsmonitor run); without one, or when it fails
or says anything, libgit2 makes them. Either way the index holds the same entries (path, mode, id;
a conflict's stages replaced), and each file's the stat data of the file as written, as after
git's own checkout: git reads the files itself when each is as this process wrote it and nothing
may convert it (else it is given the ids, and the entries carry no stat), and the index it wrote
is checked for the ids and modes; libgit2 is given the stat. Both write the index atomically,
so a kill leaves the old index or the new one: the checkout's journal (checkout.py) then makes the
changes again. git ends with this process
(PR_SET_PDEATHSIG): the next command's recovery removes the index.lock a killed run left, which a
git still writing would otherwise rename into place. Beside other threads (no code may run between
fork and exec there) libgit2 makes the changes.
"""
from __future__ import annotations

import mmap
import os
import select
import shutil
import stat
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Callable, Iterable, NamedTuple

from ...model import GitError
from ...core.status.gitobjects import BLOB_MODE
from ..fs.durable import common_dir
from ..fs.forked import end_with, may_fork
from ..fs.paths import FileStats, index_stat
from . import indexstat
from ..pygit import pygit2

REMOVED = "0" * 40
NAMED_AT_MOST = 128 * 1024  # bytes of paths removed, named on git's command line (Linux takes 2 MiB in all)
TIMEOUT = 300.0  # seconds; a git that hangs is given up, and libgit2 does the work
# The index as libgit2 reads it (no split index's `link`, no sparse index's `sdir`), and none of the
# repository's programs run (a post-index-change hook, an fsmonitor): libgit2 ran none, and a child
# one leaves behind would hold this run open
AS_LIBGIT2 = ("-c", "core.splitIndex=false", "-c", "index.sparse=false", "-c", "core.fsmonitor=false",
              "-c", "core.hooksPath=/dev/null")


class IndexUpdates:
    """Index additions and removals in order, as `pygit2.Index` takes them (`add`, `remove`, `in`)."""

    def __init__(self) -> None:
        self.changes: list[tuple[str, str, int]] = []  # (path, hex id or "", mode): "" removes

    def add(self, entry: pygit2.IndexEntry) -> None:
        self.changes.append((os.fspath(entry.path), str(entry.id), int(entry.mode)))

    def remove(self, path: str) -> None:
        self.changes.append((path, "", 0))

    def __contains__(self, path: str) -> bool:
        return True  # a removal of a path the index lacks is no change, in git as in libgit2

    def write(self, repo: pygit2.Repository, meanwhile: Callable[[], None] = lambda: None,
              files: FileStats | None = None) -> None:
        """Make the changes in the repository's index (nothing to make: the index is not touched);
        `files`: the stat of each file added as it was written (checkout.py), for its entry.
        `meanwhile` runs while git makes them (the checkout's sync of the files written: both are
        done before the journal goes, in either order)."""
        files = files if files is not None else {}
        started = _start_git(repo, self.changes, files) if self.changes else None
        try:
            meanwhile()
        except BaseException:
            if started is not None:
                started.process.kill()
                started.process.wait()
                started.said.close()
            raise
        if not self.changes:
            return
        if started is not None:
            if _finished(started) and (not started.read or _entered(repo, self.changes)):
                return
            if started.read:
                files = {}  # a file git read as something else may have changed since it was written
        index = repo.index
        for path, oid, mode in self.changes:
            resolve_conflict(index, path)  # as git's stage-0 entry (or its removal) replaces a conflict's stages
            if oid:
                index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=oid), pygit2.enums.FileMode(mode)))
            elif path in index:
                index.remove(path)
        indexstat.fill(index, files)
        index.write()


def resolve_conflict(index: pygit2.Index, path: str) -> None:
    """Drop the conflict stages (1-3) of `path`, if any."""
    conflicts = index.conflicts
    if conflicts is None:
        return
    try:
        del conflicts[path]
    except (KeyError, ValueError, pygit2.GitError):
        pass


def _git(program: str, repo: pygit2.Repository) -> list[str]:
    """git, on this repository's git directory and work tree, writing the index as libgit2 reads it."""
    return [program, f"--git-dir={Path(repo.path)}", f"--work-tree={Path(repo.workdir)}", *AS_LIBGIT2]


def _environment() -> dict[str, str]:
    """This process's environment without GIT_*: the repository's own index, objects and config."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


class _Started(NamedTuple):
    process: subprocess.Popen[bytes]
    said: IO[bytes]  # its standard error
    read: bool  # git reads the files added (else it was given their ids)


def _start_git(repo: pygit2.Repository, changes: list[tuple[str, str, int]], files: FileStats) -> _Started | None:
    """`git update-index` making the changes, started (None: no git, or other threads alive)."""
    program = shutil.which("git")
    if program is None or not repo.workdir or not may_fork():  # beside other threads: no code between fork and exec
        return None
    parent = os.getpid()
    said = tempfile.TemporaryFile()  # files, not pipes: nothing here waits for git to read or write
    read = _read_as_written(repo, changes, files)
    try:
        with tempfile.TemporaryFile() as lines:
            if read is None:
                how = ["--index-info"]
                for path, oid, mode in changes:
                    lines.write(f"{mode:o} {oid or REMOVED}\t".encode() + os.fsencode(path) + b"\0")
            else:  # removals named (gone from the index whatever is on disk), then the additions read
                removed = ["--force-remove", *read.removed, "--no-force-remove"] if read.removed else []
                how = ["--add", "--info-only", *removed, "--stdin"]
                lines.write(b"".join(os.fsencode(path) + b"\0" for path in read.added))
            lines.seek(0)
            return _Started(subprocess.Popen(
                [*_git(program, repo), "-c", "core.fsync=index", "-c", "core.fsyncMethod=fsync",
                 "update-index", "-z", *how],
                stdin=lines, stdout=subprocess.DEVNULL, stderr=said, env=_environment(), cwd=repo.workdir,
                preexec_fn=lambda: end_with(parent)), said, read is not None)  # noqa: PLW1509 - one thread, see above
    except (OSError, subprocess.SubprocessError):
        said.close()
        return None


class _AsRead(NamedTuple):
    added: list[str]  # for git to read, in name order
    removed: list[str]


def _read_as_written(repo: pygit2.Repository, changes: list[tuple[str, str, int]], files: FileStats) -> _AsRead | None:
    """The paths added and removed, when git may read the files added itself (each hashed and entered with its
    stat data, as git's own checkout enters it): each file still as this process wrote it
    (`files`: its stat then), a plain file, and nothing that would make git's reading differ from
    the bytes (attributes: filters, end-of-line and encoding conversions; `core.autocrlf`); the
    paths removed fit on a command line. Else None: the ids go in as they are, without stat data,
    and `git diff-files` / `git diff-index HEAD` list those files until something (`git status`)
    refreshes the index. What git then entered is checked (`_entered`)."""
    final = _final(changes)
    removed = [path for path, (oid, _) in final.items() if not oid]
    if sum(len(os.fsencode(path)) + 1 for path in removed) > NAMED_AT_MOST or any(p.startswith("-") for p in removed):
        return None
    workdir = os.path.join(repo.workdir, "")
    added = sorted(path for path, (oid, _) in final.items() if oid)
    for path in added:
        try:
            now = os.lstat(workdir + path)
        except OSError:
            return None
        if (final[path][1] != BLOB_MODE or not stat.S_ISREG(now.st_mode) or now.st_mode & 0o111
                or files.get(path) != index_stat(now)):
            return None
    if _converted(repo, added) or _version(repo) not in (2, 3):  # 4: names are not there to check (_entered)
        return None
    return _AsRead(added, removed)


def _final(changes: list[tuple[str, str, int]]) -> dict[str, tuple[str, int]]:
    return {path: (oid, mode) for path, oid, mode in changes}  # the last change of a path counts


def _version(repo: pygit2.Repository) -> int:
    try:
        with open(os.path.join(repo.path, "index"), "rb") as f:
            head = f.read(8)
    except OSError:
        return 0
    return struct.unpack(">I", head[4:])[0] if len(head) == 8 and head[:4] == b"DIRC" else 0


def _entered(repo: pygit2.Repository, changes: list[tuple[str, str, int]]) -> bool:
    """Whether the index git wrote holds each addition's id and mode at its path: a file git read
    may have gone in as something else (converted; changed since it was looked at; an entry git
    left as it was, marked assume-unchanged or whose stat it took for unchanged; the old entry's
    mode, kept under `core.fileMode=false`), and libgit2 then makes the changes. Entries are in name
    order: each is found by its name, in one pass over the file, without parsing it; anything
    unexpected is a no (libgit2 makes the changes)."""
    wanted = sorted((os.fsencode(path), oid, mode) for path, (oid, mode) in _final(changes).items() if oid)
    try:
        with open(os.path.join(repo.path, "index"), "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data[:4] != b"DIRC":
                return False
            version, pos = struct.unpack_from(">I", data, 4)[0], 12
            for name, oid, mode in wanted:
                needle, length = name + b"\0", min(len(name), 0xFFF)
                while True:
                    at = data.find(needle, pos)
                    if at < 0:
                        return False
                    if struct.unpack_from(">H", data, at - 2)[0] & 0x7FFF == length:  # stage 0, no extended flags
                        start = at - 62
                        break
                    if version >= 3 and struct.unpack_from(">H", data, at - 4)[0] & 0x7FFF == EXTENDED | length:
                        start = at - 64
                        break
                    pos = at + 1  # the end of a longer name
                if data[start + 40:start + 60].hex() != oid or struct.unpack_from(">I", data, start + 24)[0] != mode:
                    return False
                pos = at + len(needle)
    except (OSError, ValueError, struct.error):
        return False
    return True


def _converted(repo: pygit2.Repository, paths: Iterable[str]) -> bool:
    """Whether git may convert what it reads at `paths`: `core.autocrlf`, or any attributes file
    that applies (the work tree's on their way, the repository's, the user's, the system's)."""
    try:
        if str(repo.config["core.autocrlf"]).lower() not in ("false", "no", "off", "0", ""):
            return True
    except (KeyError, ValueError, pygit2.GitError):
        pass
    try:
        user = os.path.expanduser(str(repo.config["core.attributesFile"]))
    except (KeyError, ValueError, pygit2.GitError):
        user = os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "git/attributes")
    folders = {""}
    for path in paths:
        cut = path.rfind("/")
        while cut > 0 and path[:cut] not in folders:
            folders.add(path[:cut])
            cut = path.rfind("/", 0, cut)
    workdir = os.path.join(repo.workdir, "")
    return any(os.path.lexists(path) for path in [str(common_dir(repo.path) / "info/attributes"), "/etc/gitattributes",
                                                  user, *(os.path.join(workdir, folder, ".gitattributes")
                                                          for folder in folders)])


def _finished(started: _Started) -> bool:
    """True when git made every change; False when it failed, hung, or said anything: it skips a
    path its own checks refuse (`.GIT`, a `.git` component) with a message and exit status 0, and
    libgit2 then makes (or refuses, loudly) the changes. Its lock and rename make it all or nothing."""
    try:
        with started.said:
            try:
                code = _wait(started.process, TIMEOUT)
            except subprocess.TimeoutExpired:
                started.process.kill()
                started.process.wait()
                return False
            started.said.seek(0)
            return code == 0 and not started.said.read(1)
    except OSError:
        return False


def _wait(process: subprocess.Popen[bytes], timeout: float) -> int:
    """`process.wait(timeout)`, woken as the process ends: Popen's own polls with naps of up to
    50 ms, ~25 ms lost on average after a git that takes a quarter of a second."""
    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later
        return process.wait(timeout=timeout)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(timeout * 1000):
            raise subprocess.TimeoutExpired(process.args, timeout)
    finally:
        os.close(fd)
    return process.wait()


# --- the index file as git wrote it: what libgit2 cannot read, what it would drop ---------------------

UNREADABLE = (b"link", b"sdir")  # a split index's, a sparse index's: mandatory extensions libgit2 refuses
EXTENDED = 0x4000  # an entry's flag: extended flags follow (index version 3 and later)
KEPT_BY_GIT = 0x4000 | 0x2000  # extended flags: skip-worktree, intent-to-add


class IndexShape(NamedTuple):
    flagged: bool  # an entry carries skip-worktree or intent-to-add (libgit2's read_tree drops them)
    unreadable: tuple[str, ...]  # mandatory extensions libgit2 cannot read


def index_shape(path: Path) -> IndexShape:
    """What an index file holds that libgit2 would refuse or lose (a missing or odd file: nothing)."""
    try:
        data = path.read_bytes()
    except OSError:
        return IndexShape(False, ())
    if len(data) < 32 or data[:4] != b"DIRC":
        return IndexShape(False, ())
    version, count = struct.unpack_from(">II", data, 4)
    if version == 2 and not any(name in data for name in UNREADABLE):
        return IndexShape(False, ())  # no extended flags before version 3: nothing to walk
    pos, flagged = 12, False
    try:
        for _ in range(count):
            flags = struct.unpack_from(">H", data, pos + 60)[0]
            name = pos + 62
            if version >= 3 and flags & EXTENDED:
                flagged = flagged or bool(struct.unpack_from(">H", data, name)[0] & KEPT_BY_GIT)
                name += 2
            if version >= 4:  # the name: a varint (bytes dropped from the previous one), then NUL-terminated
                while data[name] & 0x80:
                    name += 1
                pos = data.index(b"\0", name + 1) + 1
            else:  # NUL-terminated, padded with NULs to a multiple of 8
                pos += ((data.index(b"\0", name) - pos) + 8) & ~7
        unreadable = []
        while pos + 8 <= len(data) - 20:
            signature, size = data[pos:pos + 4], struct.unpack_from(">I", data, pos + 4)[0]
            if b"a" <= signature[:1] <= b"z":
                unreadable.append(signature.decode("ascii", "replace"))
            pos += 8 + size
    except (struct.error, ValueError, IndexError):
        return IndexShape(True, tuple(n.decode() for n in UNREADABLE if n in data))  # unsure: assume the worst
    return IndexShape(flagged, tuple(unreadable))


def _may_be_split_or_sparse(repo: pygit2.Repository) -> bool:
    """What git needs to have written a split or sparse index: its shared index files, or the
    settings that ask for one (git only writes them when asked)."""
    if any(Path(repo.path).glob("sharedindex.*")):
        return True
    for key in ("core.splitIndex", "index.sparse", "feature.manyFiles"):
        try:
            if repo.config.get_bool(key):
                return True
        except (KeyError, ValueError, pygit2.GitError):
            continue
    return False


def make_readable(repo: pygit2.Repository) -> None:
    """Rewrite a split or sparse index as one plain index libgit2 reads (the same entries, through
    git, as its own `core.splitIndex=false` and `index.sparse=false` write it), before anything is
    committed. Raises GitError when it stays unreadable (no git program, or git failed)."""
    path = Path(repo.path) / "index"
    if not _may_be_split_or_sparse(repo):
        return  # the index file is not read: at 200,000 entries that is 31 MB on every commit
    unreadable = index_shape(path).unreadable
    if not unreadable:
        return
    program = shutil.which("git")
    if program is not None and repo.workdir:  # before the commit: a git left to finish after a kill is welcome
        subprocess.run([*_git(program, repo), "update-index", "--no-split-index"], env=_environment(),
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=TIMEOUT, check=False)
        unreadable = index_shape(path).unreadable
    if unreadable:
        raise GitError(f"{path}: the index has extension {', '.join(unreadable)} (a split or sparse index), which "
                       f"libgit2 cannot read; nothing was changed (run `git update-index --no-split-index` with "
                       f"core.splitIndex=false, or `git sparse-checkout init --no-sparse-index`, then again)")
