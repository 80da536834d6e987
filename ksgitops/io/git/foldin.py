"""Fold-in (docs/REFERENCE.md, "Generated files"): per-WEC report refs -> the mailboxes' reported/ and upsynced/.

A `ksgitops sync` agent pushes its mailbox's reports to `refs/heads/ksgitops/reported/<mailbox>`
(a commit whose tree holds only `spaces/<mailbox>/reported` and `spaces/<mailbox>/upsynced`). The
fold-in takes exactly those two subtrees of each ref, by tree id (nothing is copied or parsed), for
that ref's own mailbox only, and only where they differ from the branch head: work in proportion
to the refs that changed.

A ref is rejected (a warning; its mailbox is left as it is) when its name is not a mailbox of the
head, its `Ksgitops-Mailbox` trailer names another mailbox, its tree holds anything outside its
own two folders (a WEC can never write outside its mailbox), or anything in them but folders and
plain files under names git accepts (a checkout could not bring a link, a gitlink or a `.git`
along as the tree says).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..pygit import pygit2

from ...core.load.repoconfig import MAILBOX_TRAILER, trailers
from ...core.tree import Generated, Subtree
from ...model import Origin, Problem
from ...names import dns1123_label_error
from .repo import TreeIndex
from .reportref import REPORT_REF_PREFIX

PREFIXES = (REPORT_REF_PREFIX, REPORT_REF_PREFIX.replace("refs/heads/", "refs/remotes/origin/"))
FOLDERS = ("reported", "upsynced")


@dataclass
class FoldIn:
    generated: Generated = field(default_factory=dict)
    folded: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def report_refs(repo: pygit2.Repository) -> dict[str, pygit2.Commit]:
    """mailbox -> the newest commit among its report refs (local branch or fetched)."""
    found: dict[str, pygit2.Commit] = {}
    for name in repo.references:
        prefix = next((p for p in PREFIXES if name.startswith(p)), None)
        if prefix is None:
            continue
        commit = repo.references[name].peel(pygit2.Commit)
        mailbox = name[len(prefix):]
        if mailbox not in found or commit.commit_time > found[mailbox].commit_time:
            found[mailbox] = commit
    return found


def plan(repo: pygit2.Repository, head: TreeIndex, mailboxes: set[str]) -> FoldIn:
    out = FoldIn()
    for mailbox, commit in sorted(report_refs(repo).items()):
        ref_index = TreeIndex(repo, commit.tree)
        roots = [f"spaces/{mailbox}/{folder}" for folder in FOLDERS]
        if mailbox in mailboxes and all(ref_index.entry_id(r) == head.entry_id(r) for r in roots):
            continue  # already folded in
        problem = _rejected(repo, mailbox, mailboxes, commit, roots, head, ref_index)
        if problem:
            out.problems.append(Problem(Origin(f"{PREFIXES[0]}{mailbox}"), problem, "warning"))
            continue
        for root in roots:
            tree_id = ref_index.entry_id(root)
            out.generated[root] = Subtree(tree_id) if tree_id else None
        out.folded.append(mailbox)
    return out


def _rejected(repo: pygit2.Repository, mailbox: str, mailboxes: set[str], commit: pygit2.Commit,
              roots: list[str], head: TreeIndex, ref_index: TreeIndex) -> str:
    error = dns1123_label_error(mailbox)
    if error:
        return f"report ref rejected: mailbox name {error}"
    if mailbox not in mailboxes:
        return f"report ref rejected: there is no mailbox {mailbox} (its SyncTarget is gone?)"
    named = trailers(commit.message).get(MAILBOX_TRAILER, mailbox)
    if named != mailbox:
        return f"report ref rejected: its commit is for mailbox {named}"
    outside = _first_path_outside(repo, commit.tree, "", set(roots), f"spaces/{mailbox}/reported and upsynced")
    if outside:
        return f"report ref rejected: {outside}"
    for root in roots:  # found as the fold-in finds them (a tree may name an entry twice: see _twice)
        entry, held = ref_index.get(root), head.get(root)
        odd = "" if entry is None else f"{root} is not a folder" if entry.type != pygit2.GIT_OBJECT_TREE \
            else _first_odd_entry(repo, entry.id, f"{root}/", held.id if held is not None else None)
        if odd:
            return f"report ref rejected: {odd}; reports are plain files (mode 100644) under names git accepts"
    return ""


def _first_odd_entry(repo: pygit2.Repository, tree_id: pygit2.Oid, prefix: str, held: pygit2.Oid | None) -> str:
    """What a checkout could not bring along as the tree says, below tree `tree_id` ('' when
    nothing): a link, a gitlink or an executable (written as plain files, they would show as
    changed), or a name git's own checks refuse (`.git`, `GIT~1`, ... : the index would lack it).
    A folder the branch head already holds (`held`: the id at the same place in the head) is not
    looked into again."""
    kept = repo[held] if held is not None else None
    same = {str(e.name): e.id for e in kept.peel(pygit2.Tree)} \
        if kept is not None and kept.type == pygit2.GIT_OBJECT_TREE else {}
    tree = repo[tree_id].peel(pygit2.Tree)
    twice = _twice(tree)
    if twice:
        return f"{prefix}{twice} is named twice in its folder"
    for entry in tree:
        path = f"{prefix}{entry.name}"
        if _refused(str(entry.name)):
            return f"{path} is a name git refuses"
        if _longer(path, PATH_AT_MOST):
            return f"{path} is too long a path"
        if entry.type == pygit2.GIT_OBJECT_TREE:
            before = same.get(str(entry.name))
            found = "" if before == entry.id else _first_odd_entry(repo, entry.id, f"{path}/", before)
            if found:
                return found
        elif entry.filemode != pygit2.GIT_FILEMODE_BLOB:
            return f"{path} is not a plain file (mode {entry.filemode:o})"
    return ""


HFS_IGNORED = dict.fromkeys(map(ord, "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                                       "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"))  # HFS+ drops them from names


PATH_AT_MOST = 1024  # bytes of a report's path in the repository (an honest one: ~600 at most)
NAME_AT_MOST = 255  # bytes of one name: the file system's limit


def _refused(name: str) -> bool:
    """A name git's checks refuse in a path (or libgit2's, with HFS+ and NTFS protection on), or
    one no folder can hold: `.` and `..` (the checkout would write outside the mailbox), a `/` or
    NUL (a hand-made tree object may hold one), `.git` and what HFS+ or NTFS read as it (any case,
    ignorable characters, `git~1`), a backslash, more than NAME_AT_MOST bytes."""
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name or _longer(name, NAME_AT_MOST):
        return True
    bare = (name if name.isascii() else name.translate(HFS_IGNORED)).lower()
    return bare.startswith(".git") or (bare.startswith("git~") and bare[4:].isdigit())


def _longer(text: str, at_most: int) -> bool:
    """More than `at_most` bytes in UTF-8 (at most 4 a character: most texts are not encoded)."""
    return len(text) * 4 > at_most and len(os.fsencode(text)) > at_most


def _twice(tree: pygit2.Tree) -> str:
    """A name the tree holds more than once ('' when none): git's tree reads find one entry, the
    fold-in's another, so what was checked need not be what is folded in."""
    seen: set[str] = set()
    for entry in tree:
        name = str(entry.name)
        if name in seen:
            return name
        seen.add(name)
    return ""


def _first_path_outside(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str, allowed: set[str], where: str) -> str:
    """What `tree` holds that is not below one of the `allowed` folders (`where`, in words), or
    names twice on the way to them ('' when nothing)."""
    twice = _twice(tree)
    if twice:
        return f"it names {prefix}{twice} twice in one folder"
    for entry in sorted(tree, key=lambda e: str(e.name)):
        path = f"{prefix}{entry.name}"
        if path in allowed:
            continue
        if entry.type != pygit2.GIT_OBJECT_TREE:
            return f"it holds {path}, outside {where}"
        found = _first_path_outside(repo, repo[entry.id].peel(pygit2.Tree), f"{path}/", allowed, where)
        if found:
            return found
    return ""
