"""What a repository's memos (cache.py) vouch for of a mailbox kept whole while its WEC or a
workload space is frozen, so that `reconcile --commit` and `run` read it only when it may hold a
file that does not read (core/pipeline.py, `vouched`); io/fs/keptwhole.py is the work tree's.

Reconcile reads a mailbox kept whole for its `objects/` and `patches/` only, so they are what is
vouched for, by their tree ids: a report a WEC's transport pushes into `reported/` (every cycle,
in a live fleet) leaves a mailbox vouched for. A mailbox is vouched for when those are as in the
tree the last run without problems filed for it (cache.mailboxes), or as a run that kept it whole
read them, or knew them, with nothing found (`note_kept_clean`).
"""
from __future__ import annotations

from typing import Any, Callable

from ..pygit import pygit2
from .repo import TreeIndex, tree_at

KEPT_CLEAN = "kept-whole-clean"  # cache content: (it, objects/ id, patches/ id) -> no file there fails to read


def kept_key(tree: Any, at: str) -> tuple[str, ...]:
    """The key of what reconcile reads of a mailbox kept whole: objects/ and patches/ in the folder
    `at` of `tree` (a TreeIndex; "" in the mailbox's own tree)."""
    return (KEPT_CLEAN, *(tree.entry_id(f"{at}{part}") for part in ("objects", "patches")))


def vouched_filed(repo: pygit2.Repository, base: TreeIndex, cache: Any) -> Callable[[str], bool]:
    """Whether a mailbox of the tree behind `base` holds no file that does not read, as `cache`
    (a DiskCache) knows."""
    def vouched(mailbox: str) -> bool:
        tree_id, cached = base.entry_id(f"spaces/{mailbox}"), cache.mailboxes.get(mailbox)
        if cached is not None and cached[1] == tree_id:
            return True
        key = kept_key(base, f"spaces/{mailbox}/")
        return bool(cache.content.get(key, False)) or cached is not None and _filed(repo, cached[1]) == key
    return vouched


def _filed(repo: pygit2.Repository, tree_id: str) -> tuple[str, ...] | None:
    """kept_key of a mailbox tree a run filed as clean (None: that tree is gone)."""
    try:
        return kept_key(TreeIndex(repo, tree_at(repo, tree_id)), "")
    except (KeyError, ValueError):
        return None


def note_kept_clean(result: Any, tree: TreeIndex, content: Any) -> None:
    """Each mailbox kept whole in which the run (a core.pipeline.Result) found no file that does not
    read (it read it, or knew it as written; not one it left unread), filed by kept_key over the
    tree it committed (or found unchanged)."""
    troubled, unread = {mb for p in result.problems for mb in p.mailboxes}, set(result.unread_whole)
    for mb in result.frozen.kept_whole():
        if mb not in troubled and mb not in unread and mb in result.loaded.mailboxes:
            content[kept_key(tree, f"spaces/{mb}/")] = True
