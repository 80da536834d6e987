"""`ksgitops init`'s git: whether a folder already belongs to a repository, and a new repository
whose first commit holds everything in its folder (`git init`, then `git add -A && git commit`)."""
from __future__ import annotations

from pathlib import Path

from msgspec import Struct

from ..pygit import pygit2
from .discover import enclosing, git_dir
from ...model import GitError


def enclosing_repository(path: Path) -> str | None:
    """The work tree (a bare repository: its folder) of the git repository `path` is in, or None."""
    found = enclosing(path)
    return None if found is None else str(Path(found[1] or found[0]))


def git_dir_holding(path: Path) -> str | None:
    """The git directory `path` lies in (a bare repository, or a work tree's `.git`), which
    holds no work tree, or None; a `path` not made yet is asked of its nearest folder."""
    start = path.absolute()
    folder = next((p for p in (start, *start.parents) if p.is_dir()), None)
    found = git_dir(folder) if folder is not None else None
    if found is None:
        return None
    inside = Path(found).resolve()
    return str(inside) if folder is not None and folder.resolve().is_relative_to(inside) else None


class FirstCommit(Struct, frozen=True):
    commit: str
    branch: str
    author: str  # `name <email>`


def new_repository(path: Path) -> None:
    """`git init`: on the branch git would choose (init.defaultBranch)."""
    try:
        pygit2.init_repository(str(path))
    except (pygit2.GitError, OSError) as e:
        raise GitError(f"{path}: could not make it a git repository: {e}") from e


def first_commit(path: Path, message: str, fallback_name: str, fallback_email: str,
                 only: list[str] | None = None) -> FirstCommit:
    """`git add -A && git commit` in the new repository at `path` (with `only`: of those paths
    alone), by the user's git identity (else the fallback's)."""
    try:
        repo = pygit2.Repository(str(path))
        repo.index.add_all(only or [])
        repo.index.write()
        tree = repo.index.write_tree()
        try:
            author = repo.default_signature
        except (KeyError, pygit2.GitError):  # no user.name / user.email configured
            author = pygit2.Signature(fallback_name, fallback_email)
        oid = repo.create_commit("HEAD", author, author, message, tree, [])
        return FirstCommit(str(oid), repo.head.shorthand, f"{author.name} <{author.email}>")
    except (pygit2.GitError, OSError) as e:
        raise GitError(f"{path}: could not commit the starter: {e}") from e
