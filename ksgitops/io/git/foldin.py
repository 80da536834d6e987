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


from msgspec import Struct, field

from ..pygit import pygit2

from ...core.load.repoconfig import MAILBOX_TRAILER, trailers
from ...core.tree import Generated, Subtree
from ...model import Origin, Problem
from ...names import dns1123_label_error
from .repo import TreeIndex
from .reportcheck import first_odd_entry, first_path_outside
from .reportref import REPORT_REF_PREFIX

PREFIXES = (REPORT_REF_PREFIX, REPORT_REF_PREFIX.replace("refs/heads/", "refs/remotes/origin/"))
FOLDERS = ("reported", "upsynced")


class FoldIn(Struct):
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
    outside = first_path_outside(repo, commit.tree.id, set(roots), f"spaces/{mailbox}/reported and upsynced")
    if outside:
        return f"report ref rejected: {outside}"
    for root in roots:  # found as the fold-in finds them
        entry, held = ref_index.get(root), head.get(root)
        odd = "" if entry is None else f"{root} is not a folder" if entry.type != pygit2.GIT_OBJECT_TREE \
            else first_odd_entry(repo, entry.id, f"{root}/", held.id if held is not None else None)
        if odd:
            return f"report ref rejected: {odd}; reports are plain files (mode 100644) under names git accepts"
    return ""
