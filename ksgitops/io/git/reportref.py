"""The git side of the `sync` agent: fetch the mailbox's branch, commit reports, push to the agent's ref.

The agent keeps a bare cache repository (pygit2) per source: a local path or a URL, fetched every
cycle into `refs/remotes/origin/*`. Reports are committed there on
`refs/heads/ksgitops/reported/<mailbox>` and pushed to the same ref of the source, never to the
branch (so thousands of WECs never contend for one ref), never forced.

A report commit's tree holds `spaces/<mailbox>/reported` and `spaces/<mailbox>/upsynced` and
nothing else, so the fold-in can see at a glance that it stays inside its mailbox (and rejects it
otherwise). Its parent is the ref's previous commit (the history of the ref is a plain fast-forward
chain); the first commit's parent is the branch head it was built on. Each message carries
`Ksgitops-Source: <branch head>` and `Ksgitops-Mailbox: <mailbox>` trailers.

Intermittent connectivity: a failed fetch keeps the last fetched head; a failed push keeps the
commit on the local ref and the next cycle pushes it (or, when the remote ref moved meanwhile,
rebuilds the reports on top of the remote's commit: reports are state, recomputed every cycle).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path
from typing import Any

from msgspec import Struct

from ..pygit import pygit2

from ...core.load.repoconfig import MAILBOX_TRAILER, SOURCE_TRAILER
from ...core.tree import FileTree
from ..fs.durable import libgit2_fsync, moving_refs
from .repo import TreeIndex, TreeSnapshot, TreeWriter, consolidate_packs, objects_dir
from .pack import KINDS, write_pack
from .remote import Credentials, is_url, scrub

REPORT_REF_PREFIX = "refs/heads/ksgitops/reported/"


def report_ref(mailbox: str) -> str:
    return f"{REPORT_REF_PREFIX}{mailbox}"


def default_cache_dir() -> Path:
    base = os.environ.get("KSGITOPS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ksgitops")
    return Path(base) / "sync"


def source_url(repo: str) -> str:
    """A local path becomes absolute (so the cache does not depend on the working directory)."""
    if is_url(repo):
        return repo
    return str(Path(repo).resolve())


class Committed(Struct):
    commit: str | None  # the new report commit, None when the reports did not change
    pending: bool  # the local ref is ahead of the remote's: a push is due


class MailboxRepo:
    """The cache repository of one agent (one source URL, one branch, one mailbox)."""

    def __init__(self, url: str, branch: str, mailbox: str, cache_dir: Path) -> None:
        self.url = source_url(url)
        self.branch = branch
        self.mailbox = mailbox
        self.ref = report_ref(mailbox)
        self.tracking_branch = f"refs/remotes/origin/{branch}"
        self.tracking_ref = f"refs/remotes/origin/ksgitops/reported/{mailbox}"
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", self.url.rstrip("/").rsplit("/", 1)[-1])[:40] or "repo"
        digest = hashlib.sha256(self.url.encode()).hexdigest()[:12]
        self.repo = open_cache(Path(cache_dir) / f"{slug}-{digest}.git")

    # --- fetch

    def fetch(self) -> str | None:
        """Fetch the branch and the report ref; an error message (one safe line) or None."""
        remote = self.repo.remotes.create_anonymous(self.url)
        specs = [f"+refs/heads/{self.branch}:{self.tracking_branch}", f"+{self.ref}:{self.tracking_ref}"]
        try:
            moved = (self.tracking_branch, self.tracking_ref, "FETCH_HEAD", "shallow", "packed-refs")
            with libgit2_fsync(), moving_refs(self.repo.path, *moved):  # the fetched pack on disk before refs name it
                remote.fetch(specs, prune=pygit2.enums.FetchPrune.PRUNE, callbacks=Credentials())
        except (pygit2.GitError, OSError, ValueError) as e:
            return f"fetch {scrub(self.url)}: {scrub(str(e))}"
        if self.tracking_branch not in self.repo.references:
            return f"fetch {scrub(self.url)}: no branch {self.branch!r}"
        return None

    def head(self) -> pygit2.Commit | None:
        """The last fetched head of the branch (None before the first successful fetch)."""
        ref = self.repo.references.get(self.tracking_branch)
        return self.repo[ref.target].peel(pygit2.Commit) if ref is not None else None

    def mailbox_files(self, commit: pygit2.Commit) -> FileTree | None:
        return TreeSnapshot(self.repo, commit.tree).read_tree(f"spaces/{self.mailbox}")

    def files_at(self, commit: str) -> FileTree | None:
        """The mailbox as it was in an earlier commit (None when the cache does not hold it)."""
        try:
            found = self.repo.get(commit)
            return self.mailbox_files(found.peel(pygit2.Commit)) if found is not None else None
        except (ValueError, pygit2.GitError):
            return None

    # --- commit

    def _target(self, name: str) -> pygit2.Oid | None:
        ref = self.repo.references.get(name)
        target = ref.resolve().target if ref is not None else None
        return target if isinstance(target, pygit2.Oid) else None

    def base(self) -> pygit2.Commit | None:
        """The commit the next report commit goes on: the local ref, unless the remote's ref is not
        one of its ancestors (another agent instance pushed, or ours was never pushed and the remote
        moved): then the remote's, and the local ref is reset to it."""
        local, remote = self._target(self.ref), self._target(self.tracking_ref)
        if remote is not None and (local is None or (local != remote and not self.repo.descendant_of(local, remote))):
            _set_ref(self.repo, self.ref, remote)
            local = remote
        return self.repo[local].peel(pygit2.Commit) if local is not None else None

    def previous(self, head: pygit2.Commit, folder: str) -> FileTree | None:
        """`spaces/<mailbox>/<folder>` as last reported: on the ref, else in the branch head."""
        base = self.base()
        commit = base if base is not None else head
        return TreeSnapshot(self.repo, commit.tree).read_tree(f"spaces/{self.mailbox}/{folder}")

    def commit(self, head: pygit2.Commit, reported: FileTree | None, upsynced: FileTree | None,
               author: pygit2.Signature) -> Committed:
        """Commit the reports on top of `head`'s tree, unless they are what the ref (or, with no ref
        yet, the head) already holds."""
        base = self.base()
        root = f"spaces/{self.mailbox}"
        generated: dict[str, Any] = {f"{root}/reported": reported or None, f"{root}/upsynced": upsynced or None}
        tree = TreeWriter(self.repo).apply(None, generated)  # the mailbox's two folders, nothing else
        new = TreeIndex(self.repo, self.repo[tree].peel(pygit2.Tree))
        old = TreeIndex(self.repo, (base if base is not None else head).tree)
        if all(new.entry_id(path) == old.entry_id(path) for path in generated):
            return Committed(None, self.pending())
        message = (f"ksgitops sync: reported state of {self.mailbox} [skip ci]\n\n"
                   f"{SOURCE_TRAILER}: {head.id}\n{MAILBOX_TRAILER}: {self.mailbox}\n")
        parent = base if base is not None else head
        with libgit2_fsync():  # the commit on disk before the ref names it (the pack is fsynced already)
            oid = self.repo.create_commit(None, author, author, message, tree, [parent.id])
            _set_ref(self.repo, self.ref, oid)
        consolidate_packs(self.repo)  # a pack per report commit: keep their number bounded
        return Committed(str(oid), True)

    # --- push

    def pending(self) -> bool:
        local = self._target(self.ref)
        return local is not None and local != self._target(self.tracking_ref)

    def push(self) -> str | None:
        """Push the local ref (never forced); an error message or None. The remote-tracking ref
        follows on success."""
        local = self._target(self.ref)
        if local is None:
            return None
        callbacks = Credentials()  # from the environment (remote.py), never logged; records refusals
        rejected = callbacks.rejected
        try:
            if not is_url(self.url):
                rejected.extend(self._push_local(local))
            else:
                remote = self.repo.remotes.create_anonymous(self.url)
                remote.push([f"{self.ref}:{self.ref}"], callbacks=callbacks)
        except (pygit2.GitError, OSError, ValueError, KeyError) as e:
            return f"push {scrub(self.url)}: {scrub(str(e))}"
        if rejected:
            return f"push {scrub(self.url)}: rejected {scrub('; '.join(rejected))}"
        _set_ref(self.repo, self.tracking_ref, local)
        return None

    def _push_local(self, local: pygit2.Oid) -> list[str]:
        """A push into a repository on this machine (libgit2's local transport cannot push into a
        non-bare one): copy the missing objects as one pack, then move the ref if that is a fast
        forward. Returns rejection messages."""
        dest = pygit2.Repository(self.url)  # the repository itself (bare, or a work tree's .git)
        theirs = dest.references.get(self.ref)
        if theirs is not None and theirs.target != local and (
                theirs.target not in self.repo.odb or not self.repo.descendant_of(local, theirs.target)):
            return [f"{self.ref}: non-fast-forward"]
        objects: dict[bytes, tuple[bytes, bytes]] = {}
        self._missing(dest, local, objects)
        write_pack(objects_dir(dest), objects)  # fsynced before the ref below names it
        current = dest.references.get(self.ref)
        if (current.target if current is not None else None) != (theirs.target if theirs is not None else None):
            return [f"{self.ref}: moved during the push"]
        with libgit2_fsync():
            _set_ref(dest, self.ref, local)
        return []

    def _missing(self, dest: pygit2.Repository, oid: pygit2.Oid, out: dict[bytes, tuple[bytes, bytes]]) -> None:
        """Objects reachable from `oid` that `dest` lacks (a subtree it has is not entered)."""
        stack = [oid]
        while stack:
            current = stack.pop()
            if current.raw in out or current in dest.odb:
                continue
            kind, data = self.repo.odb.read(current)
            out[current.raw] = (KINDS[int(kind)], data)
            obj = self.repo[current]
            if isinstance(obj, pygit2.Commit):
                stack.append(obj.tree_id)
                stack.extend(obj.parent_ids)
            elif isinstance(obj, pygit2.Tree):
                stack.extend(entry.id for entry in obj if entry.type in (pygit2.GIT_OBJECT_TREE, pygit2.GIT_OBJECT_BLOB))

    def local_commit(self) -> str | None:
        target = self._target(self.ref)
        return str(target) if target is not None else None


def _set_ref(repo: pygit2.Repository, ref: str, target: pygit2.Oid) -> None:
    """Move `ref`; a lock file a killed ksgitops left on it is cleared first (durable.moving_refs)."""
    with moving_refs(repo.path, ref):
        repo.references.create(ref, target, force=True)


def open_cache(path: Path) -> pygit2.Repository:
    """The agent's bare cache repository at `path`, made whole or not at all: it is initialised
    beside its place and renamed in, so a kill never leaves half a repository there. One that
    cannot be opened (a power loss in the middle of a fetch) is made afresh: it only caches what
    the source has, and unpushed reports are recomputed every cycle."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if (path / "HEAD").is_file():
        try:
            return pygit2.Repository(str(path))  # never discover upwards from a cache folder
        except pygit2.GitError:
            shutil.rmtree(path)
    elif path.exists():
        shutil.rmtree(path)
    staging = path.with_name(f".{path.name}.ksgitops-new")
    shutil.rmtree(staging, ignore_errors=True)
    pygit2.init_repository(str(staging), bare=True)
    os.rename(staging, path)
    return pygit2.Repository(str(path))


__all__ = ["MailboxRepo", "open_cache", "Committed", "report_ref", "default_cache_dir", "REPORT_REF_PREFIX"]
