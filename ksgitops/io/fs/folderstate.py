"""Which part of a git directory's state folder belongs to one ksgitops folder.

`<git dir>/ksgitops-state/` holds what every ksgitops folder of the repository shares: what is
keyed by content (the blob-id cache), what is about commits (their records and status memos, the
checkout journal, the ref intent), `memos.lock` and the `clock` probe. What describes one folder
of the work tree — its stat record, its work-tree status memo, its monitor's lock, socket, plan
and log — is that folder's own, so that two ksgitops folders of one repository (a monorepo's
`infra/staging/` and `infra/prod/`) do not overwrite each other's:

- the folder at the top of the work tree (and a bare repository) keeps it in the state folder
  itself, where ksgitops always kept it;
- a folder below the top keeps it in `ksgitops-state/folders/<slug>-<digest>/`, named from its
  path relative to the top: the digest of that path tells folders apart, the slug tells a person.

The top is found as git finds it: the nearest folder at or above the ksgitops folder holding a
`.git` entry (a work tree set up only through GIT_DIR or core.worktree has none: its folders
share the top's state, as before). This module is loaded by every command before deciding on a
hand-off (handoff.py), so it imports nothing beyond `os` until a folder's state folder is made.

A folder's own state folder names its folder in a file (`OWNER`). When one is made (`settle`), the
state of folders that are gone is removed: a sub-folder whose folder no longer holds `spaces/` (it
was renamed or deleted), and the top's own work-tree files when the top holds no `spaces/` (an
older ksgitops kept a nested folder's there). Only caches go, and only what is known to be a gone
folder's: a sub-folder a monitor still holds stays, and so does one naming no folder, unless its
name spells its path whole (an older version named none; a short, plain path: `_unmarked`). Every
command that makes a folder's own state folder goes through `make_own`, so it names its folder.
`OWNER` is read only as a regular file, never through a link.
"""
from __future__ import annotations

import os
import stat

STATE = "ksgitops-state"  # as io/fs/paths.STATE_DIR (not imported: it would load pathlib)
FOLDERS = "folders"
SLUG = 40  # characters of the path kept in a folder's name
OWNER = "folder"  # in a folder's own state folder: its path from the top
MONITOR_LOCK = "monitor.lock"  # in its folder's state folder: held by the monitor for its life (feed.py)
# The state folder's files and folders are the owner's alone: caches, records, plans and memos hold
# what the sources hold, Secret data included (the generated files themselves are the repository's)
PRIVATE_FILE, PRIVATE_FOLDER = 0o600, 0o700
TOP_FILES = ("worktree.pickle", "status-worktree.sqlite", "status-worktree.sqlite-journal")  # a work tree folder's own


def relative(folder: str | os.PathLike[str]) -> str:
    """The path of `folder` from the top of the git work tree holding it, '/'-separated ("": it
    is the top, a bare repository, or in no work tree)."""
    real = os.path.realpath(folder)
    here = real
    while True:
        if os.path.lexists(os.path.join(here, ".git")) or is_git_dir(here):
            return "" if here == real else os.path.relpath(real, here).replace(os.sep, "/")
        parent = os.path.dirname(here)
        if parent == here:
            return ""
        here = parent


def is_git_dir(folder: str) -> bool:
    """`folder` is a git directory (a bare repository, or a work tree's `.git`), as git tells one."""
    return os.path.isfile(os.path.join(folder, "HEAD")) and os.path.isdir(os.path.join(folder, "objects"))


def name_of(rel: str) -> str:
    """The state sub-folder's name for the folder at `rel` below the top: a readable slug and a
    digest of the exact path (bytes), so two paths never share one."""
    import hashlib
    slug = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "+" if c == "/" else "_" for c in rel)
    return f"{slug[:SLUG].lstrip('.') or '_'}-{hashlib.sha256(os.fsencode(rel)).hexdigest()[:16]}"


def place_of(folder: str | os.PathLike[str]) -> str:
    """The state folder of the ksgitops folder `folder`, relative to its git directory."""
    rel = relative(folder)
    return f"{STATE}/{FOLDERS}/{name_of(rel)}" if rel else STATE


def shared(own: str | os.PathLike[str]) -> str:
    """The repository's state folder, given a folder's own (`place_of` below a git directory)."""
    own = os.fspath(own)
    up = os.path.dirname(own)
    if os.path.basename(up) == FOLDERS and os.path.basename(os.path.dirname(up)) == STATE:
        return os.path.dirname(up)
    return own


def private_folder(path: str | os.PathLike[str]) -> None:
    """Make a state folder (and its missing parents) `PRIVATE_FOLDER`, or tighten one an earlier
    version made open to others (one it does not own stays as it is)."""
    name = os.fspath(path)
    try:
        os.mkdir(name, PRIVATE_FOLDER)
        return
    except FileNotFoundError:
        private_folder(os.path.dirname(name))
        try:
            os.mkdir(name, PRIVATE_FOLDER)
            return
        except FileExistsError:  # another process made it meanwhile
            pass
    except FileExistsError:
        pass
    st = os.lstat(name)
    if stat.S_ISDIR(st.st_mode) and too_open(st):
        os.chmod(name, stat.S_IMODE(st.st_mode) & ~0o077)
    if stat.S_ISDIR(st.st_mode):
        tidy(name)


TMP = ".ksgitops-tmp"  # `.NAME.ksgitops-tmp`: a file being written beside NAME, renamed over it (paths.write_file)
STALE_TMP = 3600.0  # seconds: no write of a state file takes that long, so its staging file was left by a kill
RETIDY = 60.0  # seconds before a long-lived process (a monitor) looks at a folder again
_tidied: dict[str, float] = {}


def tidy(folder: str) -> None:
    """What a process killed while writing a state file left in the state folder `folder` (a
    `.NAME.ksgitops-tmp`, holding what the file holds, Secret data included): tightened to
    `PRIVATE_FILE` when an earlier version left it open to others, removed once it is `STALE_TMP`
    old (a live writer's is younger: its rename follows its write at once). Only plain files of
    that name that this user owns are touched, never through a link; once a minute per process."""
    import time
    parent = os.path.dirname(folder)
    if not (os.path.basename(folder) == STATE or (os.path.basename(parent) == FOLDERS
                                                   and os.path.basename(os.path.dirname(parent)) == STATE)):
        return
    now = time.monotonic()
    if now - _tidied.get(folder, -RETIDY) < RETIDY:
        return
    _tidied[folder] = now
    try:
        entries = [e.name for e in os.scandir(folder) if e.name.startswith(".") and e.name.endswith(TMP)]
    except OSError:
        return
    for name in entries:
        try:
            _tidy_one(os.path.join(folder, name), time.time())
        except OSError:
            pass  # tidying is only for privacy and space: the next command tries again


def _tidy_one(path: str, now: float) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return
        if too_open(st):
            os.fchmod(fd, PRIVATE_FILE)
        if now - st.st_mtime > STALE_TMP and os.path.samestat(st, os.lstat(path)):
            os.unlink(path)
    finally:
        os.close(fd)


def too_open(st: os.stat_result) -> bool:
    """Whether a state file or folder (an earlier version's) is open to others, and ours to tighten."""
    return bool(st.st_mode & 0o077) and st.st_uid == os.geteuid()


def make_own(own: str, folder: str) -> None:
    """Make the state folder `own` of the ksgitops folder `folder`; the first time a folder below
    the top uses it, `settle` it."""
    private_folder(own)
    if own != shared(own) and not os.path.exists(os.path.join(own, OWNER)):
        try:
            settle(own, folder)
        except OSError:
            pass  # tidying is only for space: the next folder made tries again


def settle(own: str, folder: str) -> None:
    """After the state folder `own` of the ksgitops folder `folder` was made below the top: name
    its folder in it, and remove the state of folders that are gone (the module's docstring)."""
    rel = relative(folder)
    if not rel:
        return
    _write(os.path.join(own, OWNER), rel)
    top = os.path.realpath(folder)[: -len(rel)].rstrip("/") or "/"
    state = shared(own)
    folders = os.path.join(state, FOLDERS)
    if os.path.islink(folders) or os.path.islink(state):
        return
    for name in sorted(os.listdir(folders)):
        path = os.path.join(folders, name)
        if path != own and not _in_use(path, top):
            _remove(path)
    if not os.path.isdir(os.path.join(top, "spaces")) and not _monitored(state):
        for name in TOP_FILES:
            try:
                os.unlink(os.path.join(state, name))
            except FileNotFoundError:
                pass


def _in_use(path: str, top: str) -> bool:
    try:
        rel = _owner(path)
    except FileNotFoundError:
        spelt = _unmarked(os.path.basename(path))  # an older version named no folder in it
        if spelt is None:
            return True  # whose it is cannot be told: not ours to judge
        rel = spelt
    except (OSError, UnicodeDecodeError):
        return True  # not ours to judge (a link, no regular file)
    if not rel or os.path.isabs(rel) or ".." in rel.split("/") or name_of(rel) != os.path.basename(path):
        return True
    return os.path.isdir(os.path.join(top, rel, "spaces")) or _monitored(path)


def _owner(path: str) -> str:
    """The folder that the state sub-folder `path` names (OWNER: a regular file, never through a link)."""
    fd = os.open(os.path.join(path, OWNER), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{OWNER}: no regular file")
        return os.read(fd, 4 * 4096).decode()
    finally:
        os.close(fd)


def _unmarked(name: str) -> str | None:
    """The folder whose state sub-folder is `name`, when its name alone tells (an older version
    named none in it): a path of letters, digits, `.`, `-` and `/` short enough to keep whole."""
    slug, _, _ = name.rpartition("-")
    rel = slug.replace("+", "/")
    return rel if slug and name_of(rel) == name else None


def _monitored(place: str) -> bool:
    """A monitor holds the lock in the state folder `place` (taken by io/fs/feed.py)."""
    return held(os.path.join(place, MONITOR_LOCK))


def held(lock: str | os.PathLike[str]) -> bool:
    """Another open file holds an flock on the file `lock` (one that is not there: no; one that
    cannot be opened, a link: yes, not ours to judge). Never blocks, never takes it for long."""
    import fcntl
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    import shutil
    if not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
