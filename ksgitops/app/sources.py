"""Where a use case reads from: the work tree or a commit (`Source`), opened after any
interrupted write or checkout is recovered; the pipeline over it; and the commit of generated
files on its branch. The other use case modules build on this one."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, MutableMapping

from msgspec import Struct

from ..core.load.snapshot import Snapshot
from ..io.fs.afterwards import later
from ..io.git import branch, repo as git
from ..io.git.branch import git_dir
from ..io.git.cache import DiskCache
from ..io.git.commit import commit_generated
from ..lazy import lazy_module
from ..model import GitError, KsgitopsError, Progress

if TYPE_CHECKING:
    from ..core import pipeline
    from ..io.fs import tree as fstree, worktree
    from ..io.git import checkout
else:  # the pipeline's rooms load on a run that computes: a proven one answers without them;
    # the work tree's on a run in one
    pipeline = lazy_module("ksgitops.core.pipeline")
    fstree = lazy_module("ksgitops.io.fs.tree")
    worktree = lazy_module("ksgitops.io.fs.worktree")
    checkout = lazy_module("ksgitops.io.git.checkout")

WORKTREE = "worktree"


class Source(Struct):
    """Where inputs are read from, and where the previous generated files are."""

    path: Path
    snapshot: Snapshot
    repo: object | None = None  # pygit2.Repository, kept opaque here
    commit: object | None = None  # pygit2.Commit
    ref_name: str | None = None


def open_source(path: Path, source: str) -> Source:
    """Open what a command reads, after refusing links in the paths ksgitops owns and recovering
    what an interrupted run left (io/fs/worktree.py, io/git/checkout.py)."""
    if source == WORKTREE:
        if not path.is_dir():
            raise KsgitopsError(f"{path}: no such directory")
        _recover(path, None, sources=True)
        return Source(path, fstree.WorkTreeSnapshot(path))
    repo = git.open_repo(path)
    _recover(Path(repo.workdir) if repo.workdir else None, repo)
    commit = git.resolve_commit(repo, source)
    return Source(path, git.TreeSnapshot(repo, commit.tree), repo, commit, branch.branch_ref(repo, source))


def _recover(workdir: Path | None, repo: Any, sources: bool = False) -> None:
    if workdir is not None:
        fstree.check_layout(workdir, sources)
        worktree.recover(workdir)
    if repo is None and workdir is not None and checkout.pending(workdir):
        repo = git.open_repo(workdir)
    if repo is not None and not repo.is_bare:  # a bare repository has no checkout to finish
        checkout.recover(repo)


def compute(src: Source, cache: MutableMapping[Any, Any] | None = None,
            progress: Progress | None = None,
            reuse: Callable[[str, str], bool] | None = None,
            vouched: Callable[[str], bool] | None = None) -> pipeline.Result:
    """Run the pure pipeline; previous copies come from the same snapshot (HEAD or work tree).
    Without a cache of its own, a work tree inside a git repository uses the repository's.
    `reuse` and `vouched`: as pipeline.reconcile's."""
    if cache is None and src.repo is None:
        disk = worktree_cache(src.path)
        result = pipeline.reconcile(src.snapshot, src.snapshot, disk.content, progress, reuse, parse_ahead, vouched)
        later(disk.state, disk.save_content)
        return result
    return pipeline.reconcile(src.snapshot, src.snapshot, cache, progress, reuse, parse_ahead, vouched)


AHEAD_LEAST = 32  # files per process: fewer are parsed in order, sooner than a fork would pay back


def parse_ahead(cache: MutableMapping[Any, Any], files: list[tuple[str, Any]]) -> None:
    """The pipeline's `ahead`: the files a run must parse, when they are many (a cold cache, a
    first run), parsed in this process and forked children at once (io/fs/forked.py), each
    file's entries then applied to the cache in order, where the pipeline finds them as a warm
    run does. A file whose parse fails here is left to the pipeline, which fails on it in its
    order, as without this."""
    if len(files) < 2 * AHEAD_LEAST:
        return
    from ..core.load.read import parsed_entries
    from ..io.fs.forked import spread

    def parsed(item: tuple[str, Any]) -> tuple[dict[Any, Any], list[Any]] | None:
        try:
            return parsed_entries(item[0], item[1], cache)
        except Exception:  # the same error again, in the pipeline's order
            return None
    for entries in spread(files, parsed, AHEAD_LEAST):
        if entries is not None:
            added, read = entries
            cache.update(added)
            for key in read:
                cache.get(key)  # used: a cache that keeps what a run used keeps it


def worktree_cache(path: Path) -> Any:
    found = git_dir(path)
    return DiskCache.for_git_dir(found) if found else DiskCache(None)


def open_branch(path: Path, source: str) -> Source:
    """A commit to commit on top of: `source` must name a branch (HEAD: the checked-out one)."""
    src = open_source(path, source)
    if src.ref_name is None:
        if source == "HEAD" and src.repo.head_is_detached:  # type: ignore[attr-defined]
            raise KsgitopsError(f"--commit needs a branch to commit on, and HEAD is detached (at "
                                f"{str(src.commit.id)[:12]}): check out a branch, or give --source BRANCH")  # type: ignore[attr-defined]
        raise KsgitopsError(f"--commit needs --source HEAD or a branch name, not {source!r}")
    tip = git.resolve_commit(src.repo, src.ref_name)  # type: ignore[arg-type]
    if tip.id != src.commit.id:  # type: ignore[attr-defined]
        # the name also names a tag (or another ref), which git's revision order reads first: the
        # commit made goes on the branch, so it is the branch's commit that is reconciled
        src = Source(path, git.TreeSnapshot(src.repo, tip.tree), src.repo, tip, src.ref_name)  # type: ignore[arg-type]
    return src


def commit_on_branch(src: Source, generated: Any, config: Any, message: str | Callable[[list[str]], str]) -> Any:
    """Commit `generated` on the source's branch as RepoConfig's author; in a checkout of that
    branch the work tree and index follow. A branch another work tree of the repository has checked
    out is refused, as git refuses it: that work tree and its index would be left behind."""
    checkout = branch.is_checked_out(src.repo, src.ref_name)  # type: ignore[arg-type]
    if not checkout:
        elsewhere = branch.checked_out_elsewhere(src.repo, str(src.ref_name))  # type: ignore[arg-type]
        if elsewhere is not None:
            raise GitError(f"{src.ref_name} is checked out in the work tree {elsewhere}: run the command there "
                           f"(a commit here would leave that work tree and its index behind the branch); "
                           f"nothing was changed")
    return commit_generated(src.repo, src.ref_name, src.commit, generated,  # type: ignore[arg-type]
                            branch.signature(config.author_name, config.author_email), message,
                            checkout=checkout)
