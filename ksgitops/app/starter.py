"""`ksgitops init`: a starter repository made from the bundled example (KubeStellar's example1),
reconciled, with a STATUS.md that tells the truth (no WEC has reported: every placed object is
Missing), and, unless it already lies in one, a git repository of its own whose first commit is
the starter (`reconcile --commit`, `status --commit` and Flux or Argo CD need commits).

The example in this repository carries reports made up for the documentation (the mailboxes'
`reported/` folders); a starter gets them only when asked (`--demo-reports`).
"""
from __future__ import annotations

import os
import shutil
from importlib import resources
from pathlib import Path
from typing import Callable

from msgspec import Struct

from ..core.load.repoconfig import DEFAULT_AUTHOR_EMAIL, DEFAULT_AUTHOR_NAME
from ..core.place.where import wec_names
from ..io.git.newrepo import FirstCommit, enclosing_repository, first_commit, git_dir_holding, new_repository
from ..model import KsgitopsError

FIRST_COMMIT = "ksgitops init: a starter repository from the bundled example"
REPORTS = ("reported", "upsynced")  # what transports write into a mailbox
# what ksgitops reads or writes at a repository's top: RepoConfig, the spaces, the status
# summary, the journal of a write in flight
OWNED = ("spaces", "ksgitops.yaml", "STATUS.md", ".ksgitops-journal")
STARTER = ("spaces", "STATUS.md")  # what init writes


class Started(Struct):
    directory: Path
    wecs: list[str]
    healthy: str  # STATUS.md's headline figure, `0/6`
    demo_reports: bool
    first: FirstCommit | None = None  # the repository init made
    enclosing: str | None = None  # the repository DIRECTORY already lies in (init made none)
    top: bool = False  # DIRECTORY is that repository's top (`git init` done before init)
    kept: list[str] = []  # what DIRECTORY held before, left as it was (`.git` aside)


def example_dir() -> Path:
    checkout = Path(__file__).resolve().parents[2] / "examples" / "repo"  # a source checkout
    installed = Path(str(resources.files("ksgitops"))) / "example"  # shipped in the wheel
    source = checkout if checkout.is_dir() else installed
    if not source.is_dir():
        raise KsgitopsError(f"the bundled example is missing ({installed})")
    return source


def init_repo(directory: Path, git: bool | None = None, demo_reports: bool = False) -> Started:
    """Copy the example into DIRECTORY (absent, empty, or beside what a new repository holds,
    overwriting nothing), without its reports unless `demo_reports`; write STATUS.md from what is
    there; `git` None: make DIRECTORY a repository unless it lies in one, True: make it one anyway
    (refused, before anything is written, when DIRECTORY is a repository's top already), False:
    never. Refused, before anything is written, in a git directory (a bare repository, a .git)."""
    if directory.is_symlink() and not directory.exists():
        raise KsgitopsError(f"{directory}: a symbolic link to {os.readlink(directory)}, which does not exist")
    if directory.exists() and not directory.is_dir():
        raise KsgitopsError(f"{directory}: exists and is not a folder")
    inside = git_dir_holding(directory)
    if inside is not None:
        raise KsgitopsError(f"{directory}: lies in the git directory {inside} (a bare repository, or a repository's "
                            ".git), where no work tree is: clone it (`git clone <repository> fleet`) and run init in "
                            "the clone, or start in a new folder (`ksgitops init fleet`)")
    kept = _beside(directory)
    if git is True and directory.exists() and _top(directory, enclosing_repository(directory)):
        raise KsgitopsError(f"{directory}: is a git repository already; --git would make a new one: leave --git out, "
                            "and commit the starter there yourself (`git add -A && git commit`)")
    source = example_dir()
    try:
        shutil.copytree(source, directory, dirs_exist_ok=True, ignore=_ignored(source, demo_reports))
    except shutil.Error as e:  # its first argument lists (source, target, why) of each file it did not copy
        failed = e.args[0] if e.args and isinstance(e.args[0], list) and e.args[0] else [("", "", str(e))]
        raise KsgitopsError(f"{directory}: could not copy the example into it: {failed[0][2]}", exit_code=3) from None
    enclosing = None if git is True else enclosing_repository(directory)
    make = git is True or (git is None and enclosing is None)
    if make:
        new_repository(directory)  # first: status keeps its memo in the new repository's git directory
    from .status import status_worktree  # status's rooms load only when a command needs them
    outcome = status_worktree(directory)
    counts = outcome.output.counts
    started = Started(directory, sorted(wec_names(outcome.result.wecs).values()),
                      f"{counts.get('Healthy', 0)}/{sum(counts.values())}", demo_reports,
                      enclosing=enclosing, top=_top(directory, enclosing), kept=kept)
    if make:
        # what the folder held before is the user's (a .env, say): not committed unasked
        started.first = first_commit(directory, FIRST_COMMIT, DEFAULT_AUTHOR_NAME, DEFAULT_AUTHOR_EMAIL,
                                     only=list(STARTER) if kept else None)
    return started


def _top(directory: Path, work_tree: str | None) -> bool:
    return work_tree is not None and Path(work_tree).resolve() == directory.resolve()


def _beside(directory: Path) -> list[str]:
    """What DIRECTORY holds that the starter goes beside (a fresh `git init`, a new GitHub
    repository's README.md, LICENSE, .gitignore, .github/), sorted, `.git` left out; refused when
    it holds what ksgitops reads or writes at a repository's top, which the starter would
    overwrite or mix with."""
    if not directory.is_dir():
        return []
    names = sorted(e.name for e in directory.iterdir())
    ours = [n for n in OWNED if n in names]
    if "STATUS.md" in ours and len(ours) == 1:
        raise KsgitopsError(f"{directory}: holds a STATUS.md, which init would overwrite with the fleet's status: "
                            "move it away (or rename it) and run init again, or start in a new folder "
                            "(`ksgitops init fleet`)")
    if ours:
        shown = ", ".join(n + "/" if (directory / n).is_dir() else n for n in ours)
        raise KsgitopsError(f"{directory}: holds {shown} already: a ksgitops repository (`ksgitops validate "
                            f"{directory}` checks it), which init would overwrite; start in a new folder "
                            "(`ksgitops init fleet`), or here once those are moved away")
    return [n + "/" if (directory / n).is_dir() and not (directory / n).is_symlink() else n
            for n in names if n != ".git"]


def _ignored(source: Path, demo_reports: bool) -> Callable[[str, list[str]], set[str]]:
    """What copytree leaves out: package files, and without `demo_reports` the example's reports
    (the transports' folders of each mailbox: `spaces/<mailbox>/reported/`, `upsynced/`)."""
    def ignored(folder: str, names: list[str]) -> set[str]:
        out = {n for n in names if n in ("__init__.py", "__pycache__")}
        parts = Path(folder).relative_to(source).parts
        if not demo_reports and len(parts) == 2 and parts[0] == "spaces" and "space.yaml" in names:
            out |= {n for n in names if n in REPORTS}
        return out
    return ignored
