"""The lowest floor of the work-tree edge: the symbolic-link guard every reader and writer of an
owned path goes through, and single-file writes.

`write_file` replaces one file whose loss costs nothing but time (caches, memos) or that a journal
can redo (a checkout); writing generated roots crash-safely is `worktree.py`'s job.
"""
from __future__ import annotations

import os
import struct
import stat
from pathlib import Path

from ...core.status.gitobjects import BLOB_MODE

from ...model import KsgitopsError, Origin, Problem
from .folderstate import PRIVATE_FILE, private_folder, too_open

STATUS_FILE = "STATUS.md"
STATE_DIR = "ksgitops-state"  # in the git directory: caches, records, memos and the checkout journal


class LinkError(KsgitopsError):
    """A symbolic link where ksgitops reads or writes what it owns: exit 2, nothing touched."""

    def __init__(self, rel: str) -> None:
        super().__init__(Problem(Origin(rel), "is a symbolic link; ksgitops never reads or writes through "
                                              "links in the paths it owns (make it a folder or file of the repository)"),
                         exit_code=2)


def check_path(root: Path, rel: str, verified: set[str] | None = None, last: bool = True, shown: str = "") -> None:
    """Raise LinkError when a component of `rel` below `root` is a symbolic link (`last`: the
    final component too), named `shown`/component. `verified` caches folders found to be real."""
    parts = rel.split("/")
    upto = parts if last else parts[:-1]
    for i in range(len(upto)):
        prefix = "/".join(parts[:i + 1])
        if verified is not None and prefix in verified:
            continue
        try:
            mode = os.lstat(root / prefix).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return  # nothing below a missing component can be a link
        if stat.S_ISLNK(mode):
            raise LinkError(f"{shown}/{prefix}" if shown else prefix)
        if verified is not None and stat.S_ISDIR(mode):
            verified.add(prefix)


def lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return 0


def has_other_names(path: str) -> bool:
    """A regular file with more than one name (a hard link): changed through another name, no
    inotify event names this one (feed.py)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def open_plain(path: str, create: bool = False) -> int:
    """A descriptor (read-only) of the plain file `path`, made empty when `create`d: never through
    a link, never waiting on a FIFO (OSError for either, or for anything but a plain file)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    fd = os.open(path, flags, PRIVATE_FILE)  # only the state folder's files are opened so
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        raise OSError(f"{path}: not a plain file")
    if create and too_open(found):  # an earlier version's
        os.fchmod(fd, PRIVATE_FILE)
    return fd


INDEX_STAT = struct.Struct("=10I")  # a git index entry's stat fields, as libgit2 holds them (io/git/indexstat.py)
FileStats = dict[str, bytes]  # path in the work tree -> its index stat (`index_stat`), as written or as read


def index_stat(st: os.stat_result) -> bytes:
    """ctime s, ns; mtime s, ns; dev; ino; mode; uid; gid; size, in git's 32-bit fields, for a
    generated file (BLOB_MODE, 100644): 40 bytes where the stat itself holds ~500."""
    ns_c, ns_m, mask = st.st_ctime_ns, st.st_mtime_ns, 0xFFFFFFFF
    return INDEX_STAT.pack((ns_c // 1_000_000_000) & mask, ns_c % 1_000_000_000, (ns_m // 1_000_000_000) & mask,
                           ns_m % 1_000_000_000, st.st_dev & mask, st.st_ino & mask, BLOB_MODE, st.st_uid & mask,
                           st.st_gid & mask, st.st_size & mask)


def private_file(path: str) -> None:
    """Make the state folder's file `path` (SQLite's database: its journals take its mode) `PRIVATE_FILE`,
    or tighten one an earlier version made open to others."""
    os.close(open_plain(path, create=True))


def write_state(target: Path, data: bytes) -> None:
    """`write_file` for a file of the state folder: `PRIVATE_FILE`, its folder `private_folder`,
    its staging name `plain_staging` (a link there would take Secret data out of the folder)."""
    private_folder(target.parent)
    plain_staging(target)
    write_file(target, data, mode=PRIVATE_FILE)


def staging_of(target: Path) -> Path:
    """The sibling `write_file` writes before renaming it over `target`."""
    return target.with_name(f".{target.name}.ksgitops-tmp")


def plain_staging(target: Path) -> Path:
    """`staging_of(target)`, with what stands there that is not a plain file (a link, a FIFO) gone:
    a write would follow the link out of its folder, or wait forever on the FIFO."""
    staging = staging_of(target)
    try:
        if not stat.S_ISREG(os.lstat(staging).st_mode):
            os.unlink(staging)
    except FileNotFoundError:
        pass
    return staging


def write_file(target: Path, data: bytes, observe: bool = False, mode: int = 0o644) -> os.stat_result | None:
    """Replace one file atomically: written beside it, then renamed over it. A kill leaves the old
    file (and at worst the sibling `.NAME.ksgitops-tmp`, overwritten by the next write). With
    `observe`, its stat in place (the rename moved its ctime) when it is still the file as
    written (inode, size, mtime), else None: a write in between is never taken for this one's."""
    staging = staging_of(target)
    written = write_new(str(staging), data, observe, mode)
    os.replace(staging, target)
    if written is None:
        return None
    try:
        now = os.lstat(target)
    except OSError:
        return None
    as_written = (now.st_ino, now.st_size, now.st_mtime_ns) == (written.st_ino, written.st_size, written.st_mtime_ns)
    return now if as_written else None


def write_new(path: str, data: bytes, observe: bool = False, mode: int = 0o644) -> os.stat_result | None:
    """Create (or truncate) `path` holding `data`: plain os calls, the hot loop of a full write.
    With `observe`, the file's stat as written (taken before it is closed). A `mode` other than
    the generated files' is set on a file left there too."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        if mode != 0o644:
            os.fchmod(fd, mode)
        done = os.write(fd, data)
        if done < len(data):  # a short write (a full disk, a file size limit) continues or raises
            view = memoryview(data)[done:]
            while view:
                view = view[os.write(fd, view):]
        return os.fstat(fd) if observe else None
    except OSError as e:
        raise OSError(e.errno, e.strerror, path) from None  # os.write names no file
    finally:
        os.close(fd)
