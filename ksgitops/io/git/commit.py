"""Committing generated files: objects first, then the commit, then the branch, and only then a
checkout following it (checkout.py), so a failure before the branch moves changes nothing."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from msgspec import Struct

from ..pygit import pygit2

from ...core.tree import REUSE, Generated
from ...lazy import lazy_module
from ...model import EnvError, GitError
from ..fs.durable import libgit2_fsync, moving_refs, os_reason
from .repo import TreeIndex, TreeWriter, changed_roots, tree_at

if TYPE_CHECKING:
    from . import checkout as checkouts
else:  # the checkout's room: a bare repository's commit never enters it
    checkouts = lazy_module("ksgitops.io.git.checkout")


class CommitResult(Struct, frozen=True):
    commit: str | None  # None: the tree did not change, nothing was committed
    tree: pygit2.Oid
    old_tree: pygit2.Oid
    roots: tuple[str, ...] = ()  # the generated roots the commit changed (computed for a checkout or a message)


def commit_generated(repo: pygit2.Repository, ref_name: str, source: pygit2.Commit, generated: Generated,
                     author: pygit2.Signature, message: str | Callable[[list[str]], str],
                     writer: TreeWriter | None = None, checkout: bool = False) -> CommitResult:
    """Commit `generated` on top of `source` and move `ref_name` (which must still be `source`).
    `message` may be a function of the generated roots the commit changes.

    With `checkout`, the work tree and index follow the changed generated roots after the ref
    moved (checkout.py); links on their way are refused before anything is written."""
    writer = writer or TreeWriter(repo)
    try:
        tree = writer.apply(source.tree, generated)  # the pack and its index, fsynced
    except OSError as e:
        raise EnvError(str(e.filename or repo.path), f"cannot write the new objects: {os_reason(e)}") from None
    if tree == source.tree.id:
        return CommitResult(None, tree, source.tree.id)
    planned, roots = None, []
    if checkout or callable(message):
        rewritten = [root for root, content in generated.items() if content is not REUSE]  # REUSE: the old subtree
        roots = changed_roots(TreeIndex(repo, source.tree), TreeIndex(repo, tree_at(repo, tree)), rewritten)
        if callable(message):
            message = message(roots)
        if checkout:
            planned = checkouts.plan(repo, source.tree, tree_at(repo, tree), roots, generated)
    with libgit2_fsync(), moving_refs(repo.path, ref_name):  # a concurrent recovery waits for this commit and checkout
        try:
            oid = repo.create_commit(None, author, author, message, tree, [source.id])
            _check_unmoved(repo, ref_name, source)
            if planned is not None:
                checkouts.begin(repo, ref_name, oid, planned)
            repo.references[ref_name].resolve().set_target(oid, f"ksgitops: reconcile {str(source.id)[:12]}")
        except pygit2.GitError as e:
            raise GitError(f"{ref_name}: the commit could not be written ({e}); nothing was changed") from None
        except OSError as e:
            raise EnvError(str(e.filename or repo.path), f"{os_reason(e)}; nothing was changed") from None
        if planned is not None:
            checkouts.follow(repo, planned, generated, str(oid))
    return CommitResult(str(oid), tree, source.tree.id, tuple(roots))


def _check_unmoved(repo: pygit2.Repository, ref_name: str, source: pygit2.Commit) -> None:
    ref = repo.references.get(ref_name)
    if ref is None or ref.resolve().target != source.id:
        raise GitError(f"{ref_name} moved while reconciling; nothing was committed (run again)")
