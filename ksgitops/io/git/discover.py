"""Which git directory holds a path, as libgit2's discovery answers, without loading pygit2 for the
usual case: a work tree whose `.git` is a plain folder above the path on the same file system.
Anything else (a bare repository, a path inside a git directory, a `.git` file of a linked work
tree or submodule, a link on the way, another file system, no repository) is left to libgit2."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from ..pygit import pygit2


def git_dir(path: Path | str) -> str | None:
    """The git directory of the repository containing `path` (with a trailing slash), or None."""
    found = _plain(str(path))
    return found if found is not None else pygit2.discover_repository(str(path))


def enclosing(path: Path | str) -> tuple[str, str | None] | None:
    """(git directory, work tree: None for a bare repository) of the repository containing `path`
    (None: there is none, or libgit2 cannot open it)."""
    found = git_dir(path)
    if found is None:
        return None
    try:
        return found, pygit2.Repository(found).workdir
    except pygit2.GitError:
        return None


def _plain(path: str) -> str | None:
    start = os.path.abspath(path)
    try:
        if os.path.realpath(start) != start:
            return None
        device = os.stat(start).st_dev
    except OSError:
        return None
    for folder in (Path(start), *Path(start).parents):
        try:
            if os.stat(folder).st_dev != device:
                return None
            if _is_git_dir(folder):
                return None
            mode = os.lstat(folder / ".git").st_mode
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if stat.S_ISDIR(mode) and _is_git_dir(folder / ".git"):
            return f"{folder / '.git'}/"
        return None
    return None


def _is_git_dir(folder: Path) -> bool:
    """What libgit2 takes for a repository: HEAD, and objects/ and refs/ folders (or a commondir)."""
    return (folder / "HEAD").is_file() and ((folder / "objects").is_dir() and (folder / "refs").is_dir()
                                             or (folder / "commondir").is_file())
