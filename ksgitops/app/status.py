"""Use cases of reported state: `status` (summaries of what the WECs reported, in a work tree or
committed) and `fold-in` (the WECs' report refs committed into their mailboxes)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, MutableMapping

from msgspec import Struct

from ..core.load.read import load
from ..core.load.repoconfig import SOURCE_TRAILER, parse_repo_config, trailers
from ..core.results import PlacedResult
from ..io.fs.forked import spread
from ..io.git import foldin, repo as git, runrecord
from ..io.git.branch import git_dir
from ..io.git.cache import DiskCache, gc_paused
from ..io.fs.afterwards import later
from ..io.fs.folderstate import make_own, place_of
from ..io.git.foldin import report_refs
from ..model import Progress, counted
from .sources import WORKTREE, Source, commit_on_branch, compute, open_branch, open_source

if TYPE_CHECKING:
    from ..core.pipeline import Result


class StatusOutcome(Struct):
    result: Result | PlacedResult
    output: Any  # core.status.StatusOutput
    changed: list[str]  # status roots rewritten, and STATUS.md when it changed
    problems: list[Any]
    commit: str | None = None
    folded: Any = None  # FoldOutcome, with --commit


STATUS_SUBJECT = "ksgitops: status {source_short}"


def collector_problems(result: Result) -> list[Any]:
    """What compiling every StatusCollector finds (`validate`; `status` says it of those it uses)."""
    from ..core.status.combined import Collectors  # the CEL library with it, only when a repo has collectors
    return Collectors(result).compile_all()


def placements_only(src: Source, cache: MutableMapping[Any, Any] | None = None,
                    progress: Progress | None = None) -> Result:
    """Where and what, without building mailboxes (status reads them as they are)."""
    return compute(src, cache, progress, reuse=lambda mailbox, digest: True)


def status_worktree(path: Path) -> StatusOutcome:
    """`ksgitops status` on the work tree: summarize every mailbox's reported/ into the WDSes'
    .ksgitops/status/ folders and STATUS.md (each rewritten only when its bytes change)."""
    # status's own rooms (core/status/, the SQLite memo) are imported where status runs: loaded by
    # every command through this module, they cost ~0.08 s of each start-up (farm-bench, 2026-11-26)
    from ..core.status.summary import STATUS_MD, summarize
    from ..io import status_sources as ss
    from ..io.fs.worktree import write_generated  # the work tree's writer: not loaded by `status --commit`
    src = open_source(path, WORKTREE)
    result = placements_only(src)
    memo_file = ss.memo_path(git_dir(path), "worktree", place_of(path))  # its folder's own (io/fs/folderstate.py)
    if memo_file is not None:
        try:
            make_own(str(memo_file.parent), str(path))
        except OSError:
            pass  # no memo is kept there (status_sources.py says so)
    memo = ss.load_memo(memo_file)
    try:
        with gc_paused():  # see summarize_placed
            output = summarize(result, ss.WorkTreeStatusSource(path), memo, result.config.status_limit, spread=spread)
        changed = write_generated(path, {**output.generated, STATUS_MD: output.markdown})
        ss.save_memo(memo_file, memo)
    finally:
        ss.release_memo(memo)  # see status_commit
    return StatusOutcome(result, output, changed, sorted(set(result.problems + output.problems)))


class FoldOutcome(Struct):
    commit: str | None
    folded: list[str]  # mailboxes whose reported/ or upsynced/ came in
    problems: list[Any]


def fold_subject(wecs: int) -> str:
    return f"ksgitops: fold in reports of {counted(wecs, 'WEC')}"


def fold_in(path: Path, source: str = "HEAD", cache: Any = None) -> FoldOutcome:
    """Commit the per-WEC report refs' reported/ and upsynced/ into their mailboxes (io/git/foldin.py)."""
    src = open_branch(path, source)
    if not report_refs(src.repo):  # type: ignore[arg-type]  # nothing to fold in: no need to load the sources
        return FoldOutcome(None, [], [])
    cache = cache or DiskCache.for_git_dir(src.repo.path)  # type: ignore[attr-defined]
    planned, loaded = plan_fold_in(src, cache.content)
    if not planned.generated:
        return FoldOutcome(None, [], planned.problems)
    config, _ = parse_repo_config(loaded.config)
    message = config.commit_message(source_of(src.commit), len(planned.folded), subject=fold_subject(len(planned.folded)))
    committed = commit_on_branch(src, planned.generated, config, message)
    return FoldOutcome(committed.commit, planned.folded, planned.problems)


def plan_fold_in(src: Source, content: MutableMapping[Any, Any]) -> tuple[Any, Any]:
    """What folding the report refs into the commit's mailboxes writes (io/foldin.FoldIn), and the
    commit's loaded sources."""
    loaded = load(src.snapshot, content)
    return foldin.plan(src.repo, src.snapshot.index, set(loaded.mailboxes)), loaded  # type: ignore[arg-type, attr-defined]


def status_commit(path: Path, source: str = "HEAD", memo: Any = None, cache: Any = None,
                  fold: bool = True) -> StatusOutcome:
    """Fold in the report refs (`fold`), then summarize the mailboxes of the branch head and
    commit the summary on that branch, only when a summary changed. Reads commits, not the work
    tree (bare repositories work). A long-running caller keeps `memo` (StatusMemo) and `cache`
    (DiskCache) in memory."""
    from ..core.status.summary import STATUS_MD  # see status_worktree
    from ..io import status_sources as ss
    src = open_branch(path, source)
    cache = cache or DiskCache.for_git_dir(src.repo.path)  # type: ignore[attr-defined]
    folded = fold_in(path, source, cache) if fold else FoldOutcome(None, [], [])
    if folded.commit:
        src = open_branch(path, source)  # the branch moved
    repo, commit = src.repo, src.commit
    memo_file = ss.memo_path(repo.path, "git") if memo is None else None  # type: ignore[attr-defined]
    result = placed_commit(src, cache)  # reads the cache (waiting for memos being kept) before the memo's read begins
    memo = ss.load_memo(memo_file) if memo is None else memo
    try:
        output = summarize_placed(src, result, memo)
        later(cache.state, cache.save_content)
        base = src.snapshot.index  # type: ignore[attr-defined]
        generated = {**output.generated, STATUS_MD: output.markdown}
        config = result.config
        committed = commit_on_branch(src, generated, config, config.commit_message(source_of(commit), subject=STATUS_SUBJECT))
        new = git.TreeIndex(repo, repo[committed.tree])  # type: ignore[arg-type, index]
        ss.save_memo(memo_file, memo)
    finally:
        # the memo's read ends on every path: a memo being kept by another run's child waits for it
        ss.release_memo(memo)
    return StatusOutcome(result, output, git.changed_roots(base, new, list(generated)),
                         sorted(set(result.problems + output.problems + folded.problems)), committed.commit,
                         folded)


def summarize_commit(src: Source, cache: Any, memo: Any) -> tuple[PlacedResult, Any]:
    """The placements and the status summary (core.status.StatusOutput) of a commit's mailboxes;
    `cache` a DiskCache."""
    result = placed_commit(src, cache)
    return result, summarize_placed(src, result, memo)


def summarize_placed(src: Source, result: PlacedResult, memo: Any) -> Any:
    """The status summary (core.status.StatusOutput) of a commit's mailboxes, given its placements."""
    from ..core.status.summary import summarize  # see status_worktree
    from ..io import status_sources as ss
    source = ss.GitStatusSource(src.repo, src.snapshot.index)  # type: ignore[arg-type, attr-defined]
    with gc_paused():  # a fleet's rows are many objects and no cycles: collections only cost time (6%)
        return summarize(result, source, memo, result.config.status_limit, spread=spread)


def placed_commit(src: Source, cache: Any) -> PlacedResult:
    """Where and what over a commit (placements_only), from the record of the last status run
    when the commit's reconcile inputs are those it recorded (runrecord.py's fingerprint: reports
    and status files are not among them); else computed, and recorded for the next run (once the
    command has answered, as the memos)."""
    base = src.snapshot.index  # type: ignore[attr-defined]
    known = cache.placed
    if runrecord.proves_unchanged(known, base) and isinstance(known.result, PlacedResult):
        return known.result  # type: ignore[no-any-return]
    result = placements_only(src, cache.content)
    placed, mailboxes = PlacedResult.of(result), sorted(result.loaded.mailboxes)
    later(cache.state, lambda: cache.save_placed(runrecord.placed_record(base, placed, mailboxes)))
    return placed


def source_of(commit: Any) -> str:
    """The source commit a commit stands for: its Ksgitops-Source trailer, else itself."""
    return trailers(str(commit.message)).get(SOURCE_TRAILER) or str(commit.id)
