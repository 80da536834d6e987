"""One place that composes the edges (git, file system) with the pure core, for every command.

The CLI calls these functions and maps their results and errors to output and exit codes; the
future runtimes (poller, action) call the same functions.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, MutableMapping

from ..core.readout import diff as diffs
from ..core.pipeline import RecordedResult, Result, reconcile
from ..core.load.repoconfig import parse_repo_config
from ..core.load.snapshot import Snapshot
from ..core.readout.wecs import find_wec, wec_display_names, wec_rows
from ..core.tree import REUSE, FileTree, same_files
from ..model import KsgitopsError, Progress, counted
from ..io.fs.tree import WorkTreeSnapshot, write_generated

WORKTREE = "worktree"


@dataclass
class Source:
    """Where inputs are read from, and where the previous generated files are."""

    path: Path
    snapshot: Snapshot
    repo: object | None = None  # pygit2.Repository, kept opaque here
    commit: object | None = None  # pygit2.Commit
    ref_name: str | None = None


def open_source(path: Path, source: str) -> Source:
    """Open what a command reads, after refusing links in the paths ksgitops owns and recovering
    what an interrupted run left (io/fs/worktree.py, io/git/checkout.py)."""
    from ..io.fs.tree import WorkTreeSnapshot
    if source == WORKTREE:
        if not path.is_dir():
            raise KsgitopsError(f"{path}: no such directory")
        _recover(path, None)
        return Source(path, WorkTreeSnapshot(path))
    from ..io.git import repo as git
    repo = git.open_repo(path)
    _recover(Path(repo.workdir) if repo.workdir else None, repo)
    commit = git.resolve_commit(repo, source)
    return Source(path, git.TreeSnapshot(repo, commit.tree), repo, commit, git.branch_ref(repo, source))


def _recover(workdir: Path | None, repo: Any) -> None:
    from ..io.git import checkout
    from ..io.fs import worktree
    from ..io.fs.tree import check_layout
    if workdir is not None:
        check_layout(workdir)
        worktree.recover(workdir)
    if repo is None and workdir is not None and checkout.pending(workdir):
        from ..io.git import repo as git
        repo = git.open_repo(workdir)
    if repo is not None:
        checkout.recover(repo)


def compute(src: Source, cache: MutableMapping[Any, Any] | None = None,
            progress: Progress | None = None,
            reuse: Callable[[str, str], bool] | None = None) -> Result:
    """Run the pure pipeline; previous copies come from the same snapshot (HEAD or work tree).
    Without a cache of its own, a work tree inside a git repository uses the repository's."""
    from ..core.pipeline import reconcile
    if cache is None and src.repo is None:
        disk = _worktree_cache(src.path)
        result = reconcile(src.snapshot, src.snapshot, disk.content, progress, reuse)
        disk.save_content()
        return result
    return reconcile(src.snapshot, src.snapshot, cache, progress, reuse)


def _worktree_cache(path: Path) -> Any:
    from ..io.git.cache import DiskCache
    from ..io.git.repo import git_dir
    found = git_dir(path)
    return DiskCache.for_git_dir(found) if found else DiskCache(None)


def init_repo(directory: Path) -> None:
    """`ksgitops init`: copy the bundled example into DIRECTORY (absent or empty)."""
    import shutil
    from importlib import resources
    if directory.exists() and any(directory.iterdir()):
        raise KsgitopsError(f"{directory}: exists and is not empty")
    checkout = Path(__file__).resolve().parents[2] / "examples" / "repo"  # a source checkout
    installed = Path(str(resources.files("ksgitops"))) / "example"  # shipped in the wheel
    source = checkout if checkout.is_dir() else installed
    if not source.is_dir():
        raise KsgitopsError(f"the bundled example is missing ({installed})")
    shutil.copytree(source, directory, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))


class _Reported:
    result: Any

    @property
    def problems(self) -> list[Any]:
        return self.result.problems  # type: ignore[no-any-return]

    @property
    def wec_count(self) -> int:
        return len(self.result.wecs)

    @property
    def config(self) -> Any:
        return self.result.config


@dataclass
class ReconcileOutcome(_Reported):
    result: Result
    changed_roots: list[str]
    commit: str | None = None


@dataclass
class ProvenOutcome(_Reported):
    """A commit that the last reconcile's record proves reconciled (io/git/runrecord.py): nothing was
    computed and nothing is committed; what it reports is the recorded run's."""

    result: RecordedResult
    changed_roots: list[str] = field(default_factory=list)
    commit: str | None = None


def reconcile_worktree(path: Path, progress: Progress | None = None,
                       source: str = WORKTREE) -> ReconcileOutcome:
    """Write the generated files into the work tree, from the work tree's sources or a commit's
    (`source` a REF); previous copies always come from the work tree, which is what is written.
    A mailbox whose inputs and files are as the work tree's record says is not rebuilt (REUSE)."""
    src, record = open_recorded(path, source)
    previous = src.snapshot if source == WORKTREE else WorkTreeSnapshot(path)
    disk = _worktree_cache(path)
    result = reconcile(src.snapshot, previous, disk.content, progress, reuse_recorded(record))
    changed = write_generated(path, result.generated, record, regenerable=True, progress=progress)
    keep_record(record, src, result)
    disk.save_content()
    return ReconcileOutcome(result, changed)


def open_recorded(path: Path, source: str = WORKTREE) -> tuple[Source, Any]:
    """open_source, with the work tree's stat record (io/fs/statcache.py): the sources of the work
    tree read through it, and every recorded generated root observed (lstat only)."""
    from ..io.git.repo import git_dir
    from ..io.fs.statcache import WorkTreeRecord
    src = open_source(path, source)
    record = WorkTreeRecord.load(path, git_dir(path))
    if source == WORKTREE:
        src.snapshot = WorkTreeSnapshot(path, record)
    if record.enabled:
        record.check(path)
    return src, record


def reuse_recorded(record: Any) -> Callable[[str, str], bool] | None:
    if not record.enabled:
        return None
    return lambda mailbox, digest: record.reusable(f"spaces/{mailbox}", digest)  # type: ignore[no-any-return]


def keep_record(record: Any, src: Source, result: Result, inputs: bool = True) -> None:
    """Save the record after a run; with `inputs` (a run that wrote: every generated root is
    now what it recorded), each clean mailbox's input digest beside its root."""
    if inputs:
        troubled = {mb for p in result.problems for mb in p.mailboxes}  # as clean_mailboxes
        record.set_inputs({f"spaces/{mb}": (None if mb in troubled else d) for mb, d in result.digests.items()})
    record.forget_roots(set(result.generated))
    if isinstance(src.snapshot, WorkTreeSnapshot) and src.snapshot.record is not None:
        record.forget_sources(src.snapshot.seen)
    record.save()


def reconcile_commit(path: Path, source: str, progress: Progress | None = None,
                     cache: Any = None) -> ReconcileOutcome | ProvenOutcome:
    """Reconcile a commit and commit the result on its branch, reusing what a local cache
    proves unchanged (a mailbox whose input digest and committed tree are both as cached); a
    commit the last run's record proves reconciled is answered from the record.
    `cache`: a DiskCache kept by a long-running caller (else the repository's is read)."""
    from ..io.git import repo as git, runrecord
    from ..io.git.cache import DiskCache
    src = open_branch(path, source)
    cache = cache or DiskCache.for_git_dir(src.repo.path)  # type: ignore[attr-defined]
    base = src.snapshot.index  # type: ignore[attr-defined]
    record = cache.record
    if runrecord.proves_unchanged(record, base):
        _warn_uncommitted(src, record.loaded_mailboxes)
        return ProvenOutcome(record.result)
    result = reconcile_reusing(src, cache, progress)
    _warn_uncommitted(src, result.loaded.mailboxes)
    config = result.config
    def message(roots: list[str]) -> str:  # {affected}: the WECs whose mailbox the commit changes
        affected = sum(1 for root in roots if root.count("/") == 1)
        return config.commit_message(str(src.commit.id), affected, frozen=result.frozen.trailer())  # type: ignore[attr-defined]

    committed = _commit_on_branch(src, result.generated, config, message)
    new = git.TreeIndex(src.repo, src.repo[committed.tree])  # type: ignore[arg-type, index]
    roots = git.changed_roots(base, new, list(result.generated))
    cache.save(clean_mailboxes(result, new))
    cache.save_record(runrecord.record_of(new, result))
    return ReconcileOutcome(result, roots, committed.commit)


def reconcile_reusing(src: Source, cache: Any, progress: Progress | None = None) -> Result:
    """The pipeline over a commit, reusing each mailbox whose input digest and committed tree are
    both as `cache` (a DiskCache) recorded."""
    base = src.snapshot.index  # type: ignore[attr-defined]

    def reuse(mailbox: str, digest: str) -> bool:
        cached = cache.mailboxes.get(mailbox)
        return cached is not None and cached == (digest, base.entry_id(f"spaces/{mailbox}"))

    return compute(src, cache.content, progress, reuse)


def open_branch(path: Path, source: str) -> Source:
    """A commit to commit on top of: `source` must name a branch (HEAD: the checked-out one)."""
    src = open_source(path, source)
    if src.ref_name is None:
        raise KsgitopsError(f"--commit needs --source HEAD or a branch name, not {source!r}")
    return src


def _commit_on_branch(src: Source, generated: Any, config: Any, message: str | Callable[[list[str]], str]) -> Any:
    """Commit `generated` on the source's branch as RepoConfig's author; in a checkout of that
    branch the work tree and index follow."""
    from ..io.git import repo as git
    return git.commit_generated(src.repo, src.ref_name, src.commit, generated,  # type: ignore[arg-type]
                                git.signature(config.author_name, config.author_email), message,
                                checkout=git.is_checked_out(src.repo, src.ref_name))  # type: ignore[arg-type]


def clean_mailboxes(result: Result, tree: Any) -> dict[str, tuple[str, str]]:
    """(digest, tree id) of every mailbox without problems: safe to reuse next time (a mailbox
    that keeps frozen content has no digest: it is never reused)."""
    troubled = {mb for p in result.problems for mb in p.mailboxes}
    return {mb: (digest, tree.entry_id(f"spaces/{mb}")) for mb, digest in result.digests.items()
            if mb not in troubled}


def _warn_uncommitted(src: Source, mailboxes: Any) -> None:
    from ..io.git import repo as git
    dirty = git.uncommitted_sources(src.repo, src.snapshot, set(mailboxes))  # type: ignore[arg-type]
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        print(f"warning: uncommitted source changes are not used: {shown}", file=sys.stderr)


def plan_diff(path: Path, against: str | None, progress: Progress | None = None) -> tuple[Result, diffs.DiffResult]:
    """What reconcile (of the work tree) would change, against the work tree or REF's tree.
    Against the work tree it runs on reconcile's engine: only mailboxes whose inputs or files
    moved are built, and only roots the record cannot vouch for are read."""
    record = None
    if against:
        new = compute(open_source(path, WORKTREE), progress=progress)
        old_src = open_source(path, against)
    else:
        old_src, record = open_recorded(path)
        disk = _worktree_cache(path)
        new = reconcile(old_src.snapshot, old_src.snapshot, disk.content, progress, reuse_recorded(record))
        disk.save_content()
    wec_names = wec_display_names(new)
    changed = False
    wecs = []
    for root, new_tree in new.generated.items():
        # kept as it stands (frozen, or reused), or as the record vouches: no change
        if new_tree is REUSE or (record is not None and record.enabled and record.unchanged(root, new_tree)):
            continue
        old_file = old_src.snapshot.read(root)
        if isinstance(new_tree, bytes) or old_file is not None:  # a file root (a problems file)
            changed = changed or old_file != new_tree
            continue
        old_tree = old_src.snapshot.read_tree(root)
        if same_files(old_tree, new_tree):
            continue
        changed = True
        if root.count("/") == 1:  # a mailbox root: spaces/<mailbox>
            mailbox = root.split("/", 1)[1]
            changes = diffs.mailbox_changes(old_tree, new_tree if isinstance(new_tree, dict) else None)
            if changes:
                wecs.append(diffs.WecDiff(wec_names.get(mailbox) or _old_wec_name(old_tree, mailbox), mailbox,
                                          diffs.changes_diff(mailbox, changes), changes))
    if record is not None:
        keep_record(record, old_src, new, inputs=False)
    wecs.sort(key=lambda w: w.wec)
    return new, diffs.DiffResult(changed, wecs, frozen_units(new))


def _old_wec_name(old: FileTree | None, mailbox: str) -> str:
    from ..core.load.read import SYNC_TARGET_ANNOTATION
    from ..core.serialize import load_yaml
    data = old.get("space.yaml") if old else None
    try:
        return str(load_yaml(data)["metadata"]["annotations"][SYNC_TARGET_ANNOTATION])  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a broken old file just loses its nicer name
        return mailbox


def compute_for_wec(path: Path, name: str, progress: Progress | None = None) -> tuple[Result, str]:
    """The pipeline for one WEC (render, explain): other mailboxes are not built."""
    src = open_source(path, WORKTREE)
    disk = _worktree_cache(path)
    mailbox = find_wec(placements_only(src, disk.content, progress), name)
    result = compute(src, disk.content, reuse=lambda mb, digest: mb != mailbox)
    disk.save_content()
    return result, mailbox


def mailbox_tree(path: Path, result: Result, mailbox: str) -> FileTree | None:
    """What a WEC receives: its mailbox as computed, or as it stands when it is kept (frozen)."""
    tree = result.generated.get(f"spaces/{mailbox}")
    if tree is REUSE:
        return WorkTreeSnapshot(path).read_tree(f"spaces/{mailbox}")
    return tree if isinstance(tree, dict) else None


def frozen_units(result: Result | RecordedResult) -> list[Any]:
    """What the run froze (core.isolation.FrozenUnit), one per space, WEC or WECs of a space."""
    return result.frozen.units(wec_display_names(result))


def frozen_facts(result: Result | RecordedResult | None) -> dict[str, Any]:
    """A reconcile's frozen parts and its errors of spaces and WECs, as a `run` cycle reports them."""
    if result is None:
        return {}
    return {"frozen": result.frozen.trailer(), "frozen_parts": len(result.frozen.spaces) + len(result.frozen.wecs),
            "errors": tuple(str(p) for p in result.confined_errors)}


def list_wecs(path: Path, progress: Progress | None = None) -> tuple[list[dict[str, Any]], Result]:
    """Every WEC with its labels, mailbox and the placements that reach it (`ksgitops wecs`)."""
    result = placements_only(open_source(path, WORKTREE), progress=progress)
    return wec_rows(result, wec_display_names(result)), result


@dataclass
class StatusOutcome:
    result: Result
    output: Any  # core.status.StatusOutput
    changed: list[str]  # status roots rewritten, and STATUS.md when it changed
    problems: list[Any]
    commit: str | None = None
    folded: Any = None  # FoldOutcome, with --commit


STATUS_SUBJECT = "ksgitops: status {source_short}"


def placements_only(src: Source, cache: MutableMapping[Any, Any] | None = None,
                    progress: Progress | None = None) -> Result:
    """Where and what, without building mailboxes (status reads them as they are)."""
    return compute(src, cache, progress, reuse=lambda mailbox, digest: True)


def status_worktree(path: Path) -> StatusOutcome:
    """`ksgitops status` on the work tree: summarize every mailbox's reported/ into the WDSes'
    .ksgitops/status/ folders and STATUS.md (each rewritten only when its bytes change)."""
    from ..io.fs.tree import write_generated
    from ..core.status.summary import STATUS_MD, summarize
    from ..io import status_sources as ss
    from ..io.git.repo import git_dir
    src = open_source(path, WORKTREE)
    result = placements_only(src)
    memo_file = ss.memo_path(git_dir(path), "worktree")
    memo = ss.load_memo(memo_file)
    output = summarize(result, ss.WorkTreeStatusSource(path), memo, result.config.status_limit)
    changed = write_generated(path, {**output.generated, STATUS_MD: output.markdown})
    ss.save_memo(memo_file, memo)
    return StatusOutcome(result, output, changed, sorted(set(result.problems + output.problems)))


@dataclass
class FoldOutcome:
    commit: str | None
    folded: list[str]  # mailboxes whose reported/ or upsynced/ came in
    problems: list[Any]


def fold_subject(wecs: int) -> str:
    return f"ksgitops: fold in reports of {counted(wecs, 'WEC')}"


def fold_in(path: Path, source: str = "HEAD", cache: Any = None) -> FoldOutcome:
    """Commit the per-WEC report refs' reported/ and upsynced/ into their mailboxes (io/git/foldin.py)."""
    from ..core.load.repoconfig import parse_repo_config
    from ..io.git.cache import DiskCache
    from ..io.git.foldin import report_refs
    src = open_branch(path, source)
    if not report_refs(src.repo):  # type: ignore[arg-type]  # nothing to fold in: no need to load the sources
        return FoldOutcome(None, [], [])
    cache = cache or DiskCache.for_git_dir(src.repo.path)  # type: ignore[attr-defined]
    planned, loaded = plan_fold_in(src, cache.content)
    if not planned.generated:
        return FoldOutcome(None, [], planned.problems)
    config, _ = parse_repo_config(loaded.config)
    message = config.commit_message(source_of(src.commit), len(planned.folded), subject=fold_subject(len(planned.folded)))
    committed = _commit_on_branch(src, planned.generated, config, message)
    return FoldOutcome(committed.commit, planned.folded, planned.problems)


def plan_fold_in(src: Source, content: MutableMapping[Any, Any]) -> tuple[Any, Any]:
    """What folding the report refs into the commit's mailboxes writes (io/foldin.FoldIn), and the
    commit's loaded sources."""
    from ..core.load.read import load
    from ..io.git import foldin
    loaded = load(src.snapshot, content)
    return foldin.plan(src.repo, src.snapshot.index, set(loaded.mailboxes)), loaded  # type: ignore[arg-type, attr-defined]


def status_commit(path: Path, source: str = "HEAD", memo: Any = None, cache: Any = None,
                  fold: bool = True) -> StatusOutcome:
    """Fold in the report refs (`fold`), then summarize the mailboxes of the branch head and
    commit the summary on that branch, only when a summary changed. Reads commits, not the work
    tree (bare repositories work). A long-running caller keeps `memo` (StatusMemo) and `cache`
    (DiskCache) in memory."""
    from ..core.status.summary import STATUS_MD
    from ..io.git import repo as git
    from ..io import status_sources as ss
    from ..io.git.cache import DiskCache
    src = open_branch(path, source)
    cache = cache or DiskCache.for_git_dir(src.repo.path)  # type: ignore[attr-defined]
    folded = fold_in(path, source, cache) if fold else FoldOutcome(None, [], [])
    if folded.commit:
        src = open_branch(path, source)  # the branch moved
    repo, commit = src.repo, src.commit
    memo_file = ss.memo_path(repo.path, "git") if memo is None else None  # type: ignore[attr-defined]
    memo = ss.load_memo(memo_file) if memo is None else memo
    result, output = summarize_commit(src, cache.content, memo)
    cache.save_content()
    base = src.snapshot.index  # type: ignore[attr-defined]
    generated = {**output.generated, STATUS_MD: output.markdown}
    config = result.config
    committed = _commit_on_branch(src, generated, config, config.commit_message(source_of(commit), subject=STATUS_SUBJECT))
    new = git.TreeIndex(repo, repo[committed.tree])  # type: ignore[arg-type, index]
    ss.save_memo(memo_file, memo)
    return StatusOutcome(result, output, git.changed_roots(base, new, list(generated)),
                         sorted(set(result.problems + output.problems + folded.problems)), committed.commit,
                         folded)


def summarize_commit(src: Source, content: MutableMapping[Any, Any], memo: Any) -> tuple[Result, Any]:
    """The placements and the status summary (core.status.StatusOutput) of a commit's mailboxes."""
    from ..core.status.summary import summarize
    from ..io import status_sources as ss
    result = placements_only(src, content)
    source = ss.GitStatusSource(src.repo, src.snapshot.index)  # type: ignore[arg-type, attr-defined]
    return result, summarize(result, source, memo, result.config.status_limit)


def source_of(commit: Any) -> str:
    """The source commit a commit stands for: its Ksgitops-Source trailer, else itself."""
    from ..core.load.repoconfig import SOURCE_TRAILER, trailers
    return trailers(str(commit.message)).get(SOURCE_TRAILER) or str(commit.id)


# --- publishing (app/publish.py): commit, then push without force, recomputing on a moved remote --------
# Imported last: app/publish.py reaches back into this module, at call time only.
from .publish import PublishOutcome, branch_of, move_branch, publish  # noqa: E402
