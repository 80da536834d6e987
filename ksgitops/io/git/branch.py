"""Branches and the repository around a path: which branch a name means, whether it is checked
out, moving it (the work tree following in a checkout), the commit signature, the git directory."""
from __future__ import annotations

import os
from pathlib import Path

from ...model import GitError
from ..pygit import pygit2
from .discover import git_dir as git_dir  # where the use cases find it
from ..fs.durable import common_dir, moving_refs


def branch_ref(repo: pygit2.Repository, name: str) -> str | None:
    """The branch a --source names (HEAD -> its branch), or None for a sha or tag."""
    if name == "HEAD":
        if repo.head_is_detached or repo.head_is_unborn:
            return None
        return repo.head.name
    for candidate in (name, f"refs/heads/{name}"):
        if candidate.startswith("refs/heads/") and candidate in repo.references:
            return _resolved(repo, candidate)
    return None


def unborn_branch(repo: pygit2.Repository, name: str) -> str | None:
    """What a command that reads commits says when `name` (HEAD, or the branch HEAD names) has no
    commit yet, as in a repository just made by `git init`; None otherwise."""
    try:
        if not repo.head_is_unborn:
            return None
        target = str(repo.lookup_reference("HEAD").target)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    branch = target.removeprefix("refs/heads/")
    if name not in ("HEAD", branch, target):
        return None
    return (f"{name}: the branch {branch} has no commit yet, and this reads commits, not the work tree: commit "
            "the sources first (`git add -A && git commit`)")


def _resolved(repo: pygit2.Repository, name: str) -> str | None:
    """The branch a branch ref ends at when it is a symbolic one (refs/heads/main -> refs/heads/real):
    the one a commit moves, and the one HEAD names when it is checked out."""
    try:
        final = str(repo.references[name].resolve().name)
    except (KeyError, pygit2.GitError):
        return None
    return final if final.startswith("refs/heads/") else None


def checked_out_elsewhere(repo: pygit2.Repository, ref_name: str) -> str | None:
    """The work tree, other than `repo`'s own, that has `ref_name` checked out (the main work tree
    or a linked one, `git worktree add`), or None. git refuses to move such a branch: its work tree
    and index would be left behind it."""
    own = os.path.realpath(repo.path)
    common = common_dir(repo.path)
    heads: list[tuple[Path, str]] = []
    if os.path.realpath(common) != own:
        try:
            main = pygit2.Repository(str(common))
            if not main.is_bare:
                heads.append((common / "HEAD", str(main.workdir or common)))
        except pygit2.GitError:
            pass
    for name in repo.list_worktrees():
        folder = common / "worktrees" / name
        if os.path.realpath(folder) == own:
            continue
        try:
            where = str(repo.lookup_worktree(name).path)
        except pygit2.GitError:
            where = str(folder)
        heads.append((folder / "HEAD", where))
    for head, where in heads:
        try:
            text = head.read_text().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.startswith("ref: ") and (_resolved(repo, text[5:]) or text[5:]) == ref_name:
            return where
    return None

def is_checked_out(repo: pygit2.Repository, ref_name: str) -> bool:
    return not repo.is_bare and not repo.head_is_detached and not repo.head_is_unborn \
        and repo.head.name == ref_name

def signature(name: str, email: str) -> pygit2.Signature:
    return pygit2.Signature(name, email)


def move_branch(repo: pygit2.Repository, ref: str, target: pygit2.Oid) -> None:
    """Put a branch on `target`. In a checkout of that branch, the work tree and index follow, and
    uncommitted changes to tracked files stop it (they would be lost)."""
    with moving_refs(repo.path, ref):
        if not is_checked_out(repo, ref):
            repo.references.create(ref, target, force=True)
            return
        dirty = [p for p, flags in repo.status(untracked_files="no").items()
                 if flags not in (pygit2.GIT_STATUS_CURRENT, pygit2.GIT_STATUS_IGNORED)]
        if dirty:
            raise GitError(f"the remote moved and the work tree has uncommitted changes "
                           f"({', '.join(sorted(dirty)[:3])}); commit or stash them and run again")
        repo.reset(target, pygit2.enums.ResetMode.HARD)
