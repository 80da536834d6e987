"""Where the ksgitops repository is: the folder holding `spaces/`, found the way git finds `.git`.

A REPO given on the command line must be the repository itself; without one, the search walks up
from the current directory (after any `-C DIR`) to the first folder holding `spaces/`, stopping at
the top of a git work tree or of the file system. Commands that read commits (`--commit`, `--push`,
`fold-in`) also accept a bare git repository, which has no work tree to hold `spaces/`, and refuse
`spaces/` below the top of a work tree; `monitor` accepts both.
Every refusal is one line that says what was expected and where it looked, before anything runs.
"""
from __future__ import annotations

from enum import Enum
from pathlib import Path

from ..git.discover import enclosing
from ..git.refs import bare_git_dir

from ...model import KsgitopsError

SPACES = "spaces"


class Need(Enum):
    WORKTREE = "worktree"  # reads or writes files in a work tree
    GIT = "git"  # reads commits: a bare repository will do
    WATCH = "watch"  # the monitor: a work tree (spaces/ anywhere in it) or a bare repository, whose commands it runs


def locate(repo: Path | None, need: Need = Need.WORKTREE) -> Path:
    """The repository a command works on: `repo` checked as given, else found from the cwd."""
    if repo is not None:
        return _not_below_a_top(_check_given(Path(repo), need), need)
    start = Path.cwd()
    for folder in (start, *start.parents):
        if _holds_spaces(folder):
            return _not_below_a_top(folder, need)
        if (folder / ".git").exists():
            break
    if need is not Need.WORKTREE:
        bare = _bare_repository(start)
        if bare is not None:
            return bare
    top = folder if (folder / ".git").exists() else Path(start.anchor)
    here = (f"to start one here, run `ksgitops init .` (the starter goes beside what the repository holds), or put "
            f"each space's YAML in a folder of its own, {SPACES}/<space>/") if top == start else _START
    raise KsgitopsError(f"not inside a ksgitops repository: no {SPACES}/ folder in {start} or any parent up to "
                        f"{top}: give REPO; {here}")


def _not_below_a_top(root: Path, need: Need) -> Path:
    """A repository whose commits are read must be the top of its git work tree: a commit holds
    spaces/ at its top, and one of a work tree around `root` holds `root` somewhere below."""
    if need is not Need.GIT or not _holds_spaces(root) or (root / ".git").exists():
        return root
    found = enclosing(root)
    workdir = found[1] if found is not None else None
    if workdir and Path(workdir).resolve() != root.resolve():
        raise KsgitopsError(f"{root}: lies below the top of the git work tree {Path(workdir)}, and commands that "
                            f"read commits need {SPACES}/ at the top of a repository (`git init {root}` makes it "
                            "one of its own)")
    return root


def _holds_spaces(folder: Path) -> bool:
    return (folder / SPACES).is_dir()


def _check_given(path: Path, need: Need) -> Path:
    if not path.exists():
        raise KsgitopsError(f"{path}: no such directory (expected a ksgitops repository: a folder holding {SPACES}/)")
    if not path.is_dir():
        raise KsgitopsError(f"{path}: not a directory (expected a ksgitops repository: a folder holding {SPACES}/)")
    if _holds_spaces(path):
        return path
    bare = _bare_repository(path)
    if bare is not None:
        if need is not Need.WORKTREE:
            return path
        raise KsgitopsError(f"{path}: a bare git repository has no work tree, and this command reads the work "
                            f"tree (use a clone with a work tree, or --commit where the command has it)")
    hint = _hint(path) or f"; {_START}"
    raise KsgitopsError(f"{path}: not a ksgitops repository (expected a {SPACES}/ folder in {path.resolve()}){hint}")


_START = (f"to start one, put each space's YAML (an inventory, a workload) in a folder of its own, {SPACES}/<space>/, "
          "or run `ksgitops init DIR` for a copy of the example")


def _hint(path: Path) -> str:
    """Where the repository probably is, when `path` is inside one."""
    resolved = path.resolve()
    for folder in resolved.parents:
        if _holds_spaces(folder):
            return f"; it is inside the ksgitops repository {folder}: give that folder, or leave REPO out"
    return ""


def _bare_repository(path: Path) -> Path | None:
    """The bare repository `path` is (or is inside), if any."""
    plain = bare_git_dir(str(path))
    if plain is not None:  # as its own config says: no need to load libgit2
        return Path(plain)
    found = enclosing(path)
    return Path(found[0]) if found is not None and found[1] is None else None
