"""Branches and the repository around a path: which branch a name means, whether it is checked
out, moving it (the work tree following in a checkout), the commit signature, the git directory."""
from __future__ import annotations

from ...model import GitError
from ..pygit import pygit2
from .discover import git_dir as git_dir  # where the use cases find it
from ..fs.durable import moving_refs


def branch_ref(repo: pygit2.Repository, name: str) -> str | None:
    """The branch a --source names (HEAD -> its branch), or None for a sha or tag."""
    if name == "HEAD":
        if repo.head_is_detached or repo.head_is_unborn:
            return None
        return repo.head.name
    for candidate in (name, f"refs/heads/{name}"):
        if candidate.startswith("refs/heads/") and candidate in repo.references:
            return candidate
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
