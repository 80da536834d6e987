"""A checkout's last step: what it wrote on disk before its journal goes (checkout.py).

A few files are fsynced one by one, with the folders on their way, before the journal is removed.
Many files call for a sync of the whole file system, which waits for the disk (~3 s after a first
write of 200,000 files here): when the command leaves work until it has answered
(io/fs/afterwards.py), the sync is left until then. Meanwhile the journal stays, with a marker
beside it naming its commit and this boot of the system; the files are in the page cache, which a
killed process does not lose. So:

- the sync done after the answer, the journal and its marker go (the next command waits for it
  to be done, as for memos, and finds nothing to finish);
- the process that was to sync killed, the next command finds the marker of this boot: it syncs
  and removes the journal, nothing more;
- a power loss before the sync: the marker names another boot, and the next command finishes
  the checkout as after any interruption (every file written again as needed, the index too).

Whoever removes a marker syncs first (`sync_if_owed`): the child, a recovery, a new journal. The
marker itself needs no fsync: a marker lost with the power names no boot, which is what a marker
of another boot means.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..fs import afterwards
from ..fs.durable import exclusive, fsync_dir, fsync_file, sync_filesystem
from ..fs.paths import STATE_DIR, open_plain, write_state

FSYNC_AT_MOST = 256  # files and folders a checkout fsyncs one by one; more: the file system synced
JOURNAL, MARKER = "checkout.json", "checkout.written"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
READ_AT_MOST = 1 << 20  # bytes of a journal or marker read (a few hundred, or a journal's steps)


class Written:
    """What a file-by-file checkout changed on disk, made durable before the journal goes: each
    file written and each folder on the way to a name made or removed, fsynced one by one (a sync
    of the whole file system would also wait for every other dirty page on it, a fresh clone's
    included); past FSYNC_AT_MOST of them, the file system synced."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.files: list[Path] = []
        self.folders: set[Path] = set()

    def file(self, path: Path) -> None:
        self.files.append(path)
        self.name(path)

    def name(self, path: Path) -> None:
        """A name made or removed at `path`: its folder and the folders up to the work tree."""
        folder = path.parent
        while folder not in self.folders and folder.is_relative_to(self.workdir):
            self.folders.add(folder)
            folder = folder.parent

    def make_durable(self) -> bool:
        """Each file and folder fsynced (a few), else the file system synced unless that is left
        until the answer (`synced_unless_deferred`): False then. Anything unexpected on the way (a
        file a later step removed, one whose mode will not let this process open it) counts as many."""
        if len(self.files) + len(self.folders) <= FSYNC_AT_MOST:
            try:
                for path in self.files:
                    fsync_file(path)
                for folder in sorted(self.folders, key=lambda f: -len(f.parts)):  # a folder before its parent
                    if folder.is_dir():  # not one pruned as it emptied
                        fsync_dir(folder)
                return True
            except OSError:
                pass
        return synced_unless_deferred(self.workdir)


def synced_unless_deferred(workdir: Path) -> bool:
    """The file system synced now (True), or not when the sync can be left until the command has
    answered (False)."""
    if afterwards.deferring() and boot_id() is not None:
        return False
    sync_filesystem(workdir)
    return True


def journal_done(git_dir: str, workdir: Path, commit: str, on_disk: bool) -> None:
    """The checkout of `commit` is written (files and index): its journal goes. `on_disk`: the
    files are synced already; else (synced_unless_deferred said so) the journal stays, marked as
    written in this boot, until the sync is done once the command has answered."""
    state = Path(git_dir) / STATE_DIR
    if not on_disk:
        try:
            write_state(state / MARKER, json.dumps({"commit": commit, "boot": boot_id()}).encode())
            afterwards.later(state, lambda: _settle_later(git_dir, workdir, commit))
            return
        except OSError:  # a full disk: synced now, as without a command that answers first
            sync_filesystem(workdir)
    fsync_dir(git_dir)  # git fsyncs the index it writes; its rename into place is the folder's
    _drop(state)


def written_in_this_boot(git_dir: str, commit: str) -> bool:
    """The journal's checkout of `commit` was written whole in this boot of the system, its sync
    left for later (a kill before it was done: the files are in the page cache)."""
    boot = boot_id()
    return boot is not None and _read(git_dir, MARKER) == {"commit": commit, "boot": boot}


def settle(git_dir: str, workdir: Path) -> None:
    """A journal that needs no finishing (written whole in this boot, or one whose branch or work
    tree is elsewhere now), for a recovery or the child after the answer holding the repository's
    lock: the sync its marker says is owed, if any, then the journal gone."""
    sync_if_owed(git_dir, workdir)
    (Path(git_dir) / STATE_DIR / JOURNAL).unlink(missing_ok=True)


def sync_if_owed(git_dir: str, workdir: Path) -> None:
    """No marker left, and the sync it said was owed done before it went (also before a new
    journal replaces the one a marker stood beside)."""
    marker = Path(git_dir) / STATE_DIR / MARKER
    if os.path.lexists(marker):
        sync_filesystem(workdir)
        fsync_dir(git_dir)  # the index's rename, when the git directory is on another file system
        marker.unlink(missing_ok=True)


def _settle_later(git_dir: str, workdir: Path, commit: str) -> None:
    """After the answer, unless another ksgitops process holds the repository's lock (whoever
    removes the marker syncs): while the marker is still this checkout's, the sync, then the
    journal gone. (A marker of this commit stands beside this checkout's journal: a new journal
    goes only where no marker is; the check of the journal's commit is a second guard.)"""
    with exclusive(git_dir, wait=False) as held:
        if held and _commit_in(git_dir, MARKER) == commit:
            if _commit_in(git_dir, JOURNAL) == commit:
                settle(git_dir, workdir)
            else:
                sync_if_owed(git_dir, workdir)


def _commit_in(git_dir: str, name: str) -> Any:
    """The commit the journal or the marker names (None: there is none, or it is unreadable)."""
    found = _read(git_dir, name)
    return found.get("commit") if isinstance(found, dict) else None


def _read(git_dir: str, name: str) -> Any:
    """The JSON a state file holds, read as a plain file only (never through a link, never waiting
    on a FIFO); None when it is absent or unreadable."""
    try:
        fd = open_plain(str(Path(git_dir) / STATE_DIR / name))
    except OSError:
        return None
    try:
        return json.loads(os.read(fd, READ_AT_MOST))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _drop(state: Path) -> None:
    (state / JOURNAL).unlink(missing_ok=True)
    (state / MARKER).unlink(missing_ok=True)


def boot_id() -> str | None:
    """This boot of the system (Linux; None elsewhere: the sync is then never left for later)."""
    try:
        with open(BOOT_ID, encoding="ascii") as f:
            return f.read().strip() or None
    except (OSError, ValueError):
        return None
